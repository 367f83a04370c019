"""A tile read with bytes no instruction of the launch wrote is a run warning at the reading
instruction's line (isa.unwritten), with the checkers on, whatever the front end: the run goes on
and computes what the simulator's zeroed memory gives (the device's holds stale data).  Bytes are
what counts (an alias at the same address written is the tile written); a TPUSH warns only when
nothing wrote any byte of its tile; an empty valid region reads nothing; a relaunch's tiles are
not the previous launch's to read."""
from __future__ import annotations

import numpy as np
import pytest

import ptopipe
from ptopipe.isa import *  # noqa: F403

from markers import line_of

N = 16
X = np.arange(N * N, dtype=np.float32).reshape(N, N)
SLOT = N * N * 4


def add_bias(x, y, how="unloaded"):
    """y = x + b over three steps; ``how`` the bias is made: never ("unloaded"), loaded,
    filled under another name at the same bytes ("alias"), or with an empty valid region."""
    t = Tile(TileType.Vec, float32, N, N, addr=0)
    b = Tile(TileType.Vec, float32, N, N, addr=0x1000, name="b")
    TLOAD(t, x)
    if how == "loaded":
        TLOAD(b, x)
    elif how == "alias":
        TEXPANDS(Tile(TileType.Vec, float32, N, N, addr=0x1000), 1.0)
    elif how == "empty":
        t.SetValid(0, N)
        b.SetValid(0, N)
    for _ in range(3):
        TADD(t, t, b)                                   # ADD
    t.SetValid(N, N)
    TSTORE(y, t)


def _run(how, **kw):
    return ptopipe.run(None, (lambda x, y: add_bias(x, y, how), None), dict(x=X, y=np.zeros_like(X)), **kw)


def _unwritten(res) -> list:
    return [(what, loc) for what, loc in res.summary.leaks if "before anything wrote" in what]


@pytest.mark.parametrize("timing", [True, False])
def test_a_tile_nothing_wrote_is_a_warning_at_the_read_once_and_the_run_goes_on(timing):
    res = _run("unloaded", timing=timing)
    np.testing.assert_array_equal(res.outputs["y"], X)               # x + 0 (the device: x + garbage)
    (what, loc), = _unwritten(res)
    assert what.startswith("TADD reads b (Vec tile 'b' float32 16x16 @AIV0.UB[0x1000]) before anything "
                           "wrote its bytes"), what
    assert str(loc).endswith(f"test_unwritten.py:{line_of(add_bias, 'ADD')}"), loc


@pytest.mark.parametrize("timing", [True, False])
@pytest.mark.parametrize("how, y", [("loaded", 4 * X), ("alias", X + 3), ("empty", X)])
def test_bytes_written_under_any_name_or_no_bytes_read_are_no_warning(how, y, timing):
    res = _run(how, timing=timing)
    np.testing.assert_array_equal(res.outputs["y"], y)
    assert not res.summary.leaks


def test_the_checkers_off_run_does_not_look():
    assert not _run("unloaded", checks=False).summary.leaks


def test_each_launch_writes_its_own_tiles():
    """The second launch reads the bias the first one loaded (its UB carried over): on the
    device another kernel may have run between them."""
    launch = []

    def kernel(x, y):
        launch.append(1)
        add_bias(x, y, "loaded" if len(launch) == 1 else "unloaded")
    res = ptopipe.run(None, (kernel, None), dict(x=X, y=np.zeros_like(X)), launches=2)
    (what, loc), = _unwritten(res)
    assert "TADD reads b" in what and str(loc).endswith(f":{line_of(add_bias, 'ADD')}")


