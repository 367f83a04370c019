"""Numpy goldens for the PTO-AS corpus in this directory (one entry per ``NAME.pto``).

Each :class:`Golden` has ``make(rng)``: the kernel's inputs keyed by parameter name (without
``%``) - numpy arrays with the dtype of the declared ``!pto.ptr<...>`` / ``memref`` element
type and the shape of the tensor view the kernel reads or writes, output buffers as zeros
(a kernel that writes part of an output leaves the rest zero), integer scalar parameters
(``index`` / ``iN``) as Python ints - and ``expect(inputs)``: the outputs the kernel must
produce, keyed by parameter name, computed with plain numpy from the inputs alone.
``gm_slot_buffer`` parameters (the A2A3 GM ring of a cross-core pipe) are the executor's
scratch and are not given.  Tolerances are per file: exact for integers, loose for f16/bf16.
"""
from __future__ import annotations

import zlib
from dataclasses import dataclass
from typing import Callable

import ml_dtypes
import numpy as np

F32 = np.dtype(np.float32)
F16 = np.dtype(np.float16)
BF16 = np.dtype(ml_dtypes.bfloat16)
I8, I16, I32 = np.dtype(np.int8), np.dtype(np.int16), np.dtype(np.int32)


@dataclass(frozen=True)
class Golden:
    """How to feed and check one corpus file."""
    make: Callable[[np.random.Generator], dict]
    expect: Callable[[dict], dict]
    rtol: float = 1e-5
    atol: float = 1e-5

    def inputs(self, name: str) -> dict:
        """The inputs of file ``name``, from a generator seeded by the name (stable per file)."""
        return self.make(np.random.default_rng(zlib.crc32(name.encode())))


# -- input makers ---------------------------------------------------------------------------
def f32(rng, *shape, lo=-2.0, hi=2.0):
    return rng.uniform(lo, hi, shape).astype(F32)


def away(rng, *shape, lo=0.25, hi=2.0):
    """f32 values with |v| in [lo, hi] and a random sign: safe divisors / reciprocals."""
    return (rng.uniform(lo, hi, shape) * rng.choice([-1.0, 1.0], shape)).astype(F32)


def ints(rng, dtype, lo, hi, *shape):
    return rng.integers(lo, hi, shape, endpoint=True).astype(dtype)


def zeros(*shape, dtype=F32):
    return np.zeros(shape, dtype)


def softmax(s):
    e = np.exp(s - s.max(axis=1, keepdims=True))
    return (e / e.sum(axis=1, keepdims=True)).astype(F32)


def sigmoid(x):
    return (1.0 / (1.0 + np.exp(-x))).astype(F32)


def mm(a, b):
    """a @ b accumulated in f32 (the Cube's L0C), inputs of any float dtype or int8 -> i32."""
    if a.dtype == I8:
        return a.astype(I32) @ b.astype(I32)
    return a.astype(F32) @ b.astype(F32)


# -- single-core Vector kernels ---------------------------------------------------------------
def _axpy_in(rng):
    return {"x": f32(rng, 32, 32), "y": f32(rng, 32, 32), "out": zeros(32, 32)}


def _axpy_out(i):
    return {"out": F32.type(2.5) * i["x"] + i["y"]}


def _sub_mul_in(rng):
    return {k: f32(rng, 16, 32).astype(F16) for k in ("a", "b", "g")} | {"out": zeros(16, 32, dtype=F16)}


def _sub_mul_out(i):
    return {"out": (i["a"] - i["b"]) * i["g"]}


def _div_max_min_in(rng):
    return {"a": f32(rng, 16, 16), "b": away(rng, 16, 16), "q": zeros(16, 16), "hi": zeros(16, 16),
            "lo": zeros(16, 16)}


def _div_max_min_out(i):
    return {"q": i["a"] / i["b"], "hi": np.maximum(i["a"], i["b"]), "lo": np.minimum(i["a"], i["b"])}


def _scalar_clamp_in(rng):
    return {"x": away(rng, 16, 32, lo=0.1, hi=3.0), "out": zeros(16, 32), "inv": zeros(16, 32)}


def _scalar_clamp_out(i):
    t = np.clip((i["x"] + F32.type(0.5)) * F32.type(3.0), -2.0, 4.0).astype(F32)
    return {"out": t / F32.type(8.0), "inv": F32.type(2.0) / i["x"]}


def _exp_log_sqrt_in(rng):
    return {"x": f32(rng, 16, 16, lo=0.1, hi=2.5), "e": zeros(16, 16), "l": zeros(16, 16), "s": zeros(16, 16)}


