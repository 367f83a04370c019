"""A library caller of the ``.pto`` reader gets what ``ptopipe run | check`` get: the lanes
ptoas runs a file's pipes with (:func:`~ptopipe.codegen.pto_load.one_lane_nosplit`), the
static passes, and the checks PTO-AS adds (a ring over a tile placed at a fixed address, an
entry that launches a piped kernel never or twice) - from :mod:`ptopipe.codegen.pto_load`,
which ``ptopipe.run_pto`` and the command both call."""
import pathlib

import numpy as np
import pytest

import ptopipe
from ptopipe.arch.vocab import TileSplitAxis
from ptopipe.codegen import read_pto
from ptopipe.codegen.pto_load import load_pto, run_pto, static_findings
from ptopipe.errors import CompileError, ParseError, ProtocolError

ROOT = pathlib.Path(__file__).resolve().parents[2]
NOSPLIT = (ROOT / "tests" / "pto" / "nosplit_c2v_a5.pto").read_text()
# the same pair without ``nosplit``: every TPUSH / TPOP / TFREE says split = 0, which ptoas
# lowers on A5 to AIV0 alone (get_subblockid() == 0)
WHOLE = NOSPLIT.replace(", nosplit = true}", "}")


def _line(text: str, needle: str) -> int:
    return next(i for i, ln in enumerate(text.splitlines(), 1) if needle in ln)


def _inits(op):
    return [o for o in op.walk() if o.name.endswith("initialize_pipe")]


def _vector(op):
    return next(f for f in op.regions[0].blocks[0] if f.attributes["sym_name"] == "vector")


@pytest.mark.parametrize("protocol", ["spec", "pto-isa"])
def test_whole_tile_pipes_get_one_lane_on_a5(protocol):
    assert WHOLE != NOSPLIT
    raw = read_pto(WHOLE, "w.pto")                      # the reader alone keeps the text's words
    assert {o.attributes.get("lanes") for o in _inits(raw)} == {None}
    op, _warnings, plat = load_pto("w.pto", None, protocol, text=WHOLE)
    assert plat == "a5"
    assert {o.attributes["lanes"] for o in _inits(op)} == {1}
    assert _vector(op).attributes["split"] is TileSplitAxis.TILE_NO_SPLIT
    # on A2A3 the same ops keep both lanes
    a3 = WHOLE.replace('pto.target_arch = "a5"', 'pto.target_arch = "a3"')
    op3 = load_pto("w.pto", "a2a3", protocol, text=a3)[0]
    assert {o.attributes.get("lanes") for o in _inits(op3)} == {None}


def test_the_library_run_of_a_whole_tile_pair_matches_numpy(no_hang):
    rng = np.random.default_rng(5)
    a, b, bias = (rng.integers(-3, 4, (16, 16)).astype(np.float32) for _ in range(3))
    res = ptopipe.run_pto(text=WHOLE, inputs=dict(a=a, b=b, bias=bias, out=np.zeros((16, 16), np.float32)),
                          protocol="pto-isa")
    np.testing.assert_array_equal(res.outputs["out"], a @ b + bias)


def _overlapping():
    """The Vector kernel's ring at UB 0..2048 and a tile placed at UB 1024."""
    text = NOSPLIT.replace('size = 2048, location = #pto.address_space<vec>, auto = true}',
                           'size = 2048, location = #pto.address_space<vec>, auto = false, base = 0}')
    text = text.replace("    %bv = pto.alloc_tile : ",
                        "    %c1024_i64 = arith.constant 1024 : i64\n    %bv = pto.alloc_tile addr = %c1024_i64 : ")
    assert text.count("addr = %c1024_i64") == 1 and "base = 0}" in text
    return text


