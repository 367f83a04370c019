"""Random cross-core kernels for the fuzz test (tests/test_fuzz.py) and the long fuzz run
(benchmarks/fuzz.py): one generator, shared by both.

A :class:`KernelSpec` describes a kernel: platform, protocol, one or two pipes (C2V, V2C or
DIR_BOTH; SlotNum 1..8; split NO_SPLIT / UP_DOWN / LEFT_RIGHT; tile flow or the address
flow TALLOC/TPOP on GlobalTensors; f32 / f16 / int8 data), the element-wise op chains the
Vector cores apply, and optionally one mutation (a dropped or doubled TFREE, an extra
TPOP / TPUSH, a TFREE before the popped tile is read, a wrong split or dtype at the
consumer, a Vector core that skips a pipe).  :func:`render` turns it into the source of a
self-contained kernel module (kernels, ``make_args``, a numpy ``golden``, and a
``__main__`` that runs it), which is written to a file and imported, so every report
names a real ``file:line``.  :func:`check_kernel` runs it and checks the properties:

* the only exception is a :class:`ptopipe.PtoPipeError` naming a line of the kernel file;
* no hang: every run has an instruction budget (and the caller a wall-clock alarm);
* a clean kernel (no mutation) runs without error, its outputs equal the numpy golden,
  bit for bit, with the checkers on and off, under another schedule seed (another
  interleaving of the cores) and without the timing model;
* a mutated kernel that runs without error gives the same data with the checkers on and
  off, and equals the golden when the mutation does not change what is computed (a
  dropped/early/double TFREE); a mutation that must be reported (extra TPOP/TPUSH, a
  skipped peer) is.

Values are small integers, so every result is exact in f16/f32/int8/int32 arithmetic.
"""
from __future__ import annotations

import os
import re
import tempfile
import types
from dataclasses import dataclass, replace

import numpy as np
from hypothesis import strategies as st

import ptopipe

PLATFORMS = ("a2a3", "a5")
PROTOCOLS = ("spec", "pto-isa")
SPLITS = ("TILE_NO_SPLIT", "TILE_UP_DOWN", "TILE_LEFT_RIGHT")
DTYPES = {"f32": ("float32", "float32"), "f16": ("float16", "float32"), "i8": ("int8", "int32")}
# op name -> (kind, numpy golden); kind s: scalar operand, t: a second tile, u: unary
OPS = {"TADDS": ("s", lambda a, s: a + s), "TSUBS": ("s", lambda a, s: a - s),
       "TMULS": ("s", lambda a, s: a * s), "TMAXS": ("s", np.maximum), "TMINS": ("s", np.minimum),
       "TADD": ("t", np.add), "TSUB": ("t", np.subtract), "TMUL": ("t", np.multiply),
       "TMAX": ("t", np.maximum), "TMIN": ("t", np.minimum),
       "TABS": ("u", np.abs), "TNEG": ("u", np.negative), "TRELU": ("u", lambda a: np.maximum(a, 0)),
       # two-instruction ops, only on 32-bit tiles (the C2V side): TROWSUM into a scratch
       # column then TROWEXPANDADD; TCVT to the other 32-bit type and back
       "ROWADD": ("x", lambda a: a + a.sum(axis=1, keepdims=True, dtype=a.dtype)),
       "CVT": ("c", lambda a: a.astype(np.int32 if a.dtype.kind == "f" else np.float32).astype(a.dtype))}
WIDE_ONLY = {"ROWADD", "CVT"}
MUTATIONS = ("drop_tfree", "double_tfree", "extra_tpop", "extra_tpush", "free_before_use",
             "wrong_split", "wrong_dtype", "skip_peer", "bad_op")
# Features that hit a known bug: left out of the suite's profile and of benchmarks/fuzz.py by
# default (--with-known puts them back); re-enable once the bug is fixed.
KNOWN_BUGS = {"bad_op": "issue 9 item 3: a float-only op on an integer tile (TEXP) or an int8 "
                        "scalar out of range fails in numpy without a kernel location",
              "mixed": "issue 9 item 1: a pipe carrying tiles of two sizes, several popped before "
                       "they are freed, gives wrong data (staging slot k at k * tile.nbytes)",
              "alt": "new (fuzz): a tile without an address popped again from a GM ring under spec keeps "
                     "its first staging binding; after another tile used that staging slot, reading it "
                     "is reported as a use after free"}
DEFAULT_MUTATIONS = tuple(m for m in MUTATIONS if m not in KNOWN_BUGS)
SAME_RESULT = {"drop_tfree", "double_tfree", "free_before_use"}   # if it runs, the golden holds
MUST_FAIL = {"extra_tpop", "extra_tpush", "skip_peer"}            # never a clean run
MAX_INSTRUCTIONS = 20_000


@dataclass(frozen=True)
class PipeSpec:
    kind: str            # "c2v" | "v2c" | "both"
    flow: str            # "tile" | "addr"
    gm_dir: bool         # A5: a *_GM direction (ring in GM)
    slot_num: int
    local_slot_num: int
    flag_id: int
    peers: tuple
    split_c2v: str
    split_v2c: str
    dtype: str           # key of DTYPES: the Vector/Mat data of the pipe
    M: int
    K: int
    N: int
    tiles: int
    lag: int             # DIR_BOTH: tiles the Vector cores push before their first pop
    pre: tuple           # Vector ops before a V2C push: ((op, scalar), ...)
    post: tuple          # Vector ops after a C2V pop
    pop_addr: bool       # the popped tile has an address of its own
    slot_extra: int      # bytes of slack in SlotSize (multiples of 32)
    hold_c: int = 1      # the C2V consumer pops this many tiles before it frees them
    hold_v: int = 1      # the V2C consumer (the Cube) likewise
    api: str = "tpipe"   # "init": aic/aiv_initialize_pipe (seed 003: SlotNum 8 / 4, FlagID 0)
    pad: tuple = (0, 0)  # extra static rows / cols around the valid region of the unpopped tiles
    mixed: bool = False  # odd tiles have M / 2 rows: one pipe carries tiles of two sizes
    sync: int = 0        # api "tmpipe": FiFoSyncT (pto-isa's SyncPeriod); 0: the default rule
    events: bool = False  # each op of a chain waits for the previous one's event (trailing arg)
    alt: bool = False    # popped tiles without an address: two objects, used by alternate groups
    ksplit: bool = False  # the Cube multiplies K in two halves (TEXTRACT, TMATMUL, TMATMUL_ACC)


