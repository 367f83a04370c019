"""Deferred imports for the package facades.

``import ptopipe`` should cost next to nothing beyond numpy: most programs that import it
go on to import one layer (``ptopipe.language``, ``ptopipe.isa``, the CLI), and a script
that only reads ``ptopipe.__version__`` or catches ``ptopipe.DeadlockError`` should not pay
for the simulator, the IR and the runtime.  So a facade names what it exports and where
each name lives (:func:`lazy_exports`, PEP 562 module ``__getattr__`` / ``__dir__``), and the
wiring it does between layers waits until the layer it configures is loaded
(:func:`when_imported`).
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


class _AfterImport:
    """A meta path finder that finds nothing itself: for the one module it waits for, it asks
    the finders behind it and wraps their loader so ``then(module)`` runs right after the
    module executes."""

    def __init__(self, name: str, then):
        self.name, self.then = name, then

    def find_spec(self, fullname, path, target=None):
        if fullname != self.name:
            return None
        for finder in sys.meta_path:
            if finder is self or not hasattr(finder, "find_spec"):
                continue
            spec = finder.find_spec(fullname, path, target)
            if spec is not None:
                if spec.loader is not None and hasattr(spec.loader, "exec_module"):
                    spec.loader = _ThenLoader(spec.loader, self)
                return spec
        return None


class _ThenLoader:
    """A loader: the real loader, plus the waiting finder's ``then`` once the module has
    executed."""

    def __init__(self, loader, waiting: _AfterImport):
        self._loader, self._waiting = loader, waiting

    def create_module(self, spec):
        return self._loader.create_module(spec)

    def exec_module(self, module):
        self._loader.exec_module(module)
        # the module keeps its real loader (get_source, reload, coverage read it)
        module.__loader__ = self._loader
        if module.__spec__ is not None:
            module.__spec__.loader = self._loader
        # once only: a module that failed to execute is retried by the next import
        if self._waiting in sys.meta_path:
            sys.meta_path.remove(self._waiting)
        self._waiting.then(module)

    def __getattr__(self, attr):
        return getattr(self._loader, attr)


def when_imported(name: str, then) -> None:
    """Call ``then(module)`` once module ``name`` is imported: now if it already is, else
    right after it executes (before its importer sees it)."""
    module = sys.modules.get(name)
    if module is not None:
        then(module)
    else:
        sys.meta_path.insert(0, _AfterImport(name, then))
