"""A TFREE the compiler places is ordered after every read of the slot it frees.

pto-isa on A5 sends a consumer's free from one pipe (PIPE_V for a C2V ring in UB, PIPE_MTE1
for a V2C ring in L1) without waiting for the other pipes: a TSTORE (MTE3) or a TPUSH of the
popped tile still reading the slot when the free goes out lets the producer overwrite it.
InsertTfree notes on its TFREE the pipes that read the slot before it (``read_on``) and
LowerPlatform puts ``set_flag(PIPE_MTE3, PIPE_V, id)`` / ``wait_flag`` before it where the
protocol model says the free does not follow that pipe (``ProtocolModel.free_needs_event``).
Each kind of last use runs on a ring that wraps under the race checker's causal order (what
``ptopipe check`` uses) against numpy; the events appear only where they are needed."""
import numpy as np
import pytest

import ptopipe.language as pl
from ptopipe.codegen.cpp_writer import write_cpp
from ptopipe.ir import print_program
from ptopipe.errors import CompileError
from ptopipe.passes import compile_program
from ptopipe.passes.manager import CANONICAL_ORDER
from ptopipe.passes.slot_buffer import with_slot_buffer
from ptopipe.runtime import run

from markers import line_of

TM, K, N, T = 16, 16, 32, 4          # 4 tiles through a 2-slot ring: every slot is reused

#: last-use kind -> does pto-isa on A5 need an event before the compiler's TFREE
KINDS = {"store": True, "store_then_vec": True, "vec_then_store": True, "vec": False,
         "move": False, "forward": True, "mat_store": True, "mat_move": False}


def kernel(kind, split=pl.TILE_UP_DOWN, own_event=None):
    """out (and side) from the crossed tile, read per ``kind``: C2V - "store" stores the
    popped tile; "store_then_vec" stores it, then adds; "vec_then_store" adds, then stores
    it; "vec" stores only the sum; "move" copies it on V; "forward" pushes it back to the
    Cube (V2C) - V2C: "mat_store" stores the popped Mat tile, then moves it to Left;
    "mat_move" only moves it.  ``own_event``: the kernel's own MTE3 -> V event id (an int,
    or "dynamic" for one computed from the loop)."""
    mat, forward = kind in ("mat_store", "mat_move"), kind == "forward"
    c2v = not (mat or forward)
    store, add_after, add_first = kind in ("store", "store_then_vec"), kind == "store_then_vec", \
        kind in ("vec_then_store", "vec")
    stores_v, moves = kind == "vec_then_store", kind == "move"
    mat_store = kind == "mat_store"
    fixed_event, dyn_event = isinstance(own_event, int), own_event == "dynamic"
    eid = own_event if fixed_event else 0

    @pl.incore(split=split, slot_num=2)
    def k(a: pl.Tensor[[T * TM, K], pl.f32], b: pl.Tensor[[K, N], pl.f32], sq: pl.Tensor[[K, K], pl.f32],
          out: pl.Tensor[[T * TM, N], pl.f32], side: pl.Tensor[[T * TM, N], pl.f32]):
        b0 = pl.move(pl.load(b, [0, 0], [K, N], space=pl.Mat), space=pl.Right)
        s0 = pl.move(pl.load(sq, [0, 0], [K, K], space=pl.Mat), space=pl.Right)
        for i in pl.range(T):
            if fixed_event:
                pl.record_event(pl.PIPE_MTE3, pl.PIPE_V, eid)
                pl.wait_event(pl.PIPE_MTE3, pl.PIPE_V, eid)
            if dyn_event:
                pl.record_event(pl.PIPE_MTE3, pl.PIPE_V, i % 2)
                pl.wait_event(pl.PIPE_MTE3, pl.PIPE_V, i % 2)
            a0 = pl.move(pl.load(a, [i * TM, 0], [TM, K], space=pl.Mat), space=pl.Left)
            if c2v:
                v = pl.move(pl.matmul(a0, b0), space=pl.Vec)
                if store:
                    pl.store(v, [i * TM, 0], side)
                if add_after:
                    pl.store(v + 1.0, [i * TM, 0], out)
                if add_first:
                    w = v + 1.0
                    if stores_v:
                        pl.store(v, [i * TM, 0], side)
                    pl.store(w, [i * TM, 0], out)
                if moves:
                    pl.store(pl.move(v, space=pl.Vec) + 1.0, [i * TM, 0], out)
            if forward:
                u = pl.move(pl.matmul(a0, s0), space=pl.Vec)             # crosses C2V ...
                f = pl.move(pl.move(u, space=pl.Mat), space=pl.Left)     # ... and back V2C
                pl.store(pl.matmul(f, b0), [i * TM, 0], side)
            if mat:
                x = pl.load(a, [i * TM, 0], [TM, K]) + 1.0
                m = pl.move(x, space=pl.Mat)                     # crosses V2C
                if mat_store:
                    pl.store(m, [i * TM, 0], side)
                pl.store(pl.matmul(pl.move(m, space=pl.Left), b0), [i * TM, 0], out)
    return pl.program(k, name=f"free_order_{kind}")


