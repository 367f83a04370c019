"""Where the test suite lives: ``ROOT`` (the repository) and ``TESTS`` (this directory), and
its layer directories (``tests/<layer>/``, one per package layer) on ``sys.path``: test modules
import each other's kernels by module name (the CLEAN_KERNELS registries of
:mod:`corpus`, kernels shared between two test files), from pytest and from benchmarks."""
import os
import sys

TESTS = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(TESTS)


def _layer_dirs():
    for name in sorted(os.listdir(TESTS)):
        d = os.path.join(TESTS, name)
        if os.path.isdir(d) and any(f.startswith("test_") and f.endswith(".py") for f in os.listdir(d)):
            yield d


for _d in _layer_dirs():
    if _d not in sys.path:
        sys.path.append(_d)
