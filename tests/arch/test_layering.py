"""The package layering: every import inside ptopipe points downward in
arch < protocol < sim < isa < ir < language < passes < codegen < cpp < runtime < driver < report < mutate < cli (the
order of DESIGN.md's layer list: the passes compile what the language builds, the PTO-AS
reader hands its IR to the passes, the runtime runs what the passes compiled, the driver does
what the commands do with all of them, for the command line and for the sweeps and mutation
runs above it), and the IR
never imports the instruction layer (it takes its vocabulary from arch)."""
import ast
import pathlib

import ptopipe
from package_trees import module_nodes, released  # noqa: F401  (released: drops the trees)

PKG = pathlib.Path(ptopipe.__file__).parent
RANK = {"errors": -1, "_startup": -1, "arch": 0, "protocol": 0.5, "sim": 1, "isa": 2, "ir": 3, "language": 4, "passes": 4.25,
        "codegen": 4.5, "cpp": 4.6, "runtime": 4.75, "driver": 4.9, "report": 5, "mutate": 5.5, "cli": 6}


def _imports(path: pathlib.Path):
    """(line, target subpackage) of every ptopipe import in ``path`` (incl. lazy ones)."""
    rel = path.relative_to(PKG).with_suffix("").parts
    here = list(rel[:-1]) if rel[-1] != "__init__" else list(rel[:-1])
    for node in module_nodes(path):
        if isinstance(node, ast.ImportFrom):
            if node.level:
                base = here[:len(here) - (node.level - 1)] if node.level > 1 else list(here)
                parts = base + (node.module.split(".") if node.module else [])
                if not parts:              # "from .. import x": the names are subpackages
                    for a in node.names:
                        if not a.name.startswith("__"):     # package metadata (__version__)
                            yield node.lineno, a.name
                    continue
                yield node.lineno, parts[0]
            elif node.module and node.module.split(".")[0] == "ptopipe":
                mod = node.module.split(".")
                yield node.lineno, mod[1] if len(mod) > 1 else None
        elif isinstance(node, ast.Import):
            for a in node.names:
                mod = a.name.split(".")
                if mod[0] == "ptopipe":
                    yield node.lineno, mod[1] if len(mod) > 1 else None


def _layered_modules():
    for path in sorted(PKG.rglob("*.py")):
        rel = path.relative_to(PKG).parts
        if len(rel) > 1 and rel[0] in RANK:
            yield rel[0], path


def test_every_import_points_downward():
    bad = []
    for layer, path in _layered_modules():
        for line, target in _imports(path):
            if target is None or target not in RANK:
                bad.append(f"{path.relative_to(PKG)}:{line} imports ptopipe.{target} (the facade)")
            elif target != layer and RANK[target] >= RANK[layer]:
                bad.append(f"{path.relative_to(PKG)}:{line} ({layer}) imports {target}")
    assert not bad, "imports against the layer order:\n" + "\n".join(bad)


def test_ir_does_not_import_isa_or_sim():
    bad = [f"{path.relative_to(PKG)}:{line} imports {target}"
           for layer, path in _layered_modules() if layer in ("ir", "language")
           for line, target in _imports(path) if target in ("isa", "sim")]
    assert not bad, "\n".join(bad)


def test_the_checker_sees_imports(tmp_path):
    """The walker finds relative, absolute and lazy imports (a checker that finds nothing
    would pass every package)."""
    p = PKG / "ir" / "ops.py"
    targets = {t for _, t in _imports(p)}
    assert "arch" in targets and "ir" in targets


def test_library_modules_never_import_the_cli():
    """The command line only parses arguments and prints: what a library caller needs (the
    facade included: ``ptopipe.run_pto``) lives below it, so no module outside ``cli``
    imports it (``python -m ptopipe``, ``__main__``, is the command)."""
    bad = [f"{path.relative_to(PKG)}:{line}"
           for path in sorted(PKG.rglob("*.py")) if path.relative_to(PKG).parts[0] not in ("cli", "__main__.py")
           for line, target in _imports(path) if target == "cli"]
    assert not bad, "library modules importing ptopipe.cli:\n" + "\n".join(bad)


def _private_imports(path: pathlib.Path, source: str | None = None):
    """(line, target subpackage, name) of every ``_name`` imported from another ptopipe
    module by the module at ``path`` (its text: ``source``, else the file's)."""
    rel = path.relative_to(PKG).with_suffix("").parts
    here = list(rel[:-1])
    for node in module_nodes(path) if source is None else ast.walk(ast.parse(source, str(path))):
        if not isinstance(node, ast.ImportFrom):
            continue
        if node.level:
            base = here[:len(here) - (node.level - 1)] if node.level > 1 else list(here)
            parts = base + (node.module.split(".") if node.module else [])
        elif node.module and node.module.split(".")[0] == "ptopipe":
            parts = node.module.split(".")[1:]
        else:
            continue
        for a in node.names:
            if a.name.startswith("_") and not a.name.startswith("__"):
                yield node.lineno, parts[0] if parts else None, a.name


def test_no_layer_imports_another_layers_private_names():
    """What a layer offers the layers above it is public: a ``_name`` stays in its own
    subpackage (one that another layer needs gets a public name in the lowest layer that
    needs it)."""
    bad = [f"{path.relative_to(PKG)}:{line} ({layer}) imports {name} from {target}"
           for layer, path in _layered_modules()
           for line, target, name in _private_imports(path) if target != layer]
    assert not bad, "\n".join(bad)


def test_the_private_import_scan_sees_them():
    """The scan resolves relative and absolute imports to their subpackage."""
    src = ("from ..isa.tensor import _contiguous\nfrom .closures import _PY\n"
           "from ptopipe.sim.race import _ranges, overlap\n")
    found = [(t, n) for _, t, n in _private_imports(PKG / "runtime" / "interp.py", src)]
    assert found == [("isa", "_contiguous"), ("runtime", "_PY"), ("sim", "_ranges")]