def _args(rng):
    r = lambda *s: rng.integers(-3, 4, s).astype(np.float32)         # noqa: E731
    return dict(a=r(T * TM, K), b=r(K, N), sq=np.eye(K, dtype=np.float32),
                out=np.zeros((T * TM, N), np.float32), side=np.zeros((T * TM, N), np.float32))


def _golden(kind, args):
    a, b = args["a"], args["b"]
    ab, side = a @ b, np.zeros((T * TM, N), np.float32)
    if kind in ("mat_store", "mat_move"):
        if kind == "mat_store":
            side[:, :K] = a + 1.0
        return (a + 1.0) @ b, side
    if kind in ("store", "store_then_vec", "vec_then_store"):
        side = ab
    if kind == "forward":
        side = ab
    return (np.zeros_like(ab) if kind in ("store", "forward") else ab + 1.0), side


def _events(text: str) -> list:
    return [ln.strip() for ln in text.splitlines() if "_event(" in ln or "barrier(" in ln]


@pytest.mark.parametrize("kind,split", [(k, pl.TILE_UP_DOWN) for k in KINDS] +
                         [("store", pl.TILE_LEFT_RIGHT), ("store", pl.TILE_NO_SPLIT),
                          ("mat_store", pl.TILE_NO_SPLIT)])
def test_every_last_use_before_a_compiled_free_is_clean_on_a5_pto_isa(kind, split):
    prog = kernel(kind, split)
    args = _args(np.random.default_rng(1))
    res = run(prog, with_slot_buffer(prog, args), platform="a5", protocol="pto-isa", causal=True)
    out, side = _golden(kind, args)
    np.testing.assert_array_equal(res.outputs["out"], out)
    np.testing.assert_array_equal(res.outputs["side"], side)
    text = print_program(compile_program(kernel(kind, split), "a5", protocol="pto-isa"))
    free = "PIPE_V" if kind not in ("mat_store", "mat_move") else "PIPE_MTE1"
    want = [f"pl.record_event(pl.PIPE_MTE3, pl.{free}, 0)", f"pl.wait_event(pl.PIPE_MTE3, pl.{free}, 0)"]
    # the kernel frees once in the pipelined loop and once after it, or once in the loop
    assert _events(text) in ([], want, want * 2) and bool(_events(text)) == KINDS[kind]


@pytest.mark.parametrize("platform,protocol", [("a2a3", "spec"), ("a2a3", "pto-isa"), ("a5", "spec")])
def test_no_event_where_the_free_follows_every_read(platform, protocol):
    """Seed 003's free follows every read of the slot; pto-isa's A2A3 tile TPOP copies the
    slot out of the GM ring and frees it itself: no event anywhere."""
    for kind in ("store", "forward", "mat_store"):
        text = print_program(compile_program(kernel(kind), platform, protocol=protocol))
        assert _events(text) == [], (kind, _events(text))


