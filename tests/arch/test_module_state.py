"""No module of ptopipe keeps run-time state in its globals: nothing rebinds a module global
(a ``global`` statement), so what a run or a compile does is decided by its parameters and
its run context, not by what an earlier caller installed; and no function fills or clears a
dict, list or set held in a module global: a table is made at import (a read-only mapping,
a frozenset, a tuple) and a memo of a pure function is a bounded ``functools.lru_cache``.
(Registries that the definitions of op classes, op specs and passes fill as they are
imported stay: they are the same for every caller.)"""
import ast
import functools
import pathlib

import ptopipe
from package_trees import module_nodes, module_tree, released  # noqa: F401  (released: drops the trees)

PKG = pathlib.Path(ptopipe.__file__).parent


def _globals_rebound(path: pathlib.Path):
    for node in module_nodes(path) if path.is_relative_to(PKG) else ast.walk(ast.parse(path.read_text())):
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


#: module globals filled by registration as the package's definitions are imported (a class
#: statement, a decorator, a loop over a table at module level), never by a run
REGISTRIES = {("ir/core.py", "_OP_CLASSES"), ("ir/opdefs.py", "OPDEFS"), ("ir/opdefs.py", "OP_CLASSES"),
              ("ir/ops.py", "OPS"), ("passes/manager.py", "REGISTRY")}
#: memos still kept in module dicts: the interned location of each kernel call site (looked
#: up on every ISA call, keyed by code-object identity), the ABI's word unpackers (looked up
#: on every C++ ABI call) and the C++ compiler's version by path (an external program's
#: answer, asked once)
LEFT = {("sim/location.py", "_internal"), ("sim/location.py", "_codes"), ("sim/location.py", "_sites"),
        ("cpp/abi.py", "_WORDS"), ("cpp/build.py", "_versions")}
_CONTAINERS = (ast.Dict, ast.List, ast.Set, ast.DictComp, ast.ListComp, ast.SetComp)
_MAKERS = {"dict", "list", "set", "defaultdict", "OrderedDict", "deque", "Counter",
           "WeakKeyDictionary", "WeakValueDictionary"}
_MUTATORS = {"clear", "update", "setdefault", "pop", "popitem", "append", "extend", "add", "discard",
             "remove", "insert", "appendleft", "__setitem__", "__delitem__"}


def _mutable_globals(tree) -> set:
    """Names a module binds at its top level to a new dict, list or set."""
    out = set()
    for node in tree.body:
        targets, value = ((node.targets, node.value) if isinstance(node, ast.Assign) else
                          ([node.target], node.value) if isinstance(node, ast.AnnAssign) else ((), None))
        made = isinstance(value, _CONTAINERS) or (
            isinstance(value, ast.Call) and
            (getattr(value.func, "id", None) or getattr(value.func, "attr", None)) in _MAKERS)
        out |= {t.id for t in targets if made and isinstance(t, ast.Name)}
    return out


def _globals_mutated(path: pathlib.Path, source: str | None = None):
    """(line, name) of every write, inside a function, into a dict / list / set that is a
    global of the module at ``path`` (its text: ``source``, else the file's): an item set
    or deleted, or a mutating method called on it."""
    tree = module_tree(path) if source is None else ast.parse(source, str(path))
    names = _mutable_globals(tree)
    for fn in module_nodes(path) if source is None else ast.walk(tree):
        if not isinstance(fn, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)):
            continue
        params = {a.arg for a in ast.walk(fn.args) if isinstance(a, ast.arg)}
        for node in ast.walk(fn):
            if isinstance(node, (ast.Assign, ast.AugAssign, ast.Delete)):
                targets = node.targets if not isinstance(node, ast.AugAssign) else [node.target]
                hit = [t.value.id for t in targets if isinstance(t, ast.Subscript) and isinstance(t.value, ast.Name)]
            elif isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) \
                    and node.func.attr in _MUTATORS and isinstance(node.func.value, ast.Name):
                hit = [node.func.value.id]
            else:
                continue
            for name in hit:
                if name in names and name not in params:
                    yield node.lineno, name


@functools.lru_cache(maxsize=None)
def _package_writes() -> tuple:
    """(module path, line, name) of every module-global write of the package."""
    return tuple((p.relative_to(PKG).as_posix(), line, name)
                 for p in sorted(PKG.rglob("*.py")) for line, name in _globals_mutated(p))


def test_no_function_fills_a_module_dict():
    bad = sorted({f"{path}:{line} {name}" for path, line, name in _package_writes()
                  if (path, name) not in REGISTRIES | LEFT})
    assert not bad, ("module dicts / lists / sets written at run time (make the table at import, "
                     "or memoise with a bounded functools.lru_cache):\n" + "\n".join(bad))


def test_the_scan_sees_a_module_dict_filled_at_run_time(tmp_path):
    src = ("import collections\n_MEMO: dict = {}\nSEEN = set()\nQ = collections.deque()\n"
           "TABLE = {1: 2}\n\n"
           "def f(k, d):\n    _MEMO[k] = 1\n    SEEN.add(k)\n    Q.append(k)\n    d[k] = 2\n"
           "    return TABLE[k]\n\n"
           "def g(_MEMO):\n    _MEMO.clear()\n\n"
           "def h():\n    del _MEMO[0]\n    _MEMO.clear()\n")
    assert list(_globals_mutated(tmp_path / "m.py", src)) == [(8, "_MEMO"), (9, "SEEN"), (10, "Q"),
                                                              (18, "_MEMO"), (19, "_MEMO")]


def test_the_registries_are_still_there():
    """A registry name the scan no longer finds (renamed, removed, made a table) leaves the
    exemption list: it would hide a memo of that name."""
    found = {(path, name) for path, _line, name in _package_writes()}
    assert REGISTRIES <= found, sorted(REGISTRIES - found)
