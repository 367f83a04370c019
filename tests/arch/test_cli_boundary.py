"""The command line only parses arguments, calls the library and prints: what a command
does lives below it (``ptopipe.driver`` and the layers under it), so nothing outside
``ptopipe/cli`` - library modules, tests, benchmarks, examples - imports from ``ptopipe.cli``
more than the command itself (``main``, ``build_parser``, ``SUBCOMMANDS``) and its printers
(``ptopipe.cli.progress``, ``ptopipe.cli.errors``).  A function a test or another module
needs from a command is library code: it moves to the driver."""
import ast
import pathlib

import ptopipe

ROOT = pathlib.Path(ptopipe.__file__).parent.parent
CLI = ROOT / "ptopipe" / "cli"
#: what may be imported from the package ``ptopipe.cli`` itself
COMMAND = {"main", "build_parser", "SUBCOMMANDS"}
#: the modules of ptopipe.cli that only print, importable as a whole
PRINTERS = {"ptopipe.cli.progress", "ptopipe.cli.errors", "ptopipe.cli.__main__"}


def _cli_imports(path: pathlib.Path, source: str | None = None):
    """(line, what) of every import from ``ptopipe.cli`` in ``path`` that is neither the
    command nor a printer (lazy imports inside functions too)."""
    text = path.read_text() if source is None else source
    if "ptopipe.cli" not in text and "import cli" not in text:     # (most files: not parsed)
        return
    found = []
    for node in ast.walk(ast.parse(text, str(path))):
        if isinstance(node, ast.ImportFrom) and not node.level and node.module:
            mod = node.module
            if mod == "ptopipe.cli":
                for a in node.names:
                    if a.name not in COMMAND:
                        found.append((node.lineno, f"{mod}.{a.name}"))
            elif mod.startswith("ptopipe.cli.") and mod not in PRINTERS:
                found.append((node.lineno, mod))
            elif mod == "ptopipe":
                for a in node.names:
                    if a.name == "cli":
                        found.append((node.lineno, "ptopipe.cli"))
        elif isinstance(node, ast.Import):
            for a in node.names:
                if (a.name == "ptopipe.cli" or a.name.startswith("ptopipe.cli.")) and a.name not in PRINTERS:
                    found.append((node.lineno, a.name))
    yield from sorted(found)


def _outside_the_cli():
    for top in ("ptopipe", "tests", "benchmarks", "examples"):
        for path in sorted((ROOT / top).rglob("*.py")):
            if CLI not in path.parents:
                yield path


def test_nothing_outside_the_cli_imports_what_a_command_does():
    bad = [f"{path.relative_to(ROOT)}:{line} imports {what}"
           for path in _outside_the_cli() for line, what in _cli_imports(path)]
    assert not bad, ("imports of command internals (move what they need to ptopipe.driver):\n"
                     + "\n".join(bad))


def test_the_scan_sees_command_internals(tmp_path):
    """The scan flags a module of a command, a name of the package besides the command's,
    and lazy imports; the command and its printers pass."""
    src = ("from ptopipe.cli import main, SUBCOMMANDS\nfrom ptopipe.cli.progress import Progress\n"
           "def f():\n    from ptopipe.cli.pto import make_inputs\n    from ptopipe.cli import common\n"
           "import ptopipe.cli.check\nfrom ptopipe import cli\n")
    found = list(_cli_imports(tmp_path / "t.py", src))
    assert found == [(4, "ptopipe.cli.pto"), (5, "ptopipe.cli.common"), (6, "ptopipe.cli.check"),
                     (7, "ptopipe.cli")]
