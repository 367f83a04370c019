"""Frontend pipes as pypto writes them: ``pto.aic_/aiv_initialize_pipe {id = N, ...}`` names
a pipe (its pushes, pops and frees say ``{id = N}``) and ptoas gives each pipe flags of its
own; on A2A3 pypto lays the GM rings of the pipes out in one buffer, pipe k's at a
``pto.addptr`` of it (run, read statically, written back); the two ends of a pipe agree on
its direction."""
import pathlib
import sys

import numpy as np
import pytest

from ptopipe.arch.vocab import Protocol
from ptopipe.cli import main as cli_main
from ptopipe.codegen.cpp_writer import write_cpp
from ptopipe.codegen.pto_exec import read_program, run_pto
from ptopipe.codegen.pto_exec.pipe_ops import ptoas_refusals
from ptopipe.codegen.pto_load import load_pto
from ptopipe.codegen.pto_writer import write_pto
from ptopipe.errors import CompileError, ConfigError, ParseError
from ptopipe.passes import PassContext, validate
from ptopipe.passes.util import functions, init_ops
from ptopipe.runtime.kernels import run as run_ir
from ptopipe.protocol.model import model_for
from ptopipe.protocol.rings import ptoas_flag_bases

sys.path.insert(0, str(pathlib.Path(__file__).parent))
from test_pto_exec import cube_vector_pair, line_of  # noqa: E402


def _t(loc, r, c, bl, sl, fr=512):
    return (f"!pto.tile_buf<loc={loc}, dtype=f32, rows={r}, cols={c}, v_row={r}, v_col={c}, blayout={bl}, "
            f"slayout={sl}, fractal={fr}, pad=0>")


