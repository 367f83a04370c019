"""MGATHER / MSCATTER (pto-isa's indexed GM gather and scatter) on both platforms, against
numpy: rows and elements, every out-of-bounds mode (an index is read as uint32: a negative
int32 is past the table), the atomic ops, the GM -> L1 gather into an NZ Mat tile; their
misuse refused at the line (index dtype and shape, an index past the table with OOB Undefined,
each platform's rules); and their GM bytes in the checkers as a TLOAD's / TSTORE's: the race
checker judges exactly the rows / elements the indices pick (two lanes scattering to disjoint
rows are clean), atomic ops of one kind commute, the table's run argument bounds them, and the
manual-mode pipe order knows the library's own events on A2A3 (none on A5)."""
from __future__ import annotations

import ml_dtypes
import numpy as np
import pytest

import ptopipe
from ptopipe import DataRaceError, KernelError, MemoryConflictError
from ptopipe.isa import *  # noqa: F403

from markers import line_of

pytestmark = pytest.mark.usefixtures("no_hang")
PLATFORMS = ["a2a3", "a5"]
TR, C, R = 16, 16, 8                 # table rows, row width, tile rows
NONE = ScatterAtomicOp["None"]


def u32(idx):
    """The indices as the device reads them."""
    return np.asarray(idx).astype(np.int64) & 0xFFFFFFFF


def remap(idx, cap, oob: str):
    """(index, kept) per pto-isa's mgather_remap / mscatter_remap."""
    i = u32(idx)
    if oob == "Clamp":
        return np.minimum(i, cap - 1), np.ones(i.shape, bool)
    if oob == "Wrap":
        return i % cap, np.ones(i.shape, bool)
    kept = i < cap
    return np.where(kept, i, 0), kept


def gather_kernel(coalesce, oob, dtype):
    def k(table, ridx, eidx, rows, elems):
        ri = Tile(TileType.Vec, int32, 1, R, addr=0x0)
        ei = Tile(TileType.Vec, int32, R, C, addr=0x100)
        dr = Tile(TileType.Vec, dtype, R, C, addr=0x1000)
        de = Tile(TileType.Vec, dtype, R, C, addr=0x2000)
        TLOAD(ri, ridx)
        TLOAD(ei, eidx)
        MGATHER(dr, table, ri, oob=oob)                       # the device's default: Row
        MGATHER(de, table, ei, coalesce=Coalesce.Elem, oob=oob)
        TSTORE(rows, dr)
        TSTORE(elems, de)
    return k


@pytest.mark.parametrize("platform", PLATFORMS)
@pytest.mark.parametrize("oob,dtype", [("Undefined", np.float32), ("Clamp", np.float16), ("Wrap", np.int8),
                                       ("Zero", ml_dtypes.bfloat16)])