def _exp_log_sqrt_out(i):
    return {"e": np.exp(i["x"]), "l": np.log(i["x"]), "s": np.sqrt(i["x"])}


def _unary_mix_in(rng):
    return {"x": away(rng, 32, 16, lo=0.2, hi=3.0)} | {k: zeros(32, 16) for k in ("r", "q", "n", "relu")}


def _unary_mix_out(i):
    x = i["x"]
    return {"r": (1.0 / np.sqrt(np.abs(x))).astype(F32), "q": (1.0 / x).astype(F32), "n": -x,
            "relu": np.maximum(x, 0).astype(F32)}


def _rowsum_in(rng):
    return {"x": f32(rng, 16, 64), "s": zeros(16, 1)}


def _rowsum_out(i):
    return {"s": (i["x"] * i["x"]).sum(axis=1, keepdims=True)}


def _row_range_in(rng):
    return {"x": f32(rng, 32, 32, lo=-5, hi=5), "mx": zeros(32, 1), "mn": zeros(32, 1), "span": zeros(32, 1)}


def _row_range_out(i):
    mx, mn = i["x"].max(axis=1, keepdims=True), i["x"].min(axis=1, keepdims=True)
    return {"mx": mx, "mn": mn, "span": mx - mn}


def _colsum_in(rng):
    return {"x": f32(rng, 32, 16), "mean": zeros(1, 16)}


def _colsum_out(i):
    return {"mean": i["x"].sum(axis=0, keepdims=True) * F32.type(0.03125)}


def _col_extremes_in(rng):
    return {"x": f32(rng, 16, 32), "cmax": zeros(1, 32), "cmin": zeros(1, 32), "csum": zeros(1, 32)}


def _col_extremes_out(i):
    x = i["x"]
    return {"cmax": x.max(axis=0, keepdims=True), "cmin": x.min(axis=0, keepdims=True),
            "csum": x.sum(axis=0, keepdims=True)}


def _softmax_rows_in(rng):
    return {"s": f32(rng, 16, 64, lo=-8, hi=8), "p": zeros(16, 64)}


def _softmax_rows_out(i):
    return {"p": softmax(i["s"] * F32.type(0.125))}


def _rmsnorm_in(rng):
    return {"arg0": f32(rng, 16, 128).astype(BF16), "arg1": f32(rng, 1, 128, lo=0.5, hi=1.5),
            "arg2": zeros(16, 128, dtype=BF16)}


def _rmsnorm_out(i):
    x = i["arg0"].astype(F32)
    ms = (x * x).sum(axis=1, keepdims=True) * F32.type(0.0078125) + F32.type(1e-6)
    return {"arg2": (x / np.sqrt(ms) * i["arg1"]).astype(BF16)}


def _layernorm_in(rng):
    return {"x": f32(rng, 16, 32, lo=-3, hi=3), "gamma": f32(rng, 1, 32, lo=0.5, hi=1.5),
            "beta": f32(rng, 1, 32, lo=-0.5, hi=0.5), "y": zeros(16, 32)}


def _layernorm_out(i):
    x = i["x"]
    mu = x.mean(axis=1, keepdims=True)
    var = ((x - mu) ** 2).mean(axis=1, keepdims=True)
    return {"y": ((x - mu) / np.sqrt(var + 1e-5) * i["gamma"] + i["beta"]).astype(F32)}


def _fill_in(rng):
    return {"x": f32(rng, 16, 16), "ones": zeros(16, 16), "sevens": zeros(16, 8, dtype=I32),
            "shifted": zeros(16, 16)}


def _fill_out(i):
    return {"ones": np.full((16, 16), -1.5, F32), "sevens": np.full((16, 8), 7, I32),
            "shifted": i["x"] + F32.type(0.25)}


def _half_trip_in(rng):
    return {"x": f32(rng, 16, 32, lo=-100, hi=100), "h": zeros(16, 32, dtype=F16), "back": zeros(16, 32)}


def _half_trip_out(i):
    h = i["x"].astype(F16)
    return {"h": h, "back": h.astype(F32) * F32.type(2.0)}


def _quant_grid_in(rng):
    x = rng.integers(-20, 20, (16, 16)) + rng.uniform(0.1, 0.9, (16, 16))
    return {"x": x.astype(F32)} | {k: zeros(16, 16, dtype=I32) for k in ("fl", "tr", "ce")} | \
        {"deq": zeros(16, 16)}


def _quant_grid_out(i):
    x = i["x"]
    fl = np.floor(x).astype(I32)
    return {"fl": fl, "tr": np.trunc(x).astype(I32), "ce": np.ceil(x).astype(I32),
            "deq": fl.astype(F32) * F32.type(0.5)}


