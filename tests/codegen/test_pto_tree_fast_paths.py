"""The tree reader's shortcuts give what its general reading gives: the common one-line
statement read directly (:meth:`~ptopipe.codegen.pto_tree._Reader.one_line_stmt`) makes the
statement - name, results and their columns, pieces, text, location - or the ParseError
(message and line:col) the general reading makes; the scan for characters a file may not hold
finds what the character class finds; the bracket balance counts every bracket;
:meth:`~ptopipe.codegen.pto_tree.Stmt.used_names` is :meth:`~ptopipe.codegen.pto_tree.Stmt.used`
without result numbers; the executor's :func:`~ptopipe.codegen.pto_exec.program.walk` visits
what a recursive pre-order walk visits."""
from __future__ import annotations

import pathlib

import pytest
from hypothesis import given, settings, strategies as st

from ptopipe.codegen import pto_tree
from ptopipe.codegen.pto_exec.program import walk
from ptopipe.codegen.pto_tree import Stmt, parse_tree
from ptopipe.errors import ParseError

ROOT = pathlib.Path(__file__).parent.parent
FILES = sorted(p for d in ("pto", "pto_corpus", "pto_broken") for p in (ROOT / d).glob("*.pto"))
TILE = ("!pto.tile_buf<loc=vec, dtype=f32, rows=16, cols=64, v_row=16, v_col=64, blayout=row_major, "
        "slayout=none_box, fractal=512, pad=0>")
#: lines at the edges of the one-line form, each put between two ordinary statements
LINES = [
    f"%t = pto.alloc_tile : {TILE}",
    f"  %t0=pto.alloc_tile:{TILE}",
    "pto.tadds ins(%t, %s : !pto.tile_buf<vec, 16x64xf32>, f32) outs(%u : !pto.tile_buf<vec, 16x64xf32>)",
    "%a, %b = arith.addi %x, %y : index",
    "%a:2 = pto.thing %x : index",
    "%a = %b = arith.addi %x, %y : index",
    '%a = "arith.addi"(%x, %y) : (index, index) -> index',
    "%r = call @f(%x) : (index) -> index",
    "%r = func.call @f(%x) : (index) -> index",
    "return",
    "return %x : index",
    "%c = arith.constant 1 : index // a comment",
    '%c = pto.thing {name = "a/b"}',
    "%c = arith.constant 1 : index )",
    "%c = arith.constant (1 : index",
    "%c = pto.partition_view %x, offsets = [%c0, %c0],",
    "    sizes = [%c16, %c64] : !pto.tensor_view<?x?xf32> -> !pto.partition_tensor_view<16x64xf32>",
    "%c = arith.constant",
    "%c arith.constant 1 : index",
    "c = arith.constant 1 : index",
    "%c =",
    "pto.barrier",
    "scf.yield",
    "foo",
    "%x = scf.for %i = %c0 to %c1 step %c1 {",
    "}",
    "^bb1:",
    "",
    "   ",
    "%r = arith.cmpi slt, %a, %b : index -> i1",
    "%r = pto.tmov ins(%a : !pto.tile_buf<vec, 16x64xf32>) outs(%b : !pto.tile_buf<vec, 16x64xf32>) %c",
]


def _general(monkeypatch):
    monkeypatch.setattr(pto_tree._Reader, "one_line_stmt", lambda self, r, line: None)


def _shape(stmts) -> list:
    out = []
    for s in stmts:
        out.append((s.name, s.results, s.result_cols, s.col, tuple(s.tok), s.result_group, s._pieces, s.text(),
                    [[(b.label, b.args, _shape(b.stmts)) for b in r] for r in s.regions]))
    return out


def _read(text: str):
    try:
        return _shape(parse_tree(text, "t.pto"))
    except Exception as e:           # (what the reader raises, whatever it is, alike)
        return (type(e).__name__, str(e))


