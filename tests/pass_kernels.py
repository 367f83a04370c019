"""Small hand-written AIC + AIV pairs for the pass tests, with knobs that break one seed-003
rule each and marker comments on the lines an error must name (tests/markers.py)."""
import numpy as np

import ptopipe
import ptopipe.language as pl
from ptopipe.ir import Block, Operation, Region
from ptopipe.ir.opdefs import ProgramOp

TM, N = 16, 32
SLOT = TM * N * 4                     # one 16x32 f32 accumulator


def c2v_pair(depth=2, size=None, fifo_bytes=None, cube_slot=SLOT, rname="ring", iname="ring"):
    """out = a @ b + 1 through a C2V ring of ``depth`` slots (UP_DOWN split)."""
    size = depth * SLOT if size is None else size
    nfifo = depth * SLOT if fifo_bytes is None else fifo_bytes

    @pl.aiv
    def vector(out: pl.Tensor[[2 * TM, N], pl.f32], fifo: pl.Tensor[[nfifo], pl.u8]):
        buf = pl.reserve_buffer(name=rname, size=size, base=pl.AUTO)  # reserve
        pl.aiv_initialize_pipe(pl.DIR_C2V, SLOT, fifo, c2v_consumer_buf=buf.base,  # vinit
                               v2c_consumer_buf=0, slot_num=depth)
        sub = pl.get_subblockid()
        for i in pl.range(2):
            part = pl.TPOP(buf, pl.Tile[[TM // 2, N], pl.f32, pl.Vec], split=pl.TILE_UP_DOWN)
            o = pl.adds(part, 1.0)
            pl.TFREE(buf)
            pl.store(o, [i * TM + sub * (TM // 2), 0], out)

    @pl.aic
    def cube(a: pl.Tensor[[2 * TM, N], pl.f32], b: pl.Tensor[[N, N], pl.f32],
             fifo: pl.Tensor[[nfifo], pl.u8]):
        pbuf = pl.import_peer_buffer(name=iname, peer_func=vector)  # import
        pl.aic_initialize_pipe(pl.DIR_C2V, cube_slot, fifo, c2v_consumer_buf=pbuf.base,  # cinit
                               v2c_consumer_buf=0, slot_num=depth)
        b_l0 = pl.move(pl.load(b, [0, 0], [N, N], space=pl.Mat), space=pl.Right)
        for i in pl.range(2):
            a_l0 = pl.move(pl.load(a, [i * TM, 0], [TM, N], space=pl.Mat), space=pl.Left)
            acc = pl.matmul(a_l0, b_l0)
            pl.TPUSH(acc, pbuf, split=pl.TILE_UP_DOWN)

    return cube, vector


def unverified(*fns, name="pair") -> Operation:
    """A program of the kernels without pl.program's verification (to reach a pass's own
    checks)."""
    top = Block()
    for f in fns:
        top.append(f.ir.clone())
    return Operation(ProgramOp.name, (), (), {"sym_name": name}, (Region([top]),))


def c2v_args(rng, depth=2, fifo_name="fifo"):
    return {"a": rng.integers(-3, 4, (2 * TM, N)).astype(np.float32),
            "b": rng.integers(-3, 4, (N, N)).astype(np.float32),
            "out": np.zeros((2 * TM, N), np.float32), fifo_name: ptopipe.gm_buffer(depth * SLOT)}


def c2v_golden(args) -> dict:
    return {"out": args["a"] @ args["b"] + 1}
