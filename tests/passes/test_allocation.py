"""AllocateMemoryAddr for DSL kernels (ir/liveness.py, ir/layout.py): tiles share
memory only when their lifetimes do not overlap, a loop that keeps an older tile value
reads that value (not the one produced after it), overflowing memory and overlapping
literal reserve_buffers are reported, and random kernels with loop-carried rebinding match
a numpy evaluation of the same statements."""
import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import ptopipe
import ptopipe.language as pl
from ptopipe import CompileError, ConfigError
from ptopipe.runtime import kernels
from plans import plan as plan_program

from markers import line_of

R, C = 16, 16


@pl.aic
def idle():
    return


@pl.aiv
def diff(x: pl.Tensor[[128, 16], pl.f32], out: pl.Tensor[[128, 16], pl.f32]):
    prev = pl.load(x, [0, 0], [16, 16])
    for i in pl.range(1, 8):
        cur = pl.load(x, [i * 16, 0], [16, 16])
        d = cur - prev                      # reads the previous iteration's cur
        pl.store(d, [i * 16, 0], out)
        prev = cur


@pl.aiv
def diff2(x: pl.Tensor[[128, 16], pl.f32], out: pl.Tensor[[128, 16], pl.f32]):
    older = pl.load(x, [0, 0], [16, 16])
    prev = pl.load(x, [16, 0], [16, 16])
    for i in pl.range(2, 8):
        cur = pl.load(x, [i * 16, 0], [16, 16])
        d = cur - older                     # two iterations back
        pl.store(d, [i * 16, 0], out)
        older = prev
        prev = cur


def _run(aiv_fn, x, platform="a2a3", **kw):
    aic, aiv = kernels(pl.program(idle, aiv_fn, name=aiv_fn.__name__))
    return ptopipe.run(aic, (aiv, None), dict(x=x, out=np.zeros_like(x)), platform=platform, **kw)


X = (np.arange(128 * 16, dtype=np.float32).reshape(128, 16) % 97) ** 1.5


@pytest.mark.parametrize("platform", ["a2a3", "a5"])
def test_loop_keeping_an_older_tile_reads_it(platform):
    out = _run(diff, X, platform).outputs["out"]
    np.testing.assert_array_equal(out[16:], X[16:] - X[:-16])
    lay = plan_program(pl.program(idle, diff, name="d"))["diff"]
    assert len(lay.rotations["cur"]) == 2                 # cur gets two buffers, used in turn


@pytest.mark.parametrize("platform", ["a2a3", "a5"])
def test_value_carried_two_iterations_back(platform):
    out = _run(diff2, X, platform).outputs["out"]
    np.testing.assert_array_equal(out[32:], X[32:] - X[:-32])
    lay = plan_program(pl.program(idle, diff2, name="d"))["diff2"]
    assert len(lay.rotations["cur"]) == 3


@pl.aiv
def accumulate(x: pl.Tensor[[128, 16], pl.f32], out: pl.Tensor[[128, 16], pl.f32]):
    acc = pl.load(x, [0, 0], [16, 16])
    for i in pl.range(1, 8):
        acc = acc + pl.load(x, [i * 16, 0], [16, 16])
    pl.store(acc, [0, 0], out)


def test_in_place_accumulator_needs_one_buffer():
    out = _run(accumulate, X).outputs["out"]
    np.testing.assert_array_equal(out[:16], X.reshape(8, 16, 16).sum(axis=0))
    assert plan_program(pl.program(idle, accumulate, name="a"))["accumulate"].rotations == {}


@pl.aiv
def chain(x: pl.Tensor[[128, 16], pl.f32], out: pl.Tensor[[128, 16], pl.f32]):
    a = pl.load(x, [0, 0], [16, 16])
    b = a * 2.0
    c = b + 1.0
    d = c * 3.0
    e = d - 4.0
    pl.store(e, [0, 0], out)


def test_dead_tiles_share_memory():
    out = _run(chain, X).outputs["out"]
    np.testing.assert_array_equal(out[:16], ((X[:16] * 2 + 1) * 3) - 4)
    lay = plan_program(pl.program(idle, chain, name="c"))["chain"]
    # five 1 KiB tiles, at most two live at once (an op's source and its result)
    assert lay.peak["UB"] == 2 * 1024
    assert lay.tiles["a"][1] != lay.tiles["b"][1] and lay.tiles["a"][1] == lay.tiles["c"][1]