def _int32_affine_in(rng):
    return {"a": ints(rng, I32, -10, 10, 16, 16), "b": ints(rng, I32, -10, 10, 16, 16),
            "y": zeros(16, 16, dtype=I32), "m": zeros(16, 16, dtype=I32)}


def _int32_affine_out(i):
    a, b = i["a"], i["b"]
    return {"y": np.maximum(a * b + 5, -20) - a, "m": np.minimum(a, b) * 3}


def _int16_mix_in(rng):
    return {"a": ints(rng, I16, -1000, 1000, 16, 32), "b": ints(rng, I16, -1000, 1000, 16, 32)} | \
        {k: zeros(16, 32, dtype=I16) for k in ("s", "d", "hi")}


def _int16_mix_out(i):
    a, b = i["a"], i["b"]
    return {"s": a + b, "d": a - b, "hi": np.maximum(a, b)}


def _int8_dequant_in(rng):
    return {"q": ints(rng, I8, -128, 127, 16, 32), "scale": f32(rng, 1, 32, lo=0.01, hi=0.1),
            "y": zeros(16, 32), "qcopy": zeros(16, 32, dtype=I8)}


def _int8_dequant_out(i):
    return {"y": i["q"].astype(F32) * i["scale"], "qcopy": i["q"]}


def _block_sum_in(rng):
    return {"x": f32(rng, 16, 64), "out": zeros(16, 16)}


def _block_sum_out(i):
    x = i["x"]
    return {"out": ((x[:, 0:16] + x[:, 16:32]) + x[:, 32:48]) + x[:, 48:64]}


def _geometric_in(rng):
    return {"x": f32(rng, 32, 16), "out": zeros(32, 16)}


def _geometric_out(i):
    scale = np.repeat(2.0 ** np.arange(4), 8)[:, None].astype(F32)
    return {"out": i["x"] * scale}


def _mode_select_in(rng):
    return {"x": f32(rng, 16, 16), "out": zeros(16, 16), "mode": 3}


def _mode_select_out(i):
    x = i["x"]
    return {"out": (np.exp(x) * 2.0 if i["mode"] > 2 else np.abs(x) * -1.0).astype(F32)}


def _grow_until_in(rng):
    return {"x": f32(rng, 16, 16), "out": zeros(16, 16), "count": zeros(1, 8), "limit": 50}


def _grow_until_out(i):
    n, go = 0, True
    while n * n < i["limit"] and go:
        go = n != 3
        n += 1
    return {"out": i["x"] + F32.type(n), "count": np.full((1, 8), n, F32)}


def _tile_pair_in(rng):
    return {"x": f32(rng, 64, 64), "out": zeros(16, 16), "half": zeros(16, 16), "tile_id": 13}


def _tile_pair_out(i):
    x, t = i["x"], i["tile_id"]
    rb, cb = t // 4, t % 4
    pb = cb + 2 if cb < 2 else cb - 2
    hb = (t >> 1) % 4
    return {"out": x[16 * rb:16 * rb + 16, 16 * cb:16 * cb + 16] + x[16 * rb:16 * rb + 16, 16 * pb:16 * pb + 16],
            "half": x[16 * hb:16 * hb + 16, 0:16] * F32.type(0.5)}


def _window_gain_in(rng):
    return {"x": f32(rng, 32, 64), "out": zeros(16, 16), "row_start": 9, "col_start": 21}


def _window_gain_out(i):
    r, c = i["row_start"], (i["col_start"] >> 3) << 3
    gain = F32.type(3.0 if i["row_start"] >= 8 else 0.5)
    return {"out": i["x"][r:r + 16, c:c + 16] * gain}


def _masked_softmax_in(rng):
    return {"arg0": f32(rng, 8, 64, lo=-4, hi=4), "arg1": zeros(8, 64), "arg2": zeros(8, 1), "arg3": 37}


def _masked_softmax_out(i):
    n = min(i["arg3"], 64)
    s = i["arg0"][:, :n]
    p = np.zeros((8, 64), F32)
    p[:, :n] = softmax(s)
    return {"arg1": p, "arg2": s.max(axis=1, keepdims=True)}


def _dyn_valid_in(rng):
    return {"a": f32(rng, 32, 32), "b": f32(rng, 32, 32), "h": zeros(32, 32), "rows": 20, "cols": 24}