@pytest.mark.parametrize("call", ["load_pto", "static_findings", "run_pto", "ptopipe.run_pto"])
def test_a_ring_over_a_fixed_tile_is_refused_by_every_library_entry(call):
    text = _overlapping()
    fn = {"load_pto": lambda: load_pto("o.pto", None, "spec", text=text),
          "static_findings": lambda: static_findings("o.pto", None, "spec", text=text),
          "run_pto": lambda: run_pto("o.pto", text=text),
          "ptopipe.run_pto": lambda: ptopipe.run_pto("o.pto", text=text)}[call]
    with pytest.raises(CompileError) as e:
        fn()
    assert "reserve_buffer 'c2v_fifo' [0, 2048) overlaps the tile placed at addr 1024" in e.value.what
    assert e.value.where == f"o.pto:{_line(text, '%bv = pto.alloc_tile')}:5"
    # the ring moved clear of the tile: accepted
    load_pto("o.pto", None, "spec", text=text.replace("base = 0}", "base = 4096}"))


def test_a_ring_over_the_padding_of_a_fixed_tile_is_refused():
    """A tile placed at a fixed address holds its static shape's bytes (512 for a 16x32 ui8
    tile of valid shape 16x4), not its valid shape's 64: a ring there overlaps it."""
    tile = ("!pto.tile_buf<loc=vec, dtype=ui8, rows=16, cols=32, v_row=16, v_col=4, blayout=row_major, "
            "slayout=none_box, fractal=512, pad=0>")
    text = NOSPLIT.replace('size = 2048, location = #pto.address_space<vec>, auto = true}',
                           'size = 2048, location = #pto.address_space<vec>, auto = false, base = 2048}')
    text = text.replace("    %bv = pto.alloc_tile : ",
                        f"    %at = arith.constant 1600 : i64\n    %m = pto.alloc_tile addr = %at : {tile}\n"
                        "    %bv = pto.alloc_tile : ")
    with pytest.raises(CompileError) as e:
        load_pto("o.pto", None, "spec", text=text)
    assert "reserve_buffer 'c2v_fifo' [2048, 4096) overlaps the tile placed at addr 1600" in e.value.what
    load_pto("o.pto", None, "spec", text=text.replace("%at = arith.constant 1600", "%at = arith.constant 1536"))


def test_an_entry_that_never_launches_a_piped_kernel_is_refused():
    text = NOSPLIT.replace("    func.call @vector(%bias, %out) : (!pto.ptr<f32>, !pto.ptr<f32>) -> ()\n", "")
    assert text != NOSPLIT
    with pytest.raises(CompileError) as e:
        ptopipe.run_pto("e.pto", text=text)
    assert "@vector initialises a cross-core pipe but the entry @entry never calls it" in e.value.what
    assert e.value.where.startswith(f"e.pto:{_line(text, 'func.func private @vector')}:")


LOWLEVEL = (ROOT / "tests" / "pto" / "lowlevel_a3.pto").read_text()


@pytest.mark.parametrize("form", ["frontend", "handle"])
@pytest.mark.parametrize("call", ["static_findings", "run_pto", "run_pto static=False"])
def test_a_split_on_a_nosplit_pipe_is_a_parse_error_at_the_split_on_every_path(form, call):
    """ptoas refuses split = 1 / 2 on a pipe initialised with nosplit = true; the static
    verifier cannot express the file, so the executor's reader refuses it too (the run had
    moved split halves through a one-lane pipe: wrong output)."""
    if form == "frontend":
        text = NOSPLIT.replace("pto.tpush_to_aiv(%acc : !pto.tile_buf<acc, 16x16xf32, blayout=col_major, slayout=row_major, fractal=1024>) {split = 0}",
                               "pto.tpush_to_aiv(%acc : !pto.tile_buf<acc, 16x16xf32, blayout=col_major, slayout=row_major, fractal=1024>) {split = 1}")
        op, init = "pto.tpush_to_aiv", "pto.aic_initialize_pipe"
    else:
        text = LOWLEVEL.replace("{dir_mask = 1, slot_size = 1024, slot_num = 4}",
                                "{dir_mask = 1, slot_size = 1024, slot_num = 4, nosplit = true}")
        op, init = "pto.tpush", "pto.initialize_l2g2l_pipe"
    assert text not in (NOSPLIT, LOWLEVEL)
    fn = {"static_findings": lambda: static_findings("n.pto", None, "spec", text=text),
          "run_pto": lambda: run_pto("n.pto", text=text),
          "run_pto static=False": lambda: run_pto("n.pto", text=text, static=False)}[call]
    with pytest.raises(ParseError) as e:
        fn()
    assert (f"{op} with split = 1 on a pipe initialised with nosplit = true (line {_line(text, init)})"
            in e.value.what)
    ln = _line(text, f"{op}(")
    assert e.value.where == f"n.pto:{ln}:{text.splitlines()[ln - 1].index('split = 1') + len('split = ') + 1}"


