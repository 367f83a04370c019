"""S5 subtile_gm: the address-based GM FIFO flow of seed 000 (C2V, depth 2, one slot =
a 128x512 f32 GlobalTensor).  Cube: TALLOC a slot -> 4 x TSTORE of the 128x128
accumulator A @ B into the slot's four column blocks -> TPUSH.  Each Vector core:
TPOP its 64x512 half (TILE_UP_DOWN) -> 4 x [TLOAD a 16-row slice as one 3-D (4, 16, 128)
view into a 64x128 tile -> TADDS 3.14 -> TSTORE] -> TFREE.  The ring lives in GM:
DIR_C2V on A2A3, DIR_C2V_GM on A5.  A, B 128x128 f16; the "rounds" variant streams three
slots through the 2-slot ring (A is three 128-row blocks).
out[r-block] = [P P P P] + 3.14 with P = A[r-block] @ B.

Run:  ptopipe run examples/scenarios/s5_subtile_gm.py [--platform a5] [--variant rounds]
"""
import numpy as np

from ptopipe import Scenario
from ptopipe.isa import *

M = N = 128
REPEAT_N = 4
FULL_N = N * REPEAT_N                 # a slot is M x FULL_N f32 = 256 KiB
VEC_CORES = 2
VEC_M = 16
VEC_LOAD_TIMES = M // (VEC_CORES * VEC_M)
SLOT = M * FULL_N * 4
DEPTH = 2


def _pipe(fifo):
    d = DIR_C2V_GM if platform_id() == PLATFORM_A5 else DIR_C2V
    return TPipe(0, d, SLOT, DEPTH)(fifo, 0x0, 0x0)


def cube(a, b, fifo, rounds):
    pipe = _pipe(fifo)
    a_l1 = Tile(TileType.Mat, float16, M, M, addr=0x0)
    b_l1 = Tile(TileType.Mat, float16, M, N, addr=0x8000)
    a_l0 = Tile(TileType.Left, float16, M, M, addr=0x0)
    b_l0 = Tile(TileType.Right, float16, M, N, addr=0x0)
    acc = Tile(TileType.Acc, float32, M, N, addr=0x0)
    TLOAD(b_l1, b)
    TMOV(b_l0, b_l1)
    push_global = GlobalTensor(float32, (1, 1, 1, M, FULL_N), (1, 1, 1, FULL_N, 1))
    for r in range(rounds):
        TLOAD(a_l1, GlobalTensor(a.data() + r * M * M, (M, M)))
        TMOV(a_l0, a_l1)
        TMATMUL(acc, a_l0, b_l0)
        TALLOC(pipe, push_global, TILE_UP_DOWN)
        for n in range(REPEAT_N):
            store = GlobalTensor(push_global.data() + n * N, (1, 1, 1, M, N), (1, 1, 1, FULL_N, 1))
            TSTORE(store, acc)
        TPUSH(pipe, push_global, TILE_UP_DOWN)


def vector(out, fifo, rounds):
    pipe = _pipe(fifo)
    vec_tile = Tile(TileType.Vec, float32, REPEAT_N * VEC_M, N, addr=0x0)
    dst_tile = Tile(TileType.Vec, float32, REPEAT_N * VEC_M, N, addr=0x10000)
    pop_global = GlobalTensor(float32, (1, 1, 1, M // VEC_CORES, FULL_N), (1, 1, 1, FULL_N, 1))
    sub = get_subblockid()
    shape3d, stride3d = (1, 1, REPEAT_N, VEC_M, N), (1, 1, N, FULL_N, 1)
    for r in range(rounds):
        TPOP(pipe, pop_global, TILE_UP_DOWN)
        for row_slice in range(VEC_LOAD_TIMES):
            vec_base_row = r * M + (M // VEC_CORES) * sub
            local_row = row_slice * VEC_M
            TLOAD(vec_tile, GlobalTensor(pop_global.data() + local_row * FULL_N, shape3d, stride3d))
            TADDS(dst_tile, vec_tile, 3.14)
            TSTORE(GlobalTensor(out.data() + (vec_base_row + local_row) * FULL_N, shape3d, stride3d),
                   dst_tile)
        TFREE(pipe, pop_global, TILE_UP_DOWN)


def make_args(rng, rounds=1):
    return dict(a=rng.integers(-3, 4, (rounds * M, M)).astype(np.float16),
                b=rng.integers(-3, 4, (M, N)).astype(np.float16),
                out=np.zeros((rounds * M, FULL_N), np.float32),
                fifo=gm_buffer(DEPTH * SLOT), rounds=rounds)


def golden(args, **_):
    p = args["a"].astype(np.float32) @ args["b"].astype(np.float32)
    return {"out": np.tile(p, (1, REPEAT_N)) + np.float32(3.14)}


SCENARIO = Scenario("s5_subtile_gm", cube, vector, make_args, golden,
                    {"default": dict(rounds=1), "rounds": dict(rounds=3)},
                    rtol=1e-6, atol=1e-4, doc=__doc__)
