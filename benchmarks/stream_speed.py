"""Per-tile stream speed, measured side by side in one run.

The kernel: the Cube streams --tiles tiles of 16x16 f32 to the Vector side (C2V); per tile
it does TLOAD -> TMOV -> TMATMUL (16^3) -> TPUSH, and each Vector lane TPOP -> TMULS ->
TSTORE -> TFREE.  UP_DOWN sends each of the two lanes its 8-row half; NO_SPLIT sends the
whole tile to one lane.  out = (x @ I) * 3.  "UP_DOWN pl" is the UP_DOWN kernel written in
the ``pl`` DSL (:func:`pl_stream`: its interpreter runs it), "UP_DOWN .pto" as ptoas spells
it (:func:`pto_stream`: the PTO-AS executor runs it).  With the periodic engine their loops
are taken whole, block after block (docs/engine.md).

Beside it, a plain-numpy loop doing the same per-tile copies and math on preallocated
buffers (L1, L0A/L0B/L0C, the ring slots, each lane's staging slot and result tile).  The
two alternate, so both see the same machine state; each keeps its best of --repeat.

Prints per-tile microseconds and the ratio simulator / numpy loop, checkers off and on,
for both splits, and exits 1 when a ratio misses its target (<= 0.6 checkers off, <= 1.0
checkers on).  It runs both engines, the exact one and ``engine="periodic"`` (the steady
state fast-forwarded, :mod:`ptopipe.sim.periodic`; they must give the same outputs and
cycles), checkers off and on, and judges the faster of each.

Usage:  python benchmarks/stream_speed.py [--tiles 20000] [--repeat 3] [--platform a2a3|a5]
"""
from __future__ import annotations

import argparse
import os
import sys
import time

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))  # this checkout
sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "tests"))

import ptopipe  # noqa: E402
from ptopipe.isa import *  # noqa: F403,E402
from pto_streams import pto_stream  # noqa: E402  (the UP_DOWN kernel as ptoas spells it)

T = 16
SLOT = T * T * 4
DEPTH = 4
TARGET = {False: 0.6, True: 1.0}


def _pipe(split):
    peers = (0, 1) if split == TILE_UP_DOWN else (0,)
    return TPipe(0, DIR_C2V, SLOT, DEPTH, peers=peers)


def cube(x, eye, fifo, tiles, split):
    pipe = _pipe(split)(fifo, 0x0, 0)
    x_l1 = Tile(TileType.Mat, float32, T, T, addr=0x0)
    e_l1 = Tile(TileType.Mat, float32, T, T, addr=SLOT)
    x_l0 = Tile(TileType.Left, float32, T, T, addr=0x0)
    e_l0 = Tile(TileType.Right, float32, T, T, addr=0x0)
    acc = Tile(TileType.Acc, float32, T, T, addr=0x0)
    TLOAD(e_l1, eye)
    TMOV(e_l0, e_l1)
    src = GlobalTensor(x.data(), (T, T))
    for i in range(tiles):
        src.assign(x.data() + i * T * T)
        TLOAD(x_l1, src)
        TMOV(x_l0, x_l1)
        TMATMUL(acc, x_l0, e_l0)
        TPUSH(pipe, acc, split)


def vector(out, fifo, tiles, split):
    sub = get_subblockid()
    rows = T // 2 if split == TILE_UP_DOWN else T
    pipe = _pipe(split)(fifo, 0x0, 0)
    part = Tile(TileType.Vec, float32, rows, T)
    # after the ring's UB part: the 2-slot staging ring (A2A3) or the DEPTH-slot ring itself (A5)
    o_ub = Tile(TileType.Vec, float32, rows, T, addr=DEPTH * SLOT)
    dst = GlobalTensor(out.data(), (rows, T))
    for i in range(tiles):
        TPOP(pipe, part, split)
        TMULS(o_ub, part, 3.0)
        dst.assign(out.data() + (i * T + sub * rows) * T)
        TSTORE(dst, o_ub)
        TFREE(pipe, split)


