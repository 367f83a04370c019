"""Bad DSL programs: each must raise CompileError at the right file:line:col (never a
Python traceback).  ``@@`` in a snippet marks the expected error position."""
import re
import sys

import pytest

import ptopipe.language as pl
from ptopipe import CompileError

HEAD = "import ptopipe.language as pl\n\n"

VEC_OK = '''
@pl.aiv
def vec(x: pl.Tensor[[16, 32], pl.f32], fifo: pl.Tensor[[16384], pl.u8]):
    buf = pl.reserve_buffer(name="ring", size=16384, base=pl.AUTO)
    pl.aiv_initialize_pipe(pl.DIR_C2V, 2048, fifo, c2v_consumer_buf=buf.base, v2c_consumer_buf=0)
    t = pl.TPOP(buf, pl.Tile[[16, 32], pl.f32, pl.Vec])
    pl.TFREE(buf)
'''

CASES = {
    # Python operators a tile has no operator for: the fix names the pl op
    "tile_pow_operator": '''
@pl.aiv
def k(x: pl.Tensor[[16, 32], pl.f32]):
    t = pl.load(x, [0, 0], [16, 32])
    u = @@t ** 2.0
''',
    "tile_mod_operator": '''
@pl.aiv
def k(x: pl.Tensor[[16, 32], pl.f32]):
    t = pl.load(x, [0, 0], [16, 32])
    u = @@t % 2.0
''',
    # a scalar for the tile operand of an op with a scalar form: the fix names that form
    "tile_op_scalar_operand": '''
@pl.aiv
def k(x: pl.Tensor[[16, 32], pl.f32]):
    t = pl.load(x, [0, 0], [16, 32])
    u = pl.mul(t, @@2.0)
''',
    # Python's flooring // and % of float scalars: nothing the compiled kernel computes
    "float_scalar_floordiv": '''
@pl.aiv
def k(x: pl.Tensor[[16, 32], pl.f32], a: pl.Scalar[pl.f32]):
    t = pl.load(x, [0, 0], [16, 32])
    pl.store(pl.adds(t, @@a // 2.0), [0, 0], x)
''',
    "float_scalar_mod_of_an_index": '''
@pl.aiv
def k(x: pl.Tensor[[64, 32], pl.f32]):
    for i in pl.range(4):
        t = pl.load(x, [i * 16, 0], [16, 32])
        pl.store(pl.muls(t, @@i % 1.5), [i * 16, 0], x)
''',
    # a carried value whose type the body changes: named by its source name, not its SSA hint
    "carried_type_change": '''
@pl.aiv
def k(x: pl.Tensor[[32, 16], pl.f32], out: pl.Tensor[[16, 16], pl.f16]):
    acc = pl.full([16, 16], pl.f32, 0.0)
    for i in pl.range(2):
        t = pl.load(x, [i * 16, 0], [16, 16])
        @@acc = pl.cast(pl.add(acc, t), pl.f16)
    pl.store(acc, [0, 0], out)
''',
    # a load's window [2, 8, 16] gives a 16x16 tile; its store writes [1, 16, 16]: refused when
    # the kernel is read, with the window the store writes, not left to the run's bounds check
    "store_rows_past_the_next_to_last_dimension": '''
@pl.aiv
def k(x: pl.Tensor[[2, 8, 16], pl.f32]):
    u = pl.load(x, [0, 0, 0], [2, 8, 16])
    pl.store(@@u, [0, 0, 0], x)
''',
    # a parameter annotated with a tile type or a bare pl.Tensor / pl.Scalar: said in pl's words
    "tile_parameter": '''
@pl.aiv
def k(x: @@pl.Tile[[16, 16], pl.f32, pl.Vec]):
    pass
''',
    "bare_tensor_parameter": '''
@pl.aiv
def k(x: @@pl.Tensor):
    pass
''',
    "bare_scalar_parameter": '''
@pl.aiv
def k(x: pl.Tensor[[16, 16], pl.f32], n: @@pl.Scalar):
    pass
''',
    # pto-isa's TROWEXPAND* take the per-row operand as a one-column DN tile (mode 1): an ND
    # column, or a wider tile (whose column 0 alone would be used), is told at the operand
    "row_expand_nd_column": '''
@pl.aiv
def k(x: pl.Tensor[[16, 32], pl.f32]):
    t = pl.load(x, [0, 0], [16, 32])
    r = pl.move(pl.row_max(t), space=pl.Vec, layout=pl.ND)
    pl.store(pl.row_expand_sub(t, @@r), [0, 0], x)
''',
    "row_expand_wide_row_operand": '''
@pl.aiv
def k(x: pl.Tensor[[16, 32], pl.f32]):
    t = pl.load(x, [0, 0], [16, 32])
    r = pl.load(x, [0, 0], [16, 8])
    pl.store(pl.row_expand_mul(t, @@r), [0, 0], x)
''',
    # "/" where "//" was meant: the offset would be truncated at run time
    "float_load_offset": '''
@pl.aic
def k(x: pl.Tensor[[64, 32], pl.f32]):
    for i in pl.range(3):
        t = pl.load(x, @@[(i * 18) / 4, 0], [16, 32], space=pl.Mat)
''',
    "float_store_offset": '''
@pl.aiv
def k(x: pl.Tensor[[64, 32], pl.f32]):
    t = pl.load(x, [0, 0], [16, 32])
    pl.store(t, @@[1.5, 0], x)
''',
    "float_loop_bound": '''
@pl.aiv
def k(x: pl.Tensor[[16, 32], pl.f32]):
    for i in pl.range(@@2.5):
        pl.store(pl.load(x, [0, 0], [16, 32]), [0, 0], x)
''',
    "unknown_op": '''
@pl.aiv
def k(x: pl.Tensor[[16, 32], pl.f32]):
    t = pl.load(x, [0, 0], [16, 32])
    u = @@pl.frobnicate(t)
''',
    "unknown_name": '''
@pl.aiv
def k(x: pl.Tensor[[16, 32], pl.f32]):
    t = pl.load(x, [0, 0], [@@ROWS, 32])
''',
    "while_loop": '''
@pl.aiv
def k(x: pl.Tensor[[16, 32], pl.f32]):
    @@while True:
        pass
''',
    "try_block": '''
@pl.aiv
def k(x: pl.Tensor[[16, 32], pl.f32]):
    @@try:
        t = pl.load(x, [0, 0], [16, 32])
    except Exception:
        pass
''',
    "with_block": '''
@pl.aiv
def k(x: pl.Tensor[[16, 32], pl.f32]):
    @@with open("f") as f:
        pass
''',
    "lambda": '''
@pl.aiv
def k(x: pl.Tensor[[16, 32], pl.f32]):
    f = @@lambda v: v
''',
    "list_comprehension": '''
@pl.aiv
def k(x: pl.Tensor[[16, 32], pl.f32]):
    ts = @@[pl.load(x, [0, 0], [16, 32]) for i in pl.range(2)]
''',
    "python_range": '''
@pl.aiv
def k(x: pl.Tensor[[16, 32], pl.f32]):
    for i in @@range(4):
        t = pl.load(x, [0, 0], [16, 32])
''',
    "break": '''
@pl.aiv
def k(x: pl.Tensor[[16, 32], pl.f32]):
    for i in pl.range(4):
        @@break
''',
    "missing_annotation": '''
@pl.aiv
def k(@@x):
    pass
''',
    "reserve_without_size": '''
@pl.aiv
def k(fifo: pl.Tensor[[16384], pl.u8]):
    buf = @@pl.reserve_buffer(name="ring", base=pl.AUTO)
''',
    "reserve_bad_base": '''
@pl.aiv
def k(fifo: pl.Tensor[[16384], pl.u8]):
    buf = pl.reserve_buffer(name="ring", size=4096, base=@@0x1001)
''',
    "matmul_vec_tiles": '''
@pl.aiv
def k(x: pl.Tensor[[16, 16], pl.f32]):
    a = pl.load(x, [0, 0], [16, 16])
    c = pl.matmul(@@a, a)
''',
    "add_shape_mismatch": '''
@pl.aiv
def k(x: pl.Tensor[[16, 32], pl.f32]):
    a = pl.load(x, [0, 0], [16, 32])
    b = pl.load(x, [0, 0], [8, 32])
    c = pl.add(a, @@b)
''',
    "add_dtype_mismatch": '''
@pl.aiv
def k(x: pl.Tensor[[16, 32], pl.f32], y: pl.Tensor[[16, 32], pl.f16]):
    a = pl.load(x, [0, 0], [16, 32])
    b = pl.load(y, [0, 0], [16, 32])
    c = @@a + b
''',
    "vec_tile_on_cube": '''
@pl.aic
def k(x: pl.Tensor[[16, 32], pl.f32]):
    a = pl.load(x, [0, 0], [16, 32], space=@@pl.Vec)
''',
    "load_into_left": '''
@pl.aic
def k(x: pl.Tensor[[16, 32], pl.f32]):
    a = pl.load(x, [0, 0], [16, 32], space=@@pl.Left)
''',
    "aic_init_on_vector": '''
@pl.aiv
def k(fifo: pl.Tensor[[16384], pl.u8]):
    @@pl.aic_initialize_pipe(pl.DIR_C2V, 2048, fifo)
''',
    "tpush_acc_on_vector": VEC_OK + '''
@pl.aic
def cube(x: pl.Tensor[[16, 32], pl.f32], fifo: pl.Tensor[[16384], pl.u8]):
    peer = pl.import_peer_buffer(name="ring", peer_func=vec)
    pl.aic_initialize_pipe(pl.DIR_C2V, 2048, fifo, c2v_consumer_buf=peer.base)
    a = pl.load(x, [0, 0], [16, 32], space=pl.Mat)
    pl.TPUSH(@@a, peer)
''',
    "import_missing_peer": VEC_OK + '''
@pl.aic
def cube(fifo: pl.Tensor[[16384], pl.u8]):
    @@peer = pl.import_peer_buffer(name="ring", peer_func=no_such_kernel)
    pl.aic_initialize_pipe(pl.DIR_C2V, 2048, fifo, c2v_consumer_buf=peer.base)
    t = pl.TALLOC(peer, pl.Tensor[[16, 32], pl.f32])
    pl.TPUSH(t, peer)
''',
    "import_missing_buffer": VEC_OK + '''
@pl.aic
def cube(fifo: pl.Tensor[[16384], pl.u8]):
    @@peer = pl.import_peer_buffer(name="rnig", peer_func=vec)
    pl.aic_initialize_pipe(pl.DIR_C2V, 2048, fifo, c2v_consumer_buf=peer.base)
    t = pl.TALLOC(peer, pl.Tensor[[16, 32], pl.f32])
    pl.TPUSH(t, peer)
''',
    "tpop_before_init": '''
@pl.aiv
def vec(fifo: pl.Tensor[[16384], pl.u8]):
    buf = pl.reserve_buffer(name="ring", size=16384, base=pl.AUTO)
    @@t = pl.TPOP(buf, pl.Tile[[16, 32], pl.f32, pl.Vec])
    pl.aiv_initialize_pipe(pl.DIR_C2V, 2048, fifo, c2v_consumer_buf=buf.base)
    pl.TFREE(buf)
''',
    "use_after_loop_local": '''
@pl.aiv
def k(x: pl.Tensor[[16, 32], pl.f32]):
    for i in pl.range(4):
        t = pl.load(x, [0, 0], [16, 32])
    pl.store(@@t, [0, 0], x)
''',
    "unknown_keyword": '''
@pl.aiv
def k(x: pl.Tensor[[16, 32], pl.f32]):
    t = pl.load(x, [0, 0], [16, 32], @@spaec=pl.Vec)
''',
    "tile_as_loop_bound": '''
@pl.aiv
def k(x: pl.Tensor[[16, 32], pl.f32]):
    t = pl.load(x, [0, 0], [16, 32])
    for i in pl.range(@@t):
        pass
''',
    "dynamic_shape": '''
@pl.aiv
def k(x: pl.Tensor[[16, 32], pl.f32]):
    for i in pl.range(4):
        t = pl.load(x, [0, 0], [@@i, 32])
''',
    "return_value": '''
@pl.aiv
def k(x: pl.Tensor[[16, 32], pl.f32]):
    t = pl.load(x, [0, 0], [16, 32])
    @@return t
''',
    "loop_carried_type_change": '''
@pl.aiv
def k(x: pl.Tensor[[16, 32], pl.f32]):
    t = pl.load(x, [0, 0], [16, 32])
    for i in pl.range(4):
        @@t = pl.row_sum(t)
''',
    "nested_def": '''
@pl.aiv
def k(x: pl.Tensor[[16, 32], pl.f32]):
    @@def helper():
        pass
''',
    "tuple_unpacking": '''
@pl.aiv
def k(x: pl.Tensor[[16, 32], pl.f32]):
    @@a, b = 1, 2
''',
    "matmul_acc_dtype": '''
@pl.aic
def k(x: pl.Tensor[[16, 16], pl.f16]):
    a = pl.move(pl.load(x, [0, 0], [16, 16], space=pl.Mat), space=pl.Left)
    b = pl.move(pl.load(x, [0, 0], [16, 16], space=pl.Mat), space=pl.Right)
    c = pl.matmul(a, b)
    d = pl.matmul_acc(c, a, @@c)
''',
    # the loop's scoping: a yield of another count than the carried values, a body value read
    # after the loop (the loop's result, or a carried value, is what outlives it)
    "yield_count": '''
@pl.aiv
def k(x: pl.Tensor[[16, 32], pl.f32]):
    s0 = pl.load(x, [0, 0], [16, 32])
    for i, (s,) in pl.range(2, init_values=(s0,)):
        y = pl.adds(s, 1.0)
        total = @@pl.yield_(y, s)
    pl.store(total, [0, 0], x)
''',
    "yield_names": '''
@pl.aiv
def k(x: pl.Tensor[[16, 32], pl.f32]):
    s0 = pl.load(x, [0, 0], [16, 32])
    for i, (s, t) in pl.range(2, init_values=(s0, s0)):
        @@a = pl.yield_(s, t)
''',
    "body_value_after_loop": '''
@pl.aiv
def k(x: pl.Tensor[[16, 32], pl.f32]):
    s0 = pl.load(x, [0, 0], [16, 32])
    for i, (s,) in pl.range(2, init_values=(s0,)):
        s_new = pl.adds(s, 1.0)
        total = pl.yield_(s_new)
    pl.store(@@s_new, [0, 0], x)
''',
    # misspelt names: the fix (or, for a compile-time constant, the message) names the closest
    "misspelt_op": '''
@pl.aiv
def k(x: pl.Tensor[[16, 32], pl.f32]):
    t = pl.load(x, [0, 0], [16, 32])
    pl.store(@@pl.reluu(t), [0, 0], x)
''',
    "misspelt_value": '''
@pl.aiv
def k(x: pl.Tensor[[16, 32], pl.f32]):
    scale = 2.0
    t = pl.load(x, [0, 0], [16, 32])
    pl.store(pl.muls(t, @@scalee), [0, 0], x)
''',
    "misspelt_space": '''
@pl.aic
def k(x: pl.Tensor[[16, 32], pl.f32]):
    t = pl.load(x, [0, 0], [16, 32], space=@@pl.Mta)
''',
}


