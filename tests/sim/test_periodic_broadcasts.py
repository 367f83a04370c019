"""The fast-forward engine records the row and column broadcasts (the TROWEXPAND* and
TCOLEXPAND* families) and batches their data work: a stream of bias rows, a softmax-like
stream of per-row statistics, and every other form alone are recorded and taken whole, with
the exact engine's outputs, cycles and summary (both platforms, the checkers off and on);
so are the row and column reductions into a wider tile, whose other columns / rows keep
their values, and the compare / select, three-operand and fused forms.  An instruction the engine does not record is named, with its kernel line, as the reason the
run was not fast-forwarded."""
from __future__ import annotations

import numpy as np
import pytest

import ptopipe
from ptopipe.isa import *  # noqa: F403
from markers import line_of
from test_periodic import T, rint, same  # noqa: F401
from test_periodic import engines  # noqa: F401  (the fixture)

N = 300
STAT = 0x1000              # per-row statistics: T x 8 tiles (32-byte rows), from here on


def _stat(k: int, cols: int = 1) -> Tile:
    """A per-row operand: one value per row (``cols`` 1: a DN column) or a 32-byte block per
    row (8: RowMajor), the two pto-isa's TROWEXPAND* read."""
    return Tile(TileType.Vec, float32, T, cols, addr=STAT + k * 0x400)


def _report(engines):
    assert len(engines) == 1
    return engines[0].report()


# ============================================================================ a bias row
def bias_vec(x, bias, gamma, out, n):
    """out = (x + bias row) * gamma row: TCOLEXPANDADD, TCOLEXPANDMUL."""
    a = Tile(TileType.Vec, float32, T, T, addr=0)
    b = Tile(TileType.Vec, float32, 1, T, addr=0x800)
    g = Tile(TileType.Vec, float32, 1, T, addr=0xC00)
    TLOAD(b, GlobalTensor(bias.data(), (1, T)))
    TLOAD(g, GlobalTensor(gamma.data(), (1, T)))
    src = GlobalTensor(x.data(), (T, T))
    dst = GlobalTensor(out.data(), (T, T))
    for i in range(n):
        src.assign(x.data() + i * T * T)
        TLOAD(a, src)
        TCOLEXPANDADD(a, a, b)
        TCOLEXPANDMUL(a, a, g)
        dst.assign(out.data() + i * T * T)
        TSTORE(dst, a)


@pytest.mark.parametrize("checks", [False, True], ids=["unchecked", "checked"])
@pytest.mark.parametrize("plat", ["a2a3", "a5"])
def test_bias_row_stream_is_recorded(engines, plat, checks):
    rng = np.random.default_rng(1)
    args = dict(x=rint(rng, (N * T, T)), bias=rint(rng, (1, T)), gamma=rint(rng, (1, T)),
                out=np.zeros((N * T, T), np.float32), n=N)
    res = same(None, (bias_vec, None), args, engines, platform=plat, checks=checks)
    assert np.array_equal(res.outputs["out"], (args["x"] + args["bias"]) * args["gamma"])
    ff = _report(engines)
    assert ff.blocks > 0 and ff.whole > 0 and ff.reason is None and ff.unbatched is None


# ============================================================================ softmax
def softmax_vec(x, scale, out, n):
    """Each row of tile i scaled by its 32-byte block of tile i of ``scale`` (TROWEXPANDMUL),
    then its softmax: row max, TROWEXPANDSUB, TEXP, row sum, TROWEXPANDDIV."""
    a = Tile(TileType.Vec, float32, T, T, addr=0)
    w = Tile(TileType.Vec, float32, T, T, addr=0x800)
    s, m, r = _stat(0, 8), _stat(1), _stat(2)
    src = GlobalTensor(x.data(), (T, T))
    per = GlobalTensor(scale.data(), (T, 8))
    dst = GlobalTensor(out.data(), (T, T))
    for i in range(n):
        src.assign(x.data() + i * T * T)
        TLOAD(a, src)
        per.assign(scale.data() + i * T * 8)
        TLOAD(s, per)
        TROWEXPANDMUL(a, a, s)
        TROWMAX(m, a, w)
        TROWEXPANDSUB(a, a, m)
        TEXP(a, a)
        TROWSUM(r, a, w)
        TROWEXPANDDIV(a, a, r)
        dst.assign(out.data() + i * T * T)
        TSTORE(dst, a)


