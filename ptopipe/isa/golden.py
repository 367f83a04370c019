"""The numpy golden: :func:`compare` a run's outputs with the expected arrays, and on a
mismatch explain it - the last writer (core, instruction, line, ring slot) of each output's
first wrong element and the rows of the output no write reached (and, for several blocks, the
rows each block wrote), from a re-run that records GM writes, or what the checkers of that
re-run find (the unordered access behind a result that depends on the schedule) - and keep
the run's warnings with it."""
from __future__ import annotations

from typing import TYPE_CHECKING, Callable

import numpy as np

from ..errors import MismatchError, PtoPipeError
from ..sim.race import clipped_ranges
from .checks import WriteRecorder

if TYPE_CHECKING:
    from .launch import RunResult


def compare_launches(res: RunResult, expected: dict, rtol: float, atol: float, label: str = "",
                     rerun: Callable | None = None) -> None:
    """:func:`compare` the outputs of every launch of ``res`` (one launch: its outputs);
    ``rerun`` returns the same run with ``record_writes=True``, for naming the last writer
    of a wrong element (one launch only: the writes of an earlier launch are not kept).  A
    run of one block whose kernel asked for its block index says so in the mismatch's details
    (a kernel written for N blocks computes 1/N of its output at one)."""
    try:
        if len(res.launches) > 1:
            for k, outs in enumerate(res.launches, 1):
                compare(outs, expected, rtol, atol, f"{label} (launch {k} of {len(res.launches)})")
        else:
            compare(res.outputs, expected, rtol, atol, label, rerun=rerun)
    except MismatchError as e:
        s = res.summary
        for what, loc in s.leaks:       # (what the run warned about often is the cause)
            e.add_detail(f"the run warned: {what}" + (f" ({loc})" if loc else ""))
        if s.blocks == 1 and s.asked_block:
            e.add_detail("the kernel asked for its block index (get_block_idx / get_block_num) and ran as block "
                         "0 of 1: a kernel written for N blocks computes only block 0's share - run its N blocks "
                         "with blocks=N (--blocks N)")
        raise


def compare(outputs: dict, expected: dict, rtol: float, atol: float, label: str = "",
            rerun: Callable | None = None) -> None:
    """Raise :class:`MismatchError` if ``outputs`` differ from ``expected``.  ``rerun``, if
    given, runs the same kernel again with ``record_writes=True`` (only on a mismatch): the
    error then names the last writer (core, instruction, line, ring slot) of the first wrong
    element of each output, and its ``where`` is the first such line."""
    bad, first_bad, golden_wrong, rounded = [], [], [], []
    for k, exp in expected.items():
        got = outputs.get(k)
        if got is None:
            bad.append(f"{k}: no such output")
            golden_wrong.append(f"make it name only the kernel's arguments ({', '.join(outputs)}), not {k!r}")
            continue
        exp = np.asarray(exp)
        if got.shape != exp.shape:
            bad.append(f"{k}: shape {got.shape} != expected {exp.shape}")
            golden_wrong.append(f"make it return {k} with its argument's shape {got.shape} (the "
                                "kernel writes into the array make_args gives, whose shape it cannot change)")
            continue
        if _equal(got, exp, rtol, atol):
            continue                   # (a tenth of the float64 comparison of a long output)
        g, e = got.astype(np.float64), exp.astype(np.float64)
        ok = np.isclose(g, e, rtol=rtol, atol=atol)
        if not ok.all():
            idx = np.argwhere(~ok)
            first = tuple(int(i) for i in idx[0])
            bad.append(f"{k}: {len(idx)} of {ok.size} elements differ (max abs err "
                       f"{np.max(np.abs(g - e)):.4g}); first at {first}: got {g[first]:.6g}, "
                       f"expected {e[first]:.6g}")
            first_bad.append((k, first, int(np.ravel_multi_index(first, got.shape)) if got.ndim else 0,
                              got.dtype.itemsize, got.shape))
            why = _golden_rounding(k, got, exp, rtol, atol)
            if why is not None:
                bad[-1] += f" - {why}"
                golden_wrong.append(f"compute {k} in {got.dtype}, the output's dtype, not {exp.dtype}")
                rounded.append(k)
    if bad:
        fixes = ([f"check the golden: {'; '.join(golden_wrong)}"] if golden_wrong else []) \
            + (["compare the kernel's tiling, offsets and split mode with the golden"]
               if any(k not in rounded for k, *_ in first_bad) else [])
        err = MismatchError(f"{label} does not match the numpy golden", details="\n".join(bad),
                            fix="; ".join(fixes))
        if rerun is not None and first_bad:
            _explain_mismatch(err, first_bad, rerun)
        raise err


def _golden_rounding(k: str, got: np.ndarray, exp: np.ndarray, rtol: float, atol: float) -> str | None:
    """Why output ``k`` differs when the golden's float dtype is less precise than the output's
    and the output, rounded to it, matches: the golden's rounding alone (a float16 golden of a
    float32 output), not the kernel - None otherwise."""
    if got.dtype.kind != "f" or exp.dtype.kind != "f" or exp.dtype.itemsize >= got.dtype.itemsize:
        return None
    with np.errstate(all="ignore"):
        near = got.astype(exp.dtype).astype(np.float64)
    if not np.isclose(near, exp.astype(np.float64), rtol=rtol, atol=atol).all():
        return None
    return (f"the golden's {k} is {exp.dtype} and the output {got.dtype}: rounded to {exp.dtype}, the "
            "output matches it (the difference is the golden's rounding)")