def _case(src: str):
    text = HEAD + src.lstrip("\n")
    i = text.index("@@")
    line = text.count("\n", 0, i) + 1
    col = i - (text.rfind("\n", 0, i) + 1) + 1
    return text.replace("@@", "", 1), line, col


def test_there_are_at_least_20_cases():
    assert len(CASES) >= 20


@pytest.mark.parametrize("name", sorted(CASES))
def test_bad_program_reports_compile_error_with_location(name):
    text, line, col = _case(CASES[name])
    fname = f"{name}.py"
    with pytest.raises(CompileError) as ei:
        pl.parse(text, filename=fname)
    err = ei.value
    assert err.where == f"{fname}:{line}:{col}", (err.where, str(err))
    assert err.fix, f"no fix hint for {name}: {err}"


def test_parse_errors_name_the_construct():
    text, _, _ = _case(CASES["while_loop"])
    with pytest.raises(CompileError, match="while loops are not supported"):
        pl.parse(text, filename="w.py")
    text, _, _ = _case(CASES["import_missing_buffer"])
    with pytest.raises(CompileError, match="reserves no buffer named 'rnig'"):
        pl.parse(text, filename="w.py")


def test_live_decorated_kernel_error_points_at_the_source_file():
    with pytest.raises(CompileError) as ei:
        @pl.aiv
        def bad(x: pl.Tensor[[16, 32], pl.f32]):
            t = pl.load(x, [0, 0], [16, 32])
            u = pl.frobnicate(t)   # the error line
    where = ei.value.where
    m = re.match(r"(.*):(\d+):(\d+)$", where)
    assert m and m.group(1).endswith("test_dsl_errors.py")
    with open(__file__) as f:
        src_line = f.read().splitlines()[int(m.group(2)) - 1]
    assert "pl.frobnicate(t)   # the error line" in src_line
    assert src_line[int(m.group(3)) - 1:].startswith("pl.frobnicate")