def cube(a, fifo, push):
    """Pushes ``push``: the product (a 16x12 matmul pushed with its whole 16x16 valid shape, as
    pypto widens it), or an Acc tile nothing wrote."""
    pipe = TPipe(0, DIR_C2V, SLOT, 2, peers=(0,))(fifo, 0x8000)
    am = Tile(TileType.Mat, float32, N, N, addr=0)
    left = Tile(TileType.Left, float32, N, N, addr=0)
    right = Tile(TileType.Right, float32, N, N, addr=0, valid_cols=12)
    acc = Tile(TileType.Acc, float32, N, N, addr=0, valid_cols=12)
    TLOAD(am, a)
    TMOV(left, am)
    am.SetValid(N, 12)
    TMOV(right, am)
    TMATMUL(acc, left, right)
    acc.SetValid(N, N)
    TPUSH(pipe, acc if push == "product" else Tile(TileType.Acc, float32, N, N, addr=0x4000), TILE_NO_SPLIT)  # PUSH


def vector(out, fifo):
    pipe = TPipe(0, DIR_C2V, SLOT, 2, peers=(0,))(fifo, 0x8000)
    t = Tile(TileType.Vec, float32, N, N)
    TPOP(pipe, t, TILE_NO_SPLIT)
    TSTORE(out, t)
    TFREE(pipe)


@pytest.mark.parametrize("timing", [True, False])
@pytest.mark.parametrize("push", ["product", "nothing"])
def test_a_push_warns_only_when_nothing_wrote_its_tile(push, timing):
    a = np.eye(N, dtype=np.float32)
    res = ptopipe.run(lambda a, fifo: cube(a, fifo, push), (vector, None),
                      dict(a=a, out=np.zeros_like(a), fifo=ptopipe.gm_buffer(2 * SLOT)), timing=timing)
    found = _unwritten(res)
    if push == "product":
        assert not found                # the part the matmul wrote is what the consumer uses
    else:
        (what, loc), = found
        assert what.startswith("TPUSH reads a tile (Acc tile float32 16x16 @AIC.L0C[0x4000])"), what
        assert str(loc).endswith(f":{line_of(cube, 'PUSH')}")


def moved(x, y, how):
    """A tile loaded, then moved to other bytes (TASSIGN) or widened past what was loaded
    (SetValid), then read."""
    t = Tile(TileType.Vec, float32, N, N, addr=0, valid_cols=12)
    o = Tile(TileType.Vec, float32, N, N, addr=0x4000, valid_cols=12)
    TLOAD(t, GlobalTensor(x.data(), (N, 12), (N, 1)))
    if how == "assigned":
        TASSIGN(t, 0x2000)
    else:
        t.SetValid(N, N)
        o.SetValid(N, N)
    TADDS(o, t, 1.0)                                    # READ
    TSTORE(y, o)


@pytest.mark.parametrize("how", ["assigned", "widened"])
def test_a_tile_moved_or_widened_past_its_written_bytes_is_read_unwritten(how):
    res = ptopipe.run(None, (lambda x, y: moved(x, y, how), None), dict(x=X, y=np.zeros_like(X)))
    (what, loc), = _unwritten(res)
    assert what.startswith("TADDS reads a tile") and str(loc).endswith(f":{line_of(moved, 'READ')}")


def views(x, y, how):
    """``col``'s bytes written through another view of them: a TRESHAPE in place (it moves
    nothing), or ``.array`` (a Python test's shortcut); a TRESHAPE to other bytes reads them."""
    col = Tile(TileType.Vec, float32, N, 1, addr=0x1000)
    row = Tile(TileType.Vec, float32, 1, N, addr=0x1000 if how == "in place" else 0x2000)
    o = Tile(TileType.Vec, float32, N, 1, addr=0x3000)
    if how == "array":
        col.array[...] = 2.0
    else:
        TRESHAPE(row, col)                              # RESHAPE
        TEXPANDS(col if how == "copy" else row, 2.0)
    TADDS(o, col, 1.0)
    TSTORE(y, o)


@pytest.mark.parametrize("timing", [True, False])
@pytest.mark.parametrize("how", ["in place", "array", "copy"])
def test_bytes_set_through_a_view_are_written_a_reshape_to_other_bytes_reads(how, timing):
    res = ptopipe.run(None, (lambda x, y: views(x, y, how), None), dict(x=X, y=np.zeros((N, 1), np.float32)),
                      timing=timing)
    np.testing.assert_array_equal(res.outputs["y"], np.full((N, 1), 3, np.float32))
    found = _unwritten(res)
    if how == "copy":
        (what, loc), = found
        assert what.startswith("TRESHAPE reads a tile") and str(loc).endswith(f":{line_of(views, 'RESHAPE')}")
    else:
        assert not found


