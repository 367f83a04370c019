"""docs/passes/ is kept equal to the passes' declarations: each pass's page lists the IR
properties it requires, produces and invalidates, the README the pipeline and every
property (``python -m ptopipe.report.pass_reference`` rewrites the sections)."""
import dataclasses
import pathlib

from ptopipe.passes import REGISTRY, IRProperty
from ptopipe.report.pass_reference import BEGIN, END, main, sections, stale

DOCS = pathlib.Path(__file__).resolve().parents[2] / "docs" / "passes"


def test_the_pass_pages_are_the_declarations():
    assert stale(str(DOCS)) == {}, "docs/passes is stale: python -m ptopipe.report.pass_reference"
    assert set(sections()) == {"README.md"} | {f"{n}.md" for n in REGISTRY}
    page = (DOCS / "allocate-flags.md").read_text()
    assert (f"{BEGIN}\n**Requires:** [`mixed-kernels-expanded`](README.md#mixed-kernels-expanded).  "
            "**Produces:** [`flags-allocated`](README.md#flags-allocated).  **Invalidates:** nothing.\n"
            f"{END}") in page
    readme = (DOCS / "README.md").read_text()
    assert all(f'<a id="{p.value}"></a>' in readme for p in IRProperty)


def test_a_changed_declaration_makes_its_page_stale(monkeypatch, tmp_path, capsys):
    for p in DOCS.glob("*.md"):
        (tmp_path / p.name).write_text(p.read_text())
    info = REGISTRY["lower-platform"]
    monkeypatch.setitem(REGISTRY, info.name, dataclasses.replace(
        info, invalidated=frozenset({IRProperty.PIPES_VERIFIED})))
    assert stale(str(tmp_path)) == {"README.md": "stale", "lower-platform.md": "stale"}
    assert main([str(tmp_path), "--check"]) == 1
    assert main([str(tmp_path)]) == 0                       # rewrites them
    assert "**Invalidates:** [`pipes-verified`](README.md#pipes-verified)." in \
        (tmp_path / "lower-platform.md").read_text()
    assert stale(str(tmp_path)) == {}
    (tmp_path / "validate.md").write_text("# validate\n")
    assert main([str(tmp_path)]) == 1
    assert "validate.md: no markers" in capsys.readouterr().out
