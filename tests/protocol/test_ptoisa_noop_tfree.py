"""Where pto-isa's TPOP frees its GM slot itself (A2A3), the tile TFREE is a no-op: a TPOP
without a TFREE or a TFREE without a TPOP runs there - and hangs or breaks on A5 and under
the spec protocol.  The run passes with a portability warning at the line (not
silently), and the spec protocol reports the misuse."""
import numpy as np
import pytest

import ptopipe
from ptopipe.errors import PtoPipeError
from ptopipe.isa import *  # noqa: F403
from markers import line_of

SLOT = 16 * 32 * 4


def kernels(mistake, way=DIR_C2V):
    def cube(x, fifo, n):
        pipe = TPipe(0, way, SLOT, 4, peers=(0,))(fifo, 0x10000, 0)
        m = Tile(TileType.Mat, float32, 16, 32, addr=0)
        a = Tile(TileType.Left, float32, 16, 32, addr=0)
        b = Tile(TileType.Right, float32, 32, 32, addr=0)
        acc = Tile(TileType.Acc, float32, 16, 32, addr=0)
        TLOAD(m, x)
        TMOV(a, m)
        TLOAD(Tile(TileType.Mat, float32, 16, 32, addr=0x2000), x)          # b = [x; x]: its two
        TLOAD(Tile(TileType.Mat, float32, 16, 32, addr=0x2000 + SLOT), x)   # halves' bytes
        TMOV(b, Tile(TileType.Mat, float32, 32, 32, addr=0x2000))
        TMATMUL(acc, a, b)
        for _ in range(n):
            TPUSH(pipe, acc)

    def vector(out, fifo, n):
        pipe = TPipe(0, way, SLOT, 4, peers=(0,))(fifo, 0x10000, 0)
        t = Tile(TileType.Vec, float32, 16, 32)
        for i in range(n):
            if mistake == "early":      # a rotated loop: frees the last tile first, nothing held at i = 0
                TFREE(pipe)                                        # EARLY
            TPOP(pipe, t)                                          # POP
            TSTORE(GlobalTensor(out.data(), (16, 32)), t)
            if mistake not in ("none", "early") and not (mistake == "missing" and i == n - 1) \
                    and not (mistake == "odd" and i % 2 == 0):
                TFREE(pipe)                                        # FREE
            if mistake == "double" and i == 1:
                TFREE(pipe)                                        # EXTRA
    return cube, (vector, None)


@pytest.mark.parametrize("mistake,marker,text,n", [
    ("missing", "POP", "1 of 3 TPOPs of C2V pipe FlagID 0 (peers AIV0) on AIV0 have no TFREE", 3),
    ("double", "EXTRA", "AIV0 TFREEs C2V pipe FlagID 0 (peers AIV0) 4 times after 3 TPOPs", 3),
    ("early", "EARLY", "AIV0's TFREE #1 of C2V pipe FlagID 0 (peers AIV0) has no TPOP to pair (it follows 0 "
                       "TPOP(s) and 0 TFREE(s)): a TFREE before its TPOP", 3),
    # more TPOPs without a TFREE than the run remembers popped tiles: still said at the line
    ("odd", "POP", "70 of 140 TPOPs of C2V pipe FlagID 0 (peers AIV0) on AIV0 have no TFREE", 140)])
def test_a_noop_tfree_mistake_is_a_portability_warning(mistake, marker, text, n):
    cube, aiv = kernels(mistake)
    args = dict(x=np.ones((16, 32), np.float32), out=np.zeros((16, 32), np.float32),
                fifo=ptopipe.gm_buffer(4 * SLOT), n=n)
    res = ptopipe.run(cube, aiv, args, platform="a2a3", protocol="pto-isa")
    hits = [(w, loc) for w, loc in res.summary.leaks if text in w]
    assert len(hits) == 1, res.summary.leaks
    assert "a slot never freed on A5" in hits[0][0] or "a misuse on A5" in hits[0][0]
    assert str(hits[0][1]).endswith(f":{line_of(kernels, marker)}")
    with pytest.raises(PtoPipeError):
        ptopipe.run(cube, aiv, dict(args, out=np.zeros((16, 32), np.float32)), platform="a2a3",
                    protocol="spec")


def test_paired_tfrees_give_no_warning():
    cube, aiv = kernels(None)
    res = ptopipe.run(cube, aiv, dict(x=np.ones((16, 32), np.float32), out=np.zeros((16, 32), np.float32),
                                      fifo=ptopipe.gm_buffer(4 * SLOT), n=3), platform="a2a3", protocol="pto-isa")
    assert not [w for w, _ in res.summary.leaks if "TFREE" in w], res.summary.leaks