def _softmax(x, scale):
    t = x.reshape(-1, T, T) * np.tile(scale.reshape(-1, T, 8), (1, 1, 2))
    e = np.exp(t - t.max(axis=-1, keepdims=True))
    return (e / e.sum(axis=-1, keepdims=True)).reshape(-1, T)


@pytest.mark.parametrize("checks", [False, True], ids=["unchecked", "checked"])
@pytest.mark.parametrize("plat", ["a2a3", "a5"])
def test_softmax_stream_is_recorded(engines, plat, checks):
    rng = np.random.default_rng(2)
    args = dict(x=rng.standard_normal((N * T, T)).astype(np.float32),
                scale=rng.uniform(0.5, 2, (N * T, 8)).astype(np.float32), out=np.zeros((N * T, T), np.float32),
                n=N)
    res = same(None, (softmax_vec, None), args, engines, platform=plat, checks=checks)
    np.testing.assert_allclose(res.outputs["out"], _softmax(args["x"], args["scale"]), rtol=1e-5, atol=1e-7)
    ff = _report(engines)
    assert ff.blocks > 0 and ff.whole > 0 and ff.reason is None and ff.unbatched is None


# ============================================================================ every other form
ROW = {"TROWEXPANDADD": np.add, "TROWEXPANDMAX": np.maximum, "TROWEXPANDMIN": np.minimum,
       "TROWEXPANDEXPDIF": lambda a, b: np.exp(a - b)}
COL = {"TCOLEXPANDSUB": np.subtract, "TCOLEXPANDDIV": np.divide, "TCOLEXPANDMAX": np.maximum,
       "TCOLEXPANDMIN": np.minimum, "TCOLEXPANDEXPDIF": lambda a, b: np.exp(a - b)}


def form_vec(x, per, out, n, name):
    """Instruction ``name`` on each tile with the per-row (a T x 1) or per-column (a 1 x T)
    operand ``per``; TROWEXPAND / TCOLEXPAND add the broadcast of ``per`` instead."""
    rows = name.startswith("TROW")
    a = Tile(TileType.Vec, float32, T, T, addr=0)
    full = Tile(TileType.Vec, float32, T, T, addr=0x800)
    p = _stat(0) if rows else Tile(TileType.Vec, float32, 1, T, addr=STAT)
    TLOAD(p, GlobalTensor(per.data(), (T, 1) if rows else (1, T)))
    op = globals()[name]
    src = GlobalTensor(x.data(), (T, T))
    dst = GlobalTensor(out.data(), (T, T))
    for i in range(n):
        src.assign(x.data() + i * T * T)
        TLOAD(a, src)
        if name in ("TROWEXPAND", "TCOLEXPAND"):
            op(full, p)
            TADD(a, a, full)
        else:
            op(a, a, p)
        dst.assign(out.data() + i * T * T)
        TSTORE(dst, a)


@pytest.mark.parametrize("name", [*ROW, *COL, "TROWEXPAND", "TCOLEXPAND"])
def test_every_broadcast_form_is_recorded(engines, name):
    rng = np.random.default_rng(3)
    rows = name.startswith("TROW")
    args = dict(x=rint(rng, (N * T, T), -4, 5) / 4, per=rint(rng, (T, 1) if rows else (1, T), 1, 5) / 4,
                out=np.zeros((N * T, T), np.float32), n=N, name=name)
    res = same(None, (form_vec, None), args, engines, platform="a5")
    fn = {**ROW, **COL}.get(name, np.add)
    want = fn(args["x"].reshape(-1, T, T), args["per"]).reshape(-1, T).astype(np.float32)
    np.testing.assert_allclose(res.outputs["out"], want, rtol=1e-6)
    ff = _report(engines)
    assert ff.blocks > 0 and ff.reason is None and ff.unbatched is None


