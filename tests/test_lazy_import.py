"""A plain ``import ptopipe`` loads no layer (no wall clock: what is in ``sys.modules`` of a
fresh interpreter), while the facade still exports, lists and wires everything it did."""
from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

import ptopipe
from ptopipe._lazy import when_imported

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

#: what ``import ptopipe`` may load of ptopipe: the facade, its start-up guard, the errors
#: it exports eagerly (``except ptopipe.DeadlockError`` needs nothing else) and the deferral
LIGHT = {"ptopipe", "ptopipe._startup", "ptopipe._lazy", "ptopipe.errors"}
#: heavy third-party modules only a run (greenlet) or the dtypes (ml_dtypes) need
HEAVY_DEPENDENCIES = {"greenlet", "ml_dtypes"}


def _fresh(code: str):
    """Run ``code`` in a fresh interpreter importing this checkout; its stdout as JSON."""
    env = dict(os.environ, PYTHONPATH=ROOT)
    r = subprocess.run([sys.executable, "-c", code], cwd=ROOT, env=env, capture_output=True,
                       text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    return json.loads(r.stdout)


def test_plain_import_loads_no_layer():
    loaded = _fresh("import sys, json, ptopipe\n"
                    "print(json.dumps({'file': ptopipe.__file__, 'mods': sorted(sys.modules)}))")
    assert loaded["file"] == os.path.join(ROOT, "ptopipe", "__init__.py")
    ours = {m for m in loaded["mods"] if m == "ptopipe" or m.startswith("ptopipe.")}
    assert ours <= LIGHT, f"import ptopipe loaded {sorted(ours - LIGHT)}"
    assert not HEAVY_DEPENDENCIES & set(loaded["mods"])


def test_first_use_loads_the_layer_and_the_facade_lists_every_name():
    got = _fresh(
        "import sys, json, types, ptopipe\n"
        "listed = dir(ptopipe)\n"
        "before = 'ptopipe.isa.launch' in sys.modules\n"
        "run = ptopipe.run\n"
        "print(json.dumps({'listed': listed, 'before': before,\n"
        "                  'after': 'ptopipe.isa.launch' in sys.modules,\n"
        "                  'same': run is sys.modules['ptopipe.isa.launch'].run,\n"
        "                  'all': ptopipe.__all__,\n"
        "                  'isa': isinstance(ptopipe.isa, types.ModuleType)}))")
    assert set(got["all"]) <= set(got["listed"])
    assert {"arch", "ir", "isa", "protocol", "runtime", "sim"} <= set(got["listed"])
    assert (got["before"], got["after"], got["same"], got["isa"]) == (False, True, True, True)


def test_every_exported_name_is_the_defining_modules_object():
    from ptopipe.arch import A2A3, get_platform
    from ptopipe.isa.launch import RunResult, run
    from ptopipe.isa.scenario import Scenario
    assert (ptopipe.A2A3, ptopipe.get_platform, ptopipe.RunResult, ptopipe.run, ptopipe.Scenario) == \
        (A2A3, get_platform, RunResult, run, Scenario)
    star: dict = {}
    exec("from ptopipe import *", star)
    assert set(ptopipe.__all__) <= set(star)
    with pytest.raises(AttributeError, match="no attribute 'no_such_name'"):
        ptopipe.no_such_name
    with pytest.raises(ImportError):
        exec("from ptopipe import no_such_name", {})


def test_the_mixed_compiler_is_installed_when_the_runtime_loads():
    got = _fresh("import sys, json, ptopipe\n"
                 "before = 'ptopipe.runtime.kernels' in sys.modules\n"
                 "import ptopipe.language\n"      # the DSL's path to the runtime
                 "import ptopipe.runtime\n"
                 "k = sys.modules['ptopipe.runtime.kernels']\n"
                 "print(json.dumps([before, k.MIXED_COMPILER is ptopipe._compile_mixed,\n"
                 "                  type(k.__loader__).__name__]))")
    assert got == [False, True, "SourceFileLoader"]


# -- when_imported: the deferral itself, on throwaway modules ------------------------------
def _module(tmp_path, monkeypatch, name: str, body: str):
    (tmp_path / f"{name}.py").write_text(body)
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.delitem(sys.modules, name, raising=False)
    monkeypatch.setattr(sys, "meta_path", list(sys.meta_path))    # a waiting finder goes with the test


def test_when_imported_runs_after_the_module_executes_and_before_its_importer_sees_it(tmp_path,
                                                                                      monkeypatch):
    _module(tmp_path, monkeypatch, "lazy_probe_a", "VALUE = 1\nSEEN = None\n")
    calls = []

    def then(module):
        calls.append(module.VALUE)
        module.SEEN = "wired"

    when_imported("lazy_probe_a", then)
    assert calls == []
    import lazy_probe_a
    assert (calls, lazy_probe_a.SEEN) == ([1], "wired")
    assert type(lazy_probe_a.__loader__).__name__ == "SourceFileLoader"
    monkeypatch.delitem(sys.modules, "lazy_probe_a")
    import lazy_probe_a as again                      # once only: the finder is gone
    assert calls == [1] and again.SEEN is None


def test_when_imported_calls_now_for_a_loaded_module(tmp_path, monkeypatch):
    _module(tmp_path, monkeypatch, "lazy_probe_b", "VALUE = 2\n")
    import lazy_probe_b
    calls = []
    when_imported("lazy_probe_b", lambda m: calls.append(m))
    assert calls == [lazy_probe_b]


def test_when_imported_waits_again_after_a_failed_import(tmp_path, monkeypatch):
    _module(tmp_path, monkeypatch, "lazy_probe_c", "raise RuntimeError('broken')\n")
    calls = []
    when_imported("lazy_probe_c", lambda m: calls.append(m.VALUE))
    with pytest.raises(RuntimeError, match="broken"):
        import lazy_probe_c  # noqa: F401
    assert calls == []
    (tmp_path / "lazy_probe_c.py").write_text("VALUE = 3\n")
    import importlib
    importlib.invalidate_caches()
    monkeypatch.delitem(sys.modules, "lazy_probe_c", raising=False)
    import lazy_probe_c  # noqa: F401,F811
    assert calls == [3]