def test_calling_a_pl_op_from_python_is_a_compile_error():
    with pytest.raises(CompileError, match="called from plain Python"):
        pl.load(None, [0, 0], [1, 1])


def test_bad_annotation_is_a_compile_error():
    with pytest.raises(CompileError, match="bad type annotation"):
        pl.Tensor[[0, 4], pl.f32]


def test_a_float_gm_offset_says_to_use_floor_division():
    for name, op in (("float_load_offset", "pl.load"), ("float_store_offset", "pl.store")):
        text, _, _ = _case(CASES[name])
        with pytest.raises(CompileError) as ei:
            pl.parse(text, filename="f.py")
        assert f"{op}: offset 0 is an f32 scalar, but GM offsets are element indices" in ei.value.what
        assert "// (floor division)" in ei.value.fix


def test_a_dtype_rule_error_names_the_op_once():
    """'pl.exp: pl.exp: TEXP ...' and '(the tile is int32) (the tile is i32)'."""
    src = HEAD + '''
@pl.aiv
def k(x: pl.Tensor[[16, 32], pl.i32]):
    t = pl.load(x, [0, 0], [16, 32])
    pl.store(pl.exp(t), [0, 0], x)
'''
    with pytest.raises(CompileError) as ei:
        pl.parse(src, filename="e.py")
    assert ei.value.what == "pl.exp: TEXP takes f16, f32 tiles, not int32", ei.value.what
    src = src.replace("pl.exp(t)", "pl.adds(t, 1.5)")
    with pytest.raises(CompileError) as ei:
        pl.parse(src, filename="e.py")
    assert ei.value.what == "pl.adds: the scalar 1.5 is not an integer (the tile is int32)", ei.value.what


