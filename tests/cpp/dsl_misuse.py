"""The misuse examples of examples/misuse/ that the ``pl`` DSL can express, as DSL kernels
(tests/cpp/test_cpp_misuse.py lists the others and why): each builder returns the program;
``# <- where`` marks the line the run's error names (``# <- compile``: the line the static
proof names, when it is another one).  The shapes are the examples': 16x16 f32 tiles, a C2V
ring of 1 KiB slots from the Cube to both Vector lanes (each lane pops its UP_DOWN half, as a
DSL pipe has both lanes), ``N`` transfers."""
import numpy as np

import ptopipe
import ptopipe.language as pl

T = 16
H = T // 2
SLOT = T * T * 4
N = 6
FIFO = 8 * SLOT


def args(rng=None) -> dict:
    """The arguments every kernel here takes (each names the ones it uses)."""
    rng = rng or np.random.default_rng(0)
    return dict(x=rng.integers(-3, 4, (2 * T, T)).astype(np.float32),
                mid=np.zeros((N * T, T), np.float32), out=np.zeros((2 * N * T, T), np.float32),
                fifo=ptopipe.gm_buffer(FIFO))


def _c2v_cube(vector, depth=4, direction=pl.DIR_C2V, split=pl.TILE_UP_DOWN, pushes=N):
    """The Cube of the C2V kernels: ``pushes`` pushes of one 16x16 accumulator."""
    @pl.aic
    def cube(x: pl.Tensor[[2 * T, T], pl.f32], fifo: pl.Tensor[[FIFO], pl.u8]):
        peer = pl.import_peer_buffer(name="c2v", peer_func=vector)
        pl.aic_initialize_pipe(direction, SLOT, fifo, c2v_consumer_buf=peer.base, v2c_consumer_buf=0,  # <- binding
                               slot_num=depth)
        a = pl.load(x, [0, 0], [T, T], space=pl.Mat)
        acc = pl.matmul(pl.move(a, space=pl.Left), pl.move(a, space=pl.Right))
        for i in pl.range(pushes):
            pl.TPUSH(acc, peer, split=split)           # <- where (m7, m8, m21)
    return cube


def m3_use_after_free():
    """M3 / M27: the popped half is read after its TFREE."""
    @pl.aiv
    def vector(out: pl.Tensor[[2 * N * T, T], pl.f32], fifo: pl.Tensor[[FIFO], pl.u8]):
        buf = pl.reserve_buffer(name="c2v", size=4 * SLOT, base=pl.AUTO)
        pl.aiv_initialize_pipe(pl.DIR_C2V, SLOT, fifo, c2v_consumer_buf=buf.base, v2c_consumer_buf=0, slot_num=4)
        sub = pl.get_subblockid()
        for i in pl.range(N):
            t = pl.TPOP(buf, pl.Tile[[H, T], pl.f32, pl.Vec], split=pl.TILE_UP_DOWN)
            pl.TFREE(buf)
            o = pl.muls(t, 2.0)                        # <- where
            pl.store(o, [i * T + sub * H, 0], out)
    return pl.program(_c2v_cube(vector), vector, name="dsl_m3_use_after_free")


def m6_tile_too_large():
    """M6: a 32x16 accumulator (2 KiB) pushed into 1 KiB slots."""
    @pl.aiv
    def vector(out: pl.Tensor[[2 * N * T, T], pl.f32], fifo: pl.Tensor[[FIFO], pl.u8]):
        buf = pl.reserve_buffer(name="c2v", size=4 * SLOT, base=pl.AUTO)
        pl.aiv_initialize_pipe(pl.DIR_C2V, SLOT, fifo, c2v_consumer_buf=buf.base, v2c_consumer_buf=0, slot_num=4)
        sub = pl.get_subblockid()
        for i in pl.range(N):
            t = pl.TPOP(buf, pl.Tile[[T, T], pl.f32, pl.Vec], split=pl.TILE_UP_DOWN)
            o = pl.muls(t, 2.0)
            pl.TFREE(buf)
            pl.store(o, [2 * i * T + sub * T, 0], out)

    @pl.aic
    def cube(x: pl.Tensor[[2 * T, T], pl.f32], fifo: pl.Tensor[[FIFO], pl.u8]):
        peer = pl.import_peer_buffer(name="c2v", peer_func=vector)
        pl.aic_initialize_pipe(pl.DIR_C2V, SLOT, fifo, c2v_consumer_buf=peer.base, v2c_consumer_buf=0, slot_num=4)
        a = pl.load(x, [0, 0], [2 * T, T], space=pl.Mat)
        b = pl.load(x, [0, 0], [T, T], space=pl.Mat)
        acc = pl.matmul(pl.move(a, space=pl.Left), pl.move(b, space=pl.Right))
        for i in pl.range(N):
            pl.TPUSH(acc, peer, split=pl.TILE_UP_DOWN)     # <- where
    return pl.program(cube, vector, name="dsl_m6_tile_too_large")


