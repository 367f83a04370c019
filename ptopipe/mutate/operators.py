"""Protocol mutation operators on a Python kernel's source: each makes one mutant that
differs from the kernel in one protocol decision at one call site - a TFREE dropped or
moved above the statement before it, an event wait or set dropped or doubled (``wait_flag``
/ ``set_flag``, in the DSL ``pl.wait_event`` / ``pl.record_event``), a TPUSH / TPOP given
the other split or moved above a statement it depends on, a pipe's FlagID, SlotNum or
SlotSize changed on one side only.

Edits keep every other line where it was (a dropped statement becomes ``pass`` on the same
lines; two swapped statements trade lines), so each finding on a mutant names a line of
the user's file.  Expressions that must know the running core call the object bound to
:data:`HOOK` in the mutant's module, :class:`MutantHooks`, which the checks provide: a pipe
built in the Scenario's Vector kernel is mutated on Vector core 0 only, any other (the Cube
kernel's, a helper both call) on the Cube only, so the two sides disagree as a real slip
would make them.

A Python kernel written with the ``pl`` DSL gets the statement-level operators (dropping,
doubling and moving statements) and the other split of a TPUSH / TPOP: the DSL evaluates a
``split=`` argument as a compile-time constant in the kernel's module, where :data:`HOOK`
is bound, but it runs no expression on a core, so the one-sided pipe operators have no
place there.
"""
from __future__ import annotations

import ast
import enum
from dataclasses import dataclass

HOOK = "__ptopipe_mutant__"
"""The name a mutant's source uses for its :class:`MutantHooks` (bound in its globals)."""


class Mutation(enum.Enum):
    """The kinds of protocol mistake a mutant makes, with the text the report shows."""
    DROP_TFREE = "drop a TFREE"
    TFREE_BEFORE_USE = "move a TFREE above a use of the popped tile"
    DROP_WAIT = "drop an event wait (wait_flag / pl.wait_event)"
    DUP_WAIT = "double an event wait (wait_flag / pl.wait_event)"
    DROP_SET = "drop an event set (set_flag / pl.record_event)"
    DUP_SET = "double an event set (set_flag / pl.record_event)"
    SWAP_SPLIT = "give a TPUSH / TPOP the other split"
    REORDER = "move a TPUSH / TPOP above the statement before it that it depends on"
    FLAG_ID = "change a pipe's FlagID on one side"
    SHRINK_RING = "halve a pipe's SlotNum on one side"
    SLOT_SIZE = "halve a pipe's SlotSize on one side"


@dataclass(frozen=True)
class Mutant:
    """One mutant of a kernel file: its kind, the line it changes, what it does there
    (``TFREE(pipe)`` -> ``pass``) and its whole source."""
    kind: Mutation
    line: int
    change: str
    source: str

    @property
    def name(self) -> str:
        """The kind's short name (``drop-tfree``)."""
        return self.kind.name.lower().replace("_", "-")

    @property
    def label(self) -> str:
        return f"line {self.line}: {self.kind.value}: {self.change}"


class MutantHooks:
    """What a mutant's expressions call (bound as :data:`HOOK` in its module)."""

    @staticmethod
    def cube_only(original, mutated):
        """``mutated`` on the Cube core, ``original`` on a Vector core."""
        from ..isa.context import is_cube
        return mutated if is_cube() else original

    @staticmethod
    def vector0_only(original, mutated):
        """``mutated`` on Vector core 0, ``original`` elsewhere."""
        from ..isa.context import get_subblockid, is_cube
        return mutated if not is_cube() and get_subblockid() == 0 else original

    @staticmethod
    def other_split(split):
        """UP_DOWN for LEFT_RIGHT and the other way round (NO_SPLIT becomes UP_DOWN)."""
        from ..isa import TILE_LEFT_RIGHT, TILE_UP_DOWN
        return TILE_LEFT_RIGHT if split == TILE_UP_DOWN else TILE_UP_DOWN


_PIPE_MAKERS = {"TPipe": {"flag": (0, "FlagID"), "size": (2, "SlotSize"), "num": (3, "SlotNum")},
                "aic_initialize_pipe": {"size": (1, "SLOT_SIZE")},
                "aiv_initialize_pipe": {"size": (1, "SLOT_SIZE")}}
