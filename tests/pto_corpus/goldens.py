"""Numpy goldens for the PTO-AS corpus in this directory (one entry per ``NAME.pto``).

Each :class:`Golden` has ``make(rng)``: the kernel's inputs keyed by parameter name (without
``%``) - numpy arrays with the dtype of the declared ``!pto.ptr<...>`` / ``memref`` element
type and the shape of the tensor view the kernel reads or writes, output buffers as zeros
(a kernel that writes part of an output leaves the rest zero), integer scalar parameters
(``index`` / ``iN``) as Python ints - and ``expect(inputs)``: the outputs the kernel must
produce, keyed by parameter name, computed with plain numpy from the inputs alone.
``gm_slot_buffer`` (the A2A3 GM ring of a cross-core pipe) is given as zeros of 8 slots of the
pipe's ``slot_size`` - what pto-isa's RingFIFO addresses (SLOT_NUM x SLOT_SIZE, both directions of
a DIR_BOTH pipe included).  Tolerances are per file: exact for integers, loose for f16/bf16.
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


def ring(slot_size: int, dtype=F32):
    """A zeroed GM slot buffer for a pipe of ``slot_size`` bytes: 8 slots."""
    return np.zeros(8 * slot_size // np.dtype(dtype).itemsize, dtype)


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


def _index_grids_in(rng):
    return {"up": zeros(1, 32, dtype=I32), "down": zeros(1, 32, dtype=I32), "lo": zeros(8, 32), "hi": zeros(8, 32)}


def _index_grids_out(i):
    ones = np.ones((8, 32), F32)
    return {"up": np.arange(5, 37, dtype=I32)[None], "down": np.arange(7, -25, -1, dtype=I32)[None],
            "lo": np.tril(ones, 2), "hi": np.triu(ones, -1)}


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


def _entry_call_in(rng):
    return {"x": f32(rng, 32, 16), "out": zeros(16, 16), "blk": 0}


def _entry_call_out(i):
    r = 16 * ((i["blk"] + 1) % 2)
    return {"out": i["x"][r:r + 16] - F32.type(1.0)}


def _optional_bias_in(rng):
    return {"arg0": f32(rng, 16, 16), "arg1": f32(rng, 16, 16), "arg2": zeros(16, 16), "arg3": 1, "arg4": 1}


def _optional_bias_out(i):
    y = i["arg0"] + i["arg1"] if i["arg3"] else i["arg0"].copy()
    return {"arg2": -y if i["arg4"] else y}


def _row_stats_in(rng):
    return {"arg0": f32(rng, 16, 64, lo=-3, hi=3), "arg1": zeros(16, 1), "arg2": zeros(16, 1)}


def _row_stats_out(i):
    x = i["arg0"]
    mx = x.max(axis=1, keepdims=True)
    return {"arg1": mx, "arg2": (mx + np.log(np.exp(x - mx).sum(axis=1, keepdims=True))).astype(F32)}


def _compare_gather(x, hit, offset):
    """Per row the column numbers (+ offset) where ``hit``, packed from column 0 (the rest of
    the row as loaded: 0), and the count of each row in element i of ``cnt``."""
    idx, cnt = np.zeros(x.shape, I32), np.zeros(x.shape, I32)
    for r, row in enumerate(hit):
        cols = np.flatnonzero(row)
        idx[r, :cols.size] = offset + cols
    cnt.reshape(-1)[:x.shape[0]] = hit.sum(axis=1)
    return {"idx": idx, "cnt": cnt}


def _above_threshold_in(rng):
    return {"x": f32(rng, 4, 32, lo=-1.0, hi=1.0), "idx": zeros(4, 32, dtype=I32), "cnt": zeros(4, 32, dtype=I32)}


def _above_threshold_out(i):
    return _compare_gather(i["x"], i["x"] > np.float32(0.5), 100)


def _find_value_in(rng):
    return {"x": ints(rng, I16, 0, 5, 4, 32), "idx": zeros(4, 32, dtype=I32), "cnt": zeros(4, 32, dtype=I32)}


def _find_value_out(i):
    return _compare_gather(i["x"], i["x"] == 3, 0)


def _fold_halves_in(rng):
    return {"x": f32(rng, 16, 64), "y": zeros(8, 64), "z": zeros(1, 32)}


def _fold_halves_out(i):
    x = i["x"]
    return {"y": x[:8] + x[8:], "z": 2 * x[:1, 32:]}


U32 = np.dtype(np.uint32)


def _merge_two_in(rng):
    vals = rng.permutation(np.arange(-32, 32)).astype(F32) / 4       # distinct: no ties to order
    return {"x0": vals[:32].reshape(1, 32), "i0": np.arange(32, dtype=U32).reshape(1, 32),
            "x1": vals[32:].reshape(1, 32), "i1": np.arange(100, 132, dtype=U32).reshape(1, 32),
            "y": zeros(1, 128)}


def _merge_two_out(i):
    """Both blocks' (value, index) pairs, descending by value, as [value, index bits] words."""
    v = np.concatenate([i["x0"][0], i["x1"][0]])
    ix = np.concatenate([i["i0"][0], i["i1"][0]])
    order = np.argsort(-v, kind="stable")
    out = np.empty(128, F32)
    out[0::2], out[1::2] = v[order], ix[order].view(F32)
    return {"y": out.reshape(1, 128)}