def pl_stream(tiles, split):
    """The UP_DOWN kernel above written in the ``pl`` DSL (its interpreter runs it; the
    compiler places its tiles and ring)."""
    import ptopipe.language as pl
    rows = T // 2

    @pl.aiv
    def pl_vector(out: pl.Tensor[[tiles * T, T], pl.f32], fifo: pl.Tensor[[DEPTH * SLOT], pl.u8]):
        ring = pl.reserve_buffer(name="c2v_ring", size=DEPTH * SLOT, base=pl.AUTO)
        pl.aiv_initialize_pipe(pl.DIR_C2V, SLOT, fifo, c2v_consumer_buf=ring.base, v2c_consumer_buf=0,
                               slot_num=DEPTH)
        sub = pl.get_subblockid()
        for i in pl.range(tiles):
            part = pl.TPOP(ring, pl.Tile[[rows, T], pl.f32, pl.Vec], split=split)
            o = pl.muls(part, 3.0)
            pl.TFREE(ring)
            pl.store(o, [i * T + sub * rows, 0], out)

    @pl.aic
    def pl_cube(x: pl.Tensor[[tiles * T, T], pl.f32], eye: pl.Tensor[[T, T], pl.f32],
                fifo: pl.Tensor[[DEPTH * SLOT], pl.u8]):
        peer = pl.import_peer_buffer(name="c2v_ring", peer_func=pl_vector)
        pl.aic_initialize_pipe(pl.DIR_C2V, SLOT, fifo, c2v_consumer_buf=peer.base, v2c_consumer_buf=0,
                               slot_num=DEPTH)
        e_l0 = pl.move(pl.load(eye, [0, 0], [T, T], space=pl.Mat), space=pl.Right)
        for i in pl.range(tiles):
            x_l0 = pl.move(pl.load(x, [i * T, 0], [T, T], space=pl.Mat), space=pl.Left)
            pl.TPUSH(pl.matmul(x_l0, e_l0), peer, split=split)

    return pl.program(pl_cube, pl_vector, name=f"stream_{tiles}")


def numpy_loop(x, eye, out, tiles, lanes, local_slots=2):
    """The kernel's tile operations on plain numpy buffers, in the same order."""
    rows = T // lanes
    l1_x, l1_e = np.empty((T, T), np.float32), np.empty((T, T), np.float32)
    l0a, l0b, acc = np.empty_like(l1_x), np.empty_like(l1_x), np.empty_like(l1_x)
    ring = [np.empty_like(l1_x) for _ in range(DEPTH)]
    vec = [([np.empty((rows, T), np.float32) for _ in range(local_slots)],
            np.empty((rows, T), np.float32)) for _ in range(lanes)]
    np.copyto(l1_e, eye)
    np.copyto(l0b, l1_e)
    for i in range(tiles):
        np.copyto(l1_x, x[i * T:(i + 1) * T])           # TLOAD
        np.copyto(l0a, l1_x)                            # TMOV L1 -> L0A
        np.matmul(l0a, l0b, out=acc)                    # TMATMUL
        slot = ring[i % DEPTH]
        np.copyto(slot, acc)                            # TPUSH into the ring slot
        for sub, (staging, o_ub) in enumerate(vec):
            part = staging[i % local_slots]
            np.copyto(part, slot[sub * rows:(sub + 1) * rows])      # TPOP its part
            np.multiply(part, 3.0, out=o_ub)                         # TMULS
            np.copyto(out[i * T + sub * rows:i * T + (sub + 1) * rows], o_ub)  # TSTORE