_SPLIT_ARG = {"TPUSH": (2, "split"), "TPOP": (2, "split")}


def _name(call: ast.AST) -> str | None:
    if not isinstance(call, ast.Call):
        return None
    f = call.func
    return f.id if isinstance(f, ast.Name) else f.attr if isinstance(f, ast.Attribute) else None


def _stmt_call(stmt: ast.stmt) -> str | None:
    return _name(stmt.value) if isinstance(stmt, ast.Expr) else None


def _arg(call: ast.Call, pos: int, kw: str):
    for k in call.keywords:
        if k.arg is not None and k.arg.lower() == kw.lower():
            return k.value
    return call.args[pos] if len(call.args) > pos and not isinstance(call.args[pos], ast.Starred) else None


class _Source:
    """The source as lines, with edits that keep the line count."""

    def __init__(self, text: str):
        self.text = text
        self.lines = text.splitlines(keepends=True)

    def segment(self, node) -> str:
        return ast.get_source_segment(self.text, node)

    def replace(self, node, new: str) -> str:
        """The source with ``node``'s text replaced by ``new`` (a one-line text), padded
        with newlines so that every later line keeps its number."""
        lines = list(self.lines)
        a, b = node.lineno - 1, node.end_lineno - 1
        head = lines[a][:_col(lines[a], node.col_offset)]
        tail = lines[b][_col(lines[b], node.end_col_offset):]
        lines[a:b + 1] = [head + new + "\n" * (b - a) + tail]
        return "".join(lines)

    def swap(self, first: ast.stmt, second: ast.stmt) -> str:
        """The source with two one-line statements' lines exchanged."""
        lines = list(self.lines)
        a, b = first.lineno - 1, second.lineno - 1
        lines[a], lines[b] = _eol(lines[b], lines[a]), _eol(lines[a], lines[b])
        return "".join(lines)


def _col(line: str, byte_col: int) -> int:
    """ast's column offsets count UTF-8 bytes; the character index they point at."""
    return len(line.encode("utf-8")[:byte_col].decode("utf-8", errors="ignore"))


def _eol(line: str, like: str) -> str:
    """``line`` ending as ``like`` does (the last line of a file may have no newline)."""
    body = line.rstrip("\r\n")
    return body + like[len(like.rstrip("\r\n")):]


def _blocks(tree: ast.AST):
    """Every statement list of the module (function bodies, loop and branch bodies)."""
    for node in ast.walk(tree):
        for field in ("body", "orelse", "finalbody"):
            block = getattr(node, field, None)
            if isinstance(block, list) and block and isinstance(block[0], ast.stmt):
                yield block
        for h in getattr(node, "handlers", ()) or ():
            yield h.body


def _one_line(stmt: ast.stmt) -> bool:
    return stmt.lineno == stmt.end_lineno and not isinstance(
        stmt, (ast.If, ast.For, ast.While, ast.With, ast.Try, ast.FunctionDef, ast.ClassDef))


#: the event calls of each front end: an ISA kernel's and the DSL's
_WAITS, _SETS = {"wait_flag", "wait_event"}, {"set_flag", "record_event"}
_PROTOCOL = {"TPUSH", "TPOP", "TFREE", "TALLOC"} | _WAITS | _SETS


def _names(node: ast.AST) -> set:
    return {n.id for n in ast.walk(node) if isinstance(n, ast.Name)}


def _bound(stmt: ast.AST) -> set:
    """The names statement ``stmt`` binds (assignment targets)."""
    return {n.id for n in ast.walk(stmt) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store)}


def _vector_kernels(tree: ast.AST) -> set:
    """Names of the functions given as a ``Scenario``'s Vector kernel (``aiv``): in a
    ``Scenario(...)`` call or a factory of one (``scenario(name, cube, vector, ...)``, the
    examples' helper), by position or ``aiv=``; any other call's ``aiv=`` (``ptopipe.run``)."""
    out = set()
    for node in ast.walk(tree):
        name = _name(node)
        if name is not None and name.lower().endswith("scenario"):
            aiv = _arg(node, 2, "aiv")          # a function, or (function, None) for one lane
        elif isinstance(node, ast.Call):
            aiv = next((k.value for k in node.keywords if k.arg == "aiv"), None)
        else:
            continue
        for n in (aiv.elts if isinstance(aiv, ast.Tuple) else [aiv] if aiv is not None else []):
            if isinstance(n, ast.Name):
                out.add(n.id)
    return out


