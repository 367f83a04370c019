"""TSTORE with ``atomic_type=AtomicType.AtomicAdd`` (pto-isa's ``TSTORE<..., AtomicAdd>``): the
tile's valid region is added into GM, what GM held is kept; an Acc tile is converted to GM's
dtype first; the dtypes the atomic unit does not add are refused at the line.  The race rules:
atomic adds of two cores or two blocks to the same bytes commute (clean); an add and a plain
read or write of those bytes that nothing orders is a race, reported at the later access's
line and naming the other."""
import numpy as np
import pytest

import ptopipe
from ptopipe import DataRaceError, KernelError
from ptopipe.isa import *

from markers import line_of

R, C = 4, 16
ADD = AtomicType.AtomicAdd


def lanes_add(x, out):
    """Each Vector lane adds its rows of ``x`` into the whole of ``out``."""
    t = Tile(TileType.Vec, x.dtype, R, C, addr=0x0)
    TLOAD(t, GlobalTensor(x.data() + get_subblockid() * R * C, (R, C)))
    TSTORE(GlobalTensor(out.data(), (R, C)), t, atomic_type=ADD)


@pytest.mark.parametrize("dtype", [np.int32, np.float16])
def test_two_lanes_add_into_what_gm_held(dtype):
    rng = np.random.default_rng(5)
    x = rng.integers(-50, 50, (2 * R, C)).astype(dtype)
    out = rng.integers(-50, 50, (R, C)).astype(dtype)
    res = ptopipe.run(aiv=lanes_add, args={"x": x, "out": out.copy()})
    np.testing.assert_array_equal(res["out"], out + x[:R] + x[R:])     # (exact: small integers)
    assert not res.summary.leaks


def test_the_valid_region_is_added_and_the_rest_of_gm_kept():
    x = np.arange(R * C, dtype=np.int16).reshape(R, C)
    out = np.full((R, C), 7, np.int16)

    def k(x, out):
        t = Tile(TileType.Vec, int16, R, C, addr=0x0)
        TLOAD(t, GlobalTensor(x.data(), (R, C)))
        t.SetValid(3, 8)
        TSTORE(GlobalTensor(out.data(), (R, C)), t, atomic_type=ADD)
    res = ptopipe.run(aiv=(k, None), args={"x": x, "out": out.copy()})
    want = out.copy()
    want[:3, :8] += x[:3, :8]
    np.testing.assert_array_equal(res["out"], want)


def test_an_int8_sum_wraps_in_gm_dtype():
    x = np.full((R, C), 100, np.int8)
    res = ptopipe.run(aiv=(lambda x, out: lanes_add(x, out), None),
                      args={"x": np.concatenate([x, x]), "out": np.full((R, C), 100, np.int8)})
    np.testing.assert_array_equal(res["out"], np.full((R, C), 100, np.int8) + x)   # 200 wraps to -56


def split_k(a, b, c):
    """Block ``i`` adds its K-slice's product A[:, kb] @ B[kb, :] into C (fp32 accumulator ->
    fp16 GM, converted before the add): split-K over the blocks of a launch."""
    M, K, N = 16, 16, 16
    k0 = get_block_idx() * K
    kt = a.shape[-1]
    a_l1 = Tile(TileType.Mat, float16, M, K, addr=0x0)
    b_l1 = Tile(TileType.Mat, float16, K, N, addr=0x4000)
    a_l0 = Tile(TileType.Left, float16, M, K, addr=0x0)
    b_l0 = Tile(TileType.Right, float16, K, N, addr=0x0)
    acc = Tile(TileType.Acc, float32, M, N, addr=0x0)
    TLOAD(a_l1, GlobalTensor(a.data() + k0, (M, K), (kt, 1)))
    TLOAD(b_l1, GlobalTensor(b.data() + k0 * N, (K, N)))
    TMOV(a_l0, a_l1)
    TMOV(b_l0, b_l1)
    TMATMUL(acc, a_l0, b_l0)
    TSTORE(GlobalTensor(c.data(), (M, N)), acc, atomic_type=ADD)


def test_blocks_add_acc_tiles_converted_to_gm_dtype():
    rng = np.random.default_rng(7)
    a = rng.integers(-3, 4, (16, 32)).astype(np.float16)
    b = rng.integers(-3, 4, (32, 16)).astype(np.float16)
    c = np.full((16, 16), 0.5, np.float16)
    res = ptopipe.run(aic=split_k, args={"a": a, "b": b, "c": c.copy()}, blocks=2)
    parts = [(a[:, k:k + 16].astype(np.float32) @ b[k:k + 16].astype(np.float32)).astype(np.float16)
             for k in (0, 16)]
    np.testing.assert_array_equal(res["c"], c + parts[0] + parts[1])
    assert not res.summary.leaks


def test_an_acc_tile_is_rounded_to_gm_dtype_before_the_add():
    """acc = 1 + 2**-12 (f32) rounds to 1.0 in f16; 2048 + 1.0 is a tie that rounds to 2048,
    while 2048 + acc summed in f32 first would round up to 2050."""
    a, b = np.zeros((16, 32), np.float16), np.zeros((32, 16), np.float16)
    a[0, :2] = b[:2, 0] = [1, 2 ** -6]
    c = np.full((16, 16), 2048, np.float16)
    res = ptopipe.run(aic=split_k, args={"a": a, "b": b, "c": c.copy()})
    np.testing.assert_array_equal(res["c"], c)
    assert np.float16(np.float32(2048) + np.float32(1 + 2 ** -12)) == 2050