def test_a_tfree_without_split_frees_with_its_tpops_split_on_every_path():
    """docs/pto.md: a tfree_from_aic with no split takes its TPOP's; the run gave it
    TILE_NO_SPLIT (a split mismatch against the TPOP's TILE_UP_DOWN, and the file's pipes
    taken as one-lane) while the static verifier passed it."""
    text = (ROOT / "tests" / "pto" / "interleaved_dyn_a5.pto").read_text()
    bare = text.replace("pto.tfree_from_aic {split = 1}", "pto.tfree_from_aic")
    assert bare.count("pto.tfree_from_aic\n") == 2
    assert static_findings("f.pto", "a5", "spec", text=bare)[1] is None      # the static verifier reads it
    want = run_pto("f.pto", text=text, platform="a5").outputs["out"]
    for static in (True, False):
        got = run_pto("f.pto", text=bare, platform="a5", static=static)
        np.testing.assert_array_equal(got.outputs["out"], want)
        assert not any("AIV0" in n and "whole tiles" in n for n in got.notes)
    # another split of the same kind frees alike (pto-isa's free tells no split from split only)
    other = text.replace("pto.tfree_from_aic {split = 1}", "pto.tfree_from_aic {split = 2}", 1)
    np.testing.assert_array_equal(run_pto("f.pto", text=other, platform="a5", static=False).outputs["out"], want)
    # a Cube TFREE without split of a split TPOP is the run's error, naming the TPOP where the op
    # starts (its result), as every other .pto position does
    both = (ROOT / "tests" / "pto_corpus" / "x_both_split1_a5.pto").read_text()
    wrong = both.replace("pto.tfree_from_aiv {split = 1}", "pto.tfree_from_aiv {split = 0}", 1)
    with pytest.raises(ProtocolError) as e:
        run_pto("f.pto", text=wrong, platform="a5", static=False)
    ln = _line(wrong, "= pto.tpop_from_aiv")
    col = wrong.splitlines()[ln - 1].index("%") + 1
    assert f"(TPOP at f.pto:{ln}:{col})" in e.value.what, e.value.what


@pytest.mark.parametrize("protocol", ["spec", "pto-isa"])
@pytest.mark.parametrize("scopes", ["functions", "sections"])
def test_the_a5_aiv0_guard_is_decided_per_vector_function(protocol, scopes):
    """ptoas guards each A5 Vector function (or ``pto.section.vector``) apart:
    ``get_subblockid() == 0`` around the body of one that moves whole tiles and reads no
    sub-block.  @two_pop pops on AIV0 only, while @two_rows, which reads get_subblock_idx, runs
    on both lanes - AIV1 stores its 8 rows of y too.  One pipe of one lane; out = a @ b + 2 and
    y = x + 1 whole."""
    text = (ROOT / "tests" / "cpp" / "cpp_kernels" / f"two_vector_{scopes}_nosplit_a5.pto").read_text()
    rng = np.random.default_rng(7)
    a, b, x = (rng.integers(-3, 4, (16, 16)).astype(np.float32) for _ in range(3))
    zeros = np.zeros((16, 16), np.float32)
    res = ptopipe.run_pto(text=text, inputs=dict(a=a, b=b, x=x, out=zeros, y=zeros.copy()), protocol=protocol)
    np.testing.assert_array_equal(res.outputs["out"], a @ b + 2)
    np.testing.assert_array_equal(res.outputs["y"], x + 1)
    s = res.result.summary
    assert [(p["lanes"], p["pushes"], p["pops"], p["frees"]) for p in s.pipes] == [(1, 1, 1, 1)]
    assert s.cores["AIV1"]["instructions"] == 3          # @two_rows' TLOAD, TADDS, TSTORE only
    if scopes == "functions":
        assert any("@two_pop run on AIV0 only" in n for n in res.notes), res.notes


