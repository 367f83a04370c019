"""SLOT_NUM beyond 8, decided per protocol from its flag model: the spec protocol's
per-slot flags take one flag per slot, so a ring is as deep as a peer has flags per
direction (8 on A2A3, 16 on A5); pto-isa's counter flags take any depth up to the
platform's FIFO depth (8 on A2A3, 16 on A5), but a counter holds at most 15, so a 16-deep
ring compiles with a warning at its line: a consumer lane 16 tiles behind overflows it."""
import numpy as np
import pytest

import ptopipe.language as pl
from ptopipe.errors import CompileError, ProtocolError
from ptopipe.passes.manager import compile_program
from ptopipe.passes.slot_buffer import with_slot_buffer
from ptopipe.runtime import run as dsl_run

from markers import line_of

TM, K, N, T = 16, 16, 16, 17          # 17 tiles: a 16-deep ring wraps


def stream(sn, split=pl.TILE_UP_DOWN):
    @pl.incore(split=split, slot_num=sn)
    def deep(a: pl.Tensor[[T * TM, K], pl.f32], b: pl.Tensor[[K, N], pl.f32],  # DEF
             out: pl.Tensor[[T * TM, N], pl.f32]):
        bl = pl.move(pl.load(b, [0, 0], [K, N], space=pl.Mat), space=pl.Right)
        for i in pl.range(T):
            al = pl.move(pl.load(a, [i * TM, 0], [TM, K], space=pl.Mat), space=pl.Left)
            v = pl.move(pl.matmul(al, bl), space=pl.Vec)
            pl.store(pl.adds(v, 1.0), [i * TM, 0], out)
    return pl.program(deep, name=f"deep{sn}"), deep


def _run(sn, split, platform, protocol):
    prog, _ = stream(sn, split)
    rng = np.random.default_rng(2)
    a = rng.integers(-3, 4, (T * TM, K)).astype(np.float32)
    b = rng.integers(-3, 4, (K, N)).astype(np.float32)
    args = with_slot_buffer(prog, dict(a=a, b=b, out=np.zeros((T * TM, N), np.float32)))
    res = dsl_run(prog, args, platform=platform, protocol=protocol)
    np.testing.assert_array_equal(res.outputs["out"], a @ b + 1)


def _where(fn) -> str:
    return f"{fn.pyfunc.__code__.co_filename}:{line_of(fn.pyfunc, 'DEF')}:"


def test_spec_takes_sixteen_slots_on_a5_one_flag_per_slot_not_on_a2a3(no_hang):
    prog, fn = stream(16)
    warnings = []
    compile_program(prog, "a5", warnings=warnings)
    assert not any("overflow" in w for w in warnings)        # per-slot flags: set once a wrap
    _run(16, pl.TILE_UP_DOWN, "a5", "spec")
    with pytest.raises(CompileError) as ei:                  # 8 flags per direction on A2A3
        compile_program(prog, "a2a3")
    assert ("C2V ring uses flags 0..15 (FlagID 0, SlotNum 16) but a peer has only 8 flags per "
            "direction") in ei.value.what and ei.value.where.startswith(_where(fn)), ei.value


def test_pto_isa_sixteen_slots_compile_with_the_overflow_at_their_line(no_hang):
    prog, fn = stream(16)
    warnings = []
    compile_program(prog, "a5", protocol="pto-isa", warnings=warnings)
    (w,) = [w for w in warnings if "overflow" in w]
    assert w.startswith(_where(fn)), w
    assert "the C2V ring of 'deep_aiv': SLOT_NUM 16 on pto-isa's counter flags can overflow on a5" in w
    assert "when a Vector lane of this split ring" in w and "falls 16 tiles behind" in w
    assert "more than the 15 a flag holds" in w and "a SLOT_NUM of at most 15 cannot overflow" in w
    # what it warns of: this stream's Cube runs 16 tiles ahead of the Vector cores
    with pytest.raises(ProtocolError, match="a ring of depth 16 on a counter flag that holds at most 15"):
        _run(16, pl.TILE_UP_DOWN, "a5", "pto-isa")
    one = []
    compile_program(stream(16, pl.TILE_NO_SPLIT)[0], "a5", protocol="pto-isa", warnings=one)
    assert any("when its consumer falls 16 tiles behind" in w for w in one), one
    # a ring the counter holds: no warning, and it runs
    for sn in (15, 14):
        quiet = []
        compile_program(stream(sn)[0], "a5", protocol="pto-isa", warnings=quiet)
        assert not any("overflow" in w for w in quiet), quiet
    _run(14, pl.TILE_UP_DOWN, "a5", "pto-isa")
    with pytest.raises(CompileError) as ei:                  # A2A3's FIFOs are at most 8 deep
        compile_program(prog, "a2a3", protocol="pto-isa")
    assert "SLOT_NUM 16 exceeds the FIFO depth limit 8 of a2a3 under pto-isa" in ei.value.what
    assert ei.value.where.startswith(_where(fn)), ei.value
