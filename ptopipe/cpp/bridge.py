"""The C-API bridge: the instruction callback of ptopipe's C++ ABI (``bridge.cpp``) built
against this interpreter's ``Python.h``, so an instruction call from C++ reaches its prepared
Python call by one vectorcall instead of through a ctypes callback (whose argument and result
objects cost more than most instructions).

A C++ compiler is present whenever a C++ kernel runs, so :func:`callback_address` builds the
bridge with it - once per interpreter, compiler and source, cached by content hash under
:func:`~ptopipe.cpp.build.cache_dir` like the kernels - and returns the callback's address.
It returns None, and the run uses the ctypes callback (:class:`~ptopipe.cpp.abi.Dispatcher`,
the same decoding and the same prepared calls), when ``Python.h`` is not installed, when the
bridge does not build, or when ``PTOPIPE_CPP_BRIDGE=0`` asks for the ctypes path.
"""
from __future__ import annotations

import ctypes
import functools
import hashlib
import os
import subprocess
import sys
import sysconfig
import tempfile

from .build import cache_dir, compiler_args, find_compiler

SOURCE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "bridge.cpp")
FLAGS = ("-std=c++17", "-O2", "-fPIC", "-shared", "-fvisibility=hidden")
#: the environment variable that turns the bridge off (``0``): every call then goes through ctypes
ENV = "PTOPIPE_CPP_BRIDGE"


def python_include() -> str | None:
    """The directory holding this interpreter's ``Python.h``, or None when it is not installed."""
    inc = sysconfig.get_paths().get("include")
    return inc if inc and os.path.exists(os.path.join(inc, "Python.h")) else None


def enabled() -> bool:
    return os.environ.get(ENV, "1") != "0"


def library() -> str | None:
    """The bridge's shared library (built or from the cache), or None when it cannot be built."""
    inc = python_include()
    if inc is None:
        return None
    cxx, version = find_compiler()
    with open(SOURCE, "rb") as f:
        src = f.read()
    flags = compiler_args() + list(FLAGS) + ["-I", inc]
    if sys.platform == "darwin":
        flags += ["-undefined", "dynamic_lookup"]   # the interpreter's symbols come from the process
    key = hashlib.sha256(b"\0".join([src, sys.version.encode(), str(sysconfig.get_config_var("SOABI")).encode(),
                                     inc.encode(), cxx.encode(), (version or "").encode(),
                                     " ".join(flags).encode()])).hexdigest()[:32]
    out_dir = cache_dir()
    lib = os.path.join(out_dir, f"bridge{key}.so")
    if os.path.exists(lib):
        return lib
    fd, tmp = tempfile.mkstemp(suffix=".so", dir=out_dir)
    os.close(fd)
    try:
        r = subprocess.run([cxx, *flags, SOURCE, "-o", tmp], capture_output=True, text=True)
        if r.returncode != 0:
            return None                 # (headers of another interpreter, an old compiler): ctypes
        os.replace(tmp, lib)            # atomic: a concurrent build of the same key is harmless
    finally:
        if os.path.exists(tmp):
            os.unlink(tmp)
    return lib


def callback_address(path: str | None) -> int | None:
    """The address of the bridge's callback in library ``path`` (loaded into this process
    once), or None for None."""
    return None if path is None else _callback(path)


@functools.lru_cache(maxsize=8)
def _callback(path: str) -> int:
    # a library is loaded once per process (dlopen keeps it): its address is fixed
    lib = ctypes.PyDLL(path)
    lib.ptopipe_bridge_callback.restype = ctypes.c_void_p
    return lib.ptopipe_bridge_callback()
