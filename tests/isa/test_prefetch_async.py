"""TPREFETCH_ASYNC (pto-isa's L2 prefetch through the SDMA engine): no data changes; a submitted
prefetch drains the core's pipes (its pipe_barrier(PIPE_ALL)); the empty event where the device
submits nothing (no workspace, a tensor that is not one flat line), with a warning saying why;
its UB scratch at 0x0 over bytes the kernel wrote is a warning; the Cube has no UB for it."""
from __future__ import annotations

import numpy as np
import pytest

import ptopipe
from ptopipe import KernelError
from ptopipe.isa import *  # noqa: F403

from markers import line_of

pytestmark = pytest.mark.usefixtures("no_hang")


def prefetch_kernel(ws_arg: bool, view, at: int):
    def k(x, big, ws, out, ends):
        if get_subblockid():
            return
        t = Tile(TileType.Vec, np.float32, 1, 256, addr=at)
        b = Tile(TileType.Vec, np.float32, 64, 256, addr=0x2000)
        u = Tile(TileType.Vec, np.float32, 1, 64, addr=0x12000)
        TLOAD(t, x)
        loaded = TLOAD(b, big)                  # (a long one: ~1100 cycles on MTE2)
        ctx = PrefetchAsyncContext(ws.data() if ws_arg else None)
        e = TPREFETCH_ASYNC(view(x), ctx)  # PREFETCH
        after = TEXPANDS(u, 1.0)
        assert e.Wait(ctx.GetSession())
        ends.append((e.valid(), loaded.end, after.end))
        TSTORE(out, t)
    return k


def run(kernel, ends):
    x = np.arange(256, dtype=np.float32)
    args = dict(x=x, big=np.zeros((64, 256), np.float32), ws=np.zeros(64, np.uint8), out=np.zeros((1, 256), np.float32),
                ends=ends)
    return ptopipe.run(aiv=kernel, args=args, platform="a5")


def flat(x):
    return x


def lines(x):
    return GlobalTensor(x.data(), (1, 1, 1, 2, 128))


@pytest.mark.parametrize("ws,view,at,valid,warns", [
    (True, flat, 0x100, True, []),
    (False, flat, 0x100, False, ["submits nothing and returns an empty event (valid() false): the context has no SDMA "
                                 "workspace"]),
    (True, lines, 0x100, False, ["the tensor is not one flat contiguous line"]),
    (True, flat, 0x0, True, ["its context's SDMA scratch is UB 0x0..0xff (pto-isa's PrefetchAsyncContext::"
                             "scratchTile), where this kernel wrote bytes before"])])
def test_no_data_changes_and_a_submitted_prefetch_drains_the_pipes(ws, view, at, valid, warns):
    ends = []
    r = run(prefetch_kernel(ws, view, at), ends)
    np.testing.assert_array_equal(r.outputs["out"][0], np.arange(256, dtype=np.float32))
    (got_valid, loaded, after), = ends
    assert got_valid is valid
    # the V op after it waits for the TLOAD before it (the pipe_barrier(PIPE_ALL)) - only when submitted
    assert (after > loaded) is valid, (loaded, after)
    texts = [w for w, _ in r.summary.leaks if "TPREFETCH_ASYNC" in w]
    assert len(texts) == len(warns) and all(a in t for a, t in zip(warns, texts)), texts
    line = line_of(prefetch_kernel, "PREFETCH")
    assert all(str(where).endswith(f":{line}") for w, where in r.summary.leaks if "TPREFETCH_ASYNC" in w)


def test_the_cube_has_no_ub_for_its_scratch():
    def k(x, ws):
        TPREFETCH_ASYNC(x, PrefetchAsyncContext(ws.data()))  # CUBE
    with pytest.raises(KernelError) as ei:
        ptopipe.run(aic=k, args=dict(x=np.zeros(64, np.float32), ws=np.zeros(64, np.uint8)), platform="a2a3")
    assert "TPREFETCH_ASYNC on AIC: its context keeps the SDMA bookkeeping in a UB scratch tile" in ei.value.what
    assert ei.value.where.endswith(f":{line_of(k, 'CUBE')}"), ei.value.where