@pl.aiv
def too_big(x: pl.Tensor[[384, 128], pl.f32], out: pl.Tensor[[384, 128], pl.f32]):
    a = pl.load(x, [0, 0], [128, 128])
    b = pl.load(x, [128, 0], [128, 128])
    c = pl.load(x, [256, 0], [128, 128])    # <- c
    d = a + b
    e = d + c   # <- e
    pl.store(e + a + b + c + d, [0, 0], out)    # at e + a: a..e and its result, 6 x 64 KiB


@pytest.mark.parametrize("platform", ["a2a3", "a5"])
def test_tiles_overflowing_ub_name_bytes_needed_and_available(platform, no_hang):
    x = np.zeros((384, 128), np.float32)
    aic, aiv = kernels(pl.program(idle, too_big, name="big"))
    with pytest.raises(ConfigError) as ei:
        ptopipe.run(aic, (aiv, None), dict(x=x, out=x.copy()), platform=platform)
    e = ei.value
    avail = {"a2a3": "keeps Vec tiles below 0x2e000 (188416 of its 196608 bytes)",
             "a5": f"has {256 * 1024} bytes"}[platform]
    assert f"need {6 * 64 * 1024} bytes of UB" in e.what and avail in e.what, e.what
    # at the first tile past the memory, each such tile listed, as the allocate-memory pass
    # reports a compiled kernel's (not at the kernel's def)
    first = {"a2a3": "c", "a5": "e"}[platform]
    assert e.where.endswith(f":{line_of(too_big.pyfunc, '<- ' + first)}:5"), e.where
    assert f"the tiles that do not fit:\n  {first}: 65536 bytes at " in e.details, e.details
    assert f", defined at {e.where}\n" in e.details, e.details


def test_overlapping_literal_reserves_name_both():
    src = '''
import ptopipe.language as pl

@pl.aiv
def v(fifo: pl.Tensor[[16384], pl.u8]):
    a = pl.reserve_buffer(name="ring_a", size=4096, base=0x0)
    b = pl.reserve_buffer(name="ring_b", size=4096, base=0x800)
    pl.aiv_initialize_pipe(pl.DIR_C2V, 2048, fifo, c2v_consumer_buf=a.base, v2c_consumer_buf=0)
    t = pl.TPOP(a, pl.Tile[[16, 32], pl.f32, pl.Vec])
    pl.TFREE(a)
    u = pl.TPOP(b, pl.Tile[[16, 32], pl.f32, pl.Vec])
    pl.TFREE(b)
'''
    with pytest.raises(CompileError) as ei:
        plan_program(pl.parse(src))
    e = ei.value
    assert "'ring_b' [0x800, 0x1800) overlaps reserve_buffer 'ring_a' [0x0, 0x1000)" in e.what
    assert e.where.endswith(":7:5") and ":6:5" in str(e)


# -- random kernels with loop-carried rebinding vs numpy ----------------------------------
_OPS = ("add", "sub", "mul", "scale", "swap", "load")


def _kernel_source(stmts, n_vars: int, trips: int) -> str:
    lines = ["import ptopipe.language as pl", "", "@pl.aiv",
             f"def k(x: pl.Tensor[[{n_vars * 16 + 16}, 16], pl.f32], out: pl.Tensor[[{n_vars * 16}, 16], pl.f32]):"]
    for v in range(n_vars):
        lines.append(f"    v{v} = pl.load(x, [{v * 16}, 0], [16, 16])")
    lines.append(f"    for i in pl.range({trips}):")
    for op, a, b, c in stmts:
        if op == "swap":
            lines.append(f"        v{a} = v{b}")
        elif op == "load":
            lines.append(f"        v{a} = pl.load(x, [{n_vars * 16}, 0], [16, 16]) + v{b}")
        elif op == "scale":
            lines.append(f"        v{a} = v{b} * 0.5")
        else:
            sym = {"add": "+", "sub": "-", "mul": "*"}[op]
            lines.append(f"        v{a} = v{b} {sym} v{c}")
    for v in range(n_vars):
        lines.append(f"    pl.store(v{v}, [{v * 16}, 0], out)")
    return "\n".join(lines) + "\n"


def _numpy(stmts, x, n_vars: int, trips: int):
    with np.errstate(all="ignore"):         # products may overflow to inf, as in the simulator
        return _evaluate(stmts, x, n_vars, trips)


