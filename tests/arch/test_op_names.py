"""Every op is named in one place.  Outside the modules that define ops or spell a textual
form, ptopipe refers to an op through its definition (``TPush.name``, ``op.is_a(TPush)``,
``TPop.call_name``, ``ARITH_OP["+"]``), never by a string literal: a literal equal to an op
name of the op IR (``"pl.tpush"``, ``"arith.add"``) anywhere in the package, or to the
op-table name of a pipe or sync op (``"tpush"``) in the compiler and
runtime layers, is reported with its file and line."""
import ast
import pathlib

import ptopipe
from ptopipe.ir.core import gc_paused
from ptopipe.ir.opdefs import EVENT_OPS, OPDEFS, PIPE_OPS, RING_BUFFERS

from package_trees import module_nodes, released  # noqa: F401  (released: drops the trees)

PKG = pathlib.Path(ptopipe.__file__).parent

#: the modules that may spell op names, and why
ALLOWED = {
    "ir/opdefs.py": "the op definitions",
    "ir/ops.py": "the op table (DSL signatures, typing rules)",
    "language/parser.py": "the DSL parser: pl.reserve_buffer / pl.import_peer_buffer are DSL statements",
    "language/surface.py": "the DSL namespace (the same statements)",
    "language/frontend.py": "the DSL front end: the @pl.program decorator's spelling",
}
#: the layers where a pipe / sync op's op-table name is an op reference (isa and sim name the
#: instructions of the simulated hardware: TPUSH there is an instruction, not an IR op)
TABLE_NAME_LAYERS = ("ir", "language", "passes", "codegen", "runtime", "cli", "report")
#: how many such literals the package may hold
CEILING = 0


def op_name_literals(source: str, rel: str) -> list:
    """``(line, literal)`` of every string constant of ``source`` naming an op."""
    with gc_paused():           # (collections while the tree grows would only rescan it)
        tree = ast.parse(source, rel)
    return _literals(ast.walk(tree), rel)


def _literals(nodes, rel: str) -> list:
    """``(line, literal)`` of every string constant among the syntax-tree ``nodes`` of module
    ``rel`` naming an op."""
    ir_names = set(OPDEFS)
    table_names = {c.call_name for c in PIPE_OPS + EVENT_OPS + RING_BUFFERS}
    table = rel.split("/")[0] in TABLE_NAME_LAYERS
    out = []
    for node in nodes:
        if isinstance(node, ast.Constant) and isinstance(node.value, str) and (
                node.value in ir_names or (table and node.value in table_names)):
            out.append((node.lineno, node.value))
    return sorted(out)


def _found() -> list:
    out = []
    for path in sorted(PKG.rglob("*.py")):
        rel = path.relative_to(PKG).as_posix()
        if rel not in ALLOWED:      # (the package's trees, parsed once for the directory's scans)
            out += [f"ptopipe/{rel}:{line}: {lit!r}" for line, lit in _literals(module_nodes(path), rel)]
    return out


def test_the_scan_finds_op_names_and_only_them():
    src = ('x = "pl.tpush"\nif op.name == "arith.add": pass\ny = "tpush"\n'
           'z = f"pl.{n}"\nw = "pl.tpush is an op"\nv = "load"\n')
    assert op_name_literals(src, "passes/x.py") == [(1, "pl.tpush"), (2, "arith.add"), (3, "tpush")]
    assert op_name_literals(src, "isa/x.py") == [(1, "pl.tpush"), (2, "arith.add")]


def test_the_allowed_modules_exist():
    assert all((PKG / rel).is_file() for rel in ALLOWED)


def test_op_names_are_spelled_only_by_the_definitions_and_the_textual_forms():
    found = _found()
    assert len(found) <= CEILING, (
        f"{len(found)} op-name literals outside the allowed modules (at most {CEILING}); refer "
        "to the op class instead (TPush.name, op.is_a(TPush), TPop.call_name):\n" + "\n".join(found))
