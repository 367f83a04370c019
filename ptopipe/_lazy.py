"""Deferred imports for the package facades.

``import ptopipe`` should cost next to nothing beyond numpy: most programs that import it
go on to import one layer (``ptopipe.language``, ``ptopipe.isa``, the CLI), and a script
that only reads ``ptopipe.__version__`` or catches ``ptopipe.DeadlockError`` should not pay
for the simulator, the IR and the runtime.  So a facade names what it exports and where
each name lives (:func:`lazy_exports`, PEP 562 module ``__getattr__`` / ``__dir__``).
"""
from __future__ import annotations

import importlib
import sys


def lazy_exports(package: str, names: dict[str, str], submodules: tuple[str, ...] = ()):
    """``(__getattr__, __dir__)`` for the facade of ``package``: ``names`` maps each exported
    name to the module (relative to ``package``) that defines it, ``submodules`` are the
    subpackages reachable as attributes (``ptopipe.isa``).  A name is imported on first use
    and then stored in the facade, so later reads are plain attribute reads."""
    facade = sys.modules[package]

    def __getattr__(name: str):
        where = names.get(name)
        if where is not None:
            value = getattr(importlib.import_module(where, package), name)
        elif name in submodules:
            value = importlib.import_module(f"{package}.{name}")
        else:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        setattr(facade, name, value)
        return value

    def __dir__():
        return sorted(set(vars(facade)) | set(names) | set(submodules))

    return __getattr__, __dir__