def _evaluate(stmts, x, n_vars: int, trips: int):
    v = [x[i * 16:(i + 1) * 16].copy() for i in range(n_vars)]
    extra = x[n_vars * 16:]
    for _ in range(trips):
        for op, a, b, c in stmts:
            if op == "swap":
                v[a] = v[b]
            elif op == "load":
                v[a] = extra + v[b]
            elif op == "scale":
                v[a] = v[b] * np.float32(0.5)
            else:
                v[a] = {"add": np.add, "sub": np.subtract, "mul": np.multiply}[op](v[b], v[c])
    return np.concatenate(v)


@settings(max_examples=120, deadline=None, derandomize=True, suppress_health_check=[HealthCheck.too_slow])
@given(st.integers(2, 4).flatmap(lambda n: st.tuples(
    st.just(n),
    st.lists(st.tuples(st.sampled_from(_OPS), st.integers(0, n - 1), st.integers(0, n - 1),
                       st.integers(0, n - 1)), min_size=1, max_size=8),
    st.integers(0, 4))))
def test_random_carried_kernels_match_numpy(case):
    n, stmts, trips = case
    src = _kernel_source(stmts, n, trips)
    fn = pl.parse(src).functions[0]
    prog = pl.program(idle, fn, name="r")
    rng = np.random.default_rng(len(stmts))
    x = rng.integers(-3, 4, ((n + 1) * 16, 16)).astype(np.float32)
    aic, aiv = kernels(prog)
    res = ptopipe.run(aic, (aiv, None), dict(x=x, out=np.zeros((n * 16, 16), np.float32)))
    np.testing.assert_array_equal(res.outputs["out"], _numpy(stmts, x, n, trips))


@pl.aiv
def outer_carry(x: pl.Tensor[[128, 16], pl.f32], out: pl.Tensor[[128, 16], pl.f32]):
    keep = pl.load(x, [0, 0], [16, 16])
    last = pl.load(x, [0, 0], [16, 16])
    for i in pl.range(3):
        for j in pl.range(2):
            t = pl.load(x, [(i * 2 + j) * 16, 0], [16, 16])
            last = t
        pl.store(last + keep, [i * 16, 0], out)     # <- read
        keep = last


@pl.aiv
def cond_keep(x: pl.Tensor[[128, 16], pl.f32], out: pl.Tensor[[128, 16], pl.f32]):
    keep = pl.load(x, [0, 0], [16, 16])
    for i in pl.range(1, 8):
        cur = pl.load(x, [i * 16, 0], [16, 16])
        pl.store(cur - keep, [i * 16, 0], out)      # <- read
        if i % 3 == 0:
            keep = cur


@pytest.mark.parametrize("fn", [outer_carry, cond_keep])
def test_a_tile_kept_for_an_unknown_number_of_executions_is_reported(fn):
    """A tile carried out of an inner loop that runs again, or kept under a condition: no
    number of buffers used in turn keeps it; the read is a CompileError at its line."""
    with pytest.raises(CompileError) as ei:
        kernels(pl.program(idle, fn, name="o"))
    e = ei.value
    assert "'keep' may hold the tile made at" in e.what and "any number of executions ago" in e.what
    assert e.where.endswith(f":{line_of(fn.pyfunc, '<- read')}:9")


@pl.aiv
def exclusive(x: pl.Tensor[[128, 16], pl.f32], out: pl.Tensor[[128, 16], pl.f32]):
    last = pl.load(x, [0, 0], [16, 16])
    for i in pl.range(4):
        if i % 2 == 0:
            for j in pl.range(2):
                last = pl.load(x, [(i * 2 + j) * 16, 0], [16, 16])
        else:
            pl.store(last, [i * 16, 0], out)


@pl.aiv
def expr_carry(x: pl.Tensor[[128, 16], pl.f32], out: pl.Tensor[[128, 16], pl.f32]):
    a = pl.load(x, [0, 0], [16, 16])
    for i, (q,) in pl.range(3, init_values=(a * 2.0,)):
        q2 = pl.yield_(q + a)
    pl.store(q2, [0, 0], out)


@pytest.mark.parametrize("platform", ["a2a3", "a5"])
def test_exclusive_branches_and_tile_expressions_in_inits_and_yields(platform):
    """A read in the else branch of what an inner loop of the then branch made is not a
    reuse; a tile expression among a loop's inits or yields gets storage of its own."""
    out = _run(exclusive, X, platform).outputs["out"]
    np.testing.assert_array_equal(out[16:32], X[16:32])       # i=1 stores what i=0 made last
    np.testing.assert_array_equal(out[48:64], X[80:96])       # i=3: what i=2 made last
    out = _run(expr_carry, X, platform).outputs["out"]
    want = X[:16] * np.float32(2)
    for _ in range(3):
        want = want + X[:16]
    np.testing.assert_array_equal(out[:16], want)