# -- single-core Cube kernels -------------------------------------------------------------------
def _gemm_f32_in(rng):
    return {"a": f32(rng, 32, 32), "b": f32(rng, 32, 16), "c": zeros(32, 16)}


def _gemm_f32_out(i):
    return {"c": mm(i["a"], i["b"])}


def _gemm_half_in(rng):
    return {"x": f32(rng, 16, 32).astype(F16), "w": f32(rng, 32, 32).astype(F16), "y": zeros(16, 32)}


def _gemm_half_out(i):
    return {"y": mm(i["x"], i["w"])}


def _gemm_bf16_in(rng):
    return {"a": f32(rng, 16, 64).astype(BF16), "b": f32(rng, 64, 32).astype(BF16), "out": zeros(16, 32)}


def _gemm_bf16_out(i):
    return {"out": mm(i["a"], i["b"])}


def _gemm_int8_in(rng):
    return {"a": ints(rng, I8, -128, 127, 16, 64), "b": ints(rng, I8, -128, 127, 64, 32),
            "acc_out": zeros(16, 32, dtype=I32)}


def _gemm_int8_out(i):
    return {"acc_out": mm(i["a"], i["b"])}


def _proj_ksplit_in(rng):
    return {"arg0": f32(rng, 16, 128).astype(BF16), "arg1": f32(rng, 128, 64).astype(BF16),
            "arg2": zeros(16, 64), "arg3": 1}


def _proj_ksplit_out(i):
    n = i["arg3"]
    out = np.zeros((16, 64), F32)
    out[:, 32 * n:32 * n + 32] = mm(i["arg0"], i["arg1"][:, 32 * n:32 * n + 32])
    return {"arg2": out}


def _gemm_k_loop_in(rng):
    return {"a": f32(rng, 32, 64).astype(F16), "b": f32(rng, 64, 16).astype(F16), "c": zeros(32, 16)}


def _gemm_k_loop_out(i):
    return {"c": mm(i["a"], i["b"])}


def _linear_bias_in(rng):
    return {"x": f32(rng, 16, 32), "w": f32(rng, 32, 32), "bias": f32(rng, 1, 32), "y": zeros(16, 32)}


def _linear_bias_out(i):
    return {"y": mm(i["x"], i["w"]) + i["bias"]}


def _linear_bias_k_in(rng):
    return {"x": f32(rng, 16, 64), "w": f32(rng, 64, 16), "bias": f32(rng, 1, 16), "y": zeros(16, 16)}


