"""The memory allocator (ptopipe/ir/liveness.py, instances.py, layout.py and the
allocate-memory pass) over generated programs (tests/ir_programs.py), with literal and AUTO
reserve_buffers added:

* no value is clobbered: an abstract run of the function over the addresses the allocator
  gave (every op reads its operands, then writes its result at its storage's address;
  several buffers of one statement used in turn, as the runtime does) finds every tile it
  reads still holding the value that was written there - loops run their trip counts, so a
  value carried across the back edge, or defined before a loop and read in it, must survive
  each iteration;
* storages live at the same time (``analyse``'s spans) do not overlap in memory, and a value
  a loop carries is live from the loop's head to its end;
* every address is a multiple of the platform's alignment (``Platform.alignment``);
* no tile overlaps a literal reserve_buffer region, an AUTO one goes after the tiles' peak
  and overlaps nothing;
* the allocate-memory pass accepts the function iff its tiles fit the platform's memory,
  else raises the CompileError naming the bytes needed and available.
"""
import itertools
import operator

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ptopipe import CompileError
from ptopipe.arch import MemSpace, get_platform
from ptopipe.ir import Block, Operation, Region
from ptopipe.ir.instances import owns_storage
from ptopipe.ir.layout import plan_function
from ptopipe.ir.liveness import analyse, has_scratch
from ptopipe.ir.opdefs import (ARITH_BINARY, ARITH_UNARY, ConstOp, CopyOp, ForOp, GetSubblockIdOp, IfOp,
                               ProgramOp, ReserveBufferOp, ReturnOp, YieldOp)
from ptopipe.ir.vocab import AUTO
from ptopipe.ir.types import BufferType
from ptopipe.passes import allocate_memory

import ir_programs

PROPS = settings(max_examples=40, deadline=None, derandomize=True, database=None,
                 suppress_health_check=list(HealthCheck))
PLATFORMS = ("a2a3", "a5")
UB = MemSpace.UB.value


class Clobbered(AssertionError):
    pass


class _Token:
    """A value written at [lo, hi) of ``mem`` by one execution of an op."""
    __slots__ = ("mem", "lo", "hi", "what")

    def __init__(self, mem, lo, hi, what):
        self.mem, self.lo, self.hi, self.what = mem, lo, hi, what


_BINOPS = {"+": operator.add, "-": operator.sub, "*": operator.mul, "//": operator.floordiv,
           "%": operator.mod, "<": operator.lt, "<=": operator.le, ">": operator.gt,
           ">=": operator.ge, "==": operator.eq, "!=": operator.ne, "and": lambda a, b: a and b,
           "or": lambda a, b: a or b}


class AbstractRun:
    """Runs a Vector function's ops over the allocator's addresses: memory holds tokens, a
    write invalidates every token it overlaps, a read of an invalidated token is a clobbered
    value."""

    def __init__(self, fn, lay, subblock: int):
        self.fn, self.lay, self.sub = fn, lay, subblock
        self.env: dict = {a: a for a in fn.body.args}      # GM tensors: not in local memory
        self.valid: list = []              # tokens still intact
        self.turn: dict = {}               # op -> executions so far (buffers used in turn)

    def write(self, mem, addr, size, what) -> _Token:
        t = _Token(mem, addr, addr + size, what)
        self.valid = [v for v in self.valid if not (v.mem == mem and v.lo < t.hi and t.lo < v.hi)]
        self.valid.append(t)
        return t

    def read(self, t: _Token, at) -> None:
        if not any(v is t for v in self.valid):
            raise Clobbered(f"{at}: reads {t.what} at [{t.lo:#x}, {t.hi:#x}) of {t.mem}, "
                            "overwritten since it was written")

    def dest(self, op):
        """The address of the storage ``op`` writes; a storage with several buffers uses them
        in turn, one per execution."""
        mem, first = self.lay.tiles[op]
        addrs = self.lay.rotations.get(op) or (first,)
        k = self.turn.get(op, 0)
        self.turn[op] = k + 1
        return mem, addrs[k % len(addrs)]

    def compute(self, op):
        """The value of ``op``'s single result (None for an op with none)."""
        env = self.env
        if op.is_a(ConstOp):
            return op.value
        if op.name in ARITH_BINARY:
            x, y = (env[v] for v in op.operands)
            return _BINOPS[ARITH_BINARY[op.name]](x, y)
        if op.name in ARITH_UNARY:
            v = env[op.operands[0]]
            return -v if ARITH_UNARY[op.name] == "-" else not v
        if op.is_a(GetSubblockIdOp):
            return self.sub
        if op.is_a(CopyOp):
            return env[op.source]
        args = [env[v] for v in op.operands]
        for a in args:
            if isinstance(a, _Token):
                self.read(a, op.loc)
        if has_scratch(op):
            mem, addr = self.lay.scratch[op]
            self.write(mem, addr, op.operands[0].type.footprint, f"the scratch of {op.name}")
        if owns_storage(op):
            mem, addr = self.dest(op)
            r = op.results[0]
            return self.write(mem, addr, r.type.footprint, f"{r.name or op.name} (line {op.loc.line})")
        return None

    def body(self, block) -> list:
        """Run ``block``; the values its pl.yield passes on."""
        env = self.env
        for op in block:
            if op.is_a(YieldOp):
                return [env[v] for v in op.operands]
            if op.is_a(ForOp):
                lo, hi, step = (env[v] for v in (op.start, op.stop, op.step))
                cur = [env[v] for v in op.inits]
                body = op.body
                for i in range(lo, hi, step):
                    env[body.args[0]] = i
                    for p, v in zip(body.args[1:], cur):
                        env[p] = v
                    cur = self.body(body)
                for r, v in zip(op.results, cur):
                    env[r] = v
            elif op.is_a(IfOp):
                taken = op.then_block if env[op.cond] else op.else_block
                for r, v in zip(op.results, self.body(taken)):
                    env[r] = v
            elif op.is_a(ReserveBufferOp) or op.is_a(ReturnOp):
                pass
            else:
                v = self.compute(op)
                if op.results:
                    env[op.results[0]] = v
        return []


