"""The syntax trees of ptopipe's module files, for the tests that scan the package source
(tests/arch/test_layering.py, tests/arch/test_module_state.py).

A tree is parsed once per scanning test module and dropped when that module's tests end
(:func:`released`): the trees of the whole package are about half a million objects, which
every later full garbage collection of the session would otherwise rescan.  They are
parsed with the collector paused (:func:`ptopipe.ir.core.gc_paused`): collections while a
tree grows only rescan it, and cost twice the parse itself."""
import ast
import functools
import pathlib

import pytest

from ptopipe.ir.core import gc_paused


@functools.lru_cache(maxsize=None)
def module_tree(path: pathlib.Path):
    """The syntax tree of a module file (parsed once until :func:`released` drops it)."""
    with gc_paused():
        return ast.parse(path.read_text(), str(path))


@pytest.fixture(scope="module", autouse=True)
def released():
    """Use in a scanning test module (``from package_trees import released``): the trees
    it parsed are dropped after its last test."""
    yield
    module_tree.cache_clear()