def _linear_bias_k_out(i):
    return {"y": mm(i["x"], i["w"]) + i["bias"]}


def _tiled_gemm_in(rng):
    return {"a": f32(rng, 32, 32), "b": f32(rng, 32, 32), "c": zeros(32, 32)}


def _tiled_gemm_out(i):
    return {"c": mm(i["a"], i["b"])}


def _block_at_in(rng):
    return {"x": f32(rng, 48, 32).astype(F16), "w": f32(rng, 32, 64).astype(F16), "out": zeros(48, 64),
            "row0": 16, "nb": 3}


def _block_at_out(i):
    r, c = i["row0"], 16 * i["nb"]
    out = np.zeros((48, 64), F32)
    out[r:r + 16, c:c + 16] = mm(i["x"][r:r + 16], i["w"][:, c:c + 16])
    return {"out": out}


def _gemm_synced_in(rng):
    return {"a": f32(rng, 16, 64), "b": f32(rng, 64, 16), "c": zeros(16, 16)}


def _gemm_synced_out(i):
    return {"c": mm(i["a"], i["b"])}


def _guarded_proj_in(rng):
    return {"arg0": f32(rng, 16, 32), "arg1": f32(rng, 32, 128), "arg2": zeros(16, 128), "arg3": 1, "arg4": 5}


def _guarded_proj_out(i):
    out = np.zeros((16, 128), F32)
    for ob in range(4):
        b = 2 * i["arg3"] + ob
        if b < i["arg4"]:
            out[:, 16 * b:16 * b + 16] = mm(i["arg0"], i["arg1"][:, 16 * b:16 * b + 16])
    return {"arg2": out}


def _gram_in(rng):
    return {"a": f32(rng, 16, 16), "b": f32(rng, 16, 16), "ab": zeros(16, 16), "ba": zeros(16, 16)}


def _gram_out(i):
    return {"ab": mm(i["a"], i["b"]), "ba": mm(i["b"], i["a"])}


def _scores_block_in(rng):
    return {"q": f32(rng, 16, 32).astype(F16), "kt": f32(rng, 32, 32).astype(F16), "s": zeros(16, 32)}


def _scores_block_out(i):
    return {"s": mm(i["q"], i["kt"])}


def _carried_offset_in(rng):
    return {"a": f32(rng, 16, 96), "b": f32(rng, 96, 16), "c": zeros(16, 16), "nk": 3}


def _carried_offset_out(i):
    k = 32 * i["nk"]
    return {"c": mm(i["a"][:, :k], i["b"][:k])}


U64 = np.dtype(np.uint64)


def _quant_words(cols):
    """One fixpipe quant word per column: the scale's float32 bits (the low 13 mantissa bits
    dropped), an offset in bits 37..45 and the signed-result bit 46 (pto-isa's layout)."""
    words = []
    for c in range(cols):
        scale = np.float32(0.25 + 0.125 * (c % 4))
        words.append((int(scale.view(np.uint32)) & 0xFFFFE000) | ((c % 3) << 37) | (int(c % 2 == 0) << 46))
    return np.array([words], U64)


def _quantized(acc, q):
    """acc converted per column as the fixpipe's f32 -> b8 vector quantisation does."""
    w = q[0].astype(np.int64)
    m1 = (w >> 13) & 0x7FFFF
    scale = np.array([np.ldexp(1 + (m & 0x3FF) / 1024, ((m >> 10) & 0xFF) - 127) for m in m1], F32)
    offset, signed = ((w >> 37) & 0x1FF).astype(F32), ((w >> 46) & 1).astype(bool)
    r = np.rint(acc.astype(F32) * scale + offset)
    return np.clip(r, np.where(signed, -128, 0), np.where(signed, 127, 255)).astype(np.int64).astype(I8)