def _equal(got: np.ndarray, exp: np.ndarray, rtol: float, atol: float) -> bool:
    """Whether every element of ``got`` equals the expected one: then each is close to it
    (numpy compares in a type both convert to exactly, or in float64 as the comparison below
    does; NaNs are never equal, so they take the comparison below).  numpy 2's isclose counts
    equal elements as close whatever the tolerances, numpy 1's only for tolerances >= 0."""
    if not (rtol >= 0 and atol >= 0):
        return False
    try:
        return bool(np.array_equal(got, exp))
    except TypeError:                  # no elementwise ==: left to the comparison below
        return False


def _explain_mismatch(err: MismatchError, first_bad: list, rerun: Callable) -> None:
    """Name the last writer of each output's first wrong element (a re-run that records
    GM writes; the kernel is deterministic for one schedule)."""
    try:
        res = rerun()
    except PtoPipeError as e:
        # the re-run has the checkers on: what they find (e.g. the unordered access behind a
        # result that depends on the schedule under --no-checks) is the cause of the mismatch
        err.add_detail(f"a re-run with the checkers on finds the cause: {type(e).__name__}: {e.what}"
                       + (f" (at {e.where})" if e.where else ""))
        err.findings.append({"kind": "mismatch_cause", "error": type(e).__name__, "what": e.what,
                             "where": e.where})
        if err.where is None:
            err.where = e.where
        if e.fix:
            err.fix = e.fix
        return
    # the blocks ran in order on one GM: the last writer is the last block's that wrote
    clusters = [c for c in (res.clusters or [res.cluster]) if isinstance(c.checker, WriteRecorder)]
    if not clusters:
        return
    cl = clusters[0]
    args = {name: lo for name, lo, _hi in cl.context.gm_args}
    many = len(clusters) > 1
    for k, first, flat, item, shape in first_bad:
        if k not in args:
            continue
        for text in _coverage(k, shape, item, args[k], clusters):
            err.add_detail(text)
        addr = args[k] + flat * item
        w, cl = None, clusters[0]
        for c in reversed(clusters):
            w = c.checker.last_writer(addr)
            if w is not None:
                cl = c
                break
        ring = _ring_at(cl, addr)
        if w is None:
            text = f"{k}{list(first)} (GM {addr:#x}) was never written by the kernel"
        else:
            via = f" into slot {w['ring'][1]} of {w['ring'][0]}" if w["ring"] else ""
            by = f"block {cl.block}'s {w['core']}" if many else w["core"]
            text = f"{k}{list(first)} (GM {addr:#x}) was last written by {by} {w['op']}{via} at {w['where']}"
            if err.where is None:
                err.where = w["where"]
        if ring is not None and (w is None or not w["ring"]):
            text += f"; these bytes are slot {ring[1]} of {ring[0]}'s GM ring"
        err.findings.append({"kind": "mismatch_writer", "output": k, "index": list(first), "addr": addr,
                             "writer": w, "ring": ring})
        err.add_detail(text)


def _coverage(k: str, shape: tuple, item: int, base: int, clusters: list) -> list:
    """What the recorded writes of ``clusters`` (one per block) covered of output ``k`` (at GM
    ``base``): the rows (first axis; elements of a 1-D output) no write reached at all, and
    for several blocks the rows each block wrote - a block that missed its share, or two
    writing the same rows, shows there."""
    if not shape:
        return []
    n = int(np.prod(shape)) * item
    row = n // shape[0]
    word = "rows" if len(shape) > 1 else "elements"
    masks = []
    for c in clusters:
        m = np.zeros(n, bool)
        for lo, hi, rows, *_ in c.checker.writes:
            if lo < base + n and hi > base:
                for a, b in clipped_ranges(lo, hi, rows, base, base + n):
                    m[a - base:b - base] = True
        masks.append(m.reshape(shape[0], row))
    wrote = np.logical_or.reduce(masks)
    out = []
    never = np.flatnonzero(~wrote.any(1))
    part = np.flatnonzero(wrote.any(1) & ~wrote.all(1))
    if len(never):
        out.append(f"{k}: {word} {_spans(never)} (of 0..{shape[0] - 1}) were never written")
    if len(part):
        out.append(f"{k}: {word} {_spans(part)} were written only in part")
    if len(masks) > 1:
        out.append(f"{k}: {word} written by each block: "
                   + "; ".join(f"block {b} {_spans(np.flatnonzero(m.any(1)))}" for b, m in enumerate(masks)))
    return out


def _spans(ix, most: int = 8) -> str:
    """Sorted indices as ranges: ``0..15, 32..47`` (the first ``most``; ``none`` if empty)."""
    if not len(ix):
        return "none"
    cuts = np.flatnonzero(np.diff(ix) != 1) + 1
    runs = [(int(r[0]), int(r[-1])) for r in np.split(np.asarray(ix), cuts)]
    text = ", ".join(f"{a}..{b}" if a != b else f"{a}" for a, b in runs[:most])
    return text + (f", ... ({len(runs) - most} more)" if len(runs) > most else "")


def _ring_at(cluster, addr: int):
    """(pipe name, slot) of the GM ring slot holding byte ``addr``, or None."""
    for ch in cluster.state.channels.values():
        if ch.gm_base is not None and ch.gm_base <= addr < ch.gm_base + ch.slot_num * ch.slot_size:
            return ch.name, (addr - ch.gm_base) // ch.slot_size
    return None
