"""The PTO-AS executor looks a statement's attributes, groups, values and types up each time it
runs it: :class:`~ptopipe.codegen.pto_tree.Stmt` keeps the answers and the type reader keeps
the types it parsed.  Kept answers are the answers a fresh tree gives, whatever was asked
first, and the type reader's memory stays bounded.  What a handler reads off a statement (its
operands' tokens, its attributes, its location) is read once per run (``Executor.decoded``,
``Executor.steps``): runs give what they give when it is read at every execution."""
from __future__ import annotations

import pathlib

import pytest

from ptopipe.codegen.pto_exec.types import _PARSED_MAX, TypeReader
from ptopipe.codegen.pto_lexer import tokenize
from ptopipe.codegen.pto_tree import parse_tree
from ptopipe.errors import ParseError

PTO_FILES = sorted((pathlib.Path(__file__).parent.parent / "pto").glob("*.pto"))
GROUPS = ("ins", "outs", "iter_args")
#: a statement whose attribute names are the lookups' own words
ODD = """module {
  func.func @k(%a: index) {
    %r = pto.odd %a ins(%a : index) {ins = 1, values = 2, types = 3, group = 4} -> index
    return
  }
}
"""


def _stmts(text, name):
    out, todo = [], list(parse_tree(text, name))
    while todo:
        s = todo.pop()
        out.append(s)
        for region in s.regions:
            for block in region:
                todo.extend(block.stmts)
    return out


def _asked(s) -> list:
    """Every lookup worth asking of ``s``: its attribute keys, one it lacks, its groups."""
    keys = {t.text for i, t in enumerate(s.toks[:-1]) if s.toks[i + 1].text == "="} | {"no_such_key"}
    return ([("attr", k) for k in sorted(keys)] + [("group", g) for g in GROUPS]
            + [("values",), ("types",), ("arrow_type",)])


def _ask(s, q):
    return getattr(s, q[0])(*q[1:])


def _text(v):
    return None if v is None else [[t.text for t in x] if isinstance(x, list) else (x.text, x.line, x.col)
                                   for x in v]


def test_kept_answers_are_a_fresh_trees():
    texts = [(p.read_text(), p.name) for p in PTO_FILES] + [(ODD, "odd.pto")]
    asked = 0
    for text, name in texts:
        kept, fresh = _stmts(text, name), _stmts(text, name)
        for s, f in zip(kept, fresh):
            qs = _asked(s)
            for q in reversed(qs):                      # (kept in another order than asked fresh)
                _ask(s, q)
            for q in qs:
                asked += 1
                # (each question is asked of the fresh tree once: its first answer)
                assert _text(_ask(s, q)) == _text(_ask(f, q)), (name, s.name, q)
                assert _ask(s, q) is _ask(s, q) or _ask(s, q) is None
    assert asked > 500


def test_a_tokens_offset_in_the_ops_text_is_where_position_puts_it():
    """``Stmt.offset`` inverts ``Stmt.position`` for every token of every statement (also ops
    spread over several lines), and ``span`` is the source between two tokens."""
    spread = ODD.replace("ins(%a : index) {ins", "ins(%a :\n        index) {ins")
    n = 0
    for text, name in [(p.read_text(), p.name) for p in PTO_FILES] + [(spread, "spread.pto")]:
        lines = text.splitlines()
        for s in _stmts(text, name):
            for t in s.toks:
                if t.text == "{}":
                    continue
                k = s.offset(t)
                assert s.position(k) == (t.line, t.col) and s.text()[k:k + len(t.text)] == t.text, (name, t)
                assert s.span(t, t) == t.text == lines[t.line - 1][t.col - 1:t.col - 1 + len(t.text)]
                n += 1
    assert n > 1000


def test_an_absent_attribute_gives_the_default_each_time():
    s = next(s for s in _stmts(ODD, "odd.pto") if s.name == "pto.odd")
    assert s.attr("absent") is None and s.attr("absent", ["d"]) == ["d"] and s.attr("absent", 7) == 7
    assert [t.text for t in s.attr("values")] == ["2"] and [t.text for t in s.group("ins")][0] == "%a"


