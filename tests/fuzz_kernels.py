"""Random cross-core kernels for the fuzz test (tests/test_fuzz.py) and the long fuzz run
(benchmarks/fuzz.py): one generator, shared by both.

:func:`kernel_specs` (fuzz_spec) draws a kernel, :func:`render` (fuzz_render) writes it as
the source of a self-contained module, which is written to a file and imported, so every
report names a real ``file:line``.  :func:`check_kernel` (here) runs it and checks:

* the only exception is a :class:`ptopipe.PtoPipeError` naming a line of the kernel file;
* no hang: every run has an instruction budget, and each kernel a wall-clock alarm;
* a clean kernel (no mutation) runs without error, its outputs equal the numpy golden,
  bit for bit, with the checkers on and off, under another schedule seed (another
  interleaving of the cores) and without the timing model;
* a mutated kernel that runs without error gives the same data with the checkers on and
  off, and equals the golden when the mutation does not change what is computed (a
  dropped/early/double TFREE); a mutation that must be reported (extra TPOP/TPUSH, a
  skipped peer) is.
* ``ptopipe check`` agrees, and ``ptopipe trace`` / ``run --report`` work on clean kernels.
"""
from __future__ import annotations

import contextlib
import os
import re
import signal
import tempfile
import types

import numpy as np

import ptopipe
from fuzz_render import render
from fuzz_spec import (MAX_INSTRUCTIONS, MUST_FAIL, MUTATIONS,
                       PLATFORMS, PROTOCOLS, SAME_RESULT, KernelSpec,
                       PipeSpec, golden, kernel_specs)

__all__ = ["MUTATIONS", "PLATFORMS", "PROTOCOLS", "Finding",
           "KernelSpec", "PipeSpec", "check_kernel", "golden", "kernel_specs", "render"]


# -- running and judging --------------------------------------------------------------------------
class Finding(AssertionError):
    """A property of the fuzz failed; the message carries the reproducer."""


def write_kernel(spec: KernelSpec, directory: str | None = None) -> str:
    """Write the kernel module next to a copy-free import of this module; returns its path."""
    d = directory or tempfile.mkdtemp(prefix="ptopipe-fuzz-")
    path = os.path.join(d, "fuzz_kernel.py")
    with open(path, "w") as f:
        f.write(render(spec))
    return path


def load(path: str):
    """Import the kernel file (compiled from its text: no stale bytecode cache when a path
    is rewritten within the same second)."""
    mod = types.ModuleType("fuzz_kernel")
    mod.__file__ = path
    with open(path) as f:
        exec(compile(f.read(), path, "exec"), mod.__dict__)
    return mod


def _run(mod, spec: KernelSpec, checks: bool, **kw):
    args = mod.make_args(np.random.default_rng(spec.data_seed))
    try:
        res = ptopipe.run(mod.cube, mod.vector, args, platform=spec.platform, protocol=spec.protocol,
                          max_instructions=MAX_INSTRUCTIONS, checks=checks, **kw)
    except ptopipe.PtoPipeError as e:
        return args, None, e
    return args, {k: np.array(v) for k, v in res.outputs.items()}, None


_LOC = re.compile(r"(\S+\.py):(\d+)")


def _located(err, path: str, n_lines: int) -> bool:
    """Does the error name a line of the kernel file?"""
    base = os.path.basename(path)
    for f, ln in _LOC.findall(f"{err.where or ''}"):
        if os.path.basename(f) == base and 1 <= int(ln) <= n_lines:
            return True
    return False


WALL_SECONDS = 60          # for every run of one kernel together: far above the ~10 ms they take


@contextlib.contextmanager
def _alarm(seconds: int, what):
    """Fail instead of hanging (SIGALRM: main thread on POSIX; elsewhere no alarm)."""
    def boom(*_):
        raise what()
    try:
        old = signal.signal(signal.SIGALRM, boom)
    except (ValueError, AttributeError):       # not the main thread / no SIGALRM
        yield
        return
    signal.alarm(seconds)
    try:
        yield
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, old)


def check_kernel(spec: KernelSpec, directory: str | None = None, cli: bool = True) -> str:
    """Run ``spec`` with the checkers on and off and check every property; returns
    "clean" or the error class name.  Raises :class:`Finding` with a reproducer.  With
    ``cli``, also ``ptopipe check FILE --schedules 2``: exit 0 for a clean kernel, 1 naming a
    kernel line for a failing one, never a traceback; and for a clean kernel ``ptopipe trace``
    and ``ptopipe run --report`` write a trace JSON and an HTML report."""
    path = write_kernel(spec, directory)
    with _alarm(WALL_SECONDS, lambda: Finding(f"the kernel did not finish within {WALL_SECONDS} s (a hang)\n"
                                              f"kernel: {path}\nspec: {spec!r}")):
        return _check(spec, path, cli)


