"""The syntax trees of ptopipe's module files, for the tests that scan the package source
(tests/arch/test_layering.py, test_module_state.py, test_op_names.py).

A tree is parsed once, and its nodes listed once (:func:`module_nodes`: a full walk costs
about two thirds of the parse), for all the scanning test modules of a directory; they are
dropped when the last of those modules ends (:func:`released`): the trees of the whole
package are about half a million objects, which every later full garbage collection of the
session would otherwise rescan.  They are parsed with the collector paused
(:func:`ptopipe.ir.core.gc_paused`): collections while a tree grows only rescan it, and
cost twice the parse itself."""
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


@functools.lru_cache(maxsize=None)
def module_nodes(path: pathlib.Path) -> tuple:
    """Every node of :func:`module_tree`, in ``ast.walk`` order (listed once until
    :func:`released` drops them)."""
    with gc_paused():
        return tuple(ast.walk(module_tree(path)))


@pytest.fixture(scope="module", autouse=True)
def released(request):
    """Use in a scanning test module (``from package_trees import released``): the trees
    are dropped after its last test, unless a test module of the same directory that runs
    later scans them too."""
    yield
    if not _scanned_later(request):
        module_nodes.cache_clear()
        module_tree.cache_clear()


def _scanned_later(request) -> bool:
    """Does a test module of this one's directory that runs after it use :func:`released`?"""
    here = request.node.path
    items = request.session.items
    last = max((i for i, item in enumerate(items) if item.path == here), default=len(items))
    return any(item.path.parent == here.parent and item.path != here
               and getattr(getattr(item, "module", None), "released", None) is released
               for item in items[last + 1:])