def test_the_type_reader_keeps_a_bounded_memo():
    r = TypeReader("t.pto")
    toks = tokenize("!pto.tile_buf<vec, 16x32xf32>", "t.pto")[:-1]
    first = r.parse(toks)
    assert r.parse(toks) is first
    for _ in range(_PARSED_MAX + 50):                   # a list made anew per call
        assert r.parse(list(toks)) == first
    assert len(r._parsed) <= _PARSED_MAX


TYPES = ("%a = pto.alloc_tile : !pto.tile_buf<vec, 16x32xf32>\n"
         "%b = pto.alloc_tile : !pto.tile_buf<vec, 3x5xf32>\n"          # (a Vec row not 32-byte aligned)
         "%c = pto.alloc_tile : memref<16x16xf16, #pto.address_space<mat>>\n"
         "%d = pto.alloc_tile : !pto.tile_buf<vec, 16x32xf32&>\n")


def test_a_type_text_reads_as_the_same_spec_in_every_file():
    """spec_of keeps what a type text reads as across files: the reading is the file's own
    (what a text reads as in a fresh process), and a text that does not tokenize raises at
    its place in each file."""
    from ptopipe.codegen.pto_exec import types
    fresh = {}
    for k, s in {s.results[0]: s for s in _stmts(TYPES, "one.pto")}.items():
        types._type_of_text.cache_clear()
        try:
            fresh[k] = TypeReader("one.pto").spec_of(s)
        except ParseError as e:
            fresh[k] = e.where
    assert fresh["%a"].rows == 16 and fresh["%b"] is None and fresh["%c"].cols == 16
    assert fresh["%d"] == "one.pto:4:51"
    for name in ("one.pto", "two.pto"):
        r = TypeReader(name)
        for k, s in {s.results[0]: s for s in _stmts(TYPES, name)}.items():
            if k == "%d":
                with pytest.raises(ParseError) as e:
                    r.spec_of(s)
                assert e.value.where == f"{name}:4:51"
            else:
                assert r.spec_of(s) == fresh[k]
    assert types._type_of_text.cache_info().currsize == 3        # (%d's text is not kept)


class _Forgetful(dict):
    """A cache that keeps nothing: every lookup misses."""

    def __setitem__(self, key, value) -> None:
        pass


def _forgetful_executor(monkeypatch):
    from ptopipe.codegen.pto_exec import executor
    init = executor.Executor.__init__

    def forgetting(self, *a, **k):
        init(self, *a, **k)
        self.decoded, self._steps = _Forgetful(), _Forgetful()
    monkeypatch.setattr(executor.Executor, "__init__", forgetting)


def _outcome(path):
    import ptopipe
    try:
        res = ptopipe.run_pto(str(path), data_seed=3)
    except ptopipe.PtoPipeError as e:
        return type(e).__name__, str(e)
    s = res.result.summary
    return ({k: v.tobytes() for k, v in res.outputs.items()}, s.cycles, s.cores, s.pipes, res.warnings,
            [str(x) for x in s.leaks])


#: files of tests/pto whose loops run every kind of statement the executor reads once (loads,
#: stores and windows moving per iteration, arithmetic, pushes, pops, frees, catalogue ops)
READ_ONCE = ("i32_trip_count_a3", "accumulate_a3", "interleaved_dyn_a5", "lowlevel_slotid_a3")


def test_what_statements_say_is_read_once(monkeypatch):
    """The executor reads what a statement says (its handler's operands and attributes, its
    source location and handler) once per run: files of tests/pto run to the outputs, cycles,
    counts and warnings they give when each is read at every execution."""
    files = [p for p in PTO_FILES if p.stem in READ_ONCE]
    assert len(files) == len(READ_ONCE)
    kept = [_outcome(p) for p in files]
    _forgetful_executor(monkeypatch)
    assert [_outcome(p) for p in files] == kept