@dataclass(frozen=True)
class KernelSpec:
    platform: str
    protocol: str
    pipes: tuple
    interleave: bool             # the cores step all pipes per iteration (else pipe by pipe)
    mutation: tuple | None       # (name, pipe index, iteration)
    data_seed: int

    @property
    def clean(self) -> bool:
        return self.mutation is None


# -- the strategy -------------------------------------------------------------------------------
def _ops(draw, n_max: int, wide: bool):
    """An op chain; ``wide``: on 32-bit tiles (ROWADD and CVT allowed)."""
    names = sorted(op for op in OPS if op not in WIDE_ONLY or wide)
    out = []
    for _ in range(draw(st.integers(0, n_max))):
        op = draw(st.sampled_from(names))
        kind = OPS[op][0]
        if kind == "s":
            s = draw(st.sampled_from([-1, 1, 2]) if op == "TMULS" else st.integers(-2, 2))
        else:
            s = None
        out.append((op, s))
    return tuple(out)


@st.composite
def kernel_specs(draw, mutate: "bool | None" = None, platforms=PLATFORMS, protocols=PROTOCOLS,
                 flows=("tile", "addr"), kinds=("c2v", "v2c", "both"), mutations=DEFAULT_MUTATIONS,
                 mixed: bool = False, alt: bool = False):
    """A random kernel; ``mutate`` True/False forces a mutation or none (None: either);
    ``mixed`` lets a pipe carry tiles of two sizes (KNOWN_BUGS["mixed"])."""
    platform = draw(st.sampled_from(platforms))
    protocol = draw(st.sampled_from(protocols))
    spec = protocol == "spec"
    n_pipes = draw(st.integers(1, 2))
    pipes = []
    flags_used = 0                       # spec: ids FlagID..FlagID+ways*SlotNum-1; pto-isa: 2*ways
    for _ in range(n_pipes):
        kind = draw(st.sampled_from(kinds))
        ways = 2 if kind == "both" else 1
        budget = (8 - flags_used) // ways if spec else 8
        if budget < 1 or (not spec and flags_used + 2 * ways > 16):
            break
        # pto-isa's sparse free notifications need SlotNum <= 3 or even (see examples/misuse/m8)
        choices = [n for n in range(1, min(budget, 4 if kind == "both" else 8) + 1)
                   if spec or n <= 3 or n % 2 == 0]
        n = draw(st.sampled_from(choices))
        gap = draw(st.integers(0, (budget - n) if spec else 1))
        flag_id = flags_used + (gap * ways if spec else 2 * ways * gap)
        flags_used = flag_id + (ways * n if spec else 2 * ways)
        if not spec and flags_used > 16:
            break
        peers = draw(st.sampled_from([(0, 1), (0,), (1,)]))
        dtype = draw(st.sampled_from(sorted(DTYPES)))
        M = draw(st.sampled_from([2, 4, 8, 16]))
        K = draw(st.sampled_from([8, 16, 32]))
        N = draw(st.sampled_from([8, 16, 32]))
        if len(peers) == 2:
            split_c2v = draw(st.sampled_from(SPLITS))
            split_v2c = draw(st.sampled_from(SPLITS[1:]))   # two producers cannot share a whole slot
        else:
            split_c2v = split_v2c = "TILE_NO_SPLIT"
        flow = draw(st.sampled_from(flows))
        gm_dir = platform == "a5" and (flow == "addr" or draw(st.booleans()))
        pipes.append(PipeSpec(
            kind=kind, flow=flow, gm_dir=gm_dir, slot_num=n, local_slot_num=draw(st.integers(1, 4)),
            flag_id=flag_id, peers=peers, split_c2v=split_c2v, split_v2c=split_v2c, dtype=dtype,
            M=M, K=K, N=N, tiles=draw(st.integers(1, 6)),
            lag=draw(st.integers(0, min(2, n))) if kind == "both" else 0,
            pre=_ops(draw, 3, False) if kind != "c2v" else (),
            post=_ops(draw, 3, True) if kind != "v2c" else (),
            pop_addr=draw(st.booleans()), slot_extra=32 * draw(st.integers(0, 2)),
            pad=(draw(st.sampled_from([0, 0, 1, 2])), draw(st.sampled_from([0, 0, 8]))),
            mixed=M >= 4 and mixed and draw(st.booleans()), alt=alt and draw(st.booleans()),
            ksplit=draw(st.booleans())))
    for k, p in enumerate(pipes):
        # TMPipe's SlotSize is its larger tile's size, which must be 32-byte aligned
        tile_bytes = p.M * (p.N * np.dtype(DTYPES[p.dtype][1]).itemsize if p.kind == "c2v"
                            else p.K * np.dtype(DTYPES[p.dtype][0]).itemsize)
        if (p.kind != "both" and p.slot_num >= 2 and p.peers != (1,) and tile_bytes % 32 == 0
                and draw(st.booleans())):
            divisors = [d for d in range(1, p.slot_num + 1) if p.slot_num % d == 0]
            pipes[k] = replace(p, api="tmpipe", sync=draw(st.sampled_from(divisors)))
        pipes[k] = replace(pipes[k], events=draw(st.booleans()))
    if len(pipes) == 1 and draw(st.booleans()) and (platform == "a2a3" or pipes[0].flow == "tile"):
        both = pipes[0].kind == "both"       # the seed-003 API: SlotNum 8 one way, 4 both ways
        pipes[0] = replace(pipes[0], api="init", sync=0, flag_id=0, slot_num=4 if both else 8, local_slot_num=2,
                           gm_dir=False, lag=min(pipes[0].lag, 4 if both else 8))
    pipes = [_holds(draw, platform, protocol, p) for p in pipes]
    mutation = None
    if mutate or (mutate is None and draw(st.booleans())):
        p = draw(st.integers(0, len(pipes) - 1))
        name = draw(st.sampled_from([m for m in mutations if (m != "wrong_split" or pipes[p].kind != "v2c")
                                     and (m != "bad_op" or pipes[p].dtype == "i8")] or ["drop_tfree"]))
        mutation = (name, p, draw(st.integers(0, pipes[p].tiles - 1)))
    return KernelSpec(platform, protocol, tuple(pipes), draw(st.booleans()), mutation,
                      draw(st.integers(0, 2 ** 16)))


