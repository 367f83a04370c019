"""Shared by the C++ kernel tests: the compiler gate, a per-session build cache and the
precompiled header of the tests whose kernels start with ``<pto/pto-inst.hpp>``."""
from __future__ import annotations

import os
import pathlib
import shutil
import subprocess

import pytest

HAVE_CXX = bool(os.environ.get("CXX") and shutil.which(os.environ["CXX"])) or bool(
    shutil.which("g++") or shutil.which("clang++"))
needs_cxx = pytest.mark.skipif(not HAVE_CXX, reason="no C++ compiler (g++ / clang++ / $CXX)")


#: the headers' opt-out of <algorithm>, for kernels that include what they use (as the tests' do)
LEAN = "-DPTOPIPE_NO_STD_ALGORITHM"
#: the tests' kernels are tiny and include what they use: built unoptimised, and linked by gold
#: where it is installed (a sixth of each build's CPU time is the default linker's)
QUICK = " ".join(["-O0", LEAN] + (["-fuse-ld=gold"] if shutil.which("ld.gold") else []))


@pytest.fixture(scope="session", autouse=False)
def cpp_cache(tmp_path_factory):
    """One build cache for the session (each kernel file is compiled once), unless the
    environment names one already."""
    old = os.environ.get("PTOPIPE_CACHE_DIR")
    old_flags = os.environ.get("CXXFLAGS")
    if old is None:
        os.environ["PTOPIPE_CACHE_DIR"] = str(tmp_path_factory.mktemp("cpp_cache"))
    if old_flags is None:
        os.environ["CXXFLAGS"] = QUICK
    yield os.environ["PTOPIPE_CACHE_DIR"]
    if old is None:
        os.environ.pop("PTOPIPE_CACHE_DIR", None)
    if old_flags is None:
        os.environ.pop("CXXFLAGS", None)


#: what :func:`_precompile_pto_inst` made: the session's one set of precompiled headers (the
#: fixtures using it are imported into each test module, and pytest sets them up per module)
_PTO_INST_GCH: dict = {}


def _precompile_pto_inst(directory) -> str | None:
    """The CXXFLAGS that build kernels with ``<pto/pto-inst.hpp>`` precompiled into ``directory``
    (about half of each build's CPU time is parsing it), or None where that is not how the
    builds go: the environment's own CXXFLAGS, a compiler other than g++, or one that cannot
    build it."""
    from ptopipe.cpp import include_dir
    from ptopipe.cpp.build import FLAGS, compiler_args, device_macros, env_words, find_compiler, standard
    from ptopipe.errors import ConfigError
    if os.environ.get("CXXFLAGS") != QUICK:
        return None
    try:
        cxx, version = find_compiler()
    except ConfigError:
        return None
    if "Free Software Foundation" not in (version or ""):
        return None                 # not g++ (clang reads a precompiled header only by -include-pch)
    header = directory / "pto_inst.hpp"
    header.write_text("#include <pto/pto-inst.hpp>\n")
    # g++ tries each file of a .gch directory and uses the one built with the macros of the
    # build at hand (a build whose macros none matches, e.g. a side's, reads the header itself)
    (directory / "pto_inst.hpp.gch").mkdir()
    first = compiler_args()
    for platform in ("a2a3", "a5"):
        # the flags compile_library builds a kernel with, in its order
        flags = [*first, standard(cxx, *first), *FLAGS] + [f"-D{m}" for m in device_macros(platform)] + \
            ["-I", include_dir()] + env_words("CXXFLAGS")
        r = subprocess.run([cxx, *flags, "-x", "c++-header", str(header), "-o",
                            str(directory / "pto_inst.hpp.gch" / platform)], capture_output=True, text=True)
        if r.returncode != 0:
            return None
    return f"{QUICK} -include {header}"


@pytest.fixture
def pto_inst_precompiled(cpp_cache, tmp_path_factory, monkeypatch):
    """For the tests whose kernels all include ``<pto/pto-inst.hpp>`` before anything the header
    reads (so that including it first changes nothing): their builds take it precompiled.
    (Not for kernels that include pto-isa's other headers alone, or whose macros the header reads.)"""
    if not pathlib.Path(cpp_cache).is_relative_to(tmp_path_factory.getbasetemp()):
        return                      # the environment's own build cache: its builds as the user makes them
    if cpp_cache not in _PTO_INST_GCH:
        _PTO_INST_GCH[cpp_cache] = _precompile_pto_inst(tmp_path_factory.mktemp("pch"))
    if _PTO_INST_GCH[cpp_cache] is not None:
        monkeypatch.setenv("CXXFLAGS", _PTO_INST_GCH[cpp_cache])


#: the file I/O a gated test's pto-isa CPU-simulator main reads its inputs and writes its
#: outputs with (``io(path, buffer, bytes, save)``; exit status 3 when a file fails)
SIM_FILE_IO = """
#include <cstdio>
#include <string>
static void io(const std::string &path, void *p, size_t n, bool save)
{
    FILE *f = std::fopen(path.c_str(), save ? "wb" : "rb");
    if (f == nullptr || (save ? std::fwrite(p, 1, n, f) : std::fread(p, 1, n, f)) != n) {
        std::fprintf(stderr, "cannot %s %s\\n", save ? "write" : "read", path.c_str());
        std::exit(3);
    }
    std::fclose(f);
}
"""