def _quant_linear_in(rng):
    return {"a": ints(rng, F16, -3, 3, 16, 32), "b": ints(rng, F16, -3, 3, 32, 16), "q": _quant_words(16),
            "y": zeros(16, 16, dtype=I8)}


def _quant_linear_out(i):
    return {"y": _quantized(mm(i["a"], i["b"]), i["q"])}


def _quant_moves_in(rng):
    return _quant_linear_in(rng) | {"z": ints(rng, I8, -9, 9, 16, 32), "w": zeros(16, 8, dtype=I8)}


def _quant_moves_out(i):
    y = _quantized(mm(i["a"], i["b"]), i["q"])
    z = i["z"].copy()
    z[:, 16:] = y
    return {"y": y, "z": z, "w": y[:, 8:16]}


# -- cross-core (TPUSH / TPOP) kernels ------------------------------------------------------------
def _proj_residual_in(rng):
    return {"x": f32(rng, 16, 32), "w": f32(rng, 32, 16), "r": f32(rng, 16, 16), "out": zeros(16, 16),
            "gm_slot_buffer": ring(1024)}


def _proj_residual_out(i):
    return {"out": mm(i["x"], i["w"]) + i["r"]}


def _wide_relu_in(rng):
    return {"x": f32(rng, 16, 16), "w": f32(rng, 16, 32), "out": zeros(16, 32), "gm_slot_buffer": ring(2048)}


def _wide_relu_out(i):
    return {"out": 2 * np.maximum(mm(i["x"], i["w"]), 0)}


def _whole_scale_in(rng):
    return {"a": f32(rng, 16, 16), "b": f32(rng, 16, 16), "y": zeros(16, 16), "gm_slot_buffer": ring(1024)}


def _whole_scale_out(i):
    return {"y": 0.5 * mm(i["a"], i["b"])}


def _scaled_rows_in(rng):
    return {"x": f32(rng, 16, 16), "w": f32(rng, 16, 16), "y": zeros(16, 16), "gm_slot_buffer": ring(1024)}


def _scaled_rows_out(i):
    return {"y": mm(2 * i["x"], i["w"])}


def _bias_then_mm_in(rng):
    return {"x": f32(rng, 16, 16), "b": f32(rng, 1, 16), "w": f32(rng, 16, 16), "z": zeros(16, 16),
            "gm_slot_buffer": ring(1024)}


def _bias_then_mm_out(i):
    return {"z": mm(i["x"] + i["b"], i["w"])}


def _mlp_residual_in(rng):
    return {"x": f32(rng, 16, 16), "w": f32(rng, 16, 16), "out": zeros(16, 16), "gm_slot_buffer": ring(1024)}


def _mlp_residual_out(i):
    return {"out": mm(np.maximum(i["x"], 0), i["w"]) + i["x"]}


def _stream_blocks_in(rng):
    return {"a": f32(rng, 192, 16), "b": f32(rng, 16, 16), "out": zeros(192, 16), "gm_slot_buffer": ring(1024)}


def _stream_blocks_out(i):
    trip = np.repeat(np.arange(12, dtype=F32), 16)[:, None]
    return {"out": mm(i["a"], i["b"]) + trip}


def _ffn_gate_up_in(rng):
    return {"x": f32(rng, 16, 32).astype(BF16), "wg": f32(rng, 32, 32, lo=-0.5, hi=0.5).astype(BF16),
            "wu": f32(rng, 32, 32, lo=-0.5, hi=0.5).astype(BF16), "h": zeros(16, 32, dtype=BF16),
            "gm_slot_buffer": ring(2048)}


def _ffn_gate_up_out(i):
    g, u = mm(i["x"], i["wg"]), mm(i["x"], i["wu"])
    return {"h": (g * sigmoid(g) * u).astype(BF16)}


def _attention_block_in(rng):
    return {"q": f32(rng, 16, 32), "kt": f32(rng, 32, 32), "v": f32(rng, 32, 32), "o": zeros(16, 32),
            "gm_slot_buffer": ring(2048)}