# ============================================================================ reductions
def reducing_vec(x, out, n):
    """Row sums into column 0 of a T x 8 tile of 5s, column maxima into row 0 of an 8 x T
    tile of 7s, both stored whole."""
    a = Tile(TileType.Vec, float32, T, T, addr=0)
    w = Tile(TileType.Vec, float32, T, T, addr=0x400)
    r = Tile(TileType.Vec, float32, T, 8, addr=0x800)
    c = Tile(TileType.Vec, float32, 8, T, addr=0xC00)
    TEXPANDS(r, 5.0)
    TEXPANDS(c, 7.0)
    src = GlobalTensor(x.data(), (T, T))
    rows = GlobalTensor(out.data(), (T, 8))
    cols = GlobalTensor(out.data(), (8, T))
    for i in range(n):
        src.assign(x.data() + i * T * T)
        TLOAD(a, src)
        TROWSUM(r, a, w)
        TCOLMAX(c, a)
        rows.assign(out.data() + i * 2 * T * 8)
        TSTORE(rows, r)
        cols.assign(out.data() + (i * 2 + 1) * T * 8)
        TSTORE(cols, c)


def test_reductions_keep_the_rest_of_their_tile(engines):
    rng = np.random.default_rng(5)
    args = dict(x=rint(rng, (N * T, T)), out=np.zeros(N * 2 * T * 8, np.float32), n=N)
    res = same(None, (reducing_vec, None), args, engines, platform="a5")
    x = args["x"].reshape(N, T, T)
    rows, cols = np.full((N, T, 8), 5, np.float32), np.full((N, 8, T), 7, np.float32)
    rows[:, :, 0], cols[:, 0, :] = x.sum(axis=2), x.max(axis=1)
    out = res.outputs["out"].reshape(N, 2, T * 8)
    assert np.array_equal(out[:, 0], rows.reshape(N, -1)) and np.array_equal(out[:, 1], cols.reshape(N, -1))
    assert _report(engines).blocks > 0


# ============================================================================ compare, select, fused
#: a form -> (its calls on (b, mask, a, y), what b holds then)
FUSED = {
    "TCMP+TSEL": (lambda b, m, a, y: (TCMP(m, a, y, CmpMode.GT), TSEL(b, m, a, y)), np.maximum),
    "TCMPS+TSELS": (lambda b, m, a, y: (TCMPS(m, a, 0.0, CmpMode.GT), TSELS(b, m, a, 0.0)),
                    lambda a, y: np.maximum(a, 0)),
    "TADDC": (lambda b, m, a, y: TADDC(b, a, y, a), lambda a, y: 2 * a + y),
    "TSUBC": (lambda b, m, a, y: TSUBC(b, a, y, a), lambda a, y: 2 * a - y),
    "TADDSC": (lambda b, m, a, y: TADDSC(b, a, 2.0, y), lambda a, y: a + 2 + y),
    "TSUBSC": (lambda b, m, a, y: TSUBSC(b, a, 2.0, y), lambda a, y: a - 2 + y),
    "TAXPY": (lambda b, m, a, y: (TADDS(b, y, 0.0), TAXPY(b, a, 3.0)), lambda a, y: 3 * a + y),
    "TMULADDDST": (lambda b, m, a, y: (TADDS(b, y, 0.0), TMULADDDST(b, a, a)), lambda a, y: a * a + y),
    "TFUSEDMULADD": (lambda b, m, a, y: (TADDS(b, y, 0.0), TFUSEDMULADD(b, a, a)), lambda a, y: a * y + a),
    "TFUSEDMULADDRELU": (lambda b, m, a, y: (TADDS(b, y, 0.0), TFUSEDMULADDRELU(b, a, a)),
                         lambda a, y: np.maximum(a * y + a, 0)),
}


def fused_vec(x, y, out, n, form):
    """Form ``form`` of :data:`FUSED` on each tile of ``x`` and the tile ``y``."""
    a = Tile(TileType.Vec, float32, T, T, addr=0)
    b = Tile(TileType.Vec, float32, T, T, addr=0x400)
    yt = Tile(TileType.Vec, float32, T, T, addr=0x800)
    m = Tile(TileType.Vec, uint8, T, 32, addr=0xC00)
    TLOAD(yt, GlobalTensor(y.data(), (T, T)))
    calls = FUSED[form][0]
    src = GlobalTensor(x.data(), (T, T))
    dst = GlobalTensor(out.data(), (T, T))
    for i in range(n):
        src.assign(x.data() + i * T * T)
        TLOAD(a, src)
        calls(b, m, a, yt)
        dst.assign(out.data() + i * T * T)
        TSTORE(dst, b)


