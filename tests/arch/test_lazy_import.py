"""A plain ``import ptopipe`` loads no layer (no wall clock: what is in ``sys.modules`` of a
fresh interpreter), while the facade still exports, lists and wires everything it did."""
from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

import ptopipe

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

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