def test_a_dtype_the_platform_lacks_is_refused_when_compiling_for_it():
    """bf16 TADD is A5's, not A2A3's (pto-isa a2a3/TAdd.hpp's static_assert; ptoas refuses
    'pto.tadd' on A2/A3 bf16): the IR takes it, the compile for A2A3 refuses it at its line."""
    from ptopipe.passes.manager import compile_program
    src = HEAD + '''
@pl.aiv(split=pl.TILE_NO_SPLIT)
def k(x: pl.Tensor[[16, 32], pl.bf16], y: pl.Tensor[[16, 32], pl.bf16]):
    t = pl.load(x, [0, 0], [16, 32])
    pl.store(pl.add(t, t), [0, 0], y)
'''
    prog = pl.parse(src, filename="e.py")
    compile_program(prog, "a5")
    with pytest.raises(CompileError) as ei:
        compile_program(prog, "a2a3")
    e = ei.value
    assert e.what == "pl.add: TADD takes f16, f32, i16, i32 tiles on A2A3, not bfloat16", e.what
    assert e.where.startswith("e.py:7:"), e.where
    assert e.fix == "convert with TCVT (pl.cast) to one of f16, f32, i16, i32 first (A5 takes bfloat16)"


def test_a_cast_tcvt_cannot_make_is_refused_naming_a_route():
    """pl.cast is TCVT: int8 -> f32 is on neither platform (docs/isa/TCVT.md), refused when
    parsed; int16 -> int32 is A5's only, refused when compiling for A2A3 (vocab.TCVT_PAIRS)."""
    from ptopipe.passes.manager import compile_program
    src = HEAD + '''
@pl.aiv(split=pl.TILE_NO_SPLIT)
def k(x: pl.Tensor[[16, 32], pl.i8], y: pl.Tensor[[16, 32], pl.f32]):
    t = pl.load(x, [0, 0], [16, 32])
    pl.store(pl.cast(t, pl.f32), [0, 0], y)
'''
    with pytest.raises(CompileError) as ei:
        pl.parse(src, filename="e.py")
    assert ei.value.what == "pl.cast: TCVT has no i8 -> f32 conversion", ei.value.what
    assert "i8 -> f16 -> f32" in ei.value.fix and ei.value.where.startswith("e.py:7:"), ei.value
    prog = pl.parse(src.replace("pl.i8", "pl.i16").replace("pl.f32", "pl.i32"), filename="e.py")
    compile_program(prog, "a5")
    with pytest.raises(CompileError) as ei:
        compile_program(prog, "a2a3")
    assert ei.value.what.endswith("TCVT has no i16 -> i32 conversion on A2A3"), ei.value.what
    assert "i16 -> f32 -> i32" in ei.value.fix and "(A5 converts it directly)" in ei.value.fix
    assert ei.value.where.startswith("e.py:7:"), ei.value.where