@pl.aiv
def manual(x: pl.Tensor[[128, 16], pl.f32], out: pl.Tensor[[128, 16], pl.f32]):
    a = pl.load(x, [0, 0], [16, 16])
    pl.record_event(pl.PIPE_MTE2, pl.PIPE_V, pl.EVENT_ID0)
    pl.wait_event(pl.PIPE_MTE2, pl.PIPE_V, pl.EVENT_ID0)
    b = pl.muls(a, 2.0)
    pl.record_event(pl.PIPE_V, pl.PIPE_MTE3, pl.EVENT_ID0)
    pl.wait_event(pl.PIPE_V, pl.PIPE_MTE3, pl.EVENT_ID0)
    pl.store(b, [0, 0], out)
    c = pl.load(x, [16, 0], [16, 16])            # a is dead: it could take a's bytes
    pl.record_event(pl.PIPE_MTE2, pl.PIPE_MTE3, pl.EVENT_ID1)
    pl.wait_event(pl.PIPE_MTE2, pl.PIPE_MTE3, pl.EVENT_ID1)
    pl.store(c, [16, 0], out)


def test_manual_sync_kernels_get_no_hidden_reuse():
    """With events ordering the pipes, reusing a's bytes for c would need a V -> MTE2 event
    the user cannot see to write: such a function gets no sharing."""
    lay = plan_program(pl.program(idle, manual, name="m"))["manual"]
    assert len({lay.tiles[n][1] for n in ("a", "b", "c")}) == 3
    res = _run(manual, X, sync="manual")
    np.testing.assert_array_equal(res.outputs["out"][:16], X[:16] * 2)
    np.testing.assert_array_equal(res.outputs["out"][16:32], X[16:32])


@pl.incore(split=pl.TILE_NO_SPLIT)          # whole tiles (split, each core would take half)
def too_big_mixed(x: pl.Tensor[[384, 128], pl.f32], out: pl.Tensor[[384, 128], pl.f32]):  # <- fn
    a = pl.load(x, [0, 0], [128, 128])
    b = pl.load(x, [128, 0], [128, 128])
    c = pl.load(x, [256, 0], [128, 128])
    d = a + b
    e = d + c
    pl.store(e + a + b + c + d, [0, 0], out)


@pytest.mark.parametrize("platform", ["a2a3", "a5"])
def test_allocate_memory_pass_reports_overflow_at_compile_time(platform):
    """The allocate-memory pass checks the tiles against the platform's memory when the
    program is compiled (before any run), with the bytes needed and available."""
    from ptopipe.passes import compile_program
    with pytest.raises(CompileError) as ei:
        compile_program(pl.program(too_big_mixed, name="big"), platform)
    e = ei.value
    avail = {"a2a3": "keeps Vec tiles below 0x2e000 (188416 of its 196608 bytes)",
             "a5": f"has {256 * 1024} bytes"}[platform]
    assert f"need {6 * 64 * 1024} bytes of UB at their peak but {platform} {avail}" in e.what, e.what
    # at the first tile that does not fit, each of them listed with its size and line
    import re
    listed = re.findall(r"\n  (\w+): 65536 bytes at 0x[0-9a-f]+, defined at (\S+)", e.details)
    assert "the tiles that do not fit:" in e.details and listed
    assert e.where == listed[0][1] and int(e.where.split(":")[-2]) > line_of(too_big_mixed.pyfunc, '<- fn')
    # the pass is what reports it: without it the pipeline compiles and the run fails instead
    from ptopipe.passes import default_pipeline
    rest = ",".join(p for p in default_pipeline() if p != "allocate-memory")
    compile_program(pl.program(too_big_mixed, name="big"), platform, rest)


