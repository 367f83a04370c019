"""DSL functions run as compiled closures (ptopipe.runtime.closures).

A load / store site re-points its GlobalTensor instead of building a new one per execution
(``closures.REUSE_VIEWS``), and the tiles a TPOP site makes share their views of memory
(``closures.SHARE_VIEWS``).  Random loops of loads and stores at computed offsets - with an
``if`` between two offsets, and a store out of bounds or racing with the other lane at the
Nth iteration - give the same outputs, cycles, traces and errors (class, message, line) with
the reuse on and off; so do tensors popped in the address flow (a new tensor object at the
same load site every iteration).  A race report names the older access's own address.
"""
import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

import ptopipe.language as pl
import ptopipe.runtime.closures as closures
from ptopipe.errors import DataRaceError, PtoPipeError
from ptopipe.runtime import run as dsl_run
from markers import line_of

PLATFORMS = ("a2a3", "a5")


def _stream(R, C, n, bad_at, race_at):
    """Each lane loads row block ``i`` of x (or of z on odd iterations, through an if),
    doubles it and stores it at its own block of y - except lane 1 at ``bad_at`` (out of
    bounds) and at ``race_at`` (lane 0's block: a race, with the checkers on)."""
    @pl.aic
    def cube(x: pl.Tensor[[n * R, C], pl.f32]):
        pass

    @pl.aiv
    def vec(x: pl.Tensor[[n * R, C], pl.f32], z: pl.Tensor[[n * R, C], pl.f32],
            y: pl.Tensor[[2 * n * R, C], pl.f32]):
        sub = pl.get_subblockid()
        for i in pl.range(n):
            if i % 2 == 1:
                row = i * R
            else:
                row = (n - 1 - i) * R
            a = pl.load(x, [row, 0], [R, C])
            b = pl.load(z, [((i + sub) % n) * R, 0], [R, C])      # the lanes' data differ
            s = pl.add(a, b)
            lane = sub + (i == race_at) * sub * -1 + (i == bad_at) * sub * (2 * n)
            pl.store(s, [(2 * i + lane) * R, 0], y)          # STORE
    return pl.program(cube, vec, name="stream")


def _args(R, C, n):
    rng = np.random.default_rng(R * 100 + C * 10 + n)
    return dict(x=rng.integers(-9, 9, (n * R, C)).astype(np.float32),
                z=rng.integers(-9, 9, (n * R, C)).astype(np.float32),
                y=np.zeros((2 * n * R, C), np.float32))


def _outcome(reuse, prog, args, **kw):
    old = closures.REUSE_VIEWS, closures.SHARE_VIEWS
    closures.REUSE_VIEWS = closures.SHARE_VIEWS = reuse
    try:
        res = dsl_run(prog, {k: v.copy() for k, v in args.items()}, trace=True, **kw)
        return ("ok", {k: v.tobytes() for k, v in res.outputs.items()}, res.summary.cycles,
                list(res.cluster.trace))
    except PtoPipeError as e:
        return ("error", type(e).__name__, str(e), e.where)
    finally:
        closures.REUSE_VIEWS, closures.SHARE_VIEWS = old