def _dyn_valid_out(i):
    r, c = i["rows"], i["cols"]
    h = np.zeros((32, 32), F32)
    h[:r, :c] = np.maximum(i["a"][:r, :c], 0) * i["b"][:r, :c] + F32.type(1.0)
    return {"h": h}


def _tprint_in(rng):
    return {"x": f32(rng, 8, 16, lo=-9, hi=9), "out": zeros(8, 16), "idx": zeros(8, 16, dtype=I32)}


def _tprint_out(i):
    s = i["x"] * F32.type(4.0)
    return {"out": s, "idx": np.trunc(s).astype(I32)}


def _pingpong_in(rng):
    return {"x": f32(rng, 64, 32), "out": zeros(64, 32)}


def _pingpong_out(i):
    return {"out": i["x"] * F32.type(3.0) - F32.type(1.0)}


def _synced_residual_in(rng):
    return {"x": f32(rng, 32, 32), "r": f32(rng, 32, 32), "y": zeros(32, 32)}


def _synced_residual_out(i):
    return {"y": np.maximum(i["x"] + i["r"], 0).astype(F32) * F32.type(0.5)}


def _event_scale_in(rng):
    return {"x": f32(rng, 16, 16), "w": f32(rng, 16, 16), "out": zeros(16, 16)}


def _event_scale_out(i):
    return {"out": i["x"] * i["w"] + F32.type(1.0)}


def _memref_add_in(rng):
    return {"a": f32(rng, 16, 32), "b": f32(rng, 16, 32), "out": zeros(16, 32), "twice": zeros(16, 32)}


def _memref_add_out(i):
    s = i["a"] + i["b"]
    return {"out": s, "twice": s + s}


def _memref_loop_in(rng):
    return {"x": f32(rng, 16, 16, lo=0.5, hi=1.5), "y": zeros(16, 16), "z": zeros(16, 16)}


def _memref_loop_out(i):
    x2 = i["x"] * i["x"]
    x4 = x2 * x2
    return {"y": x4 * x4, "z": x2}


def _rope_in(rng):
    ang = rng.uniform(0, np.pi, (1, 32))
    return {"x": f32(rng, 16, 64), "cos": np.cos(ang).astype(F32), "sin": np.sin(ang).astype(F32),
            "y": zeros(16, 64)}


def _rope_out(i):
    x1, x2, c, s = i["x"][:, :32], i["x"][:, 32:], i["cos"], i["sin"]
    return {"y": np.concatenate([x1 * c - x2 * s, x2 * c + x1 * s], axis=1)}


def _swiglu_in(rng):
    return {"g": f32(rng, 32, 32, lo=-4, hi=4), "u": f32(rng, 32, 32), "h": zeros(32, 32)}


def _swiglu_out(i):
    g = i["g"]
    return {"h": g * sigmoid(g) * i["u"]}


def _int_extremes_in(rng):
    return {"x": ints(rng, I32, -1000, 1000, 16, 16), "rmax": zeros(16, 1, dtype=I32),
            "csum": zeros(1, 16, dtype=I32), "cmax": zeros(1, 16, dtype=I32)}


def _int_extremes_out(i):
    x = i["x"]
    return {"rmax": x.max(axis=1, keepdims=True), "csum": x.sum(axis=0, keepdims=True, dtype=I32),
            "cmax": x.max(axis=0, keepdims=True)}


def _half_mean_in(rng):
    return {"x": f32(rng, 32, 16).astype(F16), "mean": zeros(32, 1, dtype=F16)}


def _half_mean_out(i):
    return {"mean": (i["x"].astype(F32).sum(axis=1, keepdims=True) * 0.0625).astype(F16)}


def _online_in(rng):
    return {"m": f32(rng, 16, 1, lo=-1, hi=1), "l": f32(rng, 16, 1, lo=1, hi=4), "o": f32(rng, 16, 32),
            "m_cur": f32(rng, 16, 1, lo=-1, hi=1), "l_cur": f32(rng, 16, 1, lo=1, hi=4),
            "o_cur": f32(rng, 16, 32), "m_out": zeros(16, 1), "l_out": zeros(16, 1),
            "o_out": zeros(16, 32), "ctx": zeros(16, 32), "is_first": 0}


def _online_out(i):
    if i["is_first"]:
        return {"m_out": i["m_cur"], "l_out": i["l_cur"], "o_out": i["o_cur"], "ctx": i["o_cur"] / i["l_cur"]}
    m = np.maximum(i["m"], i["m_cur"])
    a, b = np.exp(i["m"] - m), np.exp(i["m_cur"] - m)
    l = a * i["l"] + b * i["l_cur"]
    o = a * i["o"] + b * i["o_cur"]
    return {"m_out": m, "l_out": l, "o_out": o, "ctx": o / l}