def _holds(draw, platform, protocol, p: PipeSpec) -> PipeSpec:
    """How far the Vector cores run ahead on a DIR_BOTH pipe (lag) and how many popped tiles
    each consumer holds at once, chosen so that the kernel cannot deadlock:

    * a consumer that holds H tiles frees tile f only once tile f - f % H + H - 1 arrived,
      so the producer needs H slots (H <= SlotNum); under pto-isa frees are notified every
      SyncPeriod = SlotNum <= 2 ? SlotNum : SlotNum / 2 frees, which costs SyncPeriod - 1
      more slots; a lag costs as many slots again (the Vector cores consume that much later,
      and with two pipes stepped together the Cube's other pipe waits for them);
    * where popped tiles are staged locally (the tile flow from a GM ring, into a tile
      without an address or under pto-isa), at most LocalSlotNum tiles are held;
    * the Cube of a DIR_BOTH pipe holds at most lag + 1 V2C tiles (it must push results
      back before the Vector cores push more)."""
    n = p.slot_num
    sync = (p.sync or (n if n <= 2 else n // 2)) if protocol == "pto-isa" else 1
    room = n - (sync - 1)
    lag = min(p.lag, room - 1)
    in_gm = platform == "a2a3" or p.gm_dir
    staged = in_gm and p.flow == "tile" and (not p.pop_addr or protocol == "pto-isa")
    top = min(3, room, p.local_slot_num if staged else 3)
    hold_c = draw(st.integers(1, min(top, room - lag))) if p.kind != "v2c" else 1
    hold_v = draw(st.integers(1, min(top, lag + 1) if p.kind == "both" else top)) if p.kind != "c2v" else 1
    return replace(p, hold_c=hold_c, hold_v=hold_v, lag=lag)


# -- geometry shared by the renderer and the golden -------------------------------------------------
def _part(split: str, rows: int, cols: int) -> tuple:
    if split == "TILE_UP_DOWN":
        return rows // 2, cols
    if split == "TILE_LEFT_RIGHT":
        return rows, cols // 2
    return rows, cols


def _slot_size(p: PipeSpec) -> int:
    vdt, adt = (np.dtype(d).itemsize for d in DTYPES[p.dtype])
    need = 0
    if p.kind != "v2c":
        need = max(need, p.M * p.N * adt)
    if p.kind != "c2v":
        need = max(need, p.M * p.K * vdt)
    return -(-need // 32) * 32 + p.slot_extra


def _direction(p: PipeSpec) -> str:
    return {"c2v": "DIR_C2V", "v2c": "DIR_V2C", "both": "DIR_BOTH"}[p.kind] + ("_GM" if p.gm_dir else "")


# -- rendering ------------------------------------------------------------------------------------
class _Alloc:
    """Bump allocator of 512-byte aligned local addresses, per memory."""

    def __init__(self):
        self.top = {}

    def __call__(self, mem: str, nbytes: int) -> int:
        a = self.top.get(mem, 0)
        self.top[mem] = a + -(-nbytes // 512) * 512
        return a


def _mut(spec: KernelSpec, name: str, p: int):
    m = spec.mutation
    return m[2] if m is not None and m[0] == name and m[1] == p else None


def _chain(ops, dst, src, w, events: bool = False, row: str = "", cvt: str = "") -> list:
    """The op chain ``dst = ops(src, w)``; no ops: ``TMOV(dst, src)``.  With ``events`` each
    op also waits for the previous op's event (a trailing argument, as in pto_instr.hpp).
    ``row`` / ``cvt`` name the scratch tiles of ROWADD / CVT."""
    if not ops:
        return [f"TMOV({dst}, {src})"]
    out, cur = [], src
    ev, set_ev = (", ev", "ev = ") if events else ("", "")
    for k, (op, s) in enumerate(ops):
        kind = OPS[op][0]
        after = ev if k else ""
        if kind == "x":
            out += [f"{set_ev}TROWSUM({row}, {cur}{after})", f"{set_ev}TROWEXPANDADD({dst}, {cur}, {row}{ev})"]
        elif kind == "c":
            out += [f"{set_ev}TCVT({cvt}, {cur}{after})", f"{set_ev}TCVT({dst}, {cvt}{ev})"]
        else:
            arg = f", {w}" if kind == "t" else (f", {s}" if kind == "s" else "")
            out.append(f"{set_ev}{op}({dst}, {cur}{arg}{after})")
        cur = dst
    return out


def _tile(p: PipeSpec, loc: str, dt: str, rows: int, cols: int, alloc, mem: str, base: int = 0) -> str:
    """``Tile(...)`` source for a tile whose valid region is rows x cols; with ``p.pad`` its
    static shape is larger (the ops then work on non-contiguous valid regions)."""
    dr, dc = p.pad
    addr = base + alloc(mem, (rows + dr) * (cols + dc) * 4)
    if dr or dc:
        return (f"Tile(TileType.{loc}, {dt}, {rows + dr}, {cols + dc}, valid_rows={rows}, "
                f"valid_cols={cols}, addr={addr:#x})")
    return f"Tile(TileType.{loc}, {dt}, {rows}, {cols}, addr={addr:#x})"


def _indent(lines, n: int) -> list:
    return [" " * n + ln for ln in lines]


def render(spec: KernelSpec) -> str:
    """The kernel module's source text."""
    cube_setup, cube_steps, vec_setup, vec_steps = [], [], [], []
    l1, ub = _Alloc(), _Alloc()
    for i, p in enumerate(spec.pipes):
        cs, cb = _render_cube(spec, i, p, l1)
        vs, vb = _render_vector(spec, i, p, ub)
        cube_setup += cs
        cube_steps.append((p.tiles, cb))
        vec_setup += vs
        vec_steps.append((p.tiles + p.lag, vb))
    L = ['"""A kernel generated by tests/fuzz_kernels.py (ptopipe fuzz).', "", f"spec: {spec!r}",
         '"""', "import numpy as np", "", "import ptopipe", "from ptopipe.isa import *", "",
         f"PLATFORM, PROTOCOL, DATA_SEED = {spec.platform!r}, {spec.protocol!r}, {spec.data_seed}", ""]
    for i, p in enumerate(spec.pipes):
        L += _module_helpers(i, p)
    L += ["", "def cube(**g):"]
    L += cube_setup + _loops(spec, cube_steps)
    L += ["", "", "def vector(**g):", "    sub = get_subblockid()"]
    L += vec_setup + _loops(spec, vec_steps)
    L += ["", "", "def make_args(rng):", "    return dict("]
    for i, p in enumerate(spec.pipes):
        vdt, adt = DTYPES[p.dtype]
        rows_out = _out_rows(p)
        L += [f"        a{i}=rng.integers(-3, 4, ({_total_rows(p)}, {p.K})).astype(np.{vdt}),",
              f"        w{i}=rng.integers(-3, 4, ({_total_rows(p)}, {p.K})).astype(np.{vdt}),",
              f"        b{i}=rng.integers(-3, 4, ({p.K}, {p.N})).astype(np.{vdt}),",
              f"        u{i}=rng.integers(-3, 4, ({rows_out}, {p.N})).astype(np.{adt}),",
              f"        out{i}=np.zeros(({rows_out}, {p.N}), np.{adt}),",
              f"        fifo{i}=ptopipe.gm_buffer({(2 if p.kind == 'both' else 1) * p.slot_num * _slot_size(p)}),"]
    L += ["    )", "", "",
          "def golden(args):",
          "    import sys",
          f"    sys.path.insert(0, {os.path.dirname(os.path.abspath(__file__))!r})",
          "    import fuzz_kernels as fk",
          "    from fuzz_kernels import KernelSpec, PipeSpec  # noqa: F401 (the spec below)",
          f"    return fk.golden({spec!r}, args)" if spec.clean else "    return {}   # a mutated kernel",
          "", "",
          f"SCENARIO = ptopipe.Scenario({'fuzz_kernel'!r}, cube, vector, make_args, golden, "
          f"platform=PLATFORM, protocol=PROTOCOL)",
          "", "", "if __name__ == '__main__':",
          "    args = make_args(np.random.default_rng(DATA_SEED))",
          "    for checks in (True, False):",
          "        res = ptopipe.run(cube, vector, args, platform=PLATFORM, protocol=PROTOCOL,",
          f"                          max_instructions={MAX_INSTRUCTIONS}, checks=checks)",
          "        print(f'checks={checks}:', {k: v.tolist() for k, v in res.outputs.items() if k.startswith('out')})",
          ""]
    return "\n".join(L)


def _out_rows(p: PipeSpec) -> int:
    broadcast = p.kind != "v2c" and p.split_c2v == "TILE_NO_SPLIT"
    return _total_rows(p) * (len(p.peers) if broadcast else 1)


def _loops(spec: KernelSpec, steps) -> list:
    """The main loop(s) over ``i``: ``steps`` is [(iterations, body lines at indent 0)]."""
    out = []
    if spec.interleave:
        out.append(f"    for i in range({max(n for n, _ in steps)}):")
        for n, body in steps:
            out.append(f"        if i < {n}:")
            out += _indent(body, 12)
    else:
        for n, body in steps:
            out.append(f"    for i in range({n}):")
            out += _indent(body, 8)
    return out


def _cfg(spec, i, p, slot) -> str:
    ring_ub, ring_l1 = 0x20000 + i * 0x8000, 0x40000 + i * 0x10000
    assert max(p.slot_num, p.local_slot_num, p.hold_c, p.hold_v) * slot <= 0x8000
    if p.api == "init":
        mask = {"c2v": "DIR_C2V", "v2c": "DIR_V2C", "both": "DIR_C2V | DIR_V2C"}[p.kind]
        return f"{{init}}({mask}, {slot}, g['fifo{i}'], {ring_ub:#x}, {ring_l1:#x}, peers={p.peers})"
    if p.api == "tmpipe":
        vdt, adt = DTYPES[p.dtype]
        if p.kind == "c2v":
            prod, cons = (f"Tile(TileType.Acc, {adt}, {p.M}, {p.N})",
                          f"Tile(TileType.Vec, {adt}, {', '.join(map(str, _part(p.split_c2v, p.M, p.N)))})")
            local = "FIFOType.VEC_FIFO"
        else:
            prod, cons = (f"Tile(TileType.Vec, {vdt}, {', '.join(map(str, _part(p.split_v2c, p.M, p.K)))})",
                          f"Tile(TileType.Mat, {vdt}, {p.M}, {p.K})")
            local = "FIFOType.MAT_FIFO"
        fifo = "FIFOType.GM_FIFO" if spec.platform == "a2a3" or p.gm_dir else local
        ratio = "VecCubeRatio.V2C2_VECS" if p.peers == (0,) else "VecCubeRatio.V2C1_VECS"
        return (f"TMPipe({p.flag_id}, {fifo}, {p.slot_num}, {p.sync}, {prod}, {cons}, "
                f"local_depth={p.local_slot_num}, vc_ratio={ratio})(g['fifo{i}'], {ring_ub:#x}, {ring_l1:#x})")
    return (f"TPipe({p.flag_id}, {_direction(p)}, {slot}, {p.slot_num}, {p.local_slot_num}, "
            f"peers={p.peers})(g['fifo{i}'], {ring_ub:#x}, {ring_l1:#x})")


def _group(var, hold, n, pops, each, tail=()) -> list:
    """Consume tiles in groups of ``hold``: when tile ``var`` closes a group, pop the whole
    group (``pops``, with ``k`` the index in the group), then for each tile ``tt`` of it run
    ``each``."""
    return ([f"if {var} % {hold} == {hold - 1} or {var} == {n - 1}:",
             f"    g0 = {var} - {var} % {hold}",
             f"    for k in range({var} - g0 + 1):"] + _indent(pops, 8) +
            [f"    for k in range({var} - g0 + 1):", "        tt = g0 + k"] + _indent(each, 8) +
            _indent(list(tail), 4))


def _consumer_edits(spec, i, p, pop, use, free, after) -> tuple:
    """Apply the consumer-side mutations of pipe ``i``; returns (pops, each, tail)."""
    at = _mut(spec, "drop_tfree", i)
    fr = [f"{free} if tt != {at} else None"] if at is not None else [free]
    at = _mut(spec, "double_tfree", i)
    if at is not None:
        fr.append(f"{free} if tt == {at} else None")
    each = (fr + use if _mut(spec, "free_before_use", i) is not None else use + fr) + after
    tail = []
    if _mut(spec, "extra_tpop", i) is not None:
        tail = [f"if tt == {p.tiles - 1}:"] + _indent(pop + [free], 4)
    return pop, each, tail


def _rows(p: PipeSpec) -> tuple:
    """Rows of the tiles of pipe ``p``, by tile index modulo the length (``mixed``: a pipe
    that carries tiles of two sizes)."""
    return (p.M, p.M // 2) if p.mixed else (p.M,)


def _total_rows(p: PipeSpec) -> int:
    rows = _rows(p)
    return sum(rows[t % len(rows)] for t in range(p.tiles))


def _tiles(p, loc, dt, shape_of, alloc, mem, base=0, pad=True) -> str:
    """``{rows: Tile(...)}`` source: one tile per tile size of the pipe."""
    q = p if pad else replace(p, pad=(0, 0))
    return "{" + ", ".join(f"{r}: " + _tile(q, loc, dt, *shape_of(r), alloc, mem, base) for r in _rows(p)) + "}"


def _alt(p: PipeSpec, one: str) -> str:
    """``alt``: two tile objects per popped tile, used by alternate groups of pops."""
    return f"[{one}, {one}]" if p.alt else one


def _alt_ix(p: PipeSpec, H: int, t: str) -> str:
    return f"[({t}) // {H} % 2]" if p.alt else ""


def _module_helpers(i, p) -> list:
    rows = _rows(p)
    return [f"ROWS{i} = {rows!r}",
            f"def MT{i}(t):   # rows of tile t of pipe {i}", f"    return ROWS{i}[t % {len(rows)}]",
            f"def R{i}(t):    # first row of tile t of pipe {i}",
            f"    return (t // {len(rows)}) * {sum(rows)} + sum(ROWS{i}[:t % {len(rows)}])", ""]


def _to_left(p, i, src, t) -> list:
    """Move the Mat tile ``src`` (tile ``t``) to the Left operand(s)."""
    if p.ksplit:
        return [f"TEXTRACT(a{i}_lo[MT{i}({t})], {src}, 0, 0)", f"TEXTRACT(a{i}_hi[MT{i}({t})], {src}, 0, {p.K // 2})"]
    return [f"TMOV(a{i}_l0[MT{i}({t})], {src})"]


def _matmul(p, i, acc, t) -> list:
    if p.ksplit:
        return [f"TMATMUL({acc}, a{i}_lo[MT{i}({t})], b{i}_lo)",
                f"TMATMUL_ACC({acc}, {acc}, a{i}_hi[MT{i}({t})], b{i}_hi)"]
    return [f"TMATMUL({acc}, a{i}_l0[MT{i}({t})], b{i}_l0)"]


def _render_cube(spec, i, p, l1) -> tuple:
    vdt, adt = DTYPES[p.dtype]
    slot = _slot_size(p)
    M, K, N, T = p.M, p.K, p.N, p.tiles
    c2v, v2c = p.kind != "v2c", p.kind != "c2v"
    base = 0x60000 if spec.platform == "a5" else 0x28000       # clear of the rings (0x40000..)
    setup = [f"pipe{i} = " + _cfg(spec, i, p, slot).replace("{init}", "aic_initialize_pipe"),
             f"b{i}_l1 = " + _tile(p, "Mat", vdt, K, N, l1, "L1", base),
             f"b{i}_l0 = " + _tile(p, "Right", vdt, K, N, l1, "L0B"),
             f"a{i}_l0 = " + _tiles(p, "Left", vdt, lambda r: (r, K), l1, "L0A"),
             f"acc{i} = " + _tiles(p, "Acc", adt, lambda r: (r, N), l1, "L0C"),
             f"TLOAD(b{i}_l1, g['b{i}'])", f"TMOV(b{i}_l0, b{i}_l1)"]
    if p.ksplit:                      # K in two halves: TEXTRACT + TMATMUL + TMATMUL_ACC
        h = K // 2
        setup += [f"a{i}_lo = " + _tiles(p, "Left", vdt, lambda r: (r, h), l1, "L0A"),
                  f"a{i}_hi = " + _tiles(p, "Left", vdt, lambda r: (r, h), l1, "L0A"),
                  f"b{i}_lo = " + _tile(p, "Right", vdt, h, N, l1, "L0B"),
                  f"b{i}_hi = " + _tile(p, "Right", vdt, h, N, l1, "L0B"),
                  f"TEXTRACT(b{i}_lo, b{i}_l1, 0, 0)", f"TEXTRACT(b{i}_hi, b{i}_l1, {h}, 0)"]
    produce = []
    if c2v:
        sc = p.split_c2v
        acc = f"acc{i}[MT{i}({{t}})]"
        if p.flow == "addr":
            push = [f"gp{i} = GlobalTensor({adt}, (MT{i}({{t}}), {N}))", f"TALLOC(pipe{i}, gp{i}, {sc})",
                    f"TSTORE(gp{i}, {acc})", f"TPUSH(pipe{i}, gp{i}, {sc})"]
        else:
            push = [f"TPUSH(pipe{i}, {acc}, {sc})"]
        produce = _matmul(p, i, acc, "{t}") + push
        if _mut(spec, "extra_tpush", i) is not None and p.kind == "c2v":
            produce += [f"if {{t}} == {T - 1}:"] + _indent(push, 4)
    if not v2c:
        setup.append(f"a{i}_l1 = " + _tiles(p, "Mat", vdt, lambda r: (r, K), l1, "L1", base))
        body = [f"TLOAD(a{i}_l1[MT{i}(i)], GlobalTensor(g['a{i}'].data() + R{i}(i) * {K}, (MT{i}(i), {K})))",
                *_to_left(p, i, f"a{i}_l1[MT{i}(i)]", "i")] + [ln.replace("{t}", "i") for ln in produce]
        return _indent(setup, 4), body
    sv, H = p.split_v2c, p.hold_v
    if _mut(spec, "wrong_dtype", i) is not None and p.kind == "v2c":
        vdt = "float16" if vdt != "float16" else "float32"
    own = p.pop_addr or p.flow == "addr"
    if own:
        setup.append(f"ms{i} = [" + ", ".join(_tiles(p, "Mat", vdt, lambda r: (r, K), l1, "L1", base, pad=False)
                                             for _ in range(H)) + "]")
    else:
        one = f"Tile(TileType.Mat, {vdt}, r, {K})"
        setup.append(f"ms{i} = [{{r: {_alt(p, one)} for r in ROWS{i}}} for _ in range({H})]")
    if p.flow == "addr":
        setup.append(f"qs{i} = [{{r: GlobalTensor({vdt}, (r, {K})) for r in ROWS{i}}} for _ in range({H})]")
        pop = [f"TPOP(pipe{i}, qs{i}[k][MT{i}(g0 + k)], {sv})"]
        use = [f"TLOAD(ms{i}[k][MT{i}(tt)], qs{i}[k][MT{i}(tt)])", *_to_left(p, i, f"ms{i}[k][MT{i}(tt)]", "tt")]
        free = f"TFREE(pipe{i}, qs{i}[k][MT{i}(tt)], {sv})"
        if _mut(spec, "free_before_use", i) is not None:       # the load reads the slot
            pop, use = pop + [use[0].replace("(tt)", "(g0 + k)")], use[1:]
    else:
        q = p if not own else replace(p, alt=False)
        pop = [f"TPOP(pipe{i}, ms{i}[k][MT{i}(g0 + k)]{_alt_ix(q, H, 'g0 + k')}, {sv})"]
        use = _to_left(p, i, f"ms{i}[k][MT{i}(tt)]{_alt_ix(q, H, 'tt')}", "tt")
        free = f"TFREE(pipe{i})"
    after = ([ln.replace("{t}", "tt") for ln in produce] if c2v else
             [*_matmul(p, i, f"acc{i}[MT{i}(tt)]", "tt"),
              f"TSTORE(GlobalTensor(g['out{i}'].data() + R{i}(tt) * {N}, (MT{i}(tt), {N})), acc{i}[MT{i}(tt)])"])
    pops, each, tail = _consumer_edits(spec, i, p, pop, use, free, after) if p.kind == "v2c" else \
        (pop, use + [free] + after, [])
    return _indent(setup, 4), _group("i", H, T, pops, each, tail)


def _render_vector(spec, i, p, ub) -> tuple:
    vdt, adt = DTYPES[p.dtype]
    slot = _slot_size(p)
    M, K, N, T = p.M, p.K, p.N, p.tiles
    c2v, v2c = p.kind != "v2c", p.kind != "c2v"
    active = f"sub in {p.peers}" + (f" and sub != {p.peers[-1]}" if _mut(spec, "skip_peer", i) is not None else "")
    setup = [f"pipe{i} = " + _cfg(spec, i, p, slot).replace("{init}", "aiv_initialize_pipe")]
    body = []
    if v2c:
        sv = p.split_v2c
        ud = sv == "TILE_UP_DOWN"
        pc = _part(sv, M, K)[1]
        setup += [f"{v}{i} = " + _tiles(p, "Vec", vdt, lambda r: _part(sv, r, K), ub, "UB")
                  for v in ("x", "wx", "s")]
        pr = f"MT{i}(t) // 2" if ud else f"MT{i}(t)"
        r0 = f"R{i}(t)" + (f" + sub * (MT{i}(t) // 2)" if ud else "")
        c0 = f"sub * {pc}" if sv == "TILE_LEFT_RIGHT" else "0"
        setup += [f"def xin{i}(name, t):",
                  f"    return GlobalTensor(g[name].data() + ({r0}) * {K} + {c0}, ({pr}, {pc}), ({K}, 1))"]
        x, wx, s_ = (f"{v}{i}[MT{i}(t)]" for v in ("x", "wx", "s"))
        prod = [f"TLOAD({x}, xin{i}('a{i}', t))"]
        if any(OPS[o][0] == "t" for o, _ in p.pre):
            prod.append(f"TLOAD({wx}, xin{i}('w{i}', t))")
        prod += _chain(p.pre, s_, x, wx, p.events)
        if _mut(spec, "bad_op", i) is not None and p.kind == "v2c":
            prod.append(f"TADDS({s_}, {s_}, 1000)")          # out of int8 range
        if p.flow == "addr":
            push = [f"gv{i} = GlobalTensor({vdt}, ({pr}, {pc}), ({K}, 1))", f"TALLOC(pipe{i}, gv{i}, {sv})",
                    f"TSTORE(gv{i}, {s_})", f"TPUSH(pipe{i}, gv{i}, {sv})"]
        else:
            push = [f"TPUSH(pipe{i}, {s_}, {sv})"]
        prod += push
        if _mut(spec, "extra_tpush", i) is not None and p.kind != "c2v":
            prod += [f"if t == {T - 1}:"] + _indent(push, 4)
        body += [f"if i < {T}:", "    t = i"] + _indent(prod, 4)
    if c2v:
        sc, H = p.split_c2v, p.hold_c
        ud = sc == "TILE_UP_DOWN"
        pc = _part(sc, M, N)[1]
        pop_split = sc
        if _mut(spec, "wrong_split", i) is not None:
            same = [x for x in SPLITS if x != sc and _part(x, M, N) == _part(sc, M, N)]
            pop_split = same[0] if same else next(x for x in SPLITS if x != sc)
        pdt = "float16" if _mut(spec, "wrong_dtype", i) is not None and adt != "float16" else \
            ("float32" if _mut(spec, "wrong_dtype", i) is not None else adt)
        part = (lambda r: _part(sc, r, N))
        own = p.pop_addr or p.flow == "addr"
        if own:
            setup.append(f"ys{i} = [" + ", ".join(_tiles(p, "Vec", pdt, part, ub, "UB", pad=False)
                                                 for _ in range(H)) + "]")
        else:
            pr0 = "r // 2" if ud else "r"
            one = f"Tile(TileType.Vec, {pdt}, {pr0}, {pc})"
            setup.append(f"ys{i} = [{{r: {_alt(p, one)} for r in ROWS{i}}} for _ in range({H})]")
        setup += [f"{v}{i} = " + _tiles(p, "Vec", adt, part, ub, "UB") for v in ("wy", "o")]
        if any(op in WIDE_ONLY for op, _ in p.post):
            other = "int32" if adt == "float32" else "float32"
            setup += [f"orow{i} = " + _tiles(p, "Vec", adt, lambda r: (part(r)[0], 8), ub, "UB"),
                      f"ocvt{i} = " + _tiles(p, "Vec", other, part, ub, "UB")]
        pr = f"MT{i}(t) // 2" if ud else f"MT{i}(t)"
        if sc == "TILE_NO_SPLIT":
            r0, c0 = f"{p.peers}.index(sub) * {_total_rows(p)} + R{i}(t)", "0"
        else:
            r0 = f"R{i}(t)" + (f" + sub * (MT{i}(t) // 2)" if ud else "")
            c0 = f"sub * {pc}" if sc == "TILE_LEFT_RIGHT" else "0"
        setup += [f"def yout{i}(name, t):",
                  f"    return GlobalTensor(g[name].data() + ({r0}) * {N} + {c0}, ({pr}, {pc}), ({N}, 1))"]
        alt = p.alt and not own and p.flow == "tile"
        y = f"ys{i}[k][MT{i}(tt)]" + (_alt_ix(p, H, "tt") if alt else "")
        use = []
        if p.flow == "addr":
            qpr = "r // 2" if ud else "r"
            setup.append(f"qv{i} = [{{r: GlobalTensor({pdt}, ({qpr}, {pc}), ({N}, 1)) for r in ROWS{i}}} "
                         f"for _ in range({H})]")
            pop = [f"TPOP(pipe{i}, qv{i}[k][MT{i}(g0 + k)], {pop_split})"]
            use = [f"TLOAD({y}, qv{i}[k][MT{i}(tt)])"]
            free = f"TFREE(pipe{i}, qv{i}[k][MT{i}(tt)], {pop_split})"
            if _mut(spec, "free_before_use", i) is not None:
                pop, use = pop + [use[0].replace("(tt)", "(g0 + k)")], []
        else:
            pop = [f"TPOP(pipe{i}, ys{i}[k][MT{i}(g0 + k)]{_alt_ix(p, H, 'g0 + k') if alt else ''}, {pop_split})"]
            free = f"TFREE(pipe{i})"
        wy, o = f"wy{i}[MT{i}(tt)]", f"o{i}[MT{i}(tt)]"
        if any(OPS[op][0] == "t" for op, _ in p.post):
            use.append(f"TLOAD({wy}, yout{i}('u{i}', tt))")
        use += _chain(p.post, o, y, wy, p.events, f"orow{i}[MT{i}(tt)]", f"ocvt{i}[MT{i}(tt)]")
        if _mut(spec, "bad_op", i) is not None:
            use.append(f"TEXP({o}, {o})")                    # float-only op on an int32 tile
        after = [f"TSTORE(yout{i}('out{i}', tt), {o})"]
        pops, each, tail = _consumer_edits(spec, i, p, pop, use, free, after)
        body += [f"if i >= {p.lag}:", f"    t = i - {p.lag}"] + _indent(_group("t", H, T, pops, each, tail), 4)
    return _indent([f"if {active}:"] + _indent(setup, 4), 4), [f"if {active}:"] + _indent(body, 4)


# -- golden ---------------------------------------------------------------------------------------
def _apply(ops, a, w):
    for op, s in ops:
        kind, fn = OPS[op]
        if kind == "s":
            a = fn(a, a.dtype.type(s))
        elif kind == "t":
            a = fn(a, w)
        else:
            a = fn(a)
        a = a.astype(w.dtype) if a.dtype != w.dtype else a
    return a


def golden(spec: KernelSpec, args: dict) -> dict:
    """The expected outputs of a clean kernel, computed with plain numpy."""
    out = {}
    for i, p in enumerate(spec.pipes):
        vdt, adt = (np.dtype(d) for d in DTYPES[p.dtype])
        TR = _total_rows(p)
        a, w, b, u = args[f"a{i}"], args[f"w{i}"], args[f"b{i}"], args[f"u{i}"]
        x = _apply(p.pre, a.copy(), w) if p.kind != "c2v" else a
        y = (x.astype(adt) @ b.astype(adt)).astype(adt)       # tile by tile = row block by row block
        if p.kind == "v2c":
            out[f"out{i}"] = y
        elif p.split_c2v == "TILE_NO_SPLIT":
            parts = [_apply(p.post, y.copy(), u[k * TR:(k + 1) * TR]) for k in range(len(p.peers))]
            out[f"out{i}"] = np.concatenate(parts)
        elif p.split_c2v == "TILE_LEFT_RIGHT":     # each Vector core works on its column half
            h = p.N // 2
            out[f"out{i}"] = np.concatenate([_apply(p.post, y[:, :h].copy(), u[:, :h]),
                                             _apply(p.post, y[:, h:].copy(), u[:, h:])], axis=1)
        else:
            out[f"out{i}"] = _apply(p.post, y.copy(), u)
    return out


# -- running and judging --------------------------------------------------------------------------
class Finding(AssertionError):
    """A property of the fuzz failed; the message carries the reproducer."""


def write_kernel(spec: KernelSpec, directory: str | None = None) -> str:
    """Write the kernel module next to a copy-free import of this module; returns its path."""
    d = directory or tempfile.mkdtemp(prefix="ptopipe-fuzz-")
    path = os.path.join(d, "fuzz_kernel.py")
    with open(path, "w") as f:
        f.write(render(spec))
    return path


def load(path: str):
    """Import the kernel file (compiled from its text: no stale bytecode cache when a path
    is rewritten within the same second)."""
    mod = types.ModuleType("fuzz_kernel")
    mod.__file__ = path
    with open(path) as f:
        exec(compile(f.read(), path, "exec"), mod.__dict__)
    return mod


def _run(mod, spec: KernelSpec, checks: bool, **kw):
    args = mod.make_args(np.random.default_rng(spec.data_seed))
    try:
        res = ptopipe.run(mod.cube, mod.vector, args, platform=spec.platform, protocol=spec.protocol,
                          max_instructions=MAX_INSTRUCTIONS, checks=checks, **kw)
    except ptopipe.PtoPipeError as e:
        return args, None, e
    return args, {k: np.array(v) for k, v in res.outputs.items()}, None


_LOC = re.compile(r"(\S+\.py):(\d+)")


def _located(err, path: str, n_lines: int) -> bool:
    """Does the error name a line of the kernel file?"""
    base = os.path.basename(path)
    for f, ln in _LOC.findall(f"{err.where or ''}"):
        if os.path.basename(f) == base and 1 <= int(ln) <= n_lines:
            return True
    return False


def check_kernel(spec: KernelSpec, directory: str | None = None, cli: bool = True) -> str:
    """Run ``spec`` with the checkers on and off and check every property; returns
    "clean" or the error class name.  Raises :class:`Finding` with a reproducer.  With
    ``cli``, also ``ptopipe check FILE --schedules 2``: exit 0 for a clean kernel, 1 naming a
    kernel line for a failing one, never a traceback; and for a clean kernel ``ptopipe trace``
    and ``ptopipe run --report`` write a trace JSON and an HTML report."""
    path = write_kernel(spec, directory)
    src = open(path).read()
    n_lines = src.count("\n") + 1
    mod = load(path)

    def finding(what: str) -> Finding:
        return Finding(f"{what}\nkernel: {path}\nreproduce: PYTHONPATH=<repo>:<repo>/tests python {path}\n"
                       f"spec: {spec!r}\n--- kernel source ---\n{src}")

    results = {}
    for checks in (True, False):
        try:
            results[checks] = _run(mod, spec, checks)
        except Exception as e:           # anything but a PtoPipeError is a finding
            import traceback
            raise finding(f"checks={checks}: {type(e).__name__} is not a PtoPipeError: {e}\n"
                          + traceback.format_exc()) from e
    args, out_on, err_on = results[True]
    _, out_off, err_off = results[False]
    for err in (err_on, err_off):
        if err is not None and not _located(err, path, n_lines):
            raise finding(f"{type(err).__name__} without a location in the kernel (where={err.where!r}): {err}")
    name = spec.mutation[0] if spec.mutation else None
    if err_on is None:
        if name in MUST_FAIL:
            raise finding(f"mutation {name} ran without an error")
        if err_off is not None:
            raise finding(f"clean with checkers on but {type(err_off).__name__} with checkers off: {err_off}")
        for k in out_on:
            if out_on[k].tobytes() != out_off[k].tobytes():
                raise finding(f"output {k} differs between checkers on and off")
        # the same module again: another interleaving of the cores, and without the timing model
        for kw in ({"schedule_seed": spec.data_seed}, {"timing": False}):
            try:
                _, out, err = _run(mod, spec, True, **kw)
            except Exception as e:
                raise finding(f"{kw}: {type(e).__name__} is not a PtoPipeError: {e}") from e
            if err is not None:
                raise finding(f"clean with the default schedule but {type(err).__name__} with {kw}: {err}")
            for k in out_on:
                if out_on[k].tobytes() != out[k].tobytes():
                    raise finding(f"output {k} differs with {kw}")
        if spec.clean or name in SAME_RESULT:
            exp = golden(spec, args)
            for k, e in exp.items():
                if out_on[k].shape != e.shape or not np.array_equal(out_on[k], e):
                    bad = np.argwhere(out_on[k] != e)[:3].tolist() if out_on[k].shape == e.shape else "shape"
                    raise finding(f"output {k} differs from the numpy golden (first at {bad})")
        if cli:
            _check_cli(path, spec, None, finding)
        return "clean"
    if spec.clean:
        raise finding(f"a clean kernel raised {type(err_on).__name__}: {err_on}")
    if cli:
        _check_cli(path, spec, err_on, finding)
    return type(err_on).__name__


def _check_cli(path, spec, err, finding) -> None:
    """``ptopipe check`` on the kernel file agrees with the API run and shows no traceback."""
    import contextlib
    import io

    from ptopipe.cli import main
    out = io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(out):
        rc = main(["check", path, "--schedules", "2"])
    text = out.getvalue()
    if "Traceback" in text:
        raise finding(f"ptopipe check printed a traceback:\n{text}")
    if err is None and spec.clean:
        # the trace and the HTML report of a clean kernel
        d = os.path.dirname(path)
        trace, html = os.path.join(d, "trace.json"), os.path.join(d, "report.html")
        for f in (trace, html):
            if os.path.exists(f):
                os.remove(f)
        plat = ["--platform", spec.platform, "--protocol", spec.protocol]
        for argv, made in ((["trace", path, "-o", trace] + plat, trace),
                           (["run", path, "--quiet", "--report", html] + plat, html)):
            out = io.StringIO()
            with contextlib.redirect_stdout(out), contextlib.redirect_stderr(out):
                rc = main(argv)
            if rc != 0 or not os.path.exists(made) or "Traceback" in out.getvalue():
                raise finding(f"ptopipe {' '.join(argv)}: exit {rc}, {made} "
                              f"{'written' if os.path.exists(made) else 'missing'}:\n{out.getvalue()}")
        import json
        with open(trace) as f:
            events = json.load(f)
        if not events:
            raise finding(f"ptopipe trace wrote an empty trace: {trace}")
    if err is None and spec.clean and rc != 0:
        raise finding(f"ptopipe check failed (exit {rc}) on a kernel the API runs clean:\n{text}")
    if err is not None:
        base = re.escape(os.path.basename(path))
        if rc != 1 or not re.search(rf"{base}:\d+", text):
            raise finding(f"ptopipe check exit {rc} on a kernel that raises {type(err).__name__}, "
                          f"output without a kernel line:\n{text}")

