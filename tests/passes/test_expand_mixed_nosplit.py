"""ExpandMixedKernel, split=pl.TILE_NO_SPLIT: the AIV function works on whole tiles; on
A2A3 AIV1 replays every handshake on empty valid shapes (no data moved, computed or stored:
no duplicate GM write); on A5 (spec and pto-isa) the pipe has one lane (lanes=1, AIV0 only;
AIV1 runs nothing).  C2V (examples/mixed/s2_cv_nosplit.py) and
V2C kernels on both platforms and protocols, checkers on, against numpy."""
import importlib.util
import pathlib

import numpy as np
import pytest

from ptopipe.arch import get_platform

import ptopipe
import ptopipe.language as pl
from ptopipe import CompileError
from ptopipe.ir import parse_ir, print_ir, print_program, structural_equal
from ptopipe.passes import compile_program, expand_mixed
from ptopipe.passes.slot_buffer import with_slot_buffer
from ptopipe.runtime import interp, kernels

from markers import line_of

ROOT = pathlib.Path(__file__).resolve().parents[2]
COMBOS = [(p, q) for p in ("a2a3", "a5") for q in ("spec", "pto-isa")]
ONE_LANE = {("a5", "spec"), ("a5", "pto-isa")}


def _example():
    spec = importlib.util.spec_from_file_location("mixed_s2", ROOT / "examples/mixed/s2_cv_nosplit.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


S2 = _example()


def _s2_run(platform, protocol, tiles=4):
    sc = S2.SCENARIO
    return sc.check("default" if tiles == 4 else "m16_n64", platform, protocol)


@pytest.mark.parametrize("platform,protocol", COMBOS)
def test_c2v_no_split_lanes(platform, protocol, no_hang):
    """AIV0 computes and stores everything; AIV1 moves, computes and stores nothing; it
    pops (and frees) every tile too, except where the pipe has one lane."""
    r = _s2_run(platform, protocol)                  # matches numpy, checkers on
    aiv0, aiv1 = r.summary.cores["AIV0"]["busy"], r.summary.cores["AIV1"]["busy"]
    assert aiv0["V"] > 0 and aiv0["MTE3"] > 0
    # no data: AIV1's V pipe does nothing (A2A3: its TFREEs signal from MTE2; A5: it runs nothing)
    assert aiv1["MTE3"] == 0 and aiv1["V"] == 0
    (p,) = r.summary.pipes
    lanes = 1 if (platform, protocol) in ONE_LANE else 2
    assert p["pops"] == p["frees"] == 4 * lanes


@pytest.mark.parametrize("platform,protocol", COMBOS)
def test_compiled_form_per_platform_and_protocol(platform, protocol):
    text = print_program(S2.KERNELS.program(platform, protocol, M=64, N=32, slot_num=2))
    assert "@pl.aiv(split=pl.TILE_NO_SPLIT)" in text
    assert "get_subblockid" not in text                       # whole tiles, no halves
    assert "pl.Tile[[16, 32], pl.f32, pl.Vec]" in text
    assert text.count("lanes=1") == (2 if (platform, protocol) in ONE_LANE else 0)


def test_compiled_no_split_program_round_trips():
    prog = S2.KERNELS.program("a5", "pto-isa", M=64, N=32, slot_num=2)
    text = print_program(prog)             # the DSL source (no platform, no addresses)
    assert print_program(pl.parse(text)) == text
    ops = prog.clone()
    assert structural_equal(parse_ir(print_ir(ops)), ops)


def test_lane1_must_replay_on_empty_tiles(monkeypatch, no_hang):
    """The guard of the replay: if AIV1 ran the body on full tiles, it would store every
    tile a second time - the same bytes, so the race checker warns that the work is done
    twice (a replay on empty tiles stores nothing, and no warning)."""
    def twice(res):
        return [w for w, _ in res.summary.leaks if "both run this TSTORE" in w]
    assert not twice(S2.SCENARIO.check("m16_n64", "a2a3", "spec"))
    monkeypatch.setattr(interp, "_EMPTY", {})
    assert len(twice(S2.SCENARIO.check("m16_n64", "a2a3", "spec"))) == 1


def test_two_lanes_under_pto_isa_on_a5_is_a_protocol_error(monkeypatch, no_hang):
    """The guard of lanes=1: a two-lane NO_SPLIT pipe is misuse under pto-isa on A5 -
    VerifyPipes finds it in the compiled kernels."""
    monkeypatch.setattr(expand_mixed, "one_lane_no_split", lambda ctx: False)
    monkeypatch.setattr(S2.KERNELS, "_cache", {})            # compile afresh
    with pytest.raises(CompileError, match="NO_SPLIT transfer has one lane"):
        S2.SCENARIO.check("m16_n64", "a5", "pto-isa")


def _v2c_program():
    @pl.incore(split=pl.TILE_NO_SPLIT)
    def v2c(x: pl.Tensor[[48, 16], pl.f32], a: pl.Tensor[[16, 16], pl.f32],
            out: pl.Tensor[[48, 16], pl.f32]):
        a_l0 = pl.move(pl.load(a, [0, 0], [16, 16], space=pl.Mat), space=pl.Left)
        for k in pl.range(3):
            v = pl.adds(pl.load(x, [k * 16, 0], [16, 16]), 1.0)
            b = pl.move(v, space=pl.Right)                    # V2C boundary, whole tile
            pl.store(pl.matmul(a_l0, b), [k * 16, 0], out)
    return pl.program(v2c)


@pytest.mark.parametrize("platform,protocol", COMBOS)
def test_v2c_no_split(platform, protocol, no_hang):
    rng = np.random.default_rng(5)
    args = dict(x=rng.integers(-4, 5, (48, 16)).astype(np.float32),
                a=rng.integers(-3, 4, (16, 16)).astype(np.float32),
                out=np.zeros((48, 16), np.float32))
    compiled = compile_program(_v2c_program(), platform, protocol=protocol)
    aic, aiv = kernels(compiled)
    r = ptopipe.run(aic, aiv, with_slot_buffer(compiled, args), platform=platform, protocol=protocol)
    want = np.concatenate([args["a"] @ (args["x"][k * 16:(k + 1) * 16] + 1) for k in range(3)])
    np.testing.assert_array_equal(r.outputs["out"], want)
    aiv1 = r.summary.cores["AIV1"]["busy"]
    assert aiv1["V"] == aiv1["MTE2"] == 0                     # lane 1 loads and adds nothing


def test_aiv_takes_no_split_alone():
    with pytest.raises(CompileError, match="split= / slot_num= are options of a mixed"):
        pl.aiv(split=pl.TILE_UP_DOWN)
    with pytest.raises(CompileError, match="split= / slot_num= are options of a mixed"):
        pl.aiv(split=pl.TILE_NO_SPLIT, slot_num=2)
    assert pl.aiv(split=pl.TILE_NO_SPLIT).split is pl.TILE_NO_SPLIT


def test_bad_lanes_value():
    with pytest.raises(CompileError, match="lanes=3 must be 1 .AIV0 only. or 2") as e:
        @pl.aic
        def cube(g: pl.Tensor[[1024], pl.u8]):
            pl.aic_initialize_pipe(pl.DIR_C2V, 1024, g, lanes=3)  # LANES
    assert f":{line_of(test_bad_lanes_value, 'LANES')}:" in e.value.where
