"""Tiles at explicit addresses that share bytes (``codegen.pto_exec.placement.alias_notes``):
a warning exactly where one is written while the other holds a value a later statement
reads - never for pypto's reuse of dead tiles' bytes, nor for its new names of one buffer."""
from __future__ import annotations

import pytest

from ptopipe.codegen.pto_exec.placement import alias_notes
from ptopipe.codegen.pto_exec.reader import read_program


def _ty(layout="blayout=row_major, slayout=none_box", rows=16):
    return (f"!pto.tile_buf<loc=vec, dtype=f32, rows={rows}, cols=16, v_row={rows}, v_col=16, {layout}, "
            "fractal=512, pad=0>")


ND, NZ = _ty(), _ty("blayout=col_major, slayout=row_major")
HALF = _ty(rows=8)


def _kernel(body: str) -> str:
    """A Vector kernel: %a, %b inputs (16x16 f32), %o output; ``body`` uses %pa / %pb (views
    of them), %po, %c0 / %c512 / %c1024 / %c2048 (i64 addresses) and %n (index 0 .. 4 loop bound)."""
    return f"""module attributes {{pto.target_arch = "a5"}} {{
  func.func @k(%a: !pto.ptr<f32>, %b: !pto.ptr<f32>, %o: !pto.ptr<f32>) attributes {{pto.kernel_kind = #pto.kernel_kind<vector>}} {{
    %c0 = arith.constant 0 : i64
    %c512 = arith.constant 512 : i64
    %c1024 = arith.constant 1024 : i64
    %c2048 = arith.constant 2048 : i64
    %i0 = arith.constant 0 : index
    %i1 = arith.constant 1 : index
    %i8 = arith.constant 8 : index
    %i16 = arith.constant 16 : index
    %n = arith.constant 4 : index
    %av = pto.make_tensor_view %a, shape = [%i16, %i16], strides = [%i16, %i1] : !pto.tensor_view<?x?xf32>
    %bv = pto.make_tensor_view %b, shape = [%i16, %i16], strides = [%i16, %i1] : !pto.tensor_view<?x?xf32>
    %ov = pto.make_tensor_view %o, shape = [%i16, %i16], strides = [%i16, %i1] : !pto.tensor_view<?x?xf32>
    %pa = pto.partition_view %av, offsets = [%i0, %i0], sizes = [%i16, %i16] : !pto.tensor_view<?x?xf32> -> !pto.partition_tensor_view<16x16xf32>
    %pb = pto.partition_view %bv, offsets = [%i0, %i0], sizes = [%i16, %i16] : !pto.tensor_view<?x?xf32> -> !pto.partition_tensor_view<16x16xf32>
    %po = pto.partition_view %ov, offsets = [%i0, %i0], sizes = [%i16, %i16] : !pto.tensor_view<?x?xf32> -> !pto.partition_tensor_view<16x16xf32>
    %ph = pto.partition_view %ov, offsets = [%i0, %i0], sizes = [%i8, %i16] : !pto.tensor_view<?x?xf32> -> !pto.partition_tensor_view<8x16xf32>
{body}
    return
  }}
}}
"""


PV = "!pto.partition_tensor_view<16x16xf32>"


def _alloc(name, addr, ty=ND):
    return f"    {name} = pto.alloc_tile addr = {addr} : {ty}"


def _load(view, t, ty=ND):
    return f"    pto.tload ins({view} : {PV}) outs({t} : {ty})"


def _add(x, y, d, ty=ND):
    return f"    pto.tadd ins({x}, {y} : {ty}, {ty}) outs({d} : {ty})"


def _store(t, ty=ND):
    """(a HALF tile into %ph, the 8x16 view of the output: ptoas stores a tile's valid elements
    into a view of as many)"""
    if ty == HALF:
        return f"    pto.tstore ins({t} : {ty}) outs(%ph : !pto.partition_tensor_view<8x16xf32>)"
    return f"    pto.tstore ins({t} : {ty}) outs(%po : {PV})"