def test_a_vector_function_reading_its_sub_block_runs_on_both_lanes_and_aiv1_constructs_its_pipe():
    """@l0_vector reads get_subblock_idx, so ptoas leaves it unguarded: both lanes run it, AIV1
    constructs the no-split pipe it is no lane of (a warning at the init, as for ptoas's C++
    of the file) and its scf.if keeps it off the pipe; out = a @ b + 2."""
    text = (ROOT / "tests" / "pto_corpus" / "x_nosplit_guarded_a5.pto").read_text()
    rng = np.random.default_rng(2)
    a, b = (rng.integers(-3, 4, (16, 16)).astype(np.float32) for _ in range(2))
    res = ptopipe.run_pto(text=text, inputs=dict(a=a, b=b, out=np.zeros((16, 16), np.float32)))
    np.testing.assert_array_equal(res.outputs["out"], a @ b + 2)
    init = _line(text, "pto.aiv_initialize_pipe")
    leaks = res.result.summary.leaks
    assert any(what.startswith("AIV1 constructs DIR_C2V pipe FlagID 0 (peers AIV0), whose one Vector lane is AIV0")
               and str(loc).endswith(f":{init}:5") for what, loc in leaks), leaks
    assert [p["lanes"] for p in res.result.summary.pipes] == [1]


@pytest.mark.parametrize("form", ["folded", "loop"])
def test_a_static_negative_offset_is_reported_at_its_partition_view(form):
    """check --static: a negative offset, folded from arithmetic (a constant one is refused by
    the reader), is wrong where the offsets are written - reported at the pto.partition_view
    (``Loc.window``), as the run refuses it there, naming the load whose window it makes; a
    window past the tensor's end stays at the load (above)."""
    import sys
    sys.path.insert(0, str(pathlib.Path(__file__).parent))
    from test_pto_exec import IO, STORE, line_of, vec_t, vector_kernel
    if form == "folded":
        offs = "    %c8 = arith.constant 8 : index\n    %r = arith.subi %c0, %c8 : index\n"
        ranges, want = None, "offsets [-8, 0] + window [8, 16] exceed 'y' of shape [16, 16]"
    else:                       # in a loop of unknown trip count: at i = 0, whenever it runs
        offs = ("    %c8 = arith.constant 8 : index\n    %n = arith.index_cast %np : i32 to index\n"
                "    scf.for %i = %c0 to %n step %c1 {\n    %i8 = arith.muli %i, %c8 : index\n"
                "    %r = arith.subi %i8, %c8 : index\n")
        ranges, want = {"np": (0, 2)}, "offsets [8*i - 8, 0] + window [8, 16] exceed 'y' of shape [16, 16]"
    body = offs + f"""    %wp = pto.partition_view %yv, offsets = [%r, %c0], sizes = [%c8, %c16] : !pto.tensor_view<?x?xf32> -> !pto.partition_tensor_view<8x16xf32>
    %u = pto.alloc_tile : {vec_t(8, 16)}
    pto.tload ins(%wp : !pto.partition_tensor_view<8x16xf32>) outs(%u : {vec_t(8, 16)})
""" + ("    }\n" if form == "loop" else "")
    params = "%x: !pto.ptr<f32>, %y: !pto.ptr<f32>" + (", %np: i32" if form == "loop" else "")
    text = vector_kernel(IO + body + STORE, params=params,
                         attrs=" attributes {pto.kernel_kind = #pto.kernel_kind<vector>}")
    with pytest.raises(CompileError) as e:
        load_pto("w.pto", "a2a3", "spec", text=text, ranges=ranges)
    assert e.value.where == f"w.pto:{line_of(text, '%wp = pto.partition_view')}:5", e.value.where
    assert e.value.what.startswith("access out of bounds: " + want), e.value.what
    assert (f"negative offsets: this pto.partition_view makes the window of the pto.tload at line "
            f"{line_of(text, 'pto.tload ins(%wp')}") in e.value.what, e.value.what


