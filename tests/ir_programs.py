"""Generated op-IR programs (built with the core Builder API, valid by construction) for
the IR round-trip property tests and ``benchmarks/ir_scaling.py``.

``generate(n_ops, seed)`` builds a program of one Vector function and one (idle) Cube
function whose Vector body mixes loads, element-wise tile ops, tile-scalar ops, scalar
arithmetic, stores, ``pl.for`` loops carrying a tile and ``pl.if`` with a tile result,
nested up to three deep, with about ``n_ops`` ops in all.  ``outer_reads=True``: a loop
body also reads tiles defined before the loop (kept live across its iterations);
``lagged=True``: a loop also carries the tile of the iteration before (its statement needs
two buffers).
"""
from __future__ import annotations

import random

from ptopipe.ir import (BOOL, INDEX, Block, Builder, FunctionKind, Loc, MemorySpace, Operation,
                        Region, ScalarType, TensorType, TileValueType)

R, C = 16, 32
TILE = TileValueType((R, C), "f32", MemorySpace.Vec)
TENSOR = TensorType((64, C), "f32")
F32 = ScalarType("f32")
_BIN = ("pl.add", "pl.sub", "pl.mul", "pl.maximum", "pl.minimum")
_SCAL = ("pl.adds", "pl.muls", "pl.maxs")
_UN = ("pl.exp", "pl.abs", "pl.relu", "pl.neg")


class _Gen:
    def __init__(self, n: int, seed: int, outer_reads: bool = False, lagged: bool = False):
        self.rng = random.Random(seed)
        self.outer_reads, self.lagged = outer_reads, lagged
        self.left = n
        self.line = 1

    def loc(self) -> Loc:
        self.line += 1
        return Loc("gen.py", self.line, 5)

    def op(self, b: Builder, name, operands=(), types=(), attrs=None, regions=()):
        self.left -= 1
        return b.create(name, operands, types, attrs, regions, self.loc())

    def const(self, b, value, t=INDEX):
        return self.op(b, "pl.const", (), [t], {"value": value}).result

    def body(self, b: Builder, tiles: list, scalars: list, x, y, depth: int, budget: int):
        """Emit about ``budget`` ops; returns the tiles visible at the end."""
        tiles = list(tiles)
        stop = self.left - budget
        rng = self.rng
        while self.left > stop:
            k = rng.random()
            if k < 0.08 and depth < 3 and self.left - stop > 12:
                tiles.append(self.loop(b, tiles, scalars, x, y, depth, self.left - stop))
            elif k < 0.14 and depth < 3 and self.left - stop > 12:
                tiles.append(self.branch(b, tiles, scalars, x, y, depth, self.left - stop))
            elif k < 0.24 or not tiles:
                r = self.const(b, rng.randrange(0, 48))
                c0 = self.const(b, 0)
                tiles.append(self.op(b, "pl.load", (x, r, c0), [TILE],
                                     {"shape": (R, C), "space": MemorySpace.Vec}).result)
            elif k < 0.30:
                r = self.op(b, "arith.mul", (rng.choice(scalars), self.const(b, 2)), [INDEX]).result
                scalars.append(r)
            elif k < 0.38:
                r = self.const(b, 0)
                self.op(b, "pl.store", (rng.choice(tiles), r, r, y), [])
            elif k < 0.60:
                s = self.const(b, rng.choice((0.5, 1.0, 2.0)), F32)
                tiles.append(self.op(b, rng.choice(_SCAL), (rng.choice(tiles), s), [TILE]).result)
            elif k < 0.75:
                tiles.append(self.op(b, rng.choice(_UN), (rng.choice(tiles),), [TILE]).result)
            else:
                tiles.append(self.op(b, rng.choice(_BIN), (rng.choice(tiles), rng.choice(tiles)),
                                     [TILE]).result)
            if len(tiles) > 8:
                del tiles[:-8]
        return tiles

    def loop(self, b, tiles, scalars, x, y, depth, room):
        lo, hi, st = self.const(b, 0), self.const(b, self.rng.randrange(1, 5)), self.const(b, 1)
        init = tiles[-1] if tiles else self.op(b, "pl.load", (x, lo, lo), [TILE],
                                                {"shape": (R, C), "space": MemorySpace.Vec}).result
        lag = self.lagged
        body = Block([INDEX, TILE, TILE] if lag else [INDEX, TILE])
        inner = Builder.at_end(body)
        seen = tiles[-2:] if self.outer_reads else []
        carried = [body.args[2], body.args[1]] if lag else [body.args[1]]
        got = self.body(inner, seen + carried, scalars + [body.args[0]], x, y, depth + 1,
                        min(room - 6, self.rng.randrange(4, 40)))
        # the carried tile is made last in each iteration, so the iter_arg always holds the
        # newest one (a kept tile of unbounded age is a CompileError of AllocateMemoryAddr);
        # the lagged one holds the tile of the iteration before (two buffers, used in turn)
        fresh = self.op(inner, "pl.adds", (got[-1], self.const(inner, 0.0, F32)), [TILE]).result
        self.op(inner, "pl.yield", (fresh, body.args[1]) if lag else (fresh,), [])
        return self.op(b, "pl.for", (lo, hi, st, init) + ((init,) if lag else ()),
                       [TILE, TILE] if lag else [TILE], None, (Region([body]),)).results[0]

    def branch(self, b, tiles, scalars, x, y, depth, room):
        cond = self.op(b, "arith.lt", (self.rng.choice(scalars), self.const(b, 3)), [BOOL]).result
        regions = []
        for _ in range(2):
            blk = Block()
            inner = Builder.at_end(blk)
            got = self.body(inner, tiles, list(scalars), x, y, depth + 1,
                            min((room - 6) // 2, self.rng.randrange(2, 20)))
            self.op(inner, "pl.yield", (got[-1],), [])
            regions.append(Region([blk]))
        return self.op(b, "pl.if", (cond,), [TILE], None, regions).result


def generate(n_ops: int, seed: int = 0, outer_reads: bool = False, lagged: bool = False) -> Operation:
    """A verified-by-construction ``pl.program`` op of about ``n_ops`` ops."""
    g = _Gen(n_ops, seed, outer_reads, lagged)
    top = Block()
    vec_entry = Block([TENSOR, TENSOR], ["x", "y"])
    b = Builder.at_end(vec_entry)
    x, y = vec_entry.args
    sub = g.op(b, "pl.get_subblockid", (), [INDEX]).result
    g.body(b, [], [sub], x, y, 0, n_ops - 6)
    top.append(Operation("pl.func", (), (), {"sym_name": "vec", "kind": FunctionKind.AIV},
                         (Region([vec_entry]),), Loc("gen.py", 1, 1)))
    cube_entry = Block([TENSOR], ["a"])
    top.append(Operation("pl.func", (), (), {"sym_name": "cube", "kind": FunctionKind.AIC},
                         (Region([cube_entry]),), Loc("gen.py", 1, 1)))
    return Operation("pl.program", (), (), {"sym_name": f"gen{n_ops}_{seed}"}, (Region([top]),))


def count_ops(top: Operation) -> int:
    return sum(1 for _ in top.walk())