def two_v2c_pipes(arch: str) -> str:
    """Two V2C pipes {id = 0} / {id = 1}: each Vector lane pushes its 8 rows of %y on pipe 1
    first, then its rows of %x on pipe 0; the Cube pops pipe 0 (x, the left operand), then
    pipe 1 (y), and stores x @ y.  A3: pipe 1's GM ring at pto.addptr of the one buffer."""
    a3 = arch == "a3"
    mat = _t("mat", 16, 16, "col_major", "row_major")
    left = _t("left", 16, 16, "row_major" if a3 else "col_major", "row_major")
    right = _t("right", 16, 16, "row_major", "col_major")
    acc = _t("acc", 16, 16, "col_major", "row_major", 1024)
    nd = _t("vec", 8, 16, "row_major", "none_box")
    push = nd if a3 else _t("vec", 8, 16, "col_major", "row_major")     # A5 pushes NZ to the Cube
    gm = ("%buf", "%buf1") if a3 else None
    params = "%x: !pto.ptr<f32>, %y: !pto.ptr<f32>, %out: !pto.ptr<f32>" + (", %buf: !pto.ptr<f32>"
                                                                         if a3 else "")
    move = ("    %c2048 = arith.constant 2048 : index\n"
            "    %buf1 = pto.addptr %buf, %c2048 : <f32> -> <f32>\n") if a3 else ""

    def init(side, k, buf):
        g = f"gm_slot_buffer = {gm[k]} : !pto.ptr<f32>, " if a3 else ""
        return (f"    pto.{side}_initialize_pipe {{id = {k}, dir_mask = 2, slot_size = 1024}} "
                f"({g}c2v_consumer_buf = %z : i32, v2c_consumer_buf = {buf} : i32)\n")

    def lane_push(src, k):
        out = (f"    %{src}p = pto.partition_view %{src}v, offsets = [%row, %c0], sizes = [%c8, %c16] : "
               f"!pto.tensor_view<?x?xf32> -> !pto.partition_tensor_view<8x16xf32>\n"
               f"    %{src}t = pto.alloc_tile : {nd}\n"
               f"    pto.tload ins(%{src}p : !pto.partition_tensor_view<8x16xf32>) outs(%{src}t : {nd})\n")
        tile = f"%{src}t"
        if not a3:
            out += (f"    %{src}n = pto.alloc_tile : {push}\n"
                    f"    pto.tmov ins(%{src}t : {nd}) outs(%{src}n : {push})\n")
            tile = f"%{src}n"
        return out + f"    pto.tpush_to_aic({tile} : {push}) {{id = {k}, split = 1}}\n"

    def cube_pop(k, dst, ty):
        return (f"    %p{k} = pto.tpop_from_aiv {{id = {k}, split = 1}} -> {mat}\n"
                f"    pto.tmov ins(%p{k} : {mat}) outs({dst} : {ty})\n"
                f"    pto.tfree_from_aiv {{id = {k}, split = 1}}\n")

    return f"""module attributes {{pto.target_arch = "{arch}"}} {{
  func.func @two_aic({params}) attributes {{pto.kernel_kind = #pto.kernel_kind<cube>}} {{
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %c16 = arith.constant 16 : index
    %z = arith.constant 0 : i32
    %r0 = pto.reserve_buffer {{name = "r0", size = 8192, location = #pto.address_space<mat>, auto = false, base = 0}} -> i32
    %r1 = pto.reserve_buffer {{name = "r1", size = 8192, location = #pto.address_space<mat>, auto = false, base = 8192}} -> i32
{move}{init("aic", 0, "%r0")}{init("aic", 1, "%r1")}    %l = pto.alloc_tile : {left}
    %r = pto.alloc_tile : {right}
    %acc = pto.alloc_tile : {acc}
{cube_pop(0, "%l", left)}{cube_pop(1, "%r", right)}    pto.tmatmul ins(%l, %r : {left}, {right}) outs(%acc : {acc})
    %ov = pto.make_tensor_view %out, shape = [%c16, %c16], strides = [%c16, %c1] : !pto.tensor_view<?x?xf32>
    %op = pto.partition_view %ov, offsets = [%c0, %c0], sizes = [%c16, %c16] : !pto.tensor_view<?x?xf32> -> !pto.partition_tensor_view<16x16xf32>
    pto.tstore ins(%acc : {acc}) outs(%op : !pto.partition_tensor_view<16x16xf32>)
    return
  }}
  func.func @two_aiv({params}) attributes {{pto.kernel_kind = #pto.kernel_kind<vector>}} {{
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %c8 = arith.constant 8 : index
    %c16 = arith.constant 16 : index
    %z = arith.constant 0 : i32
    %i0 = pto.import_reserved_buffer {{name = "r0", peer_func = @two_aic}} -> i32
    %i1 = pto.import_reserved_buffer {{name = "r1", peer_func = @two_aic}} -> i32
{move}{init("aiv", 0, "%i0")}{init("aiv", 1, "%i1")}    %sb64 = pto.get_subblock_idx
    %sb = arith.index_cast %sb64 : i64 to index
    %row = arith.muli %sb, %c8 : index
    %xv = pto.make_tensor_view %x, shape = [%c16, %c16], strides = [%c16, %c1] : !pto.tensor_view<?x?xf32>
    %yv = pto.make_tensor_view %y, shape = [%c16, %c16], strides = [%c16, %c1] : !pto.tensor_view<?x?xf32>
{lane_push("y", 1)}{lane_push("x", 0)}    return
  }}
}}
"""


RNG = np.random.default_rng(7)
XY = dict(x=RNG.standard_normal((16, 16)).astype(np.float32), y=RNG.standard_normal((16, 16)).astype(np.float32))


@pytest.mark.parametrize("arch,protocol,flags", [("a5", "spec", (0, 8)), ("a5", "pto-isa", (0, 2)),
                                                 ("a3", "pto-isa", (0, 2))])