def test_type_errors_take_the_right_article_and_say_the_fix():
    """'an Acc tile' (not 'a Acc'), and a matmul of mixed dtypes / a load larger than its
    tensor say how to fix them."""
    from ptopipe.errors import with_article
    assert [with_article(w) for w in ("Acc", "Vec", "AIC", "L1", "i32", "u8", "f16", "UB", "Mat")] == [
        "an Acc", "a Vec", "an AIC", "an L1", "an i32", "a u8", "an f16", "a UB", "a Mat"]
    cases = {
        "exp_acc": ("""
@pl.aic
def k(a: pl.Tensor[[16, 16], pl.f32], b: pl.Tensor[[16, 16], pl.f32]):
    x = pl.move(pl.load(a, [0, 0], [16, 16], space=pl.Mat), space=pl.Left)
    y = pl.move(pl.load(b, [0, 0], [16, 16], space=pl.Mat), space=pl.Right)
    c = pl.exp(pl.matmul(x, y))
""", "pl.exp: 'a' is an Acc tile 16x16 f32; this op needs a Vec tile", "pl.move(x, space=pl.Vec)"),
        "mm_mix": ("""
@pl.aic
def k(a: pl.Tensor[[16, 16], pl.f16], b: pl.Tensor[[16, 16], pl.f32]):
    x = pl.move(pl.load(a, [0, 0], [16, 16], space=pl.Mat), space=pl.Left)
    y = pl.move(pl.load(b, [0, 0], [16, 16], space=pl.Mat), space=pl.Right)
    c = pl.matmul(x, y)
""", "pl.matmul: a is f16 but b is f32", "give a and b one dtype: load both as f16 (or both as f32)"),
        "load_oob": ("""
@pl.aiv
def k(a: pl.Tensor[[16, 32], pl.f32]):
    x = pl.load(a, [0, 0], [32, 32])
""", "pl.load: extent 32 does not fit tensor dimension 16", "load a window within the 16x32 tensor"),
    }
    for name, (body, what, fix) in cases.items():
        with pytest.raises(CompileError) as ei:
            pl.parse(HEAD + body, filename="e.py")
        assert ei.value.what == what, (name, ei.value.what)
        assert ei.value.fix and fix in ei.value.fix, (name, ei.value.fix)