def add_bias_manual(x, y):
    """``add_bias`` with its own events (manual synchronisation: the issue path is PipeSync's)."""
    t = Tile(TileType.Vec, float32, N, N, addr=0)
    b = Tile(TileType.Vec, float32, N, N, addr=0x1000, name="b")
    TLOAD(t, x)
    set_flag(PIPE_MTE2, PIPE_V, EVENT_ID0)
    wait_flag(PIPE_MTE2, PIPE_V, EVENT_ID0)
    TADD(t, t, b)                                       # ADD-MANUAL
    set_flag(PIPE_V, PIPE_MTE3, EVENT_ID0)
    wait_flag(PIPE_V, PIPE_MTE3, EVENT_ID0)
    TSTORE(y, t)


def test_a_kernel_ordering_its_own_pipes_is_checked_alike():
    res = ptopipe.run(None, (add_bias_manual, None), dict(x=X, y=np.zeros_like(X)), sync="manual")
    np.testing.assert_array_equal(res.outputs["y"], X)
    (what, loc), = _unwritten(res)
    assert what.startswith("TADD reads b") and str(loc).endswith(f":{line_of(add_bias_manual, 'ADD-MANUAL')}")


def reduce_then_read(x, y, how):
    """A row (column) reduction writes one value per row (column) into column 0 (row 0) of its
    result; the result is then read whole: a TROWEXPANDSUB taking an [R, 8] result as its
    32-byte block per row (``how`` "row block"), a TADDS of a [2, N] column result ("col rows"),
    an arg reduction's [R, 8] index tile ("arg block") - or a result of exactly the written part
    ("row DN", "col row"), which is read whole without a warning."""
    t = Tile(TileType.Vec, float32, N, N, addr=0)
    tmp = Tile(TileType.Vec, float32, N, N, addr=0x1000)
    o = Tile(TileType.Vec, float32, N, N, addr=0x2000)
    TLOAD(t, x)
    if how in ("row block", "row DN"):
        r = Tile(TileType.Vec, float32, N, 8, addr=0x3000) if how == "row block" else \
            Tile(TileType.Vec, float32, N, 1, addr=0x3000, blayout=BLayout.ColMajor)
        TROWMAX(r, t, tmp)                              # REDUCE
        TROWEXPANDSUB(o, t, r)                          # READ-ROW
        TSTORE(y, o)
    elif how == "arg block":
        i = Tile(TileType.Vec, int32, N, 8, addr=0x3000)
        TROWARGMAX(i, t, tmp)
        TCVT(Tile(TileType.Vec, float32, N, 8, addr=0x2000), i)   # READ-ARG
    else:
        c = Tile(TileType.Vec, float32, 2 if how == "col rows" else 1, N, addr=0x3000)
        TCOLSUM(c, t)
        TADDS(c, c, 1.0)                                # READ-COL


@pytest.mark.parametrize("timing", [True, False])
@pytest.mark.parametrize("how, mark", [("row block", "READ-ROW"), ("col rows", "READ-COL"), ("arg block", "READ-ARG"),
                                       ("row DN", None), ("col row", None)])
def test_a_reduction_writes_only_its_result_column_or_row(how, mark, timing):
    """pto-isa's TROWMAX writes dst[i, 0] (docs/isa/TROWMAX.md): an [R, 8] result read as the
    32-byte block of each row (TROWEXPANDSUB's mode 2) reads 7 columns nothing wrote - stale
    data on the device - and is a warning at that read; a result tile of the written part is not."""
    res = ptopipe.run(None, (lambda x, y: reduce_then_read(x, y, how), None),
                      dict(x=X, y=np.zeros_like(X)), timing=timing)
    found = _unwritten(res)
    if mark is None:
        assert not found, found
        return
    (what, loc), = found
    assert "before anything wrote its bytes" in what, what
    assert str(loc).endswith(f":{line_of(reduce_then_read, mark)}"), loc