def _consumer(name, depth=4, direction=pl.DIR_C2V, pops=N, pushes=N):
    """A Vector kernel that pops ``pops`` halves, doubles and stores each (and frees it), and
    the Cube pushing ``pushes`` tiles to it."""
    @pl.aiv
    def vector(out: pl.Tensor[[2 * N * T, T], pl.f32], fifo: pl.Tensor[[FIFO], pl.u8]):
        buf = pl.reserve_buffer(name="c2v", size=depth * SLOT, base=pl.AUTO)
        pl.aiv_initialize_pipe(direction, SLOT, fifo, c2v_consumer_buf=buf.base, v2c_consumer_buf=0,
                               slot_num=depth)
        sub = pl.get_subblockid()
        for i in pl.range(pops):
            t = pl.TPOP(buf, pl.Tile[[H, T], pl.f32, pl.Vec], split=pl.TILE_UP_DOWN)   # <- where (m17)
            o = pl.muls(t, 2.0)
            pl.TFREE(buf)
            pl.store(o, [i * T + sub * H, 0], out)
    return pl.program(_c2v_cube(vector, depth, direction, pushes=pushes), vector, name=name)


def m7_leak():
    """M7: the Cube pushes once more than the Vector lanes pop (the <- where is the Cube's TPUSH)."""
    return _consumer("dsl_m7_leak", pops=N - 1)


def m17_relaunch_unpopped():
    """M17 (pto-isa, two launches): the Cube pushes N + 1 tiles, the lanes pop N; the missing
    pop sends no free (SyncPeriod 2, N + 1 odd), so launch 1 ends with a ready credit on the
    flag and launch 2's first TPOP takes it (the <- where is the Vector's TPOP)."""
    return _consumer("dsl_m17_relaunch_unpopped", pushes=N + 1)


def m8_pto_isa_slotnum5():
    """M8: SlotNum 5 under pto-isa (SyncPeriod 2): push #5 reuses slot 0 before it is freed."""
    return _consumer("dsl_m8_pto_isa_slotnum5", depth=5)


def m20_both_gm_pto_isa():
    """M20: a DIR_BOTH_GM pipe under pto-isa on A5 (one GM ring for both ways), refused at the
    Cube's binding (the <- binding); A2A3 lowers *_GM to the plain direction (its rings are
    in GM anyway), and the kernel runs clean there."""
    return _consumer("dsl_m20_both_gm_pto_isa", direction=pl.DIR_BOTH_GM)


def m21_a5_tfree_after_gm_pop():
    """M21: a C2V_GM ring (SlotNum 2) whose consumer TFREEs each tile TPOP already freed on A5
    under pto-isa; clean on A2A3."""
    return _consumer("dsl_m21_a5_tfree_after_gm_pop", depth=2, direction=pl.DIR_C2V_GM)


def m9_gm_race():
    """M9: the Cube stores ``out`` and the Vector lanes load it with nothing between."""
    @pl.aiv
    def vector(out: pl.Tensor[[2 * N * T, T], pl.f32]):
        v = pl.load(out, [0, 0], [T, T])               # <- where
        pl.store(pl.muls(v, 2.0), [T + pl.get_subblockid() * T, 0], out)

    @pl.aic
    def cube(x: pl.Tensor[[2 * T, T], pl.f32], out: pl.Tensor[[2 * N * T, T], pl.f32]):
        a = pl.load(x, [0, 0], [T, T], space=pl.Mat)
        pl.store(a, [0, 0], out)                      # <- other
    return pl.program(cube, vector, name="dsl_m9_gm_race")


def _idle_cube():
    @pl.aic
    def cube(x: pl.Tensor[[2 * T, T], pl.f32]):
        pl.barrier()
    return cube