@settings(max_examples=20, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(R=st.sampled_from([1, 2, 8]), C=st.sampled_from([8, 16, 32]), n=st.integers(1, 6),
       bad=st.integers(-1, 5), race=st.integers(-1, 5), checks=st.booleans(),
       platform=st.sampled_from(PLATFORMS))
def test_reused_site_views_match_views_built_per_execution(R, C, n, bad, race, checks, platform):
    prog, args = _stream(R, C, n, bad, race), _args(R, C, n)
    fast = _outcome(True, prog, args, checks=checks, platform=platform)
    assert fast == _outcome(False, prog, args, checks=checks, platform=platform)
    if fast[0] == "ok" and not (0 <= bad < n) and not (checks and 0 <= race < n):
        want = np.zeros_like(args["y"])
        for i in range(n):
            row = i * R if i % 2 else (n - 1 - i) * R
            lanes = (0, 0) if i == race else (0, 1)        # the block each core stores to
            for sub, lane in enumerate(lanes):             # (AIV1 runs after AIV0: its store lands last)
                k = (i + sub) % n
                want[(2 * i + lane) * R:(2 * i + lane + 1) * R] = args["x"][row:row + R] + args["z"][k * R:(k + 1) * R]
        assert np.array_equal(np.frombuffer(fast[1]["y"], np.float32).reshape(want.shape), want)


@pytest.mark.parametrize("platform", PLATFORMS)
@pytest.mark.parametrize("reuse", [True, False])
def test_race_report_names_the_older_access_at_its_own_address(platform, reuse):
    """Lane 0 runs to its end first (no pipe orders the lanes), re-pointing its store site
    four times after the store lane 1 races with at iteration 2: the report must show that
    store's own address, not where the site points now."""
    R, C, n = 8, 16, 6
    prog, args = _stream(R, C, n, -1, 2), _args(R, C, n)
    old = closures.REUSE_VIEWS
    closures.REUSE_VIEWS = reuse
    try:
        with pytest.raises(DataRaceError) as ei:
            dsl_run(prog, {k: v.copy() for k, v in args.items()}, platform=platform)
    finally:
        closures.REUSE_VIEWS = old
    assert ei.value.where.split(":")[-2] == str(line_of(_stream, "STORE"))
    f = ei.value.findings[0]
    a, b = f["access"], f["other"]
    assert (a["core"], b["core"]) == ("AIV1", "AIV0") and a["lo"] == b["lo"]
    assert a["hi"] - a["lo"] == R * C * 4
    assert f"@GM[{a['lo']:#x}]" in a["object"] and f"@GM[{b['lo']:#x}]" in b["object"]


def _address_flow(n):
    """The Cube TALLOCs a slot tensor, stores a row block of x into it and TPUSHes it for both
    Vector lanes (UP_DOWN); each lane TPOPs its half as a tensor (a new object every iteration)
    and loads it at one site."""
    @pl.aiv
    def vec(y: pl.Tensor[[n * 16, 32], pl.f32], fifo: pl.Tensor[[8192], pl.u8]):
        buf = pl.reserve_buffer(name="ring", size=8192, base=pl.AUTO)
        pl.aiv_initialize_pipe(pl.DIR_C2V_GM, 2048, fifo, c2v_consumer_buf=buf.base, slot_num=4)
        sub = pl.get_subblockid()
        for i in pl.range(n):
            g = pl.TPOP(buf, pl.Tensor[[8, 32], pl.f32], split=pl.TILE_UP_DOWN)
            t = pl.load(g, [0, 0], [8, 32])
            u = pl.add(t, t)
            pl.TFREE(buf, g)
            pl.store(u, [i * 16 + sub * 8, 0], y)

    @pl.aic
    def cube(x: pl.Tensor[[n * 16, 32], pl.f32], fifo: pl.Tensor[[8192], pl.u8]):
        peer = pl.import_peer_buffer(name="ring", peer_func=vec)
        pl.aic_initialize_pipe(pl.DIR_C2V_GM, 2048, fifo, c2v_consumer_buf=peer.base, slot_num=4)
        for i in pl.range(n):
            a = pl.load(x, [i * 16, 0], [16, 32], space=pl.Mat)
            t = pl.TALLOC(peer, pl.Tensor[[16, 32], pl.f32], split=pl.TILE_UP_DOWN)
            pl.store(a, [0, 0], t)
            pl.TPUSH(t, peer, split=pl.TILE_UP_DOWN)
    return pl.program(cube, vec, name="address_flow")


@pytest.mark.parametrize("platform", PLATFORMS)
def test_address_flow_loads_through_one_site_match(platform):
    n = 6
    rng = np.random.default_rng(3)
    args = dict(x=rng.integers(-9, 9, (n * 16, 32)).astype(np.float32),
                y=np.zeros((n * 16, 32), np.float32), fifo=np.zeros(8192, np.uint8))
    fast = _outcome(True, _address_flow(n), args, platform=platform)
    assert fast[0] == "ok", fast
    assert fast == _outcome(False, _address_flow(n), args, platform=platform)
    y = np.frombuffer(fast[1]["y"], np.float32).reshape(n * 16, 32)
    assert np.array_equal(y, 2 * args["x"])


def _ring(n, held):
    """The Cube pushes row block ``i`` of x (C2V, UP_DOWN); each Vector lane pops its half -
    ``held`` tiles at once from one site each (staging slots in turn, views shared per
    site) - sums them, frees them and stores the sum."""
    @pl.aiv
    def vec(y: pl.Tensor[[n * 16, 32], pl.f32], fifo: pl.Tensor[[8192], pl.u8]):
        buf = pl.reserve_buffer(name="ring", size=8192, base=pl.AUTO)
        pl.aiv_initialize_pipe(pl.DIR_C2V, 2048, fifo, c2v_consumer_buf=buf.base, slot_num=4)
        sub = pl.get_subblockid()
        for i in pl.range(n // held):
            a = pl.TPOP(buf, pl.Tile[[8, 32], pl.f32, pl.Vec], split=pl.TILE_UP_DOWN)
            if held == 2:
                b = pl.TPOP(buf, pl.Tile[[8, 32], pl.f32, pl.Vec], split=pl.TILE_UP_DOWN)
                s = pl.add(a, b)
                pl.TFREE(buf)
            else:
                s = pl.add(a, a)
            pl.TFREE(buf)
            pl.store(s, [i * 16 + sub * 8, 0], y)

    @pl.aic
    def cube(x: pl.Tensor[[n * 16, 32], pl.f32], fifo: pl.Tensor[[8192], pl.u8]):
        peer = pl.import_peer_buffer(name="ring", peer_func=vec)
        pl.aic_initialize_pipe(pl.DIR_C2V, 2048, fifo, c2v_consumer_buf=peer.base, slot_num=4)
        e = pl.load(x, [0, 0], [32, 32], space=pl.Mat)
        r = pl.move(e, space=pl.Right)
        for i in pl.range(n):
            t = pl.load(x, [i * 16, 0], [16, 32], space=pl.Mat)
            acc = pl.matmul(pl.move(t, space=pl.Left), r)
            pl.TPUSH(acc, peer, split=pl.TILE_UP_DOWN)
    return pl.program(cube, vec, name="ring")


@pytest.mark.parametrize("platform", PLATFORMS)
@pytest.mark.parametrize("protocol", ["spec", "pto-isa"])
@pytest.mark.parametrize("held", [1, 2])
def test_popped_tiles_sharing_site_views_match(platform, protocol, held):
    """(Two held on A5 under pto-isa - a ring in UB, SlotNum 4: SyncPeriod 2 - is no correct
    kernel: both TFREEs come after the second TPOP and test its index, pto-isa's free index, so
    each pair sends two free credits where the producer counts on one and a push overwrites a
    slot still held.  Both paths report that overwrite alike.)"""
    n = 8
    x = np.zeros((n * 16, 32), np.float32)
    x[:32] = np.eye(32, dtype=np.float32)             # rows 0..31: I, so x @ x[:32] == x
    x[32:] = np.random.default_rng(5).integers(-9, 9, (n * 16 - 32, 32))
    args = dict(x=x, y=np.zeros_like(x), fifo=np.zeros(8192, np.uint8))
    fast = _outcome(True, _ring(n, held), args, platform=platform, protocol=protocol, checks=True)
    assert fast == _outcome(False, _ring(n, held), args, platform=platform, protocol=protocol, checks=True)
    if (held, protocol, platform) == (2, "pto-isa", "a5"):
        assert fast[:2] == ("error", "ProtocolError") and "reused before freed" in fast[2], fast
        return
    assert fast[0] == "ok", fast
    m = x @ x[:32]
    want = np.zeros_like(x)
    for i in range(n // held):
        for sub in (0, 1):
            rows = slice(i * 16 + sub * 8, i * 16 + sub * 8 + 8)
            if held == 1:
                want[rows] = 2 * m[i * 16 + sub * 8:i * 16 + sub * 8 + 8]
            else:
                want[rows] = m[2 * i * 16 + sub * 8:2 * i * 16 + sub * 8 + 8] + \
                    m[(2 * i + 1) * 16 + sub * 8:(2 * i + 1) * 16 + sub * 8 + 8]
    assert np.array_equal(np.frombuffer(fast[1]["y"], np.float32).reshape(x.shape), want)