def _functions(tree: ast.AST) -> dict:
    """id(node) -> name of the top-level function around it."""
    out = {}
    for top in tree.body:
        if isinstance(top, ast.FunctionDef):
            for node in ast.walk(top):
                out[id(node)] = top.name
    return out


def mutants(source: str, dsl: bool = False) -> list:
    """Every mutant of the kernel source ``source``, in line order (``dsl``: the statement
    operators and the split swap only)."""
    tree = ast.parse(source)
    src = _Source(source)
    out = []
    # the popped tiles: TPOP's tile argument (raw ISA), the name a TPOP is assigned to (DSL)
    popped = {a.id for node in ast.walk(tree) if _name(node) == "TPOP"
              for a in [_arg(node, 1, "tile")] if isinstance(a, ast.Name)}
    popped |= {t.id for node in ast.walk(tree) if isinstance(node, ast.Assign) and _name(node.value) == "TPOP"
               for t in node.targets if isinstance(t, ast.Name)}

    def add(kind, node, change, text):
        out.append(Mutant(kind, node.lineno, change, text))

    for block in _blocks(tree):
        for i, stmt in enumerate(block):
            name = _stmt_call(stmt)
            if name is None:
                continue
            seg = src.segment(stmt)
            prev = block[i - 1] if i > 0 and _one_line(block[i - 1]) and _one_line(stmt) else None
            if name == "TFREE":
                add(Mutation.DROP_TFREE, stmt, f"{seg} -> pass", src.replace(stmt, "pass"))
                if prev is not None and _names(prev) & popped:
                    add(Mutation.TFREE_BEFORE_USE, stmt, f"{seg} above {src.segment(prev)}",
                        src.swap(prev, stmt))
            elif name in _WAITS | _SETS:
                drop, dup = ((Mutation.DROP_WAIT, Mutation.DUP_WAIT) if name in _WAITS
                             else (Mutation.DROP_SET, Mutation.DUP_SET))
                add(drop, stmt, f"{seg} -> pass", src.replace(stmt, "pass"))
                add(dup, stmt, f"{seg} twice", src.replace(stmt, f"{seg}; {seg}"))
            elif name in ("TPUSH", "TPOP") and prev is not None and _stmt_call(prev) != name \
                    and not _bound(prev) & _names(stmt):
                # (not above the statement that binds a name it uses: that is no kernel at all)
                tile = _arg(stmt.value, 1, "tile")
                if _stmt_call(prev) in _PROTOCOL or (tile is not None and _names(tile) & _names(prev)):
                    add(Mutation.REORDER, stmt, f"{seg} above {src.segment(prev)}", src.swap(prev, stmt))
    vector, function = _vector_kernels(tree), _functions(tree)
    for node in ast.walk(tree):
        name = _name(node)
        if name in _SPLIT_ARG:
            split = _arg(node, *_SPLIT_ARG[name])
            if split is not None:
                seg = src.segment(split)
                add(Mutation.SWAP_SPLIT, node, f"{name}(..., {seg}) -> the other split",
                    src.replace(split, f"{HOOK}.other_split({seg})"))
        if not dsl:
            for key, kind, new in (("flag", Mutation.FLAG_ID, "({}) + 1"),
                                   ("num", Mutation.SHRINK_RING, "max(1, ({}) // 2)"),
                                   ("size", Mutation.SLOT_SIZE, "({}) // 2")):
                where = _PIPE_MAKERS.get(name, {}).get(key)
                value = _arg(node, *where) if where else None
                if value is not None:
                    seg = src.segment(value)
                    side, hook = (("Vector core 0", "vector0_only") if function.get(id(node)) in vector
                                  else ("the Cube", "cube_only"))
                    add(kind, node, f"{where[1]} {seg} -> {new.format(seg)} on {side}",
                        src.replace(value, f"{HOOK}.{hook}({seg}, {new.format(seg)})"))
    out.sort(key=lambda m: (m.line, m.kind.value))
    return out
