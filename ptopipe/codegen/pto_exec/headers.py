"""The headers of the region-holding ``scf`` ops as ptoas reads them, checked piece by piece
before anything runs: ``scf.for %i = %lb to %ub step %st [iter_args(%a = %x, ...) -> (T, ...)]
[: T] {`` and ``scf.if %cond [-> (T, ...)] {``.  A missing, misspelled or extra piece is a
ParseError at that piece (at the ``{`` opening the body when the piece is missing at the end),
saying what was expected where - the executor would otherwise read past it, or fail when the
loop runs with a message about the op as a whole.

An ``scf.for`` header read here is also what the other readers of the file take from it
(:func:`for_header`): the values it uses and the values it gives its body, with their types."""
from __future__ import annotations

from dataclasses import dataclass

from ...errors import ParseError

FOR_FORM = "scf.for %i = %lb to %ub step %step {   (iter_args(%acc = %init) -> (T) and ': T' optional)"
IF_FORM = "scf.if %cond {   (-> (T, ...) before '{' when the branches yield values)"


@dataclass(frozen=True)
class ForHeader:
    """What an ``scf.for`` header says: its loop variable and the type it gives it, the bounds
    and step, each ``iter_args`` pair ``(%acc, %init)`` and the loop's result types (value
    tokens carry their line and column; types are their source text)."""
    iv: object
    iv_type: str
    bounds: tuple            # (lb, ub, step) tokens
    iter_args: tuple         # ((acc token, init token), ...)
    result_types: tuple

    def introduced(self) -> dict:
        """name -> type text of the values the header gives the loop's body."""
        out = {self.iv.text: self.iv_type}
        out.update((a.text, t) for (a, _), t in zip(self.iter_args, self.result_types))
        return out

    def uses(self) -> list:
        """``(value token, type)`` of each value the header uses: the bounds and step have the
        loop variable's type, each initial value its result's."""
        return [(v, self.iv_type) for v in self.bounds] + [
            (x, t) for (_, x), t in zip(self.iter_args, self.result_types)]


def for_header(s, path: str) -> ForHeader:
    """The header of ``s`` (an ``scf.for``), read once: a ParseError at the first piece not in
    ptoas's spelling."""
    got = s.memo.get("for_header")
    if got is None:
        got = s.memo["for_header"] = _Header(s, path, FOR_FORM).for_()
    return got


def _shown(t) -> str:
    return "'{' (the body)" if t.text == "{}" else "the end of the header" if t.kind == "eof" else repr(t.text)


def check_header(s, path: str) -> None:
    """``s`` (an ``scf.for`` / ``scf.if``) has a header in ptoas's spelling: else a ParseError
    at the first piece that is not."""
    if s.name == "scf.for":
        for_header(s, path)
    elif s.name == "scf.if":
        _Header(s, path, IF_FORM).if_()


