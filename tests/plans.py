"""The allocator's plan of a DSL program read by DSL variable, for tests that name tiles
the way the kernel source does: ``plan(program)["fn"].tiles["a"]``."""
from __future__ import annotations

from types import SimpleNamespace

from ptopipe.ir.layout import plan_program


def _name(k):
    return (k.results[0].name or k) if k.results else k


def named(lay) -> SimpleNamespace:
    """``lay`` (a FunctionLayout, keyed by ops) keyed by the name of each op's result;
    ``temps``: the tiles of unnamed results (nested ops), keyed by their op."""
    tiles = lay.named(lay.tiles)
    return SimpleNamespace(
        tiles={k: v for k, v in tiles.items() if isinstance(k, str)},
        temps={k: v for k, v in tiles.items() if not isinstance(k, str)},
        rotations=lay.named(lay.rotations), scratch=lay.named(lay.scratch),
        buffers={v.name: b for v, b in lay.buffers.items()}, by_name=lay.by_name, peak=lay.peak)


def plan(program) -> dict:
    """``{function name: named(FunctionLayout)}`` of a ``pl.program`` op."""
    return {n: named(lay) for n, lay in plan_program(program).items()}