def _both(text: str, monkeypatch) -> tuple:
    direct = _read(text)
    with monkeypatch.context() as m:
        _general(m)
        general = _read(text)
    return direct, general


def _module(body: list) -> str:
    return "module {\n  func.func @k(%x: index) {\n" + "".join(f"    {b}\n" for b in body) + \
        "    return\n  }\n}\n"


def test_the_common_line_is_read_directly():
    r = pto_tree._Reader(f"%t = pto.alloc_tile : {TILE}\npto.barrier\n", "t.pto")
    s = r.one_line_stmt(r.rest(), 1)
    assert isinstance(s, Stmt) and s.name == "pto.alloc_tile" and s.results == ("%t",)
    assert s.result_cols == (1,) and s.tok.col == 6 and s._pieces == ((1, 20, f" : {TILE}"),)


@pytest.mark.parametrize("path", FILES, ids=lambda p: p.name)
def test_a_file_reads_as_the_general_reading_reads_it(path, monkeypatch):
    direct, general = _both(path.read_text(), monkeypatch)
    assert direct == general


@pytest.mark.parametrize("k", range(len(LINES)))
def test_an_edge_line_reads_as_the_general_reading_reads_it(k, monkeypatch):
    text = _module(["%c0 = arith.constant 0 : index", LINES[k], "pto.barrier"])
    direct, general = _both(text, monkeypatch)
    assert direct == general


@settings(max_examples=300, deadline=None)
@given(st.lists(st.sampled_from(LINES), min_size=1, max_size=6),
       st.lists(st.sampled_from(["", " ", "\n", "(", ")", "<", ">", "{", "}", "=", ",", '"', "//", "%z", ":"]),
                max_size=3), st.integers(0, 10 ** 6))
def test_any_mix_of_edge_lines_reads_as_the_general_reading_reads_it(body, noise, at):
    text = _module(body)
    for k, piece in enumerate(noise):          # (a stray piece anywhere: its error alike)
        i = (at * (k + 1)) % (len(text) + 1)
        text = text[:i] + piece + text[i:]
    with pytest.MonkeyPatch.context() as mp:
        direct, general = _both(text, mp)
    assert direct == general


@settings(max_examples=500, deadline=None)
@given(st.text(alphabet="()[]{}<>-x =", max_size=40))
def test_the_bracket_balance_is_every_brackets_count(text):
    want = (sum(text.count(c) for c in "([{<") - sum(text.count(c) for c in ")]}>") + text.count("->"))
    assert pto_tree._balance(text) == want


def test_the_character_scan_finds_what_the_character_class_finds():
    every = "".join(chr(c) for c in range(0x110000))
    assert tuple(m.group() for m in pto_tree._BAD_CHAR.finditer(every)) == pto_tree._BAD_CHARS
    with pytest.raises(ParseError, match=r"unexpected character '\\x0b'") as e:
        parse_tree("module {\n  \x0b\n}\n", "t.pto")
    assert e.value.where == "t.pto:2:3"


@pytest.mark.parametrize("text", ["%a = pto.x %b, %c#1, %d#0 : index", "%a = pto.x %b, %c : index",
                                  "pto.x %b {k = #pto.layout<nd>}", "%a:2 = pto.x %b#1"])
def test_used_names_are_the_used_values_without_result_numbers(text):
    s = parse_tree(text, "t.pto")[0]
    assert s.used_names() == tuple(v.split("#")[0] for v in s.used())


def _preorder(stmts):
    for s in stmts:
        yield s
        for r in s.regions:
            for b in r:
                yield from _preorder(b.stmts)


@pytest.mark.parametrize("path", FILES, ids=lambda p: p.name)
def test_walk_visits_the_statements_in_pre_order(path):
    try:
        top = parse_tree(path.read_text(), path.name)
    except ParseError:
        return
    assert [id(s) for s in walk(top)] == [id(s) for s in _preorder(top)]