def test_a_static_bounds_error_names_the_partition_view_of_the_window():
    """check --static: a load whose window leaves its tensor is the error at the load, and it
    names the line of the pto.partition_view where the offsets are written."""
    import sys
    sys.path.insert(0, str(pathlib.Path(__file__).parent))
    from test_pto_exec import IO, STORE, line_of, vec_t, vector_kernel
    body = f"""    %c8 = arith.constant 8 : index
    %wp = pto.partition_view %yv, offsets = [%c16, %c0], sizes = [%c8, %c16] : !pto.tensor_view<?x?xf32> -> !pto.partition_tensor_view<8x16xf32>
    %u = pto.alloc_tile : {vec_t(8, 16)}
    pto.tload ins(%wp : !pto.partition_tensor_view<8x16xf32>) outs(%u : {vec_t(8, 16)})
"""
    text = vector_kernel(IO + body + STORE, attrs=" attributes {pto.kernel_kind = #pto.kernel_kind<vector>}")
    with pytest.raises(CompileError) as e:
        load_pto("w.pto", "a2a3", "spec", text=text)
    assert e.value.where == f"w.pto:{line_of(text, 'pto.tload ins(%wp')}:5", e.value.where
    assert e.value.what == ("access out of bounds: offsets [16, 0] + window [8, 16] exceed 'y' of shape [16, 16]; "
                            f"its window: the pto.partition_view at line {line_of(text, '%wp = pto.partition_view')}")


# -- GM layouts: a DN / NZ view is read as the run and ptoas read it ----------------------------
_NZ_TILE = ("!pto.tile_buf<loc=mat, dtype=f16, rows=256, cols=16, v_row=256, v_col=16, blayout=col_major, "
            "slayout=row_major, fractal=512, pad=0>")


def _with_nz_view(row: str) -> str:
    """tests/pto/c2v_split_a3.pto whose Cube kernel also loads a 16x16x16 f16 tensor ``nz``
    (ptoas infers NZ from its shape and strides: a 256x16 tile) at offsets [row, 0, 0] and stores
    it back - the window the old value IR refused as ND ([1, 256, 16] of a 16x16x16 tensor)."""
    text = (ROOT / "tests" / "pto" / "c2v_split_a3.pto").read_text()
    text = text.replace("%gm_slot_buffer: !pto.ptr<f32>) attributes {pto.entry}",
                        "%gm_slot_buffer: !pto.ptr<f32>, %nz: !pto.ptr<f16>) attributes {pto.entry}")
    text = text.replace("func.call @cube(%a, %b, %gm_slot_buffer) : (!pto.ptr<f32>, !pto.ptr<f32>, !pto.ptr<f32>) "
                        "-> ()", "func.call @cube(%a, %b, %gm_slot_buffer, %nz) : (!pto.ptr<f32>, !pto.ptr<f32>, "
                        "!pto.ptr<f32>, !pto.ptr<f16>) -> ()")
    text = text.replace("@cube(%a: !pto.ptr<f32>, %b: !pto.ptr<f32>, %gm_slot_buffer: !pto.ptr<f32>)",
                        "@cube(%a: !pto.ptr<f32>, %b: !pto.ptr<f32>, %gm_slot_buffer: !pto.ptr<f32>, "
                        "%nz: !pto.ptr<f16>)")
    anchor = "    %b_mat = pto.alloc_tile"
    nz = f"""    %c256 = arith.constant 256 : index
    %nzv = pto.make_tensor_view %nz, shape = [%c16, %c16, %c16], strides = [%c256, %c16, %c1] : !pto.tensor_view<?x?x?xf16>
    %nzp = pto.partition_view %nzv, offsets = [{row}, %c0, %c0], sizes = [%c16, %c16, %c16] : !pto.tensor_view<?x?x?xf16> -> !pto.partition_tensor_view<16x16x16xf16>
    %nzt = pto.alloc_tile : {_NZ_TILE}
    pto.tload ins(%nzp : !pto.partition_tensor_view<16x16x16xf16>) outs(%nzt : {_NZ_TILE})
    pto.tstore ins(%nzt : {_NZ_TILE}) outs(%nzp : !pto.partition_tensor_view<16x16x16xf16>)
"""
    assert text.count(anchor) == 1
    return text.replace(anchor, nz + anchor)