def _attention_block_out(i):
    return {"o": mm(softmax(0.25 * mm(i["q"], i["kt"])), i["v"])}


def _leaky_stream_in(rng):
    return {"a": f32(rng, 16, 16), "b": f32(rng, 16, 32), "out": zeros(16, 32), "gm_slot_buffer": ring(1024)}


def _leaky_stream_out(i):
    h = mm(i["a"], i["b"])
    return {"out": np.maximum(h, F32.type(0.1) * h)}


def _rowscale_in(rng):
    return {"gm_slot_buffer": ring(1024), "a": f32(rng, 16, 16), "b": f32(rng, 16, 16), "out": zeros(16, 16)}


def _rowscale_out(i):
    g = mm(i["a"], i["b"])
    return {"out": g / np.abs(g).max(axis=1, keepdims=True)}


def _lowlevel_pipe_in(rng):
    return {"gm_slot_buffer": ring(1024), "a": f32(rng, 16, 16), "b": f32(rng, 16, 16), "out": zeros(16, 16)}


def _lowlevel_pipe_out(i):
    return {"out": mm(i["a"], i["b"]) + F32.type(1.0)}


def _ksum_colnorm_in(rng):
    return {"a": f32(rng, 16, 32).astype(F16), "b": f32(rng, 32, 32).astype(F16), "out": zeros(16, 32),
            "gm_slot_buffer": ring(2048)}


def _ksum_colnorm_out(i):
    g = mm(i["a"], i["b"])
    return {"out": g - g.max(axis=0, keepdims=True)}


def _halves_to_cube_in(rng):
    return {"x": f32(rng, 16, 16, lo=-1, hi=1), "w": f32(rng, 16, 16), "y": zeros(16, 16),
            "gm_slot_buffer": ring(1024)}


def _halves_to_cube_out(i):
    return {"y": mm(np.exp(i["x"]), i["w"])}


def _roundtrip_whole_in(rng):
    return {"x": f32(rng, 16, 16), "w": f32(rng, 16, 16), "d": zeros(16, 16), "gm_slot_buffer": ring(1024)}


def _roundtrip_whole_out(i):
    return {"d": mm(3 * i["x"], i["w"]) - i["x"]}


def _gated_proj_in(rng):
    return {"x": f32(rng, 32, 32), "w": f32(rng, 32, 16), "g": f32(rng, 32, 16), "out": zeros(32, 16)}


def _gated_proj_out(i):
    return {"out": mm(i["x"], i["w"]) * i["g"]}


def _softplus_in(rng):
    return {"a": f32(rng, 16, 16).astype(F16), "b": f32(rng, 16, 32).astype(F16), "out": zeros(16, 32)}


def _softplus_out(i):
    return {"out": np.log1p(np.exp(mm(i["a"], i["b"]))).astype(F32)}


def _scores_softmax_in(rng):
    return {"q": f32(rng, 16, 16), "kt": f32(rng, 16, 32), "p": zeros(16, 32)}


def _scores_softmax_out(i):
    return {"p": softmax(mm(i["q"], i["kt"]))}


def _squares_mm_in(rng):
    return {"x": f32(rng, 32, 16), "w": f32(rng, 16, 16), "y": zeros(32, 16)}


def _squares_mm_out(i):
    return {"y": mm(i["x"] * i["x"], i["w"])}


def _colhalves_in(rng):
    return {"x": f32(rng, 16, 32).astype(F16), "w": f32(rng, 32, 16).astype(F16), "y": zeros(16, 16)}


def _colhalves_out(i):
    return {"y": mm(i["x"] + F16.type(1.0), i["w"])}


def _normalized_query_in(rng):
    return {"q": away(rng, 16, 16), "k": f32(rng, 16, 16), "z": zeros(16, 16)}