def timed(fn) -> float:
    t = time.perf_counter()
    fn()
    return time.perf_counter() - t


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--tiles", type=int, default=20000)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--platform", default="a2a3", choices=("a2a3", "a5"))
    ns = ap.parse_args()
    n = ns.tiles
    rng = np.random.default_rng(0)
    x = rng.integers(-100, 100, (n * T, T)).astype(np.float32)
    eye = np.eye(T, dtype=np.float32)
    missed = []
    rows_out = []
    from ptopipe.codegen.pto_exec.launch import prepare
    from ptopipe.runtime.kernels import run as run_pl
    for split, name, lanes, form in ((TILE_UP_DOWN, "UP_DOWN", 2, "py"), (TILE_NO_SPLIT, "NO_SPLIT", 1, "py"),
                                     (TILE_UP_DOWN, "UP_DOWN pl", 2, "pl"),
                                     (TILE_UP_DOWN, "UP_DOWN .pto", 2, "pto")):
        args = dict(x=x, eye=eye, out=np.zeros_like(x), fifo=ptopipe.gm_buffer(DEPTH * SLOT),
                    tiles=n, split=split)
        kernels = (vector, vector) if lanes == 2 else (vector, None)
        if form == "pl":
            prog = pl_stream(n, split)
            del args["tiles"], args["split"]

            def simulate(checks, engine):
                return run_pl(prog, args, checks=checks, platform=ns.platform, engine=engine)
        elif form == "pto":
            text = pto_stream(n)

            def simulate(checks, engine):
                launch = prepare(text=text, inputs=dict(x=x, eye=eye, out=np.zeros_like(x), n=n),
                                 platform=ns.platform)
                res = ptopipe.run(launch.aic, launch.aiv, launch.args, checks=checks, platform=launch.platform,
                                  engine=engine)
                res.outputs["out"] = res.outputs["out"].reshape(x.shape)
                return res
        else:
            def simulate(checks, engine):
                return ptopipe.run(cube, kernels, args, checks=checks, platform=ns.platform, engine=engine)
        ref = np.zeros_like(x)
        t_np = float("inf")
        runs = ((False, "exact"), (False, "periodic"), (True, "exact"), (True, "periodic"))
        t_sim = {r: float("inf") for r in runs}
        for _ in range(ns.repeat):
            t_np = min(t_np, timed(lambda: numpy_loop(x, eye, ref, n, lanes)))
            cycles = set()
            for checks, engine in runs:
                res = simulate(checks, engine)
                t_sim[checks, engine] = min(t_sim[checks, engine], res.summary.wall_seconds)
                cycles.add(res.summary.cycles)
                if not np.array_equal(res.outputs["out"], x * 3):
                    print(f"{name}: simulated result ({engine} engine) differs from numpy")
                    return 1
            if len(cycles) != 1:
                print(f"{name}: the engines disagree on the cycles: {sorted(cycles)}")
                return 1
        if not np.array_equal(ref, x * 3):
            print(f"{name}: numpy loop result wrong")
            return 1
        # judged: the faster engine, with the checkers off and on
        judged = {(c, min(("exact", "periodic"), key=lambda e: t_sim[c, e])) for c in (False, True)}
        for (checks, engine), t in t_sim.items():
            ratio = t / t_np
            ok = ratio <= TARGET[checks] if (checks, engine) in judged else None
            rows_out.append((name, checks, engine, t / n * 1e6, t_np / n * 1e6, ratio, ok))
            if ok is False:
                missed.append(f"{name} checkers {'on' if checks else 'off'}: ratio {ratio:.2f} "
                              f"> {TARGET[checks]}")
    print(f"stream of {n} tiles of {T}x{T} f32, C2V, platform {ns.platform} (best of {ns.repeat})")
    print(f"{'kernel':12} {'checkers':8} {'engine':8} {'sim us/tile':>11} {'numpy us/tile':>13} {'ratio':>6}  target")
    for name, checks, engine, us_sim, us_np, ratio, ok in rows_out:
        verdict = "(not judged: the other engine is faster)" if ok is None else "OK" if ok else "MISSED"
        print(f"{name:12} {'on' if checks else 'off':8} {engine:8} {us_sim:11.1f} {us_np:13.1f} {ratio:6.2f}  "
              f"<= {TARGET[checks]} {verdict}")
    if missed:
        print("MISSED TARGET: " + "; ".join(missed))
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
