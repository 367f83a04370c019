"""No module of ptopipe keeps run-time state in its globals: nothing rebinds a module global
(a ``global`` statement), so what a run or a compile does is decided by its parameters and
its run context, not by what an earlier caller installed.  (Tables filled once at import and
memos of pure functions stay: they are the same for every caller.)"""
import ast
import pathlib

import ptopipe

PKG = pathlib.Path(ptopipe.__file__).parent


def _globals_rebound(path: pathlib.Path):
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Global):
            yield node.lineno, ", ".join(node.names)


def test_no_module_rebinds_its_globals():
    bad = [f"{p.relative_to(PKG)}:{line} global {names}"
           for p in sorted(PKG.rglob("*.py")) for line, names in _globals_rebound(p)]
    assert not bad, "module globals rebound at run time (pass a parameter or use the run context):\n" + \
        "\n".join(bad)


def test_the_scan_sees_a_global_statement(tmp_path):
    p = tmp_path / "m.py"
    p.write_text("X = None\n\ndef install(v):\n    global X\n    X = v\n")
    assert list(_globals_rebound(p)) == [(4, "X")]