def test_the_static_verifier_reads_an_nz_view_as_the_run_does(tmp_path, capsys):
    """A file with pipes and an NZ view: check --static proves it (the value IR used to read the
    view as ND, refuse the store's window and say NOT VERIFIED), and a window past the tensor is
    its error at the load, naming the partition view - as the run reports it."""
    from ptopipe.cli import main as cli_main
    ok, bad = tmp_path / "nz_a3.pto", tmp_path / "nz_oob_a3.pto"
    ok.write_text(_with_nz_view("%c0"))
    bad.write_text(_with_nz_view("%c1"))
    assert cli_main(["check", "--static", str(ok)]) == 0
    assert "PASS" in capsys.readouterr().out
    assert cli_main(["check", "--static", str(bad)]) == 1
    err = capsys.readouterr().err
    text = bad.read_text()
    assert (f"access out of bounds: offsets [1, 0, 0] + window [16, 16, 16] exceed 'nz' of shape [16, 16, 16]; "
            f"its window: the pto.partition_view at line {_line(text, '%nzp = pto.partition_view')}") in err, err
    assert f"nz_oob_a3.pto:{_line(text, 'pto.tload ins(%nzp')}:5" in err, err
    x = np.arange(16 ** 3, dtype=np.float16).reshape(16, 16, 16)
    r = run_pto(str(ok), inputs=dict(nz=x))
    np.testing.assert_array_equal(r.outputs["nz"], x)


_DN3 = """module {
  func.func @dn3(%src: !pto.ptr<f32>, %dst: !pto.ptr<f32>) attributes {pto.kernel_kind = #pto.kernel_kind<vector>} {
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %c2 = arith.constant 2 : index
    %c8 = arith.constant 8 : index
    %c16 = arith.constant 16 : index
    %c128 = arith.constant 128 : index
    %f = arith.constant 2.0 : f32
    %sv = pto.make_tensor_view %src, shape = [%c2, %c16, %c8], strides = [%c128, %c1, %c16]LAYOUT : !pto.tensor_view<?x?x?xf32>
    %dv = pto.make_tensor_view %dst, shape = [%c2, %c16, %c8], strides = [%c128, %c1, %c16]LAYOUT : !pto.tensor_view<?x?x?xf32>
    %sp = pto.partition_view %sv, offsets = [%c0, %c0, %c0], sizes = [%c2, %c16, %c8] : !pto.tensor_view<?x?x?xf32> -> !pto.partition_tensor_view<2x16x8xf32>
    %dp = pto.partition_view %dv, offsets = [%c0, %c0, %c0], sizes = [%c2, %c16, %c8] : !pto.tensor_view<?x?x?xf32> -> !pto.partition_tensor_view<2x16x8xf32>
    %t = pto.alloc_tile : TILE
    %u = pto.alloc_tile : TILE
    pto.tload ins(%sp : !pto.partition_tensor_view<2x16x8xf32>) outs(%t : TILE)
    pto.tmuls ins(%t, %f : TILE, f32) outs(%u : TILE)
    pto.tstore ins(%u : TILE) outs(%dp : !pto.partition_tensor_view<2x16x8xf32>)
    return
  }
}
""".replace("TILE", "!pto.tile_buf<loc=vec, dtype=f32, rows=16, cols=16, v_row=16, v_col=16, blayout=col_major, "
                    "slayout=none_box, fractal=512, pad=0>")


@pytest.mark.parametrize("layout", ["", " {layout = #pto.layout<dn>}"])
def test_a_3d_dn_view_moves_as_ptoas_infers_it(layout):
    """A 2x16x8 view with unit row stride is DN whether written or not (ptoas infers
    ``Layout::DN``: a move sees 16 rows of 2*8 columns): the run used to read the unwritten one
    as ND, 32x8, and refuse the 16x16 tile; the static verifier refused both."""
    text = _DN3.replace("LAYOUT", layout)
    load_pto("dn.pto", "a2a3", "spec", text=text)
    x = np.arange(256, dtype=np.float32)
    r = run_pto("dn.pto", text=text, inputs=dict(src=x, dst=np.zeros_like(x)))
    np.testing.assert_array_equal(r.outputs["dst"], 2 * x)