def _normalized_query_out(i):
    q = i["q"]
    return {"z": mm(q / np.abs(q).sum(axis=1, keepdims=True), i["k"])}


def _norm_project_in(rng):
    return {"x": f32(rng, 32, 16), "w": f32(rng, 16, 16), "out": zeros(32, 16)}


def _norm_project_out(i):
    return {"out": mm(0.5 * i["x"], i["w"]) - i["x"]}


def _twice_transform_in(rng):
    return {"x": f32(rng, 16, 16), "m": f32(rng, 16, 16), "out": zeros(16, 16)}


def _twice_transform_out(i):
    return {"out": 2 * mm(np.exp(-i["x"] * i["x"]), i["m"])}


def _running_rowsum_in(rng):
    return {"a": f32(rng, 16, 160), "b": f32(rng, 160, 16), "out": zeros(16, 16)}


def _running_rowsum_out(i):
    return {"out": mm(i["a"], i["b"])}


def _fixed_bias_in(rng):
    return {"out": zeros(16, 64), "a": f32(rng, 16, 32), "b": f32(rng, 32, 64), "bias": f32(rng, 16, 64)}


def _fixed_bias_out(i):
    return {"out": mm(i["a"], i["b"]) + i["bias"]}


def _ffn_two_layer_in(rng):
    return {"x": f32(rng, 32, 16), "w1": f32(rng, 16, 32), "w2": f32(rng, 32, 16), "y": zeros(32, 16)}


def _ffn_two_layer_out(i):
    h = mm(i["x"], i["w1"])
    return {"y": mm(h * sigmoid(h), i["w2"])}


def _flash_attention_in(rng):
    return {"q": f32(rng, 32, 32), "kt": f32(rng, 32, 32), "v": f32(rng, 32, 32), "out": zeros(32, 32)}


def _flash_attention_out(i):
    return {"out": mm(softmax(0.125 * mm(i["q"], i["kt"])), i["v"])}


def _pair_a5_in(rng):
    return {"u": f32(rng, 16, 16), "t": f32(rng, 32, 16), "out": zeros(32, 16)}


def _pair_a5_out(i):
    return {"out": -mm(i["t"], i["u"])}


def _pair_difference_in(rng):
    return {"x": f32(rng, 128, 16), "w": f32(rng, 16, 16), "out": zeros(64, 16)}


def _pair_difference_out(i):
    p = mm(i["x"], i["w"]).reshape(4, 2, 16, 16)
    return {"out": (p[:, 0] - p[:, 1]).reshape(64, 16)}


def _w8a8_in(rng):
    return {"qa": ints(rng, I8, -128, 127, 16, 64), "qb": ints(rng, I8, -128, 127, 64, 32),
            "scale": f32(rng, 1, 32, lo=1e-4, hi=1e-3), "y": zeros(16, 32)}


def _w8a8_out(i):
    return {"y": mm(i["qa"], i["qb"]).astype(F32) * i["scale"]}


def _gqa_in(rng):
    return {"q": f32(rng, 32, 16).astype(F16), "kt": f32(rng, 16, 32).astype(F16), "p": zeros(32, 32), "heads": 2}


def _gqa_out(i):
    p = np.zeros((32, 32), F32)
    for h in range(i["heads"]):
        p[16 * h:16 * h + 16] = softmax(mm(i["q"][16 * h:16 * h + 16], i["kt"]))
    return {"p": p}


def _lane0_in(rng):
    return {"a": f32(rng, 16, 16), "b": f32(rng, 16, 16), "out": zeros(16, 16)}