def _program_of(fn):
    """A ``pl.program`` op holding only ``fn``."""
    top = Block()
    prog = Operation(ProgramOp.name, (), (), {"sym_name": "p"}, (Region([top]),))
    top.append(fn.detach())
    return prog


def _vector_function(n_ops, seed, lagged):
    top = ir_programs.generate(n_ops, seed, outer_reads=True, lagged=lagged)
    return next(f for f in top.regions[0].blocks[0] if f.attributes["sym_name"] == "vec")


def _with_reserves(fn, reserves):
    """``fn`` with reserve_buffer ops first: ``(base, size)`` (base AUTO or bytes)."""
    for i, (base, size) in reversed(list(enumerate(reserves))):
        fn.body.prepend(ReserveBufferOp.build(buffer_name=f"ring{i}", size=size, base=base,
                                              memory_space=UB, result_types=[BufferType("reserve")],
                                              result_names=[f"rb{i}"]))
    return fn


def _addresses(lay, storages):
    """(storage, memory, address) of every buffer the allocator placed."""
    for key, s in storages.items():
        if isinstance(key, tuple) and key[0] == "scratch":
            mem, addr = lay.scratch[key[1]]
            addrs = (addr,)
        else:
            mem, addr = lay.tiles[key]
            addrs = lay.rotations.get(key, (addr,))
        assert len(addrs) == s.copies, (s.key, addrs, s.copies)
        for a in addrs:
            yield s, mem, a


_program = st.tuples(st.integers(20, 90), st.integers(0, 10_000), st.booleans())
# literal reserves: an aligned base, a size that need not be a multiple of the alignment
_literal = st.tuples(st.integers(0, 40), st.integers(1, 3000))


@PROPS
@given(_program, st.sampled_from(PLATFORMS), st.lists(_literal, max_size=2), st.booleans())
def test_allocation_is_aligned_disjoint_and_keeps_every_value(prog, platform, literals, auto):
    plat = get_platform(platform)
    fn = _vector_function(*prog)
    align = plat.alignment
    reserves, fixed = [], []
    for slot, size in literals:           # disjoint literal regions, in order
        base = (fixed[-1][1] if fixed else 0) + slot * align
        base = -(-base // align) * align
        reserves.append((base, size))
        fixed.append((base, base + size))
    if auto:
        reserves.append((AUTO, 1000))
    fn = _with_reserves(fn, reserves)
    lay = plan_function(fn)
    storages = analyse(fn)
    placed = list(_addresses(lay, storages))
    for s, mem, addr in placed:
        assert addr % align == 0, (s.key, addr)
        for lo, hi in fixed:              # literal reserves are never written by a tile
            assert addr + s.type.footprint <= lo or hi <= addr, (s.key, addr, lo, hi)
    for (a, ma, xa), (b, mb, xb) in itertools.combinations(placed, 2):
        if ma == mb and a.start <= b.end and b.start <= a.end:      # live at the same time
            assert xa + a.type.footprint <= xb or xb + b.type.footprint <= xa, (a.key, b.key, xa, xb)
    peak = max((addr + s.type.footprint for s, _m, addr in placed), default=0)
    assert lay.peak.get(UB, 0) == peak
    if auto:
        base, size = lay.by_name[f"ring{len(reserves) - 1}"]
        assert base % align == 0 and base >= peak
        assert all(base + size <= lo or hi <= base for lo, hi in fixed)
    for sub in (0, 1):                    # the two Vector cores take different branches
        run = AbstractRun(fn, lay, sub)
        run.body(fn.body)


@PROPS
@given(_program)
def test_loop_carried_values_live_from_head_to_back_edge(prog):
    fn = _vector_function(*prog)
    storages = analyse(fn)
    by_loop = {}
    for s in storages.values():
        for loop in s.loops:
            by_loop.setdefault(loop, []).append(s)
    for loop in (op for op in fn.walk() if op.is_a(ForOp)):
        inner = by_loop.get(loop, [])
        if not inner:
            continue
        first = min(s.start for s in inner)
        last = max(s.end for s in inner)
        for y in loop.body.last.operands:
            made = getattr(y, "op", None)
            held = [storages[made]] if made in storages else []
            for s in held:                # made in the body, read by the next iteration
                assert s.start <= first and s.end >= last, (s.key, s.start, s.end, first, last)


@PROPS
@given(_program, st.sampled_from(PLATFORMS), st.integers(0, 64))
def test_allocate_memory_raises_iff_the_tiles_overflow(prog, platform, room_kib):
    plat = get_platform(platform)
    fn = _vector_function(*prog)
    ub = 16 * 1024 + room_kib * 512          # from 16 KiB: some programs fit, some do not
    small = plat.replace(mem_sizes={"UB": ub})
    peak = plan_function(fn).peak.get(UB, 0)
    ops = _program_of(fn)
    ctx = type("Ctx", (), {"platform": small})()
    if peak <= ub:
        allocate_memory.run(ops, ctx)
        return
    with pytest.raises(CompileError) as ei:
        allocate_memory.run(ops, ctx)
    assert f"need {peak} bytes of UB at their peak but {small.name} has {ub} bytes" in ei.value.what
    assert ei.value.fix