@pytest.mark.parametrize("plat,checks", [("a5", False), ("a2a3", True)])
@pytest.mark.parametrize("form", FUSED)
def test_compare_select_and_fused_forms_are_recorded(engines, form, plat, checks):
    rng = np.random.default_rng(6)
    args = dict(x=rint(rng, (N * T, T)), y=rint(rng, (T, T)), out=np.zeros((N * T, T), np.float32), n=N, form=form)
    res = same(None, (fused_vec, None), args, engines, platform=plat, checks=checks)
    want = FUSED[form][1](args["x"].reshape(-1, T, T), args["y"]).reshape(-1, T)
    assert np.array_equal(res.outputs["out"], want)
    assert _report(engines).blocks > 0 and _report(engines).reason is None


# ============================================================================ not recorded
def unrecorded_vec(x, idx, out, n, at, last, use):
    """Adds 1 to each tile - and in iterations ``at`` to ``last`` makes it by ``use``, an
    instruction the engine does not record (TGATHER: permuted by ``idx``; TPARTADD: 2x + 1),
    and adds 1 more."""
    a = Tile(TileType.Vec, float32, T, T, addr=0)
    b = Tile(TileType.Vec, float32, T, T, addr=0x400)
    ix = Tile(TileType.Vec, int32, T, T, addr=0x800)
    TLOAD(ix, GlobalTensor(idx.data(), (T, T)))
    src = GlobalTensor(x.data(), (T, T))
    dst = GlobalTensor(out.data(), (T, T))
    for i in range(n):
        src.assign(x.data() + i * T * T)
        TLOAD(a, src)
        TADDS(b, a, 1.0)
        if at <= i <= last:
            if use == "TGATHER":
                TGATHER(b, a, ix)  # TGATHER
            else:
                TPARTADD(b, a, b)  # TPARTADD
            TADDS(b, b, 1.0)
        dst.assign(out.data() + i * T * T)
        TSTORE(dst, b)


def _unrecorded(engines, use, n, at, last):
    """The report of a periodic run of :func:`unrecorded_vec` (the exact one's results, and
    the values its golden gives), and the line of ``use``."""
    rng = np.random.default_rng(4)
    args = dict(x=rint(rng, (n * T, T)), idx=rng.permutation(T * T).astype(np.int32).reshape(T, T),
                out=np.zeros((n * T, T), np.float32), n=n, at=at, last=last, use=use)
    res = same(None, (unrecorded_vec, None), args, engines, engaged=False, platform="a5")
    x = args["x"].reshape(n, T * T)
    want = x + 1
    made = x[:, args["idx"].ravel()] if use == "TGATHER" else 2 * x + 1
    want[at:last + 1] = made[at:last + 1] + 1
    assert np.array_equal(res.outputs["out"], want.reshape(-1, T))
    return _report(engines), f"test_periodic_broadcasts.py:{line_of(unrecorded_vec, use)}"


@pytest.mark.parametrize("use", ["TGATHER", "TPARTADD"])
def test_instruction_not_recorded_is_named_with_its_line(engines, use):
    """An instruction the engine does not record in every iteration (a function of its own, or
    one of a family's): learning starts over at it until the engine gives up, naming it and
    its line."""
    ff, where = _unrecorded(engines, use, N, 0, N)
    assert ff.blocks == 0
    what, why = ff.reason.split(" is not recorded: ")
    assert what.startswith(f"{use} at ") and what.endswith(where)
    assert why == "learning started over more than 64 times"


def test_instruction_that_stops_the_recording_is_named_with_its_line(engines):
    """TGATHER in iteration 450 alone: the recording stops at it, named with its line and core
    (the engine then learns the loop again and records it to the end)."""
    ff, where = _unrecorded(engines, "TGATHER", 900, 450, 450)
    assert ff.blocks > 0
    what, why = ff.reason.split(" on AIV0 is not recorded: ")
    assert what.startswith("TGATHER at ") and what.endswith(where)
    assert why == "the recording stopped there"