def _lane0_out(i):
    return {"out": mm(i["a"], i["b"]) + F32.type(2.0)}


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
    "v_tci_ttri_a3": Golden(_index_grids_in, _index_grids_out, rtol=0, atol=0),
    "v_cvt_f32_f16_a5": Golden(_half_trip_in, _half_trip_out),
    "v_cvt_float_int_a3": Golden(_quant_grid_in, _quant_grid_out),
    "v_int32_arith_a5": Golden(_int32_affine_in, _int32_affine_out),
    "v_int16_ops_a3": Golden(_int16_mix_in, _int16_mix_out),
    "v_subset_halves_a3": Golden(_fold_halves_in, _fold_halves_out),
    "v_tmrgsort_dense_executed_a3": Golden(_merge_two_in, _merge_two_out, rtol=0, atol=0),   # index bits: exact
    "v_tgather_compare_gt_a3": Golden(_above_threshold_in, _above_threshold_out),
    "v_tgather_compare_eq_i16_a5": Golden(_find_value_in, _find_value_out),
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
    "v_entry_scalar_call_a5": Golden(_entry_call_in, _entry_call_out),
    "v_i1_flags_a3": Golden(_optional_bias_in, _optional_bias_out),
    "v_alias_stats_level3_a5": Golden(_row_stats_in, _row_stats_out),
    "c_mm_f32_a3": Golden(_gemm_f32_in, _gemm_f32_out, rtol=1e-4, atol=1e-4),
    "c_mm_f16_a5": Golden(_gemm_half_in, _gemm_half_out, rtol=1e-4, atol=1e-4),
    "c_mm_bf16_a3": Golden(_gemm_bf16_in, _gemm_bf16_out, rtol=1e-4, atol=1e-4),
    "c_mm_i8_a5": Golden(_gemm_int8_in, _gemm_int8_out),
    "c_mm_ksplit_level3_a3": Golden(_proj_ksplit_in, _proj_ksplit_out, rtol=1e-4, atol=1e-4),
    "c_mm_first_k_if_a5": Golden(_gemm_k_loop_in, _gemm_k_loop_out, rtol=1e-4, atol=1e-4),
    "c_fp_quant_store_a5": Golden(_quant_linear_in, _quant_linear_out),
    "c_fp_quant_moves_a3": Golden(_quant_moves_in, _quant_moves_out),
    "c_mm_bias_a3": Golden(_linear_bias_in, _linear_bias_out, rtol=1e-4, atol=1e-4),
    "c_mm_bias_first_k_a5": Golden(_linear_bias_k_in, _linear_bias_k_out, rtol=1e-4, atol=1e-4),
    "c_mm_tiles2d_a3": Golden(_tiled_gemm_in, _tiled_gemm_out, rtol=1e-4, atol=1e-4),
    "c_mm_param_offsets_a5": Golden(_block_at_in, _block_at_out, rtol=1e-4, atol=1e-4),
    "c_mm_sync_flags_a3": Golden(_gemm_synced_in, _gemm_synced_out, rtol=1e-4, atol=1e-4),
    "c_mm_if_yield_views_a3": Golden(_guarded_proj_in, _guarded_proj_out, rtol=1e-4, atol=1e-4),
    "c_mm_entry_a5": Golden(_gram_in, _gram_out, rtol=1e-4, atol=1e-4),
    "c_mm_level3_f16_a5": Golden(_scores_block_in, _scores_block_out, rtol=1e-4, atol=1e-4),
    "c_mm_iter_args_a3": Golden(_carried_offset_in, _carried_offset_out, rtol=1e-4, atol=1e-4),
    "x_c2v_split1_residual_a3": Golden(_proj_residual_in, _proj_residual_out, rtol=1e-4, atol=1e-4),
    "x_c2v_split2_relu_a3": Golden(_wide_relu_in, _wide_relu_out, rtol=1e-4, atol=1e-4),
    "x_c2v_nosplit_a3": Golden(_whole_scale_in, _whole_scale_out, rtol=1e-4, atol=1e-4),
    "x_v2c_split1_a3": Golden(_scaled_rows_in, _scaled_rows_out, rtol=1e-4, atol=1e-4),
    "x_v2c_nosplit_a3": Golden(_bias_then_mm_in, _bias_then_mm_out, rtol=1e-4, atol=1e-4),
    "x_both_split1_a3": Golden(_mlp_residual_in, _mlp_residual_out, rtol=1e-4, atol=1e-4),
    "x_c2v_loop_ring_a3": Golden(_stream_blocks_in, _stream_blocks_out, rtol=1e-4, atol=1e-4),
    "x_ffn_silu_bf16_a3": Golden(_ffn_gate_up_in, _ffn_gate_up_out, **BF16_TOL),
    "x_fa_block_both_a3": Golden(_attention_block_in, _attention_block_out, rtol=1e-4, atol=1e-4),
    "x_c2v_level3_a3": Golden(_leaky_stream_in, _leaky_stream_out, rtol=1e-4, atol=1e-4),
    "x_pair_no_entry_a3": Golden(_rowscale_in, _rowscale_out, rtol=1e-4, atol=1e-4),
    "x_internal_pipe_a3": Golden(_lowlevel_pipe_in, _lowlevel_pipe_out, rtol=1e-4, atol=1e-4),
    "x_c2v_kloop_split2_a3": Golden(_ksum_colnorm_in, _ksum_colnorm_out, rtol=1e-4, atol=1e-4),
    "x_v2c_split2_a3": Golden(_halves_to_cube_in, _halves_to_cube_out, rtol=1e-4, atol=1e-4),
    "x_both_nosplit_a3": Golden(_roundtrip_whole_in, _roundtrip_whole_out, rtol=1e-4, atol=1e-4),
    "x_c2v_split1_gate_a5": Golden(_gated_proj_in, _gated_proj_out, rtol=1e-4, atol=1e-4),
    "x_c2v_split2_softplus_a5": Golden(_softplus_in, _softplus_out, rtol=1e-4, atol=1e-4),
    "x_c2v_nosplit_softmax_a5": Golden(_scores_softmax_in, _scores_softmax_out, rtol=1e-4, atol=1e-5),
    "x_v2c_split1_nz_a5": Golden(_squares_mm_in, _squares_mm_out, rtol=1e-4, atol=1e-4),
    "x_v2c_split2_nz_a5": Golden(_colhalves_in, _colhalves_out, rtol=1e-3, atol=1e-3),
    "x_v2c_nosplit_nz_a5": Golden(_normalized_query_in, _normalized_query_out, rtol=1e-4, atol=1e-4),
    "x_both_split1_a5": Golden(_norm_project_in, _norm_project_out, rtol=1e-4, atol=1e-4),
    "x_both_nosplit_a5": Golden(_twice_transform_in, _twice_transform_out, rtol=1e-4, atol=1e-4),
    "x_c2v_loop_ring_a5": Golden(_running_rowsum_in, _running_rowsum_out, rtol=1e-4, atol=1e-4),
    "x_c2v_level3_a5": Golden(_fixed_bias_in, _fixed_bias_out, rtol=1e-4, atol=1e-4),
    "x_ffn_both_a5": Golden(_ffn_two_layer_in, _ffn_two_layer_out, rtol=1e-4, atol=1e-4),
    "x_fa_online_a5": Golden(_flash_attention_in, _flash_attention_out, rtol=1e-4, atol=1e-4),
    "x_pair_no_entry_a5": Golden(_pair_a5_in, _pair_a5_out, rtol=1e-4, atol=1e-4),
    "x_interleaved_pops_a5": Golden(_pair_difference_in, _pair_difference_out, rtol=1e-4, atol=1e-4),
    "x_i8_dequant_a5": Golden(_w8a8_in, _w8a8_out, rtol=1e-5, atol=1e-5),
    "x_gqa_heads_a5": Golden(_gqa_in, _gqa_out, rtol=1e-4, atol=1e-5),
    "x_nosplit_guarded_a5": Golden(_lane0_in, _lane0_out, rtol=1e-4, atol=1e-4),
}