def test_two_frontend_pipes_named_by_id_get_flags_of_their_own(arch, protocol, flags):
    """pypto's two V2C pipes {id = 0} / {id = 1} (its codegen test of two frontend pipes): the
    id names the pipe, ptoas gives each its own flags - under the default (spec) protocol too,
    where A5 has a flag per slot for both 8-slot rings; each push / pop goes to the pipe it
    names (pipe 1 is pushed first, popped last).  On A3 the seeded GM buffer holds both rings
    (pipe 1's at pto.addptr of it: 2 x 8 x 1024 bytes)."""
    r = run_pto(text=two_v2c_pipes(arch), protocol=protocol, inputs=dict(XY, out=np.zeros((16, 16), np.float32)))
    np.testing.assert_allclose(r.outputs["out"], XY["x"] @ XY["y"], rtol=1e-5, atol=1e-5)
    text = str(r.summary)
    assert all(f"V2C pipe FlagID {f} (peers AIV0,AIV1)" in text for f in flags), text
    if arch == "a3":
        assert "buf: seeded random float32[4096] (give inputs={'buf': array})" in r.notes


def test_two_frontend_pipes_are_two_rings_of_the_static_program_and_written_back():
    """The static reader gives each frontend pipe of a direction its own ring, paired across
    the kernels by id: verified, written back (pipe 1 as ptoas's lower-level form at its
    FlagID) and the written file runs to the same numbers.  On A3 (pipe 1's ring at an addptr of
    the buffer) the verifier agrees with the run: pto-isa's flags fit, spec's do not."""
    op, _w, plat = load_pto("k.pto", text=two_v2c_pipes("a5"))
    assert [[i.pipe_id or 0 for i in init_ops(f)] for f in functions(op)] == [[0, 1], [0, 1]]
    written = write_pto(op, plat)
    r = run_pto(text=written, inputs=dict(XY, out=np.zeros((16, 16), np.float32)))
    np.testing.assert_allclose(r.outputs["out"], XY["x"] @ XY["y"], rtol=1e-5, atol=1e-5)
    op, _w, _plat = load_pto("k.pto", text=two_v2c_pipes("a3"), protocol="pto-isa")
    assert [[i.gm_offset for i in init_ops(f)] for f in functions(op)] == [[None, 8192], [None, 8192]]
    with pytest.raises(CompileError, match="flags run out"):
        load_pto("k.pto", text=two_v2c_pipes("a3"))


def test_a_frontend_id_no_init_or_two_inits_have_is_a_parse_error_of_the_static_reader():
    text = two_v2c_pipes("a5").replace("pto.aiv_initialize_pipe {id = 1", "pto.aiv_initialize_pipe {id = 0")
    with pytest.raises(ParseError) as e:
        load_pto("k.pto", text=text)
    assert "a second pipe initialisation of a direction with id = 0" in e.value.what
    assert e.value.where == f"k.pto:{line_of(text, 'v2c_consumer_buf = %i1')}:5"
    text = two_v2c_pipes("a5").replace("{id = 1, split = 1}", "{id = 2, split = 1}", 1)
    with pytest.raises(ParseError) as e:
        load_pto("k.pto", text=text)
    assert "names pipe id = 2, which no V2C pipe init of this kernel has" in e.value.what


def test_the_id_warning_says_the_bundled_ptoas_refuses_it_and_a_newer_accepts_it():
    text = two_v2c_pipes("a5")
    mine = [w for w in ptoas_refusals(read_program(text, "<pto>")) if "refuses id" in w]
    assert len(mine) == 4, mine
    at = text.splitlines()[line_of(text, "pto.aic_initialize_pipe {id = 0") - 1].index("id = 0") + 1
    assert mine[0].startswith(f"<pto>:{line_of(text, 'pto.aic_initialize_pipe {id = 0')}:{at}: ptoas refuses id "
                              "on pto.aic_initialize_pipe - ptoas 0.27, the bundled one (\"expected 'dir_mask'\"); "
                              "a newer ptoas (pypto writes for 0.54) accepts it"), mine[0]