def _layout_trip_in(rng):
    return {"x": f32(rng, 16, 16), "out": zeros(16, 16)}


def _layout_trip_out(i):
    return {"out": i["x"] + i["x"]}


def _entry_helper_in(rng):
    return {"x": f32(rng, 32, 16), "out": zeros(16, 16), "blk": 0}


def _entry_helper_out(i):
    r = 16 * ((i["blk"] + 1) % 2)
    return {"out": i["x"][r:r + 16] - F32.type(1.0)}


LOOSE16 = dict(rtol=2e-3, atol=2e-3)
BF16_TOL = dict(rtol=2e-2, atol=2e-2)

GOLDENS: dict[str, Golden] = {
    "v_axpy_f32_a3": Golden(_axpy_in, _axpy_out),
    "v_sub_mul_f16_a5": Golden(_sub_mul_in, _sub_mul_out, **LOOSE16),
    "v_div_max_min_a3": Golden(_div_max_min_in, _div_max_min_out),
    "v_scalar_clamp_a5": Golden(_scalar_clamp_in, _scalar_clamp_out),
    "v_exp_log_sqrt_a3": Golden(_exp_log_sqrt_in, _exp_log_sqrt_out),
    "v_rsqrt_recip_neg_abs_a5": Golden(_unary_mix_in, _unary_mix_out),
    "v_rowsum_a3": Golden(_rowsum_in, _rowsum_out),
    "v_rowmax_rowmin_a5": Golden(_row_range_in, _row_range_out),
    "v_colsum_a3": Golden(_colsum_in, _colsum_out),
    "v_colmax_colmin_a5": Golden(_col_extremes_in, _col_extremes_out),
    "v_softmax_rows_a3": Golden(_softmax_rows_in, _softmax_rows_out),
    "v_rmsnorm_bf16_level3_a3": Golden(_rmsnorm_in, _rmsnorm_out, **BF16_TOL),
    "v_layernorm_a5": Golden(_layernorm_in, _layernorm_out, rtol=1e-4, atol=1e-4),
    "v_expands_fill_a3": Golden(_fill_in, _fill_out),
    "v_cvt_f32_f16_a5": Golden(_half_trip_in, _half_trip_out),
    "v_cvt_float_int_a3": Golden(_quant_grid_in, _quant_grid_out),
    "v_int32_arith_a5": Golden(_int32_affine_in, _int32_affine_out),
    "v_int16_ops_a3": Golden(_int16_mix_in, _int16_mix_out),
    "v_int8_dequant_a5": Golden(_int8_dequant_in, _int8_dequant_out),
    "v_scf_for_accum_a3": Golden(_block_sum_in, _block_sum_out),
    "v_scf_for_iter_args_a5": Golden(_geometric_in, _geometric_out),
    "v_scf_if_else_a3": Golden(_mode_select_in, _mode_select_out),
    "v_scf_while_a5": Golden(_grow_until_in, _grow_until_out),
    "v_arith_index_a3": Golden(_tile_pair_in, _tile_pair_out),
    "v_arith_i32_i64_a5": Golden(_window_gain_in, _window_gain_out),
    "v_masked_softmax_validshape_a3": Golden(_masked_softmax_in, _masked_softmax_out),
    "v_dynamic_valid_a5": Golden(_dyn_valid_in, _dyn_valid_out),
    "v_tprint_debug_a3": Golden(_tprint_in, _tprint_out),
    "v_tassign_pingpong_level3_a5": Golden(_pingpong_in, _pingpong_out),
    "v_sync_flags_level3_a3": Golden(_synced_residual_in, _synced_residual_out),
    "v_record_wait_event_a5": Golden(_event_scale_in, _event_scale_out),
    "v_memref_add_a3": Golden(_memref_add_in, _memref_add_out),
    "v_memref_loop_a5": Golden(_memref_loop_in, _memref_loop_out),
    "v_rope_halves_a3": Golden(_rope_in, _rope_out),
    "v_silu_gate_a5": Golden(_swiglu_in, _swiglu_out),
    "v_int32_reduce_a3": Golden(_int_extremes_in, _int_extremes_out),
    "v_f16_rowsum_a5": Golden(_half_mean_in, _half_mean_out, rtol=1e-2, atol=1e-2),
    "v_online_update_a3": Golden(_online_in, _online_out),
    "v_tmov_layouts_a3": Golden(_layout_trip_in, _layout_trip_out),
    "v_entry_helper_a5": Golden(_entry_helper_in, _entry_helper_out),
}