def test_loop_scoping_errors_say_what_the_loop_carries_and_what_outlives_it():
    """A yield of another count names the loop's init_values and their line; a body value read
    after the loop is not 'not defined': it is the loop's, and the loop's result is named."""
    text, _, _ = _case(CASES["yield_count"])
    with pytest.raises(CompileError) as e:
        pl.parse(text, filename="y.py")
    assert e.value.what == "the loop carries 1 value (init_values=(s0,) at line 6) but pl.yield_ gives 2"
    text, _, _ = _case(CASES["yield_names"])
    with pytest.raises(CompileError) as e:
        pl.parse(text, filename="y.py")
    assert e.value.what == "1 name for 2 yielded values" and "a, b = pl.yield_(x, y)" in e.value.fix
    text, _, _ = _case(CASES["body_value_after_loop"])
    with pytest.raises(CompileError) as e:
        pl.parse(text, filename="b.py")
    assert e.value.what == ("'s_new' is assigned at line 7, inside the loop at line 6, and read after it: "
                            "a loop body's values end with the loop")
    assert e.value.fix.startswith("use the loop's result (total), or carry it")


def test_a_popped_tile_stored_into_a_too_small_tensor_of_its_dtype_is_told_the_size_not_a_dtype():
    """A store of a popped tile (or of what is computed from it) whose dtype is the tensor's but
    whose shape does not fit the tensor (the wrong tensor named): the size error at the store's
    tile, not "a TPOP takes the slot's bytes as the dtype it names" at the TPOP - that is for a
    store whose dtype differs, which still says so."""
    body = '''
@pl.aiv
def vec(bias: pl.Tensor[[1, 32], pl.f32], out: pl.Tensor[[16, 32], pl.{out_dtype}],
        fifo: pl.Tensor[[16384], pl.u8]):
    buf = pl.reserve_buffer(name="ring", size=4096, base=pl.AUTO)
    pl.aiv_initialize_pipe(pl.DIR_C2V, 2048, fifo, c2v_consumer_buf=buf.base, v2c_consumer_buf=0)
    t = pl.TPOP(buf, pl.Tile[[16, 32], pl.f32, pl.Vec])
    y = pl.adds(t, 1.0)
    pl.TFREE(buf)
    pl.store(y, [0, 0], {tensor})
'''
    with pytest.raises(CompileError) as ei:
        pl.parse(HEAD + body.format(out_dtype="f32", tensor="bias"), filename="e.py")
    assert ei.value.what == "pl.store: a 16x32 tile does not fit tensor 1x32", ei.value.what
    assert ei.value.where == "e.py:12:14", ei.value.where
    assert "names the tensor meant" in ei.value.fix, ei.value.fix
    with pytest.raises(CompileError) as ei:
        pl.parse(HEAD + body.format(out_dtype="f16", tensor="out"), filename="e.py")
    assert ei.value.what.startswith("this pl.TPOP pops its slot as f32, and the pl.store at line 12"), ei.value.what
    assert ei.value.where.startswith("e.py:9:"), ei.value.where


def _switched(mode, bias):
    """A builder's kernel switched by compile-time Python values (a str, None, a tuple)."""
    @pl.aiv
    def k(x: pl.Tensor[[16, 32], pl.f32]):
        t = pl.load(x, [0, 0], [16 if mode != "" else 8, 32 if bias is None else 32])
        if mode == "relu":
            t = pl.relu(t)
        if mode in ("neg", "negabs"):
            t = pl.neg(t)
        if bias is not None and mode != "neg":
            t = pl.adds(t, 1.0)
        if mode:
            t = pl.abs(t)
        pl.store(t, [0, 0], x)
    return k


@pytest.mark.parametrize("mode, bias, kept", [
    ("relu", None, ["relu", "abs"]), ("neg", 1.0, ["neg", "abs"]), ("negabs", 1.0, ["neg", "adds", "abs"]),
    ("", None, []), (None, 2.0, ["adds"])])
def test_a_builder_switch_on_a_str_or_none_keeps_the_taken_branch(mode, bias, kept):
    # `mode == "relu"`, `bias is None`, `mode in (...)`, `if mode:` compare compile-time values:
    # decided while the kernel is read, as `if UD:` on a bool is, not refused as kernel values
    k = _switched(mode, bias)
    ops = [o.name.removeprefix("pl.") for o in k.ir.walk()]
    assert [o for o in ops if o in ("relu", "neg", "adds", "abs")] == kept, ops
    load = next(o for o in k.ir.walk() if o.name == "pl.load")       # `a if c else b` of them too
    assert load.results[0].type.shape == ((16, 32) if mode != "" else (8, 32))