def test_two_pipes_of_one_id_in_a_function_are_a_parse_error_at_the_second():
    """ptoas refuses the file ("requires unique initialize_pipe id in function"): before anything runs."""
    text = two_v2c_pipes("a5").replace("pto.aiv_initialize_pipe {id = 1", "pto.aiv_initialize_pipe {id = 0")
    with pytest.raises(ParseError) as e:
        run_pto(text=text, inputs=dict(XY, out=np.zeros((16, 16), np.float32)))
    assert e.value.what.startswith(f"a second pto.aiv_initialize_pipe of pipe id = 0 in @two_aiv (the first at "
                                   f"{line_of(text, 'v2c_consumer_buf = %i0')}:5)"), e.value.what
    assert e.value.where == f"<pto>:{line_of(text, 'v2c_consumer_buf = %i1')}:5"


@pytest.mark.parametrize("protocol", ["spec", "pto-isa"])
def test_two_pipes_naming_the_same_flag_base_still_share_flags(protocol):
    """A FlagID a file names (ptopipe's flag_base) is kept: two pipes at flag_base 0 clash."""
    text = two_v2c_pipes("a5").replace("dir_mask = 2, slot_size = 1024}", "dir_mask = 2, slot_size = 1024, "
                                       "flag_base = 0}")
    with pytest.raises(ConfigError) as e:
        run_pto(text=text, protocol=protocol, inputs=dict(XY, out=np.zeros((16, 16), np.float32)))
    ids = "0..7" if protocol == "spec" else "0..1"
    assert e.value.what.startswith("two pipes use the same flag ids on AIC") and f"flag ids {ids}" in e.value.what
    assert e.value.where == f"<pto>:{line_of(text, 'v2c_consumer_buf = %r1')}:5"


def test_ptoas_orders_frontend_pipes_by_id_then_direction_and_keeps_a_named_flag_base():
    spec, isa = (model_for(p, "a5") for p in (Protocol.SPEC, Protocol.PTO_ISA))
    # program order id 1 then id 0: id 0 gets the first flags on both ends
    assert ptoas_flag_bases([(1, 2, 8, None), (0, 2, 8, None)], isa) == [2, 0]
    assert ptoas_flag_bases([(1, 2, 8, None), (0, 2, 8, None)], spec) == [8, 0]
    # same id: C2V before V2C; a both-ways pipe takes 4 counter flags; a lower-level init after
    assert ptoas_flag_bases([(None, 1, 4, None), (0, 2, 4, None), (0, 1, 4, None), (1, 3, 4, None)],
                            isa) == [8, 2, 0, 4]
    # a named FlagID stays; the others fit around it (at an even FlagID for counter flags)
    assert ptoas_flag_bases([(0, 1, 8, None), (None, 2, 8, 1)], isa) == [4, 1]
    assert ptoas_flag_bases([(0, 1, 4, None), (None, 2, 4, 0)], spec) == [4, 0]


def test_the_two_ends_disagreeing_on_the_direction_is_said_so_at_both_inits(tmp_path, capsys):
    """Cube dir_mask = 1, Vector dir_mask = 2 on the same reserved buffer: the inits disagree
    (as ptoas says), not a clash of flag ranges - in the run, `check` and `check --static`
    alike (the static verifier's IR cannot hold the pipe, so the file's check says it)."""
    text = cube_vector_pair(1, "a3")
    vec_init = text.index("pto.aiv_initialize_pipe {dir_mask = 1")
    text = text[:vec_init] + text[vec_init:].replace("dir_mask = 1", "dir_mask = 2", 1)
    with pytest.raises(ConfigError) as e:
        run_pto(text=text)
    cube_line, vec_line = line_of(text, "pto.aic_initialize_pipe"), line_of(text, "pto.aiv_initialize_pipe")
    assert e.value.where == f"<pto>:{vec_line}:5"
    assert (f"disagree on its direction: the Cube's init at <pto>:{cube_line}:5 says dir_mask = 1 (C2V), the "
            f"Vector's init at <pto>:{vec_line}:5 dir_mask = 2 (V2C)") in e.value.what, e.value.what
    assert "flag" not in e.value.what
    f = tmp_path / "k.pto"
    f.write_text(text)
    for cmd in (["check", str(f)], ["check", "--static", str(f)]):
        assert cli_main(cmd) == 1
        err = capsys.readouterr().err
        assert "ConfigError" in err and "disagree on its direction" in err and f"k.pto:{vec_line}:5" in err, err