def _check(spec: KernelSpec, path: str, cli: bool) -> str:
    src = open(path).read()
    n_lines = src.count("\n") + 1
    mod = load(path)

    def finding(what: str) -> Finding:
        return Finding(f"{what}\nkernel: {path}\nreproduce: PYTHONPATH=<repo>:<repo>/tests python {path}\n"
                       f"spec: {spec!r}\n--- kernel source ---\n{src}")

    results = {}
    for checks in (True, False):
        try:
            results[checks] = _run(mod, spec, checks)
        except Exception as e:           # anything but a PtoPipeError is a finding
            import traceback
            raise finding(f"checks={checks}: {type(e).__name__} is not a PtoPipeError: {e}\n"
                          + traceback.format_exc()) from e
    args, out_on, err_on = results[True]
    _, out_off, err_off = results[False]
    for err in (err_on, err_off):
        if err is not None and not _located(err, path, n_lines):
            raise finding(f"{type(err).__name__} without a location in the kernel (where={err.where!r}): {err}")
    name = spec.mutation[0] if spec.mutation else None
    if err_on is None:
        if name in MUST_FAIL:
            raise finding(f"mutation {name} ran without an error")
        if err_off is not None:
            raise finding(f"clean with checkers on but {type(err_off).__name__} with checkers off: {err_off}")
        for k in out_on:
            if out_on[k].tobytes() != out_off[k].tobytes():
                raise finding(f"output {k} differs between checkers on and off")
        # the same module again: another interleaving of the cores, and without the timing model
        for kw in ({"schedule_seed": spec.data_seed}, {"timing": False}):
            try:
                _, out, err = _run(mod, spec, True, **kw)
            except Exception as e:
                raise finding(f"{kw}: {type(e).__name__} is not a PtoPipeError: {e}") from e
            if err is not None:
                raise finding(f"clean with the default schedule but {type(err).__name__} with {kw}: {err}")
            for k in out_on:
                if out_on[k].tobytes() != out[k].tobytes():
                    raise finding(f"output {k} differs with {kw}")
        if spec.clean or name in SAME_RESULT:
            exp = golden(spec, args)
            for k, e in exp.items():
                if out_on[k].shape != e.shape or not np.array_equal(out_on[k], e):
                    bad = np.argwhere(out_on[k] != e)[:3].tolist() if out_on[k].shape == e.shape else "shape"
                    raise finding(f"output {k} differs from the numpy golden (first at {bad})")
        if cli:
            _check_cli(path, spec, None, finding)
        return "clean"
    if spec.clean:
        raise finding(f"a clean kernel raised {type(err_on).__name__}: {err_on}")
    if cli:
        _check_cli(path, spec, err_on, finding)
    return type(err_on).__name__


def _check_cli(path, spec, err, finding) -> None:
    """``ptopipe check`` on the kernel file agrees with the API run and shows no traceback."""
    import contextlib
    import io

    from ptopipe.cli import main
    out = io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(out):
        rc = main(["check", path, "--schedules", "2"])
    text = out.getvalue()
    if "Traceback" in text:
        raise finding(f"ptopipe check printed a traceback:\n{text}")
    if err is None and spec.clean:
        # the trace and the HTML report of a clean kernel
        d = os.path.dirname(path)
        trace, html = os.path.join(d, "trace.json"), os.path.join(d, "report.html")
        for f in (trace, html):
            if os.path.exists(f):
                os.remove(f)
        plat = ["--platform", spec.platform, "--protocol", spec.protocol]
        for argv, made in ((["trace", path, "-o", trace] + plat, trace),
                           (["run", path, "--quiet", "--report", html] + plat, html)):
            out = io.StringIO()
            with contextlib.redirect_stdout(out), contextlib.redirect_stderr(out):
                rc = main(argv)
            if rc != 0 or not os.path.exists(made) or "Traceback" in out.getvalue():
                raise finding(f"ptopipe {' '.join(argv)}: exit {rc}, {made} "
                              f"{'written' if os.path.exists(made) else 'missing'}:\n{out.getvalue()}")
        import json
        with open(trace) as f:
            events = json.load(f)
        if not events:
            raise finding(f"ptopipe trace wrote an empty trace: {trace}")
    if err is None and spec.clean and rc != 0:
        raise finding(f"ptopipe check failed (exit {rc}) on a kernel the API runs clean:\n{text}")
    if err is not None:
        base = re.escape(os.path.basename(path))
        if rc != 1 or not re.search(rf"{base}:\d+", text):
            raise finding(f"ptopipe check exit {rc} on a kernel that raises {type(err).__name__}, "
                          f"output without a kernel line:\n{text}")
