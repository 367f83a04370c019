"""Loading a kernel file: a Python file that defines a ``SCENARIO`` (a
:class:`ptopipe.Scenario`), or several ``Scenario`` objects."""
from __future__ import annotations

import importlib.util
import os
import sys

from ..errors import ConfigError
from ..isa.scenario import Scenario


def load_module(path: str):
    if not os.path.exists(path):
        raise ConfigError(f"no such file: {path}", fix="give the path of a kernel .py file")
    if not path.endswith(".py"):
        raise ConfigError(f"{path} is not a Python file", fix="kernel files are .py files defining SCENARIO")
    name = "ptopipe_kernel_" + os.path.splitext(os.path.basename(path))[0]
    spec = importlib.util.spec_from_file_location(name, path)
    mod = importlib.util.module_from_spec(spec)
    sys.modules[name] = mod
    d = os.path.dirname(os.path.abspath(path))
    sys.path.insert(0, d)
    try:
        spec.loader.exec_module(mod)
    except SyntaxError as e:
        raise ConfigError(f"syntax error in {path}: {e.msg}", where=f"{e.filename}:{e.lineno}",
                          fix="fix the Python syntax") from None
    finally:
        if sys.path and sys.path[0] == d:
            sys.path.pop(0)
    return mod


def load_scenarios(path: str) -> list:
    mod = load_module(path)
    found = []
    sc = getattr(mod, "SCENARIO", None)
    if isinstance(sc, Scenario):
        found.append(sc)
    for v in vars(mod).values():
        if isinstance(v, Scenario) and v not in found:
            found.append(v)
    if not found:
        raise ConfigError(f"{path} defines no ptopipe.Scenario",
                          fix="define SCENARIO = ptopipe.Scenario(name, aic, aiv, make_args, golden, variants)")
    return found


def pick_variants(sc: Scenario, variant: str | None) -> list:
    if variant is None:
        return [sc.default_variant]
    if variant == "all":
        return list(sc.variants)
    sc.params(variant)   # raises a ConfigError naming the valid variants
    return [variant]