def ring_8k_into_the_buffer() -> str:
    """The C2V pair of ``cube_vector_pair`` on A3 with its GM ring 8 KiB (2048 f32) into %buf
    on both ends: ``%far = pto.addptr %buf, %c2048`` as the init's gm_slot_buffer."""
    text = cube_vector_pair(1, "a3")
    for at in ("    %imp = pto.import_reserved_buffer", "    %ring = pto.reserve_buffer"):
        text = text.replace(at, "    %c2048 = arith.constant 2048 : index\n"
                                "    %far = pto.addptr %buf, %c2048 : <f32> -> <f32>\n" + at, 1)
    return text.replace("gm_slot_buffer = %buf : !pto.ptr<f32>", "gm_slot_buffer = %far : !pto.ptr<f32>")


def test_a_ring_at_an_addptr_of_its_gm_buffer_is_read_statically_written_back_and_run_there():
    text = ring_8k_into_the_buffer()
    op, _warnings, plat = load_pto("k.pto", text=text)          # verified statically
    assert [i.gm_offset for f in functions(op) for i in init_ops(f)] == [8192, 8192]
    written = write_pto(op, plat)
    assert written.count("= pto.addptr %buf, %c2048_index : <f32> -> <f32>") == 2
    assert "(gm_slot_buffer = %gm_ring : !pto.ptr<f32>, " in written
    assert write_cpp(op).count("Pipe pipe((__gm__ void *)((__gm__ uint8_t *)buf + 8192), ") == 2
    rng = np.random.default_rng(3)
    a, b = (rng.standard_normal((16, 16)).astype(np.float32) for _ in range(2))
    for run in (lambda **kw: run_ir(op, kw), lambda **kw: run_pto(text=text, inputs=kw)):    # IR, file
        kw = dict(a=a, b=b, out=np.zeros((16, 16), np.float32), buf=np.zeros(4096, np.float32))
        out = run(**kw).outputs
        np.testing.assert_allclose(out["out"], 2 * (a @ b), rtol=1e-5, atol=1e-5)
        assert not out["buf"][:2048].any() and out["buf"][2048:].any()     # the ring is the second 8 KiB


def test_a_gm_buffer_too_small_for_a_ring_at_an_addptr_of_it_is_refused_statically():
    op, _w, plat = load_pto("k.pto", text=ring_8k_into_the_buffer())
    for f in functions(op):
        for init in init_ops(f):
            init.gm_offset = 16384 - 4          # the ring would end 8188 bytes past the buffer
    with pytest.raises(CompileError) as e:
        validate.run(op, PassContext(platform=plat, protocol="spec", as_ptoas=True))
    assert "smaller than the GM ring it holds from byte 16380" in e.value.what, e.value.what


def test_a_given_buffer_too_small_for_a_ring_at_an_addptr_of_it_is_the_runs_error_at_the_init():
    """A seeded slot buffer is sized for the ring 8 KiB into it, but a buffer the user gives is
    what the device has: the ring running past it is the run's error at the ring's init (what
    it overruns, what to allocate) - not a shape mismatch of the input."""
    text = ring_8k_into_the_buffer()
    rng = np.random.default_rng(3)
    a, b = (rng.standard_normal((16, 16)).astype(np.float32) for _ in range(2))
    io = dict(a=a, b=b, out=np.zeros((16, 16), np.float32))
    assert run_pto(text=text, inputs=io).outputs["buf"].size == 4096       # seeded: the rings fit
    with pytest.raises(ConfigError) as e:
        run_pto(text=text, inputs=dict(io, buf=np.zeros(2048, np.float32)))
    assert "runs past the end of its GM argument 'buf'" in e.value.what, e.value.what
    init = next(i for i, t in enumerate(text.splitlines(), 1) if "pto.aic_initialize_pipe" in t)
    assert e.value.where == f"<pto>:{init}:5", e.value.where
