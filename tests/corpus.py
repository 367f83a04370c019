"""The registry of correct kernels for the no-false-positive corpus: each test module that has some lists
them in a module-level ``CLEAN_KERNELS`` (built with :func:`kernel` / :func:`of_scenario`),
its own tests and benchmarks/schedules.py (``--kernels new``) run the same entries, so the
no-false-positive corpus cannot drift from the tests.

An entry names the platform/protocol combos where the kernel is NOT valid by design, with
the reason (e.g. the A2A3 no-split lane-1 replay on a5/pto-isa, where a NO_SPLIT transfer
has one lane); on every other combo it must run clean under every explored schedule."""
from __future__ import annotations

import importlib
from dataclasses import dataclass, field

from ptopipe import Scenario

import layers  # noqa: F401  (the test modules of every layer directory importable)

COMBOS = (("a2a3", "spec"), ("a2a3", "pto-isa"), ("a5", "spec"), ("a5", "pto-isa"))
# the test modules with a CLEAN_KERNELS registry (tests/ and its layer directories on sys.path)
MODULES = ("test_events", "test_launches", "test_layouts", "test_ptoisa_platforms", "test_diagnoses")


@dataclass(frozen=True)
class CleanKernel:
    """A correct kernel as a Scenario (its sync mode / launches included), the variant to
    run, and ``{combo: reason}`` for the combos where it is invalid by design."""
    name: str
    scenario: Scenario
    variant: str = "default"
    excluded: dict = field(default_factory=dict)

    @property
    def combos(self) -> tuple:
        return tuple(c for c in COMBOS if c not in self.excluded)


def _combos(excluded) -> dict:
    out = dict(excluded or {})
    bad = [c for c in out if c not in COMBOS]
    assert not bad, f"unknown combo(s) {bad}"
    return out


def kernel(name, aic, aiv, make_args, golden=None, excluded=None, sync=None, launches=None,
           rtol=0.0, atol=0.0) -> CleanKernel:
    """``make_args(rng) -> args``; ``golden(args) -> {output: array}`` (None: the run's own
    checks only, no numeric comparison)."""
    sc = Scenario(name, aic, aiv, lambda rng: make_args(rng),
                  (lambda a: golden(a)) if golden is not None else (lambda a: {}),
                  rtol=rtol, atol=atol, sync=sync, launches=launches)
    return CleanKernel(name, sc, "default", _combos(excluded))


def of_scenario(name, sc, variant=None, excluded=None) -> CleanKernel:
    return CleanKernel(name, sc, variant or sc.default_variant, _combos(excluded))


def all_clean_kernels() -> list:
    """[(module, CleanKernel)] over every registry, in module order."""
    out = []
    for m in MODULES:
        for k in importlib.import_module(m).CLEAN_KERNELS:
            out.append((m, k))
    names = [k.name for _, k in out]
    assert len(names) == len(set(names)), "duplicate CLEAN_KERNELS names"
    return out