def test_a_row_reduction_gets_a_scratch_tile_live_while_it_runs():
    """pto-isa's TROWSUM / TROWMAX / TROWMIN take a scratch tile the size of their source:
    the allocator places one per reduction (assigned or nested), disjoint from the op's
    source and result, and reuses its bytes once the op has run."""
    @pl.aiv
    def k(x: pl.Tensor[[16, 32], pl.f32], out: pl.Tensor[[16, 1], pl.f32]):
        t = pl.load(x, [0, 0], [16, 32])
        s = pl.row_sum(t)
        m = pl.row_max(pl.exp(t))
        pl.store(pl.add(pl.add(s, m), pl.row_min(t)), [0, 0], out)

    lay = plan_program(pl.program(k))["k"]
    size = 16 * 32 * 4

    def span(addr, n):
        return set(range(addr, addr + n))
    assert {"s", "m"} <= set(lay.scratch) and len(lay.scratch) == 3     # + the nested row_min
    _m, s_tmp = lay.scratch["s"]
    assert not span(s_tmp, size) & (span(lay.tiles["t"][1], size) | span(lay.tiles["s"][1], 64))
    _m, m_tmp = lay.scratch["m"]
    assert not span(m_tmp, size) & (span(lay.tiles["m"][1], 64) | span(lay.tiles["t"][1], size))
    assert lay.peak["UB"] >= 3 * size                 # t, exp(t) and row_max's scratch at once


@pl.aiv
def lagged_nested(x: pl.Tensor[[16, 16], pl.f32], out: pl.Tensor[[64, 16], pl.f32]):
    a = pl.load(x, [0, 0], [16, 16])
    for i, (cur, prev) in pl.range(0, 4, 1, init_values=(a, a)):
        pl.store(prev, [i * 16, 0], out)
        cur2, prev2 = pl.yield_(pl.adds(cur, 1.0), cur)     # unnamed, kept one iteration more


@pytest.mark.parametrize("platform", ["a2a3", "a5"])
def test_unnamed_result_a_loop_keeps_gets_buffers_in_turn(platform):
    """A nested op's result carried one iteration further (prev = the cur before) needs two
    buffers like a named one: the run, the plan and the C++ use them in turn."""
    x = np.arange(256, dtype=np.float32).reshape(16, 16)
    aic, aiv = kernels(pl.program(idle, lagged_nested, name="lag"))
    out = ptopipe.run(aic, (aiv, None), dict(x=x, out=np.zeros((64, 16), np.float32)),
                      platform=platform).outputs["out"]
    for i, k in enumerate((0, 0, 1, 2)):                 # prev: a, a, a + 1, a + 2
        np.testing.assert_array_equal(out[i * 16:(i + 1) * 16], x + k)
    lay = plan_program(pl.program(idle, lagged_nested, name="lag"))["lagged_nested"]
    (tmp,) = [k for k in lay.rotations if k in lay.temps]
    assert len(lay.rotations[tmp]) == 2 and lay.temps[tmp][1] == lay.rotations[tmp][0]
    from ptopipe.codegen import write_cpp
    from ptopipe.passes import compile_program
    cpp = write_cpp(compile_program(pl.program(idle, lagged_nested, name="lag"), platform), platform)
    table = ", ".join(f"{a:#x}" for a in lay.rotations[tmp])
    assert f"_addrs[2] = {{{table}}};" in cpp and "_turn + 1) % 2;" in cpp


def _one_tile(cols):
    @pl.incore(split=pl.TILE_NO_SPLIT)
    def one(x: pl.Tensor[[64, cols], pl.f32], out: pl.Tensor[[64, cols], pl.f32]):
        t = pl.load(x, [0, 0], [64, cols])  # <- tile
        pl.store(t, [0, 0], out)
    return one


def test_a2a3_vec_tiles_stay_below_pto_isas_implicit_ub_scratch():
    """pto-isa's A2A3 TROWEXPAND* / TEXTRACT compute through UB[184 KiB, 192 KiB)
    (TMP_UB_OFFSET; pypto caps Vec UB at 184 KiB): a 64x752 f32 tile (188 KiB) fits the UB
    but not below the scratch, so A2A3 refuses it at its line; A5 has no such scratch."""
    from ptopipe.passes import compile_program
    fn = _one_tile(752)
    with pytest.raises(CompileError) as ei:
        compile_program(pl.program(fn, name="cap"), "a2a3")
    e = ei.value
    assert e.what == ("the tiles of one need 192512 bytes of UB at their peak but a2a3 keeps Vec "
                      "tiles below 0x2e000 (188416 of its 196608 bytes)"), e.what
    assert "UB[0x2e000, 0x30000) as the scratch of TROWEXPAND*" in e.details and "TMP_UB_OFFSET" in e.details
    assert e.where.endswith(f":{line_of(fn.pyfunc, '<- tile')}:9"), e.where
    compile_program(pl.program(fn, name="cap"), "a5")
    # exactly up to the scratch: placed
    compile_program(pl.program(_one_tile(736), name="cap"), "a2a3")