def test_a_conditional_expression_on_a_kernel_value_says_to_use_an_if():
    with pytest.raises(CompileError) as ei:
        @pl.aiv
        def k(x: pl.Tensor[[16, 32], pl.f32]):
            for i in pl.range(2):
                s = 1.0 if i == 0 else 2.0
    assert ei.value.what == "conditional expressions on kernel values are not supported"
    assert ei.value.fix.startswith("use an if statement")


def test_is_on_a_kernel_value_says_it_compares_compile_time_values():
    with pytest.raises(CompileError) as ei:
        @pl.aiv
        def k(x: pl.Tensor[[16, 32], pl.f32]):
            for i in pl.range(2):
                if i is None:   # the error line
                    pl.store(pl.load(x, [0, 0], [16, 32]), [0, 0], x)
    with open(__file__) as f:
        assert "if i is None:   # the error line" in f.read().splitlines()[int(ei.value.where.split(":")[-2]) - 1]
    assert "`is`, `is not`, `in` and `not in` compare compile-time values only" in ei.value.fix


def test_numpy_scalars_are_constants_as_python_numbers_are():
    # np.prod(...) gives an np.int64 and a computed scale is often an np.float32: a trip
    # count, a shape dimension, a scalar operand or an attribute of either is its number
    import numpy as np
    from ptopipe.runtime import run
    rows, n, scale, depth = np.int64(16), np.int64(2), np.float32(0.5), np.int64(2)

    @pl.aiv
    def k(x: pl.Tensor[[n * rows, 16], pl.f32], out: pl.Tensor[[n * rows, 16], pl.f32]):
        for i in pl.range(n):
            t = pl.load(x, [i * rows, 0], [rows, 16])
            pl.store(pl.muls(t, scale), [i * rows, 0], out)

    assert pl.Tile[[rows, depth * 8], pl.f32, pl.Vec].shape == (16, 16)
    x = np.arange(32 * 16, dtype=np.float32).reshape(32, 16)
    res = run(pl.program(k), dict(x=x, out=np.zeros_like(x)))
    np.testing.assert_array_equal(res.outputs["out"], x * 0.5)


def test_a_misspelt_or_positional_decorator_option_is_a_compile_error_saying_the_options():
    with pytest.raises(CompileError) as ei:
        pl.incore(spilt=pl.TILE_UP_DOWN)        # a typo: not a raw TypeError
    assert ei.value.what == "@pl.incore(spilt=...): no such option"
    assert ei.value.fix == "did you mean split=? @pl.incore takes core=, split=, slot_num="
    assert ei.value.where.endswith(f":{sys._getframe().f_lineno - 3}")
    with pytest.raises(CompileError) as ei:
        pl.incore(pl.TILE_LEFT_RIGHT)           # the split given positionally
    assert ei.value.fix == "pass the split by keyword: @pl.incore(split=pl.TILE_LEFT_RIGHT)"


@pytest.mark.parametrize("name, what", [
    ("tile_parameter", "parameter 'x' is a Vec tile 16x16 f32; kernel parameters are GM tensors or scalars"),
    ("bare_tensor_parameter", "parameter 'x' is annotated pl.Tensor without its shape and dtype; kernel "
                              "parameters are GM tensors or scalars"),
    ("bare_scalar_parameter", "parameter 'n' is annotated pl.Scalar without its dtype; kernel parameters "
                              "are GM tensors or scalars")])
def test_a_parameter_of_a_type_no_kernel_takes_is_named_in_pl_words(name, what):
    text, _, _ = _case(CASES[name])
    with pytest.raises(CompileError) as ei:
        pl.parse(text, filename="p.py")
    assert ei.value.what == what


def test_a_store_names_the_window_it_writes_into_a_higher_rank_tensor():
    text, _, _ = _case(CASES["store_rows_past_the_next_to_last_dimension"])
    with pytest.raises(CompileError) as ei:
        pl.parse(text, filename="s.py")
    assert ei.value.what == ("pl.store: a 16x16 tile into the 3-D tensor 2x8x16 writes the window [1, 16, 16] - "
                             "its rows along the next-to-last dimension (8), 1 along the others - which does not fit")
    assert ei.value.fix.startswith("store it in parts of at most 8 rows")


ROWS = [16, 16]
CFG = {"tiles": 2}


def test_subscripts_and_builtins_of_compile_time_values_are_read_as_their_values():
    # a builder's SHAPES[0], CFG["tiles"], len(...), min(N, 4): compile-time values, not kernel
    # values ("subscripts are not supported on kernel values", "unknown op 'len'" before)
    @pl.aiv
    def k(x: pl.Tensor[[32, 16], pl.f32]):
        for i in pl.range(min(len(ROWS), CFG["tiles"], 4)):
            pl.store(pl.load(x, [i * ROWS[0], 0], [ROWS[1], 16]), [i * 16, 0], x)
    loop = next(o for o in k.ir.walk() if o.name == "pl.for")
    assert [b.op.value for b in loop.operands[:3]] == [0, 2, 1]
    assert next(o for o in k.ir.walk() if o.name == "pl.load").results[0].type.shape == (16, 16)


