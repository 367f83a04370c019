"""The documentation's own examples run: the README's first kernel on both platforms and
both protocols, the examples' docstrings name variants that exist, and flash attention
runs under both protocol models."""
from __future__ import annotations

import builtins
import os
import re

import pytest

import ptopipe

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def _readme_example() -> str:
    with open(os.path.join(ROOT, "README.md"), encoding="utf-8") as f:
        text = f.read()
    code = re.search(r"```python\n(.*?)```", text, re.S).group(1)
    assert code.count('platform="a2a3"') == 1, "the README example should name its platform once"
    return code


@pytest.mark.parametrize("platform", ["a2a3", "a5"])
@pytest.mark.parametrize("protocol", ["spec", "pto-isa"])
def test_readme_example_runs(platform, protocol, capsys):
    code = _readme_example().replace('platform="a2a3"', f'platform="{platform}", protocol="{protocol}"')
    exec(compile(code, "README.md", "exec"), {"__name__": "readme_example"})
    out = capsys.readouterr().out
    assert f"platform {platform}, protocol {protocol}" in out


def _load(path: str):
    from ptopipe.driver.loader import load_module     # as `ptopipe run` loads it (own dir on sys.path)
    return load_module(path)


def _example_files():
    for sub in ("scenarios", "dsl", "misuse", ""):
        d = os.path.join(ROOT, "examples", sub)
        for name in sorted(os.listdir(d)):
            if name.endswith(".py") and not name.startswith("_"):
                yield os.path.join(d, name)


@pytest.mark.parametrize("path", list(_example_files()), ids=lambda p: os.path.relpath(p, ROOT))
def test_docstring_variants_exist(path):
    mod = _load(path)
    named = re.findall(r"--variant[ =](\w+)", mod.__doc__ or "")
    sc = getattr(mod, "SCENARIO", None)
    for v in named:
        if v != "all":
            assert sc is not None and v in sc.variants, f"{os.path.basename(path)} names variant {v!r}"


FA = os.path.join(ROOT, "examples", "flash_attention.py")


@pytest.mark.parametrize("platform", ["a2a3", "a5"])
@pytest.mark.parametrize("protocol", ["spec", "pto-isa"])
def test_flash_attention_runs_under_both_protocols(platform, protocol):
    sc = _load(FA).SCENARIO
    res = sc.check("default", platform, protocol)
    assert res.summary.protocol == protocol
    # docs/performance.md states these totals ("A5 (zero-copy local rings) -> N", "pto-isa: N (A2A3), N (A5)")
    with open(os.path.join(ROOT, "docs", "performance.md"), encoding="utf-8") as f:
        doc = re.sub(r"\s+", " ", f.read())
    stated = {("a2a3", "spec"): re.search(r"\*\*total cycles\*\* \| \*\*([\d,]+)\*\*", doc),
              ("a5", "spec"): re.search(r"A5 \(zero-copy local rings\) -> ([\d,]+)", doc),
              ("a2a3", "pto-isa"): re.search(r"pto-isa: ([\d,]+) \(A2A3\)", doc),
              ("a5", "pto-isa"): re.search(r"pto-isa: [\d,]+ \(A2A3\), ([\d,]+) \(A5\)", doc)}[platform, protocol]
    assert f"{res.summary.cycles:,}" == stated.group(1)


def test_flash_attention_spec_cycles_unchanged():
    """sync_period=1 on the O and P rings only changes pto-isa's notifications: the spec
    run keeps the cycle count that docs/performance.md compares with the reference."""
    res = _load(FA).SCENARIO.check("default", "a2a3", "spec")
    assert res.summary.cycles == 12151


def test_flash_attention_default_sync_period_deadlock_names_the_cause(tmp_path):
    """Without sync_period=1 the kernel deadlocks under pto-isa; the fix line must name the
    sparse free notifications, not a FlagID/direction mismatch."""
    with open(FA, encoding="utf-8") as f:
        src = f.read()
    assert src.count(", sync_period=1)") == 2
    path = tmp_path / "fa_sparse.py"
    path.write_text(src.replace(", sync_period=1)", ")"), encoding="utf-8")
    sc = _load(str(path)).SCENARIO
    with pytest.raises(ptopipe.DeadlockError) as ei:
        sc.run("default", "a2a3", "pto-isa")
    line = next(i for i, t in enumerate(src.splitlines(), 1) if "TPUSH(o_pipe" in t)
    assert ei.value.where == f"{path}:{line}"
    assert "AIV0 has freed 1 slot(s) since its last notification" in ei.value.fix
    assert "every 2 TFREEs (SyncPeriod)" in ei.value.fix and "sync_period=1" in ei.value.fix
    assert "same FlagID" not in ei.value.fix


def test_flag_mismatch_under_pto_isa_keeps_the_flag_hint():
    """The sparse-free hint is only for a consumer with un-notified TFREEs: M2 (two FlagIDs)
    under pto-isa is still reported as a pipe mismatch."""
    sc = _load(os.path.join(ROOT, "examples", "misuse", "m2_flag_mismatch.py")).SCENARIO
    with pytest.raises(ptopipe.DeadlockError) as ei:
        sc.run("default", "a2a3", "pto-isa")
    assert "same FlagID" in ei.value.fix and "SyncPeriod" not in ei.value.fix


def test_every_error_class_the_readme_names_is_exported_and_every_source_path_it_names_exists():
    with open(os.path.join(ROOT, "README.md"), encoding="utf-8") as f:
        text = f.read()
    named = set(re.findall(r"`(\w+Error)`", text))
    assert {"LeakError", "DeadlockError", "ProtocolError"} <= named
    assert [n for n in sorted(named) if not hasattr(builtins, n) and not isinstance(getattr(ptopipe, n, None), type)] == []
    paths = set(re.findall(r"`((?:ptopipe|benchmarks|examples|docs|tests)/[\w/.-]+\.(?:py|md|pto|cpp))`", text))
    assert len(paths) > 10
    assert [p for p in sorted(paths) if not os.path.exists(os.path.join(ROOT, p))] == []


def test_the_mixed_examples_the_docs_list_are_the_ones_there():
    """README and docs/passes/ list examples/mixed/'s reference scenarios by number."""
    there = {f"S{m.group(1)}" for m in map(re.compile(r"s(\d+)_").match, os.listdir(os.path.join(ROOT, "examples", "mixed"))) if m}
    for page, pattern in (("README.md", r"`examples/mixed/` has ([^;]*) and a flash-attention"),
                          ("docs/passes/README.md", r"`examples/mixed/` holds ([^)]*) and a flash-attention"),
                          ("docs/passes/expand-mixed.md", r"`examples/mixed/` \(([^)]*), flash attention\)")):
        with open(os.path.join(ROOT, page), encoding="utf-8") as f:
            listed = re.search(pattern, f.read()).group(1)
        assert set(re.findall(r"\bS\d+\b", listed)) == there, page


def test_the_readme_layout_names_every_package_and_docs_page():
    with open(os.path.join(ROOT, "README.md"), encoding="utf-8") as f:
        layout = f.read().split("## Layout", 1)[1]
    pkgs = sorted(d for d in os.listdir(os.path.join(ROOT, "ptopipe"))
                  if os.path.isfile(os.path.join(ROOT, "ptopipe", d, "__init__.py")))
    assert [d for d in pkgs if f"ptopipe/{d} " not in layout] == []
    pages = sorted(n for n in os.listdir(os.path.join(ROOT, "docs")) if n.endswith(".md"))
    assert [n for n in pages if n not in layout] == []