def test_gather_rows_and_elements(platform, oob, dtype):
    rng = np.random.default_rng(1)
    table = rng.integers(-60, 60, (TR, C)).astype(dtype)
    hi = TR if oob == "Undefined" else 3 * TR
    ridx = rng.integers(0, hi, (1, R)).astype(np.int32)
    eidx = rng.integers(0, hi * C // 2, (R, C)).astype(np.int32)
    if oob != "Undefined":
        ridx[0, :2], eidx[0, :2] = [-1, TR], [-3, TR * C]       # uint32 4294967295: past any table
    args = dict(table=table, ridx=ridx, eidx=eidx, rows=np.zeros((R, C), dtype), elems=np.zeros((R, C), dtype))
    got = ptopipe.run(aiv=(gather_kernel(Coalesce.Row, getattr(GatherOOB, oob), dtype), None), args=args,
                      platform=platform)
    i, kept = remap(ridx[0], TR, oob)
    np.testing.assert_array_equal(got["rows"], np.where(kept[:, None], table[i], 0).astype(dtype))
    j, kept = remap(eidx, TR * C, oob)
    np.testing.assert_array_equal(got["elems"], np.where(kept, table.reshape(-1)[j], 0).astype(dtype))


def scatter_kernel(atomic, oob, dtype):
    def k(rtab, etab, ridx, eidx, src):
        ri = Tile(TileType.Vec, int32, 1, R, addr=0x0)
        ei = Tile(TileType.Vec, int32, R, C, addr=0x100)
        s = Tile(TileType.Vec, dtype, R, C, addr=0x1000)
        TLOAD(ri, ridx)
        TLOAD(ei, eidx)
        TLOAD(s, src)
        MSCATTER(rtab, s, ri, atomic=atomic, oob=oob)
        MSCATTER(etab, s, ei, coalesce=Coalesce.Elem, atomic=atomic, oob=oob)
    return k


def scatter_want(table, idx, src, cap, atomic: str, oob: str, row: bool):
    out = table.copy()
    flat = out.reshape(-1)
    i, kept = remap(idx, cap, oob)
    for k in zip(*np.nonzero(kept)):                # row-major order: the last plain write stays
        v = src[k[0]] if row else src[k]
        at = slice(i[k] * C, i[k] * C + C) if row else i[k]
        cur = flat[at]
        flat[at] = {"None": v, "Add": cur + v, "Max": np.maximum(cur, v), "Min": np.minimum(cur, v)}[atomic]
    return out


SCATTERS = [("a2a3", "None", "Undefined", np.float32), ("a2a3", "None", "Clamp", np.uint8),
            ("a2a3", "Add", "Skip", np.int16), ("a2a3", "Add", "Wrap", np.float16), ("a5", "None", "Clamp", np.int32),
            ("a5", "Add", "Undefined", np.uint32), ("a5", "Max", "Skip", np.float32), ("a5", "Min", "Wrap", np.int32)]


@pytest.mark.parametrize("platform,atomic,oob,dtype", SCATTERS)
def test_scatter_rows_and_elements(platform, atomic, oob, dtype):
    """Duplicate indices: the last write stays (A2A3's in-order walk, A5's Conflict::Last), an
    atomic op combines them all."""
    rng = np.random.default_rng(2)
    hi = TR if oob == "Undefined" else 2 * TR
    ridx = rng.integers(0, hi, (1, R)).astype(np.int32)
    ridx[0, 3] = ridx[0, 5]
    eidx = rng.integers(0, hi * C // 4, (R, C)).astype(np.int32)
    eidx[2, :4] = eidx[1, :4]
    if oob != "Undefined":
        ridx[0, 0], eidx[0, 0] = -1, TR * C
    src = rng.integers(0, 90, (R, C)).astype(dtype)
    rtab, etab = (rng.integers(0, 90, (TR, C)).astype(dtype) for _ in range(2))
    res = ptopipe.run(aiv=(scatter_kernel(ScatterAtomicOp[atomic], getattr(ScatterOOB, oob), dtype), None),
                      args=dict(rtab=rtab.copy(), etab=etab.copy(), ridx=ridx, eidx=eidx, src=src), platform=platform)
    np.testing.assert_array_equal(res["rtab"], scatter_want(rtab, ridx[0], src, TR, atomic, oob, True))
    np.testing.assert_array_equal(res["etab"], scatter_want(etab, eidx, src, TR * C, atomic, oob, False))


def test_a5_takes_a_one_column_index_tile_and_warns_of_conflicts_it_leaves_to_the_scheduler():
    """A5's Row index tile may be [R, 1] (read as R consecutive elements); ScatterConflict::Default
    with two different writes to one row is a run warning (ptopipe keeps the last); alike
    writes are none."""
    table = np.arange(TR * C, dtype=np.float32).reshape(TR, C)
    gidx = np.array([5, 1, 2, 9, 0, 6, 3, 4], np.int32).reshape(R, 1)

    def k(table, gidx, sidx, out):
        gi = Tile(TileType.Vec, int32, R, 1, addr=0x0)          # one column: DN
        si = Tile(TileType.Vec, int32, R, 1, addr=0x40)
        d = Tile(TileType.Vec, float32, R, C, addr=0x100)
        TLOAD(gi, gidx)
        TLOAD(si, sidx)
        MGATHER(d, table, gi)
        TSTORE(out, d)
        MSCATTER(table, d, si, conflict=ScatterConflict.Default)   # CONFLICT

    def run(sidx):
        return ptopipe.run(aiv=(k, None), args=dict(table=table.copy(), gidx=gidx, sidx=sidx,
                                                    out=np.zeros((R, C), np.float32)), platform="a5")
    res = run(gidx)
    np.testing.assert_array_equal(res["out"], table[gidx[:, 0]])
    np.testing.assert_array_equal(res["table"], table)           # each row written back where it was read
    assert not res.summary.leaks
    sidx = np.array([5, 1, 1, 9, 0, 6, 3, 4], np.int32).reshape(R, 1)    # table rows 1 and 2 into row 1
    res = run(sidx)
    warned = [(w, at) for w, at in res.summary.leaks if "ScatterConflict::Default" in w]
    assert warned and str(warned[0][1]).endswith(f"test_indexed_gm.py:{line_of(k, 'CONFLICT')}"), res.summary.leaks
    np.testing.assert_array_equal(res["table"][1], table[2])    # the last write


# -- misuse: refused at the line -------------------------------------------------------------------
def _misuse(platform, idx_dtype=np.int32, idx_shape=(1, R), idx_vals=None, oob=GatherOOB.Undefined,
            table_dtype=np.float32, op="gather", **kw):
    table = np.zeros((TR, C), table_dtype)
    idx = np.zeros(idx_shape, idx_dtype) if idx_vals is None else np.asarray(idx_vals, idx_dtype).reshape(idx_shape)

    def k(table, idx):
        ti = Tile(TileType.Vec, idx_dtype, *idx_shape, addr=0x0)
        d = Tile(TileType.Vec, float32, R, C, addr=0x1000)
        TLOAD(ti, idx)
        if op == "gather":
            MGATHER(d, table, ti, oob=oob, **kw)                   # HERE
        else:
            MSCATTER(table, d, ti, **kw)                           # HERE-S
    with pytest.raises(KernelError) as ei:
        ptopipe.run(aiv=(k, None), args=dict(table=table, idx=idx), platform=platform)
    line = line_of(k, "HERE" if op == "gather" else "HERE-S")
    assert ei.value.where.endswith(f"test_indexed_gm.py:{line}"), ei.value
    return str(ei.value)


@pytest.mark.parametrize("platform", PLATFORMS)
def test_misuse_is_refused_at_its_line(platform):
    e = _misuse(platform, idx_dtype=np.int16, idx_shape=(1, 16))
    assert "the indices" in e and "are int16; pto-isa's MGATHER takes int32 or uint32" in e
    e = _misuse(platform, idx_shape=(R, C))
    assert "Coalesce::Row: the index tile's valid shape is [8, 16], not [1, 8]" in e and "Coalesce.Elem" in e
    e = _misuse(platform, idx_shape=(1, R), coalesce=Coalesce.Elem)
    assert "Coalesce::Elem: the index tile's valid shape is [1, 8], not the tile's [8, 16]" in e
    e = _misuse(platform, idx_vals=[0, 1, 2, 16, 3, 4, 5, 6])
    assert "MGATHER index 16 at index 3 of the index tile (for row 3) is past the table's 16 rows" in e
    assert "GatherOOB.Clamp, .Wrap or .Zero" in e
    e = _misuse(platform, idx_vals=[0, 1, 2, -2, 3, 4, 5, 6], op="scatter")
    assert "MSCATTER index 4294967294 (-2 as int32, read as uint32)" in e and "ScatterOOB.Skip" in e
    e = _misuse(platform, table_dtype=np.int32)
    assert "the table" in e and "is int32 but" in e
    e = _misuse(platform, oob=ScatterOOB.Skip)
    assert "oob=<ScatterOOB.Skip: 1> is a ScatterOOB; MGATHER takes a GatherOOB" in e
    if platform == "a2a3":
        e = _misuse(platform, op="scatter", conflict=ScatterConflict.Last)
        assert "MSCATTER on A2A3 takes no ScatterConflict" in e
        e = _misuse(platform, op="scatter", atomic=ScatterAtomicOp.Max)
        assert "ScatterAtomicOp::Max is not implemented on A2A3" in e and "run it on A5 (float32, int32, uint32)" in e
    else:
        e = _misuse(platform, idx_shape=(R, 8), idx_vals=np.arange(R * 8), coalesce=Coalesce.Row)
        assert "valid shape is [8, 8], not [1, 8] or [8, 1]" in e


def test_a5_row_reads_a_packed_table_and_consecutive_indices():
    """A5's row kernel reads rows validCols apart and the row indices as consecutive elements:
    a table of padded rows, or the column of a row-major [R, 8] index tile, is refused."""
    table = np.zeros((TR, 2 * C), np.float32)

    def padded(table):
        ti = Tile(TileType.Vec, int32, 1, R, addr=0x0)
        d = Tile(TileType.Vec, float32, R, C, addr=0x1000)
        MGATHER(d, GlobalTensor(table.data(), (TR, C), (2 * C, 1)), ti)     # PADDED
    with pytest.raises(KernelError) as ei:
        ptopipe.run(aiv=(padded, None), args=dict(table=table), platform="a5")
    assert "rows are 32 elements apart (Stride[3])" in str(ei.value)
    assert ei.value.where.endswith(f":{line_of(padded, 'PADDED')}")
    ptopipe.run(aiv=(padded, None), args=dict(table=table), platform="a2a3")     # (A2A3: Stride[3] apart)

    def wide(table):
        ti = Tile(TileType.Vec, int32, R, 8, addr=0x0, valid_cols=1)
        d = Tile(TileType.Vec, float32, R, C, addr=0x1000)
        MGATHER(d, GlobalTensor(table.data(), (TR, C)), ti)                 # WIDE
    with pytest.raises(KernelError) as ei:
        ptopipe.run(aiv=(wide, None), args=dict(table=table), platform="a5")
    assert "holds the indices 8 elements apart" in str(ei.value)
    assert ei.value.where.endswith(f":{line_of(wide, 'WIDE')}")


def test_the_a2a3_nz_path_is_refused_naming_what_is_modelled():
    """pto-isa's A2A3 NZ pairing (a Layout::NZ table with an NZ Vec tile) is not modelled: either
    half of it is a KernelError at the line saying so."""
    table = np.zeros((16, 16), np.float32)
    nz = dict(layout=TileLayout.NZ)

    def k(table):
        ti = Tile(TileType.Vec, int32, 1, 16, addr=0x0)
        d = Tile(TileType.Vec, float32, 16, 16, addr=0x1000, **nz)
        MGATHER(d, GlobalTensor(table.data(), (1, 2, 1, 16, 8), layout=TileLayout.NZ), ti)    # NZ
    for tile_layout, words in ((TileLayout.NZ, "dst Vec tile float32 16x16 NZ"), (TileLayout.ND, "the table")):
        nz["layout"] = tile_layout
        with pytest.raises(KernelError) as ei:
            ptopipe.run(aiv=(k, None), args=dict(table=table), platform="a2a3")
        assert words in str(ei.value) and "A2A3 NZ path" in str(ei.value) and "not modelled" in str(ei.value)
        assert ei.value.where.endswith(f":{line_of(k, 'NZ')}")


def test_a_table_past_its_argument_is_an_out_of_bounds_access():
    """Clamp keeps an index within the table's rows - a table declared with more rows than its
    argument holds reads past it: the bytes the index picks, refused at the line."""
    table = np.zeros((TR, C), np.float32)

    def k(table):
        ti = Tile(TileType.Vec, int32, 1, R, addr=0x0)
        TEXPANDS(ti, 100)
        d = Tile(TileType.Vec, float32, R, C, addr=0x1000)
        MGATHER(d, GlobalTensor(table.data(), (2 * TR, C)), ti, oob=GatherOOB.Clamp)     # PAST
    with pytest.raises(MemoryConflictError) as ei:
        ptopipe.run(aiv=(k, None), args=dict(table=table), platform="a2a3")
    assert "access out of bounds: MGATHER through" in str(ei.value) and "outside argument 'table'" in str(ei.value)
    assert ei.value.where.endswith(f":{line_of(k, 'PAST')}")


# -- the race checker: exactly the bytes the indices pick -------------------------------------------
def lanes_scatter(atomic, rows_of_lane, plain_load=False):
    def k(table, src):
        lane = get_subblockid()
        ti = Tile(TileType.Vec, int32, 1, R, addr=0x0)
        s = Tile(TileType.Vec, int32, R, C, addr=0x1000)
        TLOAD(s, GlobalTensor(src.data() + lane * R * C, (R, C)))    # each lane its own values
        TCI(ti, rows_of_lane[lane], descending=0)
        MSCATTER(table, s, ti, atomic=atomic)                     # SCATTER
        if plain_load and lane == 1:
            TLOAD(s, GlobalTensor(table.data(), (R, C)))          # LOAD
    return k


@pytest.mark.parametrize("platform,atomic,lane1,race", [
    ("a2a3", "None", 8, False), ("a2a3", "None", 4, True), ("a2a3", "Add", 0, False),
    ("a5", "Max", 0, False), ("a5", "Min", 0, False)])
def test_two_lanes_scatter(platform, atomic, lane1, race):
    """Lane 0 scatters to rows 0..7, lane 1 to rows lane1..lane1+7: disjoint rows are clean,
    overlapping plain writes a race at the scatter's line; atomic ops of one kind commute."""
    table = np.zeros((2 * R + 8, C), np.int32)
    src = np.random.default_rng(4).integers(-99, 99, (2 * R, C)).astype(np.int32)
    k = lanes_scatter(ScatterAtomicOp[atomic], (0, lane1))
    if race:
        with pytest.raises(DataRaceError) as ei:
            ptopipe.run(aiv=k, args=dict(table=table, src=src), platform=platform)
        assert ei.value.where.endswith(f":{line_of(k, 'SCATTER')}")
        assert "MSCATTER" in ei.value.details
        return
    res = ptopipe.run(aiv=k, args=dict(table=table.copy(), src=src), platform=platform)
    want = table.copy()
    for lane, base in enumerate((0, lane1)):
        v, at = src[lane * R:(lane + 1) * R], slice(base, base + R)
        want[at] = {"Add": want[at] + v, "Max": np.maximum(want[at], v), "Min": np.minimum(want[at], v),
                    "None": v}[atomic]
    np.testing.assert_array_equal(res["table"], want)


def test_atomic_ops_of_two_kinds_and_a_plain_read_of_atomic_adds_race():
    src = np.ones((2 * R, C), np.int32)
    table = np.zeros((R, C), np.int32)

    def mixed(table, src):
        lane = get_subblockid()
        ti = Tile(TileType.Vec, int32, 1, R, addr=0x0)
        s = Tile(TileType.Vec, int32, R, C, addr=0x1000)
        TLOAD(s, GlobalTensor(src.data(), (R, C)))
        TCI(ti, 0, descending=0)
        MSCATTER(table, s, ti, atomic=ScatterAtomicOp.Max if lane == 0 else ScatterAtomicOp.Min)   # MIXED
    with pytest.raises(DataRaceError) as ei:
        ptopipe.run(aiv=mixed, args=dict(table=table, src=src), platform="a5")
    assert "atomic max" in ei.value.details and "atomic min" in ei.value.details
    assert ei.value.where.endswith(f":{line_of(mixed, 'MIXED')}")
    k = lanes_scatter(ScatterAtomicOp.Add, (0, 0), plain_load=True)
    with pytest.raises(DataRaceError) as ei:
        ptopipe.run(aiv=k, args=dict(table=table, src=src), platform="a2a3")
    assert "atomic add" in ei.value.details


def gather_after_store(pick):
    """Lane 0 stores rows 0..7 of the table, lane 1 gathers rows ``pick``: unordered."""
    def k(table, src, out):
        t = Tile(TileType.Vec, float32, R, C, addr=0x1000)
        if get_subblockid() == 0:
            TLOAD(t, src)
            TSTORE(GlobalTensor(table.data(), (R, C)), t)
        else:
            ti = Tile(TileType.Vec, int32, 1, R, addr=0x0)
            TCI(ti, pick, descending=0)
            MGATHER(t, table, ti)                                    # GATHER
            TSTORE(out, t)
    return k


def test_a_gather_races_only_the_rows_its_indices_pick():
    args = dict(table=np.zeros((2 * R, C), np.float32), src=np.ones((R, C), np.float32),
                out=np.zeros((R, C), np.float32))
    res = ptopipe.run(aiv=gather_after_store(R), args=args)         # rows 8..15: not stored
    assert not res["out"].any()
    k = gather_after_store(4)                                        # rows 4..11: 4..7 stored
    with pytest.raises(DataRaceError) as ei:
        ptopipe.run(aiv=k, args=args)
    assert ei.value.where.endswith(f":{line_of(k, 'GATHER')}") and "TSTORE" in ei.value.details


# -- the manual mode: the pipes and the library's own events ----------------------------------------
def manual_kernel(flag_before: bool, flag_after: bool):
    def k(table, idx, out):
        ti = Tile(TileType.Vec, int32, 1, R, addr=0x0)
        d = Tile(TileType.Vec, float32, R, C, addr=0x1000)
        TLOAD(ti, idx)
        if flag_before:
            set_flag(PIPE_MTE2, PIPE_V, EVENT_ID0)
            wait_flag(PIPE_MTE2, PIPE_V, EVENT_ID0)
        MGATHER(d, table, ti)                                        # MG
        if flag_after:
            set_flag(PIPE_V, PIPE_MTE3, EVENT_ID0)
            wait_flag(PIPE_V, PIPE_MTE3, EVENT_ID0)
        TSTORE(out, d)                                               # ST
    return k


@pytest.mark.parametrize("platform,before,after,bad", [
    ("a2a3", True, False, None),        # the library orders its moves before MTE3 itself
    ("a2a3", False, False, "MG"),       # its walk reads the indices on S: after MTE2 -> V -> S only
    ("a5", True, True, None), ("a5", True, False, "ST"), ("a5", False, True, "MG")])
def test_manual_mode_orders_the_pipes_as_each_platform_runs_the_op(platform, before, after, bad):
    k = manual_kernel(before, after)
    args = dict(table=np.arange(TR * C, dtype=np.float32).reshape(TR, C), idx=np.arange(R, dtype=np.int32)[None],
                out=np.zeros((R, C), np.float32))
    if bad is None:
        res = ptopipe.run(aiv=(k, None), args=args, platform=platform, sync="manual")
        np.testing.assert_array_equal(res["out"], args["table"][:R])
        return
    with pytest.raises(DataRaceError) as ei:
        ptopipe.run(aiv=(k, None), args=args, platform=platform, sync="manual")
    assert ei.value.where.endswith(f":{line_of(k, bad)}"), ei.value


# -- GM -> L1: into an NZ Mat tile on the Cube -------------------------------------------------------
@pytest.mark.parametrize("platform", PLATFORMS)
def test_gather_into_an_nz_mat_tile(platform):
    """Rows (one DMA each; Zero: the tile zeroed first) and elements staged in the GM scratch in
    the tile's NZ order (zeros where nothing is gathered), the indices read from GM."""
    rows, cols = 16, 16
    rng = np.random.default_rng(3)
    table = rng.standard_normal((TR * 2, cols)).astype(np.float16)
    ridx = np.array([3, 40, 0, 31, 5, 5, 9, 1], np.int32)
    eidx = rng.integers(0, table.size + 50, (R, cols)).astype(np.int32)

    def cube(table, ridx, eidx, scratch, out_r, out_e):
        m = Tile(TileType.Mat, float16, rows, cols, addr=0x0, valid_rows=R, layout=TileLayout.NZ)
        MGATHER(m, table, GlobalTensor(ridx.data(), (1, R)), oob=GatherOOB.Zero)
        TSTORE(GlobalTensor(out_r.data(), (R, cols)), m)
        e = Tile(TileType.Mat, float16, rows, cols, addr=0x2000, valid_rows=R, layout=TileLayout.NZ)
        MGATHER(e, table, GlobalTensor(eidx.data(), (R, cols)), scratch, coalesce=Coalesce.Elem,
                oob=GatherOOB.Wrap)
        full = Tile(TileType.Mat, float16, rows, cols, addr=0x2000, layout=TileLayout.NZ)
        TSTORE(GlobalTensor(out_e.data(), (rows, cols)), full)
    args = dict(table=table, ridx=ridx, eidx=eidx, scratch=np.ones(rows * cols, np.float16),
                out_r=np.zeros((R, cols), np.float16), out_e=np.ones((rows, cols), np.float16))
    res = ptopipe.run(aic=cube, args=args, platform=platform)
    i, kept = remap(ridx, 2 * TR, "Zero")
    np.testing.assert_array_equal(res["out_r"], np.where(kept[:, None], table[i], 0))
    want = np.zeros((rows, cols), np.float16)
    want[:R] = table.reshape(-1)[u32(eidx) % table.size]
    np.testing.assert_array_equal(res["out_e"], want)
    c0 = 16                                                          # 32 bytes of f16
    np.testing.assert_array_equal(res["scratch"], want.reshape(rows, cols // c0, c0).transpose(1, 0, 2).ravel())