def test_min_on_kernel_scalars_says_to_use_pl_min():
    with pytest.raises(CompileError) as ei:
        @pl.aiv
        def k(x: pl.Tensor[[64, 16], pl.f32]):
            for i in pl.range(4):
                r = min(i * 16, 48)
                pl.store(pl.load(x, [r, 0], [16, 16]), [r, 0], x)
    assert ei.value.what == "unknown op 'min'" and ei.value.fix.endswith("for kernel scalars use pl.min(a, b)")


def test_a_carried_value_whose_type_changes_is_named_by_its_source_name():
    text, _, _ = _case(CASES["carried_type_change"])
    with pytest.raises(CompileError) as ei:
        pl.parse(text, filename="c.py")
    assert ei.value.what == ("loop-carried 'acc' starts as a Vec tile 16x16 f32 but the loop body makes it "
                             "a Vec tile 16x16 f16"), ei.value.what


@pytest.mark.parametrize("name, said", [("misspelt_op", "did you mean pl.relu? "),
                                        ("misspelt_value", "did you mean scale? "),
                                        ("misspelt_space", "has no attribute 'Mta'. Did you mean: 'Mat'?")])
def test_a_misspelt_name_is_told_the_closest_one(name, said):
    text, line, col = _case(CASES[name])
    with pytest.raises(CompileError) as ei:
        pl.parse(text, filename="m.py")
    assert ei.value.where == f"m.py:{line}:{col}" and said in str(ei.value), ei.value


@pytest.mark.parametrize("name, fix", [("tile_pow_operator", "call the pl op: pl.pow(a, b) / pl.pows(a, s)"),
                                       ("tile_mod_operator", "call the pl op: pl.rem(a, b) / pl.rems(a, s)"),
                                       ("tile_op_scalar_operand", "for a scalar operand write pl.muls(a, scalar) "
                                                                  "(pl.mul takes tiles only)")])
def test_an_operator_a_tile_lacks_names_the_pl_op(name, fix):
    text, _, _ = _case(CASES[name])
    with pytest.raises(CompileError) as ei:
        pl.parse(text, filename="o.py")
    assert ei.value.fix.startswith(fix), ei.value


def test_constant_powers_shifts_and_xor_fold_as_their_literal():
    # `pl.range(10**12)` was "operator Pow is not supported": ** ^ << >> ~ have no scalar op, so
    # on constants (literals, module numbers, a named constant) they fold while reading
    @pl.aiv
    def k(x: pl.Tensor[[32, 16], pl.f32]):
        n = 3
        for i in pl.range(10**12):
            pl.store(pl.load(x, [0, 0], [16, 16]), [0, 0], x)
        for j in pl.range(2**n, 1 << 4, ~-2):
            pl.store(pl.load(x, [0, 0], [256 >> 4 ^ 0x30 ^ 0x30, 16]), [0, 0], x)
    loops = [o for o in k.ir.walk() if o.name == "pl.for"]
    assert [[b.op.value for b in loop.operands[:3]] for loop in loops] == [[0, 10**12, 1], [8, 16, 1]]
    assert not any(o.name.startswith("arith.") for o in k.ir.walk())


@pytest.mark.parametrize("expr, what, fix", [
    ("10 ** 10 ** 10", "the constant 10 ** 10 ** 10 has more than 4096 bits", "no kernel value is that large"),
    ("1 << -1", "the constant expression 1 << -1 has no value: negative shift count", "shift by a count >= 0"),
    ("1.5 ^ 2", "operator ^ on 1.5 and 2", "^ takes integer constants"),
    ("1.5 | 2", "operator | on 1.5 and 2", "| takes integer constants"),      # (a raw TypeError before)
    ("~1.5", "unsupported unary operator ~1.5", "kernels take - and not on scalars, ~ on integer constants"),
    ("0 ** -1", "division by zero in a constant expression", None),
    ("n ** 2", "operator Pow is not supported", "kernels take + - * / // % | & on scalars and + - * / on "
     "tiles; ** ^ << >> on constants (literals, module or closure numbers), folded while reading"),
])
def test_a_constant_operator_that_cannot_fold_is_an_error_at_its_column(expr, what, fix):
    text = HEAD + f"@pl.aiv\ndef k(x: pl.Tensor[[16, 16], pl.f32], n: pl.Scalar[pl.index]):\n" \
                  f"    for i in pl.range({expr}):\n        pass\n"
    with pytest.raises(CompileError) as ei:
        pl.parse(text, filename="c.py")
    assert (ei.value.what, ei.value.where) == (what, "c.py:5:23"), ei.value
    assert ei.value.fix == fix or ei.value.fix.startswith(fix)