def m11_missing_wait():
    """M11 (manual sync): the V -> MTE2 event is recorded, never waited for: the next TLOAD
    overwrites the tile the TADDS may still read."""
    @pl.aiv
    def vector(mid: pl.Tensor[[N * T, T], pl.f32], out: pl.Tensor[[2 * N * T, T], pl.f32]):
        sub = pl.get_subblockid()
        pl.record_event(pl.PIPE_MTE3, pl.PIPE_V, pl.EVENT_ID0)
        for i in pl.range(N // 2):
            s = pl.load(mid, [(2 * i + sub) * T, 0], [T, T])     # <- where
            pl.record_event(pl.PIPE_MTE2, pl.PIPE_V, pl.EVENT_ID0)
            pl.wait_event(pl.PIPE_MTE2, pl.PIPE_V, pl.EVENT_ID0)
            pl.wait_event(pl.PIPE_MTE3, pl.PIPE_V, pl.EVENT_ID0)
            d = pl.adds(s, 1.0)
            pl.record_event(pl.PIPE_V, pl.PIPE_MTE2, pl.EVENT_ID0)
            pl.record_event(pl.PIPE_V, pl.PIPE_MTE3, pl.EVENT_ID0)
            pl.wait_event(pl.PIPE_V, pl.PIPE_MTE3, pl.EVENT_ID0)
            pl.store(d, [(2 * i + sub) * T, 0], out)
            pl.record_event(pl.PIPE_MTE3, pl.PIPE_V, pl.EVENT_ID0)
        pl.wait_event(pl.PIPE_MTE3, pl.PIPE_V, pl.EVENT_ID0)
    return pl.program(_idle_cube(), vector, name="dsl_m11_missing_wait")


def m12_misprimed_event():
    """M12 (manual sync): the loop waits for event ``i % 2`` but only EVENT_ID0 is primed."""
    @pl.aiv
    def vector(mid: pl.Tensor[[N * T, T], pl.f32], out: pl.Tensor[[2 * N * T, T], pl.f32]):
        sub = pl.get_subblockid()
        pl.record_event(pl.PIPE_V, pl.PIPE_MTE2, pl.EVENT_ID0)
        for i in pl.range(N // 2):
            pl.wait_event(pl.PIPE_V, pl.PIPE_MTE2, i % 2)          # <- where
            s = pl.load(mid, [(2 * i + sub) * T, 0], [T, T])
            pl.record_event(pl.PIPE_MTE2, pl.PIPE_V, i % 2)
            pl.wait_event(pl.PIPE_MTE2, pl.PIPE_V, i % 2)
            d = pl.adds(s, 1.0)
            pl.record_event(pl.PIPE_V, pl.PIPE_MTE2, i % 2)
            pl.record_event(pl.PIPE_V, pl.PIPE_MTE3, i % 2)
            pl.wait_event(pl.PIPE_V, pl.PIPE_MTE3, i % 2)
            pl.store(d, [(2 * i + sub) * T, 0], out)
            pl.barrier(pl.PIPE_ALL)
        pl.wait_event(pl.PIPE_V, pl.PIPE_MTE2, pl.EVENT_ID0)
        pl.wait_event(pl.PIPE_V, pl.PIPE_MTE2, pl.EVENT_ID1)
    return pl.program(_idle_cube(), vector, name="dsl_m12_misprimed_event")


def m13_event_leak():
    """M13 (manual sync): each iteration records MTE3 -> MTE2 for the next one; the last
    record is never waited for."""
    @pl.aiv
    def vector(mid: pl.Tensor[[N * T, T], pl.f32], out: pl.Tensor[[2 * N * T, T], pl.f32]):
        sub = pl.get_subblockid()
        for i in pl.range(N // 2):
            if i > 0:
                pl.wait_event(pl.PIPE_MTE3, pl.PIPE_MTE2, pl.EVENT_ID2)
            s = pl.load(mid, [(2 * i + sub) * T, 0], [T, T])
            pl.record_event(pl.PIPE_MTE2, pl.PIPE_V, pl.EVENT_ID2)
            pl.wait_event(pl.PIPE_MTE2, pl.PIPE_V, pl.EVENT_ID2)
            d = pl.muls(s, 2.0)
            pl.record_event(pl.PIPE_V, pl.PIPE_MTE3, pl.EVENT_ID2)
            pl.wait_event(pl.PIPE_V, pl.PIPE_MTE3, pl.EVENT_ID2)
            pl.store(d, [(2 * i + sub) * T, 0], out)
            pl.record_event(pl.PIPE_MTE3, pl.PIPE_MTE2, pl.EVENT_ID2)    # <- where
    return pl.program(_idle_cube(), vector, name="dsl_m13_event_leak")


def m15_rebind_in_loop():
    """M15: the pipe initialised inside the tile loop (the DSL refuses it where it is written)."""
    @pl.aiv
    def vector(out: pl.Tensor[[2 * N * T, T], pl.f32], fifo: pl.Tensor[[FIFO], pl.u8]):
        buf = pl.reserve_buffer(name="c2v", size=4 * SLOT, base=pl.AUTO)
        for i in pl.range(N):
            pl.aiv_initialize_pipe(pl.DIR_C2V, SLOT, fifo, c2v_consumer_buf=buf.base,      # <- where
                                   v2c_consumer_buf=0, slot_num=4)
            t = pl.TPOP(buf, pl.Tile[[H, T], pl.f32, pl.Vec], split=pl.TILE_UP_DOWN)
            pl.TFREE(buf)
    return pl.program(_c2v_cube(vector), vector, name="dsl_m15_rebind_in_loop")


def m25_free_split():
    """M25: each lane pushes its UP_DOWN half (V2C); the Cube pops the whole tile and releases it
    with TFREE(split=TILE_NO_SPLIT): pto-isa's Cube frees a no-split tile on AIV0's flag alone."""
    @pl.aic
    def cube(x: pl.Tensor[[2 * T, T], pl.f32], out: pl.Tensor[[2 * N * T, T], pl.f32],
             fifo: pl.Tensor[[FIFO], pl.u8]):
        buf = pl.reserve_buffer(name="v2c", size=4 * SLOT, base=pl.AUTO)
        pl.aic_initialize_pipe(pl.DIR_V2C, SLOT, fifo, c2v_consumer_buf=0, v2c_consumer_buf=buf.base, slot_num=4)
        r = pl.move(pl.load(x, [0, 0], [T, T], space=pl.Mat), space=pl.Right)
        for i in pl.range(N):
            t = pl.TPOP(buf, pl.Tile[[T, T], pl.f32, pl.Mat], split=pl.TILE_UP_DOWN)
            left = pl.move(t, space=pl.Left)
            pl.TFREE(buf, split=pl.TILE_NO_SPLIT)     # <- where
            pl.store(pl.matmul(left, r), [i * T, 0], out)

    @pl.aiv
    def vector(x: pl.Tensor[[2 * T, T], pl.f32], fifo: pl.Tensor[[FIFO], pl.u8]):
        peer = pl.import_peer_buffer(name="v2c", peer_func=cube)
        pl.aiv_initialize_pipe(pl.DIR_V2C, SLOT, fifo, c2v_consumer_buf=0, v2c_consumer_buf=peer.base, slot_num=4)
        sub = pl.get_subblockid()
        for i in pl.range(N):
            pl.TPUSH(pl.load(x, [sub * H, 0], [H, T]), peer, split=pl.TILE_UP_DOWN)
    return pl.program(cube, vector, name="dsl_m25_free_split")


def m29_prefetch_before_wait():
    """M29: the Cube stores ``mid`` tile i, then signals; the Vector lanes wait for signal i
    and read tile i + 1."""
    @pl.aiv
    def vector(mid: pl.Tensor[[N * T, T], pl.f32], out: pl.Tensor[[2 * N * T, T], pl.f32],
               fifo: pl.Tensor[[FIFO], pl.u8]):
        buf = pl.reserve_buffer(name="c2v", size=4 * SLOT, base=pl.AUTO)
        pl.aiv_initialize_pipe(pl.DIR_C2V, SLOT, fifo, c2v_consumer_buf=buf.base, v2c_consumer_buf=0, slot_num=4)
        sub = pl.get_subblockid()
        for i in pl.range(N - 1):
            note = pl.TPOP(buf, pl.Tile[[H, T], pl.f32, pl.Vec], split=pl.TILE_UP_DOWN)
            pl.TFREE(buf)
            nxt = pl.load(mid, [(i + 1) * T + sub * H, 0], [H, T])     # <- where
            pl.store(pl.adds(nxt, 1.0), [i * T + sub * H, 0], out)
        last = pl.TPOP(buf, pl.Tile[[H, T], pl.f32, pl.Vec], split=pl.TILE_UP_DOWN)
        pl.TFREE(buf)

    @pl.aic
    def cube(x: pl.Tensor[[2 * T, T], pl.f32], mid: pl.Tensor[[N * T, T], pl.f32],
             fifo: pl.Tensor[[FIFO], pl.u8]):
        peer = pl.import_peer_buffer(name="c2v", peer_func=vector)
        pl.aic_initialize_pipe(pl.DIR_C2V, SLOT, fifo, c2v_consumer_buf=peer.base, v2c_consumer_buf=0, slot_num=4)
        a = pl.load(x, [0, 0], [T, T], space=pl.Mat)
        acc = pl.matmul(pl.move(a, space=pl.Left), pl.move(a, space=pl.Right))
        for i in pl.range(N):
            pl.store(a, [i * T, 0], mid)
            pl.TPUSH(acc, peer, split=pl.TILE_UP_DOWN)
    return pl.program(cube, vector, name="dsl_m29_prefetch_before_wait")


def m30_commit_before_store():
    """M30: the Cube commits a TALLOCed GM slot with TPUSH after storing its top half and
    stores the bottom half after the commit."""
    @pl.aiv
    def vector(out: pl.Tensor[[2 * N * T, T], pl.f32], fifo: pl.Tensor[[FIFO], pl.u8]):
        buf = pl.reserve_buffer(name="c2v", size=2 * SLOT, base=pl.AUTO)
        pl.aiv_initialize_pipe(pl.DIR_C2V_GM, SLOT, fifo, c2v_consumer_buf=buf.base, v2c_consumer_buf=0,
                               slot_num=4)
        sub = pl.get_subblockid()
        for i in pl.range(N):
            half = pl.TPOP(buf, pl.Tensor[[H, T], pl.f32], split=pl.TILE_UP_DOWN)
            t = pl.load(half, [0, 0], [H, T])
            pl.TFREE(buf, half)
            pl.store(pl.adds(t, 1.0), [i * T + sub * H, 0], out)

    @pl.aic
    def cube(x: pl.Tensor[[2 * T, T], pl.f32], fifo: pl.Tensor[[FIFO], pl.u8]):
        peer = pl.import_peer_buffer(name="c2v", peer_func=vector)
        pl.aic_initialize_pipe(pl.DIR_C2V_GM, SLOT, fifo, c2v_consumer_buf=peer.base, v2c_consumer_buf=0,
                               slot_num=4)
        top = pl.load(x, [0, 0], [H, T], space=pl.Mat)
        bot = pl.load(x, [H, 0], [H, T], space=pl.Mat)
        for i in pl.range(N):
            slot = pl.TALLOC(peer, pl.Tensor[[T, T], pl.f32], split=pl.TILE_UP_DOWN)
            pl.store(top, [0, 0], slot)
            pl.TPUSH(slot, peer)
            pl.store(bot, [H, 0], slot)                       # <- where
    return pl.program(cube, vector, name="dsl_m30_commit_before_store")


def m31_lane_init_overwrite():
    """M31: lane 0 zero-fills all of ``out`` while lane 1 stores its halves into it."""
    @pl.aiv
    def vector(out: pl.Tensor[[2 * N * T, T], pl.f32], fifo: pl.Tensor[[FIFO], pl.u8]):
        buf = pl.reserve_buffer(name="c2v", size=4 * SLOT, base=pl.AUTO)
        pl.aiv_initialize_pipe(pl.DIR_C2V, SLOT, fifo, c2v_consumer_buf=buf.base, v2c_consumer_buf=0, slot_num=4)
        sub = pl.get_subblockid()
        if sub == 0:
            z = pl.full([T, T], pl.f32, 0.0)
            for i in pl.range(N):
                pl.store(z, [i * T, 0], out)
        for i in pl.range(N):
            t = pl.TPOP(buf, pl.Tile[[H, T], pl.f32, pl.Vec], split=pl.TILE_UP_DOWN)
            o = pl.adds(t, 1.0)
            pl.TFREE(buf)
            pl.store(o, [i * T + sub * H, 0], out)          # <- where
    return pl.program(_c2v_cube(vector), vector, name="dsl_m31_lane_init_overwrite")


def m22_layout_nd_into_nz():
    """M22 (A5): the Vector kernel (no-split: one lane, AIV0, as A5 gives a no-split pipe)
    pushes an ND tile into the V2C ring, which the Cube pops as an NZ Mat tile; clean on A2A3,
    where the ring is in GM and the pop converts."""
    @pl.aiv(split=pl.TILE_NO_SPLIT)
    def vector(x: pl.Tensor[[2 * T, T], pl.f32], fifo: pl.Tensor[[FIFO], pl.u8]):
        peer = pl.import_peer_buffer(name="v2c", peer_func=cube)
        pl.aiv_initialize_pipe(pl.DIR_V2C, SLOT, fifo, c2v_consumer_buf=0, v2c_consumer_buf=peer.base, slot_num=4,
                               lanes=1)
        v = pl.load(x, [0, 0], [T, T])
        for i in pl.range(2):
            pl.TPUSH(v, peer, split=pl.TILE_NO_SPLIT)

    @pl.aic
    def cube(out: pl.Tensor[[2 * N * T, T], pl.f32], fifo: pl.Tensor[[FIFO], pl.u8]):
        buf = pl.reserve_buffer(name="v2c", size=4 * SLOT, base=pl.AUTO)
        pl.aic_initialize_pipe(pl.DIR_V2C, SLOT, fifo, c2v_consumer_buf=0, v2c_consumer_buf=buf.base, slot_num=4,
                               lanes=1)
        for i in pl.range(2):
            b = pl.TPOP(buf, pl.Tile[[T, T], pl.f32, pl.Mat, pl.NZ], split=pl.TILE_NO_SPLIT)   # <- where
            pl.TFREE(buf)
    return pl.program(cube, vector, name="dsl_m22_layout_nd_into_nz")


def m28_sync_period_credit():
    """M28 (pto-isa; a one-lane pipe, ``lanes=1``, as pto-isa gives a no-split pipe on A5): the
    Vector kernel holds three GM slots, frees the oldest and pops two more; push #4 waits for a
    free notification sent only every SyncPeriod (2) TFREEs - a deadlock.  (The TFREE tests the
    index of the latest TPOP, #2, which does not end a period either: pto-isa's free index.)"""
    @pl.aiv(split=pl.TILE_NO_SPLIT)
    def vector(out: pl.Tensor[[2 * N * T, T], pl.f32], fifo: pl.Tensor[[FIFO], pl.u8]):
        buf = pl.reserve_buffer(name="c2v", size=4 * SLOT, base=pl.AUTO)
        pl.aiv_initialize_pipe(pl.DIR_C2V_GM, SLOT, fifo, c2v_consumer_buf=buf.base, v2c_consumer_buf=0,
                               slot_num=4, lanes=1)
        s0 = pl.TPOP(buf, pl.Tensor[[T, T], pl.f32])
        s1 = pl.TPOP(buf, pl.Tensor[[T, T], pl.f32])
        s2 = pl.TPOP(buf, pl.Tensor[[T, T], pl.f32])          # <- compile
        o = pl.load(s0, [0, 0], [T, T])
        pl.TFREE(buf, s0)
        s3 = pl.TPOP(buf, pl.Tensor[[T, T], pl.f32])
        s4 = pl.TPOP(buf, pl.Tensor[[T, T], pl.f32])
        pl.TFREE(buf, s1)
        pl.TFREE(buf, s2)
        pl.TFREE(buf, s3)
        pl.TFREE(buf, s4)
        pl.store(o, [0, 0], out)

    @pl.aic
    def cube(x: pl.Tensor[[2 * T, T], pl.f32], fifo: pl.Tensor[[FIFO], pl.u8]):
        peer = pl.import_peer_buffer(name="c2v", peer_func=vector)
        pl.aic_initialize_pipe(pl.DIR_C2V_GM, SLOT, fifo, c2v_consumer_buf=peer.base, v2c_consumer_buf=0,  # <- lanes
                               slot_num=4, lanes=1)
        v = pl.load(x, [0, 0], [T, T], space=pl.Mat)
        for i in pl.range(5):
            slot = pl.TALLOC(peer, pl.Tensor[[T, T], pl.f32])      # <- where
            pl.store(v, [0, 0], slot)
            pl.TPUSH(slot, peer)
    return pl.program(cube, vector, name="dsl_m28_sync_period_credit")