class _Header:
    def __init__(self, s, path: str, form: str):
        self.s, self.path, self.form = s, path, form
        self.toks = s.toks
        self.i = 0

    def peek(self):
        if self.i < len(self.toks):
            return self.toks[self.i]
        last = self.toks[-1] if self.toks else self.s.tok
        return last._replace(kind="eof", text="", col=last.col + len(last.text))

    def fail(self, what: str, t=None):
        t = t or self.peek()
        raise ParseError(f"{self.s.name}: {what}, got {_shown(t)}", where=f"{self.path}:{t.line}:{t.col}",
                         fix=f"write the header as {self.form}")

    def value(self, what: str):
        """The value token at the current piece."""
        t = self.peek()
        if t.kind != "value":
            self.fail(f"expected {what}")
        self.i += 1
        return t

    def word(self, text: str, after: str) -> None:
        t = self.peek()
        if t.text != text:
            self.fail(f"expected '{text}' after {after}")
        self.i += 1

    def type_(self, after: str) -> str:
        """A type - a name with its ``<...>``, or a ``(...)`` list -: its source text."""
        t, first = self.peek(), self.i
        if t.text == "(" and t.kind == "punct":
            self.group()
        else:
            if t.kind not in ("word", "bang"):
                self.fail(f"expected a type after {after}")
            self.i += 1
            if self.peek().text == "<":
                self.group()
        return self.s.span(self.toks[first], self.toks[self.i - 1])

    def types_(self, after: str) -> tuple:
        """A type, or a ``(A, B, ...)`` list of types: their source texts."""
        t = self.peek()
        if not (t.text == "(" and t.kind == "punct"):
            return (self.type_(after),)
        self.i += 1
        out = []
        if self.peek().text == ")":
            self.i += 1
            return ()
        while True:
            out.append(self.type_("'(' or ','" if not out else "','"))
            t = self.peek()
            self.i += 1
            if t.text == ")":
                return tuple(out)
            if t.text != ",":
                self.fail("expected ',' or ')' in the list of types", t)

    def group(self) -> None:
        """Past a balanced bracket group starting at the current token."""
        depth = 0
        while self.i < len(self.toks):
            t = self.toks[self.i]
            self.i += 1
            if t.kind == "punct" and t.text in "([{<":
                depth += 1
            elif t.kind == "punct" and t.text in ")]}>":
                depth -= 1
                if depth == 0:
                    return
        self.fail("expected the closing bracket")

    def body(self, after: str) -> None:
        t = self.peek()
        if t.text != "{}":
            self.fail(f"expected '{{' opening the body after {after}")

    def for_(self) -> ForHeader:
        if self.peek().text == "unsigned":
            self.i += 1
        iv = self.value("the loop variable (an SSA name such as %i) after scf.for")
        self.word("=", f"the loop variable {iv.text}")
        lb = self.value("the lower bound (an SSA value such as %c0) after '='")
        self.word("to", f"the lower bound {lb.text}")
        ub = self.value("the upper bound (an SSA value) after 'to'")
        self.word("step", f"the upper bound {ub.text}")
        st = self.value("the step (an SSA value) after 'step'")
        after, pairs, results, iv_type = f"the step {st.text}", [], (), "index"
        if self.peek().text == "iter_args":
            self.i += 1
            if self.peek().text != "(":
                self.fail("expected '(' after iter_args")
            self.i += 1
            while True:
                a = self.value("an iter_arg (%acc = %init)")
                self.word("=", f"the iter_arg {a.text}")
                pairs.append((a, self.value(f"the initial value of {a.text}")))
                t = self.peek()
                self.i += 1
                if t.text == ")":
                    break
                if t.text != ",":
                    self.fail("expected ',' or ')' in iter_args(...)", t)
            self.word("->", "iter_args(...)")
            results = self.types_("'->'")
            after = "the loop's result types"
        if self.peek().text == ":":
            self.i += 1
            iv_type = self.type_("':'")
            after = "the loop variable's type"
        self.body(after)
        return ForHeader(iv, iv_type, (lb, ub, st), tuple(pairs), tuple(results))

    def if_(self) -> None:
        c = self.value("the condition (an i1 SSA value) after scf.if")
        after = f"the condition {c}"
        if self.peek().text == "->":
            self.i += 1
            self.type_("'->'")
            after = "the result types"
        self.body(after)


def tile_carry_refusals(prog) -> list:
    """Warnings, at the iter_arg, for the ``scf.for`` loops of ``prog`` that carry a
    ``!pto.tile_buf`` in their ``iter_args``: ptoas 0.27 does not lower such a loop (its memref
    conversion leaves the loop's tile types: "'scf.for' op 0-th init and 0-th region iter_arg
    have different type", or "ins/outs are not memref yet" at the first op of the carried tile),
    while ptopipe runs it as written.  pypto and ptopipe's writer keep a carried tile in one
    ``pto.alloc_tile`` that the body writes in place."""
    out = []
    for f in prog.funcs.values():
        for s in f.statements():
            if s.name != "scf.for":
                continue
            h = for_header(s, prog.path)
            tiles = [a for (a, _), t in zip(h.iter_args, h.result_types) if t.startswith("!pto.tile_buf")]
            if tiles:
                a = tiles[0]
                out.append(f"{prog.path}:{a.line}:{a.col}: ptoas 0.27 refuses this scf.for: it carries the tile "
                           f"{a.text} in iter_args (\"'scf.for' op 0-th init and 0-th region iter_arg have different "
                           "type\", or \"ins/outs are not memref yet\" at an op of the carried tile); ptopipe runs it "
                           "as written - for the device keep the tile in one pto.alloc_tile that the body writes in "
                           "place (outs(%t)), as pypto does")
    return out