def test_a_dtype_the_atomic_unit_does_not_add_is_refused_at_the_line():
    def k(out):
        t = Tile(TileType.Vec, uint32, R, C, addr=0x0)
        TSTORE(GlobalTensor(out.data(), (R, C)), t, atomic_type=ADD)  # add
    with pytest.raises(KernelError) as ei:
        ptopipe.run(aiv=(k, None), args={"out": np.zeros((R, C), np.uint32)})
    e = ei.value
    assert e.where.endswith(f":{line_of(k, 'add')}")
    assert "the atomic unit adds float32, float16, bfloat16, int32, int16, int8 in GM, not uint32" in e.what


def test_an_atomic_type_that_is_none_is_refused():
    def k(out):
        t = Tile(TileType.Vec, float32, R, C, addr=0x0)
        TSTORE(GlobalTensor(out.data(), (R, C)), t, atomic_type=3)
    with pytest.raises(KernelError, match="atomic_type=3 is not an AtomicType"):
        ptopipe.run(aiv=(k, None), args={"out": np.zeros((R, C), np.float32)})


# --- the race rules ---------------------------------------------------------------------------
def add_then(x, out, plain):
    """Lane 0 adds x into out; lane 1, unordered with it, reads out (``plain`` "read"), stores
    into it ("write") or adds too ("add"); "ordered": lane 1 reads after a SYNCALL both reach;
    "zeroed": lane 0 stores out plainly before its add, lane 1 adds."""
    t = Tile(TileType.Vec, float32, R, C, addr=0x0)
    g = GlobalTensor(out.data(), (R, C))
    TLOAD(t, GlobalTensor(x.data(), (R, C)))
    if get_subblockid() == 0:
        if plain == "zeroed":
            TSTORE(g, t)  # lane 0 stores
        TSTORE(g, t, atomic_type=ADD)  # lane 0 adds
        if plain == "ordered":
            SYNCALL()
    elif plain == "read":
        TLOAD(t, g)  # plain read
    elif plain == "write":
        TSTORE(g, t)  # plain write
    elif plain in ("add", "zeroed"):
        TSTORE(g, t, atomic_type=ADD)  # lane 1 adds
    else:
        SYNCALL()
        TLOAD(t, g)


def _args(plain):
    return {"x": np.ones((R, C), np.float32), "out": np.zeros((R, C), np.float32), "plain": plain}


@pytest.mark.parametrize("plain", ["add", "ordered"])
def test_adds_of_two_lanes_and_a_read_after_them_are_clean(plain):
    res = ptopipe.run(aiv=add_then, args=_args(plain))
    np.testing.assert_array_equal(res["out"], 2 if plain == "add" else 1)
    assert not res.summary.leaks


@pytest.mark.parametrize("plain,marker", [("read", "plain read"), ("write", "plain write")])
def test_an_add_and_an_unordered_plain_access_race(plain, marker):
    with pytest.raises(DataRaceError) as ei:
        ptopipe.run(aiv=add_then, args=_args(plain))
    e = ei.value
    assert e.where.endswith(f":{line_of(add_then, marker)}")
    assert "TSTORE (atomic add)" in e.what
    assert f":{line_of(add_then, 'lane 0 adds')}" in e.details
    assert "atomic adds commute only with each other" in e.details
    assert e.fix.startswith(f"order AIV1's {'TLOAD' if plain == 'read' else 'TSTORE'} at :{line_of(add_then, marker)} "
                            "after every atomic add")


def test_a_plain_store_before_an_add_of_the_same_core_still_races_the_other_cores_add():
    """The add does not hide the plain store of its core before it (the race checker keeps the
    two apart): lane 1's add, ordered with neither, races the store."""
    with pytest.raises(DataRaceError) as ei:
        ptopipe.run(aiv=add_then, args=_args("zeroed"))
    e = ei.value
    assert e.where.endswith(f":{line_of(add_then, 'lane 1 adds')}")
    assert f"AIV0  write TSTORE  at {e.where.rsplit(':', 1)[0]}:{line_of(add_then, 'lane 0 stores')}" in e.details


def block_adds(x, out, plain):
    """Every block adds x into out; with ``plain``, block 1 also stores x there plainly."""
    if get_subblockid() != 0:
        return
    t = Tile(TileType.Vec, int32, R, C, addr=0x0)
    TLOAD(t, GlobalTensor(x.data(), (R, C)))
    TSTORE(GlobalTensor(out.data(), (R, C)), t, atomic_type=ADD)
    if plain and get_block_idx() == 1:
        TSTORE(GlobalTensor(out.data(), (R, C)), t)  # block store


def test_blocks_adding_into_one_tensor_are_clean_and_a_plain_store_among_them_races():
    x = np.arange(R * C, dtype=np.int32).reshape(R, C)
    res = ptopipe.run(aiv=block_adds, args={"x": x, "out": np.ones_like(x), "plain": 0}, blocks=3)
    np.testing.assert_array_equal(res["out"], 1 + 3 * x)
    assert not res.summary.leaks
    with pytest.raises(DataRaceError) as ei:
        ptopipe.run(aiv=block_adds, args={"x": x, "out": np.ones_like(x), "plain": 1}, blocks=3)
    e = ei.value
    assert "between blocks" in e.what and "TSTORE (atomic add)" in e.details
    assert f":{line_of(block_adds, 'block store')}" in e.details
    assert e.fix.startswith("move block 1's TSTORE at ") and "to a later launch" in e.fix
