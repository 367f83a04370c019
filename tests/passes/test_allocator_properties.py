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
import dataclasses
import itertools
import operator

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ptopipe import CompileError
from ptopipe.arch import MemSpace, get_platform
from ptopipe.ir.convert import op_to_function, to_ops
from ptopipe.ir.instances import owns_storage
from ptopipe.ir.layout import plan_function
from ptopipe.ir.liveness import analyse
from ptopipe.ir.nodes import Assign, BinOp, Call, Const, ExprList, ExprStmt, For, If, Program, ReserveBuffer, Return, UnaryOp, Var, walk
from ptopipe.ir.vocab import AUTO
from ptopipe.ir.ops import SCRATCH_OPS
from ptopipe.ir.types import BufferType, TileValueType
from ptopipe.passes import allocate_memory

import ir_programs

PROPS = settings(max_examples=40, deadline=None, derandomize=True, database=None,
                 suppress_health_check=list(HealthCheck))
PLATFORMS = ("a2a3", "a5")
UB = MemSpace.UB.value


class Clobbered(AssertionError):
    pass


class _Token:
    """A value written at [lo, hi) of ``mem`` by one execution of a statement."""
    __slots__ = ("mem", "lo", "hi", "what")

    def __init__(self, mem, lo, hi, what):
        self.mem, self.lo, self.hi, self.what = mem, lo, hi, what


_BINOPS = {"+": operator.add, "-": operator.sub, "*": operator.mul, "//": operator.floordiv,
           "%": operator.mod, "<": operator.lt, "<=": operator.le, ">": operator.gt,
           ">=": operator.ge, "==": operator.eq, "!=": operator.ne, "and": lambda a, b: a and b,
           "or": lambda a, b: a or b}


class AbstractRun:
    """Runs a Vector function's statements over the allocator's addresses: memory holds
    tokens, a write invalidates every token it overlaps, a read of an invalidated token is
    a clobbered value."""

    def __init__(self, fn, lay, subblock: int):
        self.fn, self.lay, self.sub = fn, lay, subblock
        self.env: dict = {p.name: p for p in fn.params}      # GM tensors: not in local memory
        self.valid: list = []              # tokens still intact
        self.turn: dict = {}               # var -> executions so far (buffers used in turn)

    def write(self, mem, addr, size, what) -> _Token:
        t = _Token(mem, addr, addr + size, what)
        self.valid = [v for v in self.valid if not (v.mem == mem and v.lo < t.hi and t.lo < v.hi)]
        self.valid.append(t)
        return t

    def read(self, t: _Token, at) -> None:
        if not any(v is t for v in self.valid):
            raise Clobbered(f"{at}: reads {t.what} at [{t.lo:#x}, {t.hi:#x}) of {t.mem}, "
                            "overwritten since it was written")

    def dest(self, c: Call, var):
        """The address of the storage ``c`` writes (``var``: the name it is assigned to); a
        storage with several buffers uses them in turn, one per execution."""
        key = var if var is not None and var in self.lay.tiles else id(c)
        mem, first = self.lay.tiles[key] if key == var else self.lay.temps[key]
        addrs = self.lay.rotations.get(key) or (first,)
        k = self.turn.get(key, 0)
        self.turn[key] = k + 1
        return mem, addrs[k % len(addrs)]

    def expr(self, e, var=None):
        if isinstance(e, Var):
            return self.env[e.name]
        if isinstance(e, Const):
            return e.value
        if isinstance(e, BinOp):
            return _BINOPS[e.op](self.expr(e.lhs), self.expr(e.rhs))
        if isinstance(e, UnaryOp):
            v = self.expr(e.operand)
            return -v if e.op == "-" else not v
        if isinstance(e, ExprList):
            return tuple(self.expr(x) for x in e.items)
        assert isinstance(e, Call), e
        if e.op == "get_subblockid":
            return self.sub
        args = [self.expr(a) for a in e.args]
        for a in args:
            if isinstance(a, _Token):
                self.read(a, e.loc)
        if e.op in SCRATCH_OPS and isinstance(e.args[0].type, TileValueType):
            mem, addr = self.lay.scratch[var if var is not None else id(e)]
            self.write(mem, addr, e.args[0].type.footprint, f"the scratch of {e.op}")
        if owns_storage(e):
            mem, addr = self.dest(e, var)
            return self.write(mem, addr, e.type.footprint, f"{var or e.op} (line {e.loc.line})")
        return None

    def body(self, stmts) -> None:
        for s in stmts:
            if isinstance(s, Assign):
                self.env[s.var.name] = self.expr(s.value, s.var.name)
            elif isinstance(s, ExprStmt):
                self.expr(s.value)
            elif isinstance(s, For):
                lo, hi, step = (self.expr(x) for x in (s.start, s.stop, s.step))
                cur = [self.expr(x) for x in s.inits]
                for i in range(lo, hi, step):
                    self.env[s.var.name] = i
                    for p, v in zip(s.iter_args, cur):
                        self.env[p.name] = v
                    self.body(s.body)
                    cur = [self.expr(y) for y in s.yields]
                for r, v in zip(s.results, cur):
                    self.env[r.name] = v
            elif isinstance(s, If):
                then = self.expr(s.cond)
                self.body(s.then_body if then else s.else_body)
                for r, y in zip(s.results, s.then_yields if then else s.else_yields):
                    self.env[r.name] = self.expr(y)
            elif isinstance(s, (ReserveBuffer, Return)):
                pass
            else:
                raise AssertionError(f"the abstract run has no rule for {type(s).__name__}")


def _vector_function(n_ops, seed, lagged):
    top = ir_programs.generate(n_ops, seed, outer_reads=True, lagged=lagged)
    f = next(f for f in top.regions[0].blocks[0] if f.attributes["sym_name"] == "vec")
    return op_to_function(f)


def _with_reserves(fn, reserves):
    """``fn`` with reserve_buffer statements first: ``(base, size)`` (base AUTO or bytes)."""
    stmts = tuple(ReserveBuffer(Var(f"rb{i}", BufferType("reserve")), f"ring{i}", size, base, UB)
                  for i, (base, size) in enumerate(reserves))
    return dataclasses.replace(fn, body=stmts + fn.body)


def _addresses(lay, storages):
    """(storage, memory, address) of every buffer the allocator placed."""
    for key, s in storages.items():
        if isinstance(key, tuple) and key[0] == "scratch":
            mem, addr = lay.scratch[key[1]]
            addrs = (addr,)
        else:
            key = key[1] if isinstance(key, tuple) else key
            mem, addr = (lay.temps if isinstance(s.key, tuple) else lay.tiles)[key]
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
    storages = analyse(fn.body)
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
    storages = analyse(fn.body)
    by_loop = {}
    for s in storages.values():
        for loop in s.loops:
            by_loop.setdefault(id(loop), []).append(s)
    for loop in (s for s in walk(fn.body) if isinstance(s, For)):
        inner = by_loop.get(id(loop), [])
        if not inner:
            continue
        first = min(s.start for s in inner)
        last = max(s.end for s in inner)
        for y in loop.yields:
            name = y.name if isinstance(y, Var) else None
            held = [storages[name]] if name in storages else \
                [s for s in inner if s.key == ("call", id(y))]
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
    ops = to_ops(Program("p", (fn,)))
    ctx = type("Ctx", (), {"platform": small})()
    if peak <= ub:
        allocate_memory.run(ops, ctx)
        return
    with pytest.raises(CompileError) as ei:
        allocate_memory.run(ops, ctx)
    assert f"need {peak} bytes of UB at their peak but {small.name} has {ub} bytes" in ei.value.what
    assert ei.value.fix