def _notes(*lines):
    text = _kernel("\n".join(lines))
    notes = alias_notes(read_program(text, "k.pto"))
    line_of = {ln.strip(): i + 1 for i, ln in enumerate(text.splitlines())}
    return notes, line_of


def test_bytes_of_a_dead_tile_are_free_for_the_next():
    """pypto places a tile over one whose last read is behind it (all allocs on top)."""
    notes, _ = _notes(_alloc("%ta", "%c0"), _alloc("%tb", "%c1024"), _alloc("%s", "%c0", HALF),
                      _load("%pa", "%ta"), _load("%pb", "%tb"), _add("%ta", "%tb", "%tb"), _store("%tb"),
                      _load("%pa", "%s", HALF), _store("%s", HALF))
    assert notes == []


def test_a_write_over_a_live_value_is_named_at_the_write():
    """%s (the first half of %ta's bytes) is loaded while %ta's value waits for the add."""
    lines = [_alloc("%ta", "%c0"), _alloc("%tb", "%c1024"), _alloc("%s", "%c512", HALF),
             _load("%pa", "%ta"), _load("%pb", "%s", HALF), _add("%ta", "%ta", "%tb"), _store("%tb")]
    notes, line_of = _notes(*lines)
    assert len(notes) == 1
    assert notes[0].startswith(f"k.pto:{line_of[lines[4].strip()]}:5: this writes tile %s [512, 1024)")
    assert (f"tile %s [512, 1024) of Vec (allocated at line {line_of[lines[2].strip()]}), which overlaps %ta [0, 1024) "
            f"(allocated at line {line_of[lines[0].strip()]}) while %ta holds a value line "
            f"{line_of[lines[5].strip()]} reads") in notes[0], notes[0]


def test_new_names_of_one_buffer_are_one_buffer_unless_the_type_differs():
    """pypto names an updated tile anew at its address (``%t_mv``): one buffer.  The same bytes
    as another layout (an in-place ND -> NZ move) change what the first name reads."""
    same = [_alloc("%t", "%c0"), _alloc("%t_mv", "%c0"), _alloc("%u", "%c1024"),
            _load("%pa", "%t"), _add("%t", "%t", "%u"), f"    pto.tmov ins(%u : {ND}) outs(%t_mv : {ND})",
            _store("%t")]
    assert _notes(*same)[0] == []
    other = [_alloc("%t", "%c0"), _alloc("%t_nz", "%c0", NZ), _load("%pa", "%t"),
             f"    pto.tmov ins(%t : {ND}) outs(%t_nz : {NZ})", _store("%t")]
    notes, line_of = _notes(*other)
    assert len(notes) == 1 and notes[0].startswith(f"k.pto:{line_of[other[3].strip()]}:5: this writes tile %t_nz")


@pytest.mark.parametrize("clobber", [False, True])
def test_a_value_read_in_every_iteration_lives_through_the_loop(clobber):
    """%w is loaded before the loop and read in every iteration: a tile over its bytes
    written in the body clobbers it for the next iteration, even after the body's read;
    a tile loaded and consumed within the body may reuse another body tile's bytes."""
    over = "%c512" if clobber else "%c1024"
    lines = [_alloc("%w", "%c0"), _alloc("%x", over, HALF), _alloc("%y", "%c2048", HALF), _alloc("%z", "%c2048"),
             _load("%pa", "%w"),
             "    scf.for %i = %i0 to %n step %i1 {",
             _add("%w", "%w", "%w"),
             _load("%pb", "%y", HALF), _store("%y", HALF), _load("%pb", "%z"), _store("%z"),
             _load("%pb", "%x", HALF), _store("%x", HALF),
             "    }"]
    notes, line_of = _notes(*lines)
    if clobber:
        assert len(notes) == 1 and notes[0].startswith(f"k.pto:{line_of[lines[11].strip()]}:5: this writes tile %x")
        assert "%w [0, 1024) (allocated at line " in notes[0] and "while %w holds a value" in notes[0]
    else:
        assert notes == []