def test_the_cpp_orders_the_store_before_the_free():
    cpp = write_cpp(compile_program(kernel("store"), "a5", protocol="pto-isa"), "a5", "pto-isa")
    lines = [ln.split("//")[0].strip() for ln in cpp.splitlines()]
    k = next(i for i, ln in enumerate(lines) if ln.startswith("TFREE<"))
    assert lines[k - 3].startswith("TSTORE(") and lines[k - 2:k] == [
        "set_flag(PIPE_MTE3, PIPE_V, EVENT_ID0);", "wait_flag(PIPE_MTE3, PIPE_V, EVENT_ID0);"]


def test_the_compilers_event_keeps_off_the_kernels_own_ids():
    """The kernel's own MTE3 -> V event on EVENT_ID0: the free's takes EVENT_ID1; one whose id
    is computed at run time may be any: the free gets pipe_barrier(PIPE_ALL) - both clean."""
    for own, want in ((0, "pl.record_event(pl.PIPE_MTE3, pl.PIPE_V, 1)"), ("dynamic", "pl.barrier()")):
        prog = kernel("store", own_event=own)
        aiv = print_program(compile_program(prog, "a5", protocol="pto-isa")).split("def k_aiv")[1]
        assert want in _events(aiv.split("\n\n")[0])
        args = _args(np.random.default_rng(2))
        res = run(prog, with_slot_buffer(prog, args), platform="a5", protocol="pto-isa", causal=True)
        np.testing.assert_array_equal(res.outputs["side"], args["a"] @ args["b"])


def test_a_hand_written_free_is_left_as_written():
    """The kernel's own TFREE gets no event from the compiler; its author is told by the
    checkers (tests/isa/test_free_order.py) and by VerifyPipes, which refuses it under pto-isa
    on A5 at the TFREE (the compiler's pipeline without verify-pipes leaves it as written)."""
    slot = TM * N * 4

    @pl.aiv
    def vector(out: pl.Tensor[[T * TM, N], pl.f32], fifo: pl.Tensor[[2 * slot], pl.u8]):
        ring = pl.reserve_buffer(name="ring", size=2 * slot, base=pl.AUTO)
        pl.aiv_initialize_pipe(pl.DIR_C2V, slot, fifo, c2v_consumer_buf=ring.base, v2c_consumer_buf=0,
                               slot_num=2)
        sub = pl.get_subblockid()
        for i in pl.range(T):
            s = pl.TPOP(ring, pl.Tile[[TM // 2, N], pl.f32, pl.Vec], split=pl.TILE_UP_DOWN)
            pl.store(s, [i * TM + sub * (TM // 2), 0], out)
            pl.TFREE(ring)  # FREE

    @pl.aic
    def cube(a: pl.Tensor[[T * TM, K], pl.f32], b: pl.Tensor[[K, N], pl.f32],
             fifo: pl.Tensor[[2 * slot], pl.u8]):
        ring = pl.import_peer_buffer(name="ring", peer_func=vector)
        pl.aic_initialize_pipe(pl.DIR_C2V, slot, fifo, c2v_consumer_buf=ring.base, v2c_consumer_buf=0,
                               slot_num=2)
        b0 = pl.move(pl.load(b, [0, 0], [K, N], space=pl.Mat), space=pl.Right)
        for i in pl.range(T):
            a0 = pl.move(pl.load(a, [i * TM, 0], [TM, K], space=pl.Mat), space=pl.Left)
            pl.TPUSH(pl.matmul(a0, b0), ring, split=pl.TILE_UP_DOWN)

    prog = pl.program(cube, vector, name="hand")
    with pytest.raises(CompileError) as e:
        compile_program(prog, "a5", protocol="pto-isa")
    assert "without waiting for PIPE_MTE3" in e.value.what
    assert e.value.where.endswith(f":{line_of(vector.pyfunc, 'FREE')}:13")
    passes = [p for p in CANONICAL_ORDER if p != "verify-pipes"]
    text = print_program(compile_program(prog, "a5", passes=passes, protocol="pto-isa"))
    assert "pl.TFREE(ring)" in text and _events(text) == []