def test_check_prints_the_portability_warning(tmp_path, capsys):
    """`ptopipe check` passes such a kernel on A2A3/pto-isa but shows the warning with its
    line (not a bare PASS), also in --json."""
    import json
    import pathlib

    from ptopipe.cli import main as cli_main
    src = pathlib.Path(__file__).read_text().split("\n\n\n@pytest")[0]
    f = tmp_path / "k.py"
    f.write_text(src + '''


def _args(rng, mistake="missing"):
    return dict(x=np.ones((16, 32), np.float32), out=np.zeros((16, 32), np.float32),
                fifo=ptopipe.gm_buffer(4 * SLOT), n=3)


_cube, _aiv = kernels("missing")
SCENARIO = ptopipe.Scenario("noop", _cube, _aiv, _args, lambda a, **_: {}, {"default": {}})
''')
    assert cli_main(["check", str(f), "--platform", "a2a3", "--protocol", "pto-isa", "--schedules", "2"]) == 0
    out = capsys.readouterr().out
    assert "no checker report, 1 warning(s):" in out
    (line,) = [ln for ln in out.splitlines() if ln.startswith("  warning: ")]
    assert "1 of 3 TPOPs of C2V pipe FlagID 0 (peers AIV0) on AIV0 have no TFREE" in line
    assert line.endswith(f"k.py:{line_of(kernels, 'POP')})")
    assert cli_main(["check", str(f), "--platform", "a2a3", "--protocol", "pto-isa", "--schedules", "2",
                     "--json"]) == 0
    (rep,) = json.loads(capsys.readouterr().out)
    assert rep["warnings"][0]["where"].endswith(f"k.py:{line_of(kernels, 'POP')}")


def test_on_a5_a_gm_ring_missing_its_tfree_is_told_where_it_would_leak():
    """On A5 a DIR_C2V_GM ring is the one whose TPOP frees: the warning names A5's
    consumer-local rings (and the spec protocol) as where the slot would never be freed (a
    TFREE there frees the slot a second time: none is the right number)."""
    cube, aiv = kernels("none", DIR_C2V_GM)
    args = dict(x=np.ones((16, 32), np.float32), out=np.zeros((16, 32), np.float32),
                fifo=ptopipe.gm_buffer(4 * SLOT), n=3)
    res = ptopipe.run(cube, aiv, args, platform="a5", protocol="pto-isa")
    (w,) = [w for w, _ in res.summary.leaks if "have no TFREE" in w]
    assert w.endswith("harmless here (pto-isa's TPOP frees the GM slot on a5) but a slot never freed on "
                      "A5's consumer-local rings and the spec protocol"), w


def test_on_a5_the_surplus_credits_of_a_tfree_after_a_gm_tpop_name_that_tfree():
    """A5 pto-isa: the TFREE after a TPOP that freed its GM slot frees it again; the credits
    left at the teardown are reported with the line of that TFREE (the instruction at fault),
    not only at the pipe's construction."""
    from ptopipe.errors import LeakError
    cube, aiv = kernels(None, DIR_C2V_GM)
    args = dict(x=np.ones((16, 32), np.float32), out=np.zeros((16, 32), np.float32),
                fifo=ptopipe.gm_buffer(4 * SLOT), n=3)
    with pytest.raises(LeakError) as ei:
        ptopipe.run(cube, aiv, args, platform="a5", protocol="pto-isa")
    assert "frees the slot a second time: the TFREE at " in str(ei.value), str(ei.value)
    assert f"test_ptoisa_noop_tfree.py:{line_of(kernels, 'FREE')})" in str(ei.value), str(ei.value)


def tmpipe_gm_fifo_kernels():
    """A GM_FIFO TMPipe, depth 8, FiFoSyncT 4, both Vector lanes popping their half of each tile
    (pto-isa's Cube waits for both lanes' flags of a TMPipe), whose consumers TFREE every tile."""
    def mk(acc, t, fifo):
        return TMPipe(0, FIFOType.GM_FIFO, 8, 4, acc, t)(fifo, 0x10000, 0)

    def cube(fifo, n):
        acc = Tile(TileType.Acc, float32, 16, 32, addr=0)
        pipe = mk(acc, Tile(TileType.Vec, float32, 8, 32), fifo)
        for _ in range(n):
            TPUSH(pipe, acc, TILE_UP_DOWN)

    def vector(fifo, n):
        t = Tile(TileType.Vec, float32, 8, 32)
        pipe = mk(Tile(TileType.Acc, float32, 16, 32), t, fifo)
        for _ in range(n):
            TPOP(pipe, t, TILE_UP_DOWN)
            TFREE(pipe, TILE_UP_DOWN)                              # AGAIN
    return cube, vector


def test_on_a5_free_credits_piling_up_from_tfrees_after_gm_tpops_name_that_tfree():
    """A5 pto-isa: the doubled frees of a GM ring's consumer overflow the free flag before the
    teardown counts them; the overflow says why and names the TFREE, as the teardown does."""
    cube, aiv = tmpipe_gm_fifo_kernels()
    with pytest.raises(PtoPipeError) as ei:
        ptopipe.run(cube, aiv, dict(fifo=ptopipe.gm_buffer(8 * SLOT), n=16), platform="a5", protocol="pto-isa")
    e = ei.value
    assert type(e).__name__ == "ProtocolError" and "overflows" in e.what, str(e)
    at = f"test_ptoisa_noop_tfree.py:{line_of(tmpipe_gm_fifo_kernels, 'AGAIN')}"
    assert e.where.endswith(at)
    assert e.what.endswith(f"(pto-isa on A5: a tile TFREE after a TPOP from a GM ring frees the slot a second "
                           f"time: the TFREE at {e.where})"), e.what
    assert e.fix.startswith("do not TFREE tiles popped from a GM ring under pto-isa on A5"), e.fix
