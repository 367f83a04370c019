"""The random kernels of the fuzz (tests/fuzz_kernels.py): what a kernel is
(:class:`KernelSpec`, :class:`PipeSpec`), the hypothesis strategy that draws one
(:func:`kernel_specs`, deadlock-free by construction), the pipe geometry, and the numpy
golden of a clean kernel.

A kernel has one or two pipes (C2V, V2C or DIR_BOTH; SlotNum 1..8; split NO_SPLIT /
UP_DOWN / LEFT_RIGHT; tile flow or the address flow TALLOC/TPOP on GlobalTensors;
TPipe, TMPipe or the seed-003 init API; f32 / f16 / int8 data), the element-wise op chains
the Vector cores apply, how many popped tiles each consumer holds, and optionally one
mutation (a dropped or doubled TFREE, an extra TPOP / TPUSH, a TFREE before the popped tile
is read, a wrong split or dtype at the consumer, a Vector core that skips a pipe).
Values are small integers, so every result is exact in f16/f32/int8/int32 arithmetic.
"""
from __future__ import annotations

from dataclasses import dataclass, replace

import numpy as np
from hypothesis import strategies as st

from ptopipe.arch import PlatformID
from ptopipe.arch.catalogue import OPS as CATALOGUE


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
       "CVT": ("c", lambda a: (np.clip(np.nan_to_num(np.rint(a.astype(np.float64))), -2**31, 2**31 - 1)
                              .astype(np.int32) if a.dtype.kind == "f" else a.astype(np.float32))
               .astype(a.dtype))}       # TCVT float -> int: CAST_RINT, saturated, NaN 0
WIDE_ONLY = {"ROWADD", "CVT"}
MUTATIONS = ("drop_tfree", "double_tfree", "extra_tpop", "extra_tpush", "free_before_use",
             "wrong_split", "wrong_dtype", "skip_peer", "bad_op")
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
    out16: bool = False  # V2C, float data: the Cube stores its f32 Acc to an f16 output


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
def _ops(draw, n_max: int, wide: bool, dtype: str, platform: str):
    """An op chain on ``dtype`` tiles that ``platform`` takes (the op catalogue's rule, which is
    pto-isa's: no int8 TADDS on A2A3, no int8 TMULS on A5); ``wide``: on 32-bit tiles (ROWADD
    and CVT allowed)."""
    plat = PlatformID.PLATFORM_A5 if platform == "a5" else PlatformID.PLATFORM_A2A3
    names = sorted(op for op in OPS if (op not in WIDE_ONLY or wide) and
                   (op in WIDE_ONLY or CATALOGUE[op].dtype_error(np.dtype(dtype), plat) is None))
    out = []
    for _ in range(draw(st.integers(0, n_max)) if names else 0):   # (A2A3 has no int8 vector op)
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
                 flows=("tile", "addr"), kinds=("c2v", "v2c", "both"), mutations=MUTATIONS,
                 mixed: bool = True, alt: bool = True):
    """A random kernel; ``mutate`` True/False forces a mutation or none (None: either);
    ``mixed`` lets a pipe carry tiles of two sizes."""
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
        if platform == "a5" and peers == (1,):
            peers = (0,)         # A5: a NO_SPLIT pipe has one lane, AIV0 (docs/protocols.md)
        if len(peers) == 2:
            # A5: NO_SPLIT signals reach AIV0 only, so both lanes need a split
            split_c2v = draw(st.sampled_from(SPLITS[1:] if platform == "a5" else SPLITS))
            split_v2c = draw(st.sampled_from(SPLITS[1:]))   # two producers cannot share a whole slot
        else:
            split_c2v = split_v2c = "TILE_NO_SPLIT"
        flow = draw(st.sampled_from(flows))
        ptoisa_a5 = platform == "a5" and not spec
        if not spec and kind == "both":
            # pto-isa's address flow of a two-way pipe puts the V2C way at the C2V way's slots
            # (A2A3 DIR_BOTH as A5 DIR_BOTH_GM, which does not work at all: docs/protocols.md)
            flow = "tile"
        # pto-isa on A5: a tile TPOP from a GM ring frees the slot and a tile TFREE after it
        # frees it again (docs/protocols.md), so tile flow there uses the consumer-local rings
        gm_dir = platform == "a5" and (flow == "addr" or (not ptoisa_a5 and draw(st.booleans())))
        # A5's split push of an Acc into UB (dual-mode TMOV) takes, static and valid, a multiple of
        # 32 columns (LEFT_RIGHT: 32 columns, no column padding) or of 2 rows (UP_DOWN: even padding)
        acc_ub = platform == "a5" and kind != "v2c" and not gm_dir
        acc_lr_ub = acc_ub and split_c2v == "TILE_LEFT_RIGHT"
        if acc_lr_ub:
            N = 32
        pad_rows = [0, 0, 2] if acc_ub and split_c2v == "TILE_UP_DOWN" else [0, 0, 1, 2]
        # a ring local to the consumer (A5) keeps the pushed tile's static columns as its row
        # pitch and the popped tile reads at its own (pushAcc2VecFiFo, pushVec2MatFiFo, TASSIGN):
        # column padding of the pushed tile only, the popped one unpadded, reads rows misaligned
        local = platform == "a5" and not gm_dir
        pipes.append(PipeSpec(
            kind=kind, flow=flow, gm_dir=gm_dir, slot_num=n, local_slot_num=draw(st.integers(1, 4)),
            flag_id=flag_id, peers=peers, split_c2v=split_c2v, split_v2c=split_v2c, dtype=dtype,
            M=M, K=K, N=N, tiles=draw(st.integers(1, 6)),
            lag=draw(st.integers(0, min(2, n))) if kind == "both" else 0,
            pre=_ops(draw, 3, False, DTYPES[dtype][0], platform) if kind != "c2v" else (),
            post=_ops(draw, 3, True, DTYPES[dtype][1], platform) if kind != "v2c" else (),
            pop_addr=draw(st.booleans()), slot_extra=32 * draw(st.integers(0, 2)),
            pad=(draw(st.sampled_from(pad_rows)), 0 if acc_lr_ub or local else draw(st.sampled_from([0, 0, 8]))),
            mixed=M >= 4 and mixed and draw(st.booleans()), alt=alt and draw(st.booleans()),
            ksplit=draw(st.booleans()), out16=kind == "v2c" and dtype != "i8" and draw(st.booleans())))
    for k, p in enumerate(pipes):
        # TMPipe's SlotSize is its larger tile's size, which must be 32-byte aligned
        tile_bytes = p.M * (p.N * np.dtype(DTYPES[p.dtype][1]).itemsize if p.kind == "c2v"
                            else p.K * np.dtype(DTYPES[p.dtype][0]).itemsize)
        # (under pto-isa a TMPipe's Cube waits for both Vector lanes' flags whatever its
        # VecCubeRatio: one of one lane hangs, ProtocolModel.handshake_lanes)
        if (p.kind != "both" and p.slot_num >= 2 and p.peers != (1,) and tile_bytes % 32 == 0
                and (spec or len(p.peers) == 2) and draw(st.booleans())):
            divisors = [d for d in range(1, p.slot_num + 1) if p.slot_num % d == 0]
            pipes[k] = replace(p, api="tmpipe", sync=draw(st.sampled_from(divisors)))
        pipes[k] = replace(pipes[k], events=draw(st.booleans()))
    # (on A5 only a pipe already on the consumer-local rings: its padding and split were
    # drawn for them - the seed-003 API has no GM directions)
    if len(pipes) == 1 and draw(st.booleans()) and (platform == "a2a3" or pipes[0].flow == "tile"
                                                     and not pipes[0].gm_dir):
        both = pipes[0].kind == "both"       # the seed-003 API: SlotNum 8 one way, 4 both ways
        pipes[0] = replace(pipes[0], api="init", sync=0, flag_id=0, slot_num=4 if both else 8, local_slot_num=2,
                           gm_dir=False, lag=min(pipes[0].lag, 4 if both else 8))
    # pto-isa A5's pushVec2MatFiFo: a LEFT_RIGHT part pushed into the Cube's local L1 ring is at
    # least 32 bytes a row (ptopipe.protocol.geometry.split_push_problem)
    pipes = [replace(p, K=max(p.K, 64 // np.dtype(DTYPES[p.dtype][0]).itemsize))
             if platform == "a5" and not p.gm_dir and p.kind != "c2v" and p.split_v2c == "TILE_LEFT_RIGHT" else p
             for p in pipes]
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
      back before the Vector cores push more);
    * under pto-isa with SyncPeriod > 1, where the TFREE sends the free (not a tile TPOP from a
      GM ring, which frees itself), one: pto-isa's TFREE tests the index of the latest TPOP, so
      a tile freed after a later TPOP sends that TPOP's credit, not its own (docs/protocols.md,
      *The free index*)."""
    n = p.slot_num
    sync = (p.sync or (n if n <= 2 else n // 2)) if protocol == "pto-isa" else 1
    room = n - (sync - 1)
    if p.api == "tmpipe" and protocol == "pto-isa":
        room = 1        # pto-isa's TMPipe: one start-up credit, a wait before every push
    lag = min(p.lag, room - 1)
    in_gm = platform == "a2a3" or p.gm_dir
    staged = in_gm and p.flow == "tile" and (not p.pop_addr or protocol == "pto-isa")
    top = min(3, room, p.local_slot_num if staged else 3)
    if sync > 1 and p.api != "tmpipe" and not (in_gm and p.flow == "tile"):
        top = 1
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


def _rows(p: PipeSpec) -> tuple:
    """Rows of the tiles of pipe ``p``, by tile index modulo the length (``mixed``: a pipe
    that carries tiles of two sizes)."""
    return (p.M, p.M // 2) if p.mixed else (p.M,)


def _total_rows(p: PipeSpec) -> int:
    rows = _rows(p)
    return sum(rows[t % len(rows)] for t in range(p.tiles))


def _out_dtype(p: PipeSpec) -> str:
    """The output's dtype: the Acc type, or float16 (the Cube's TSTORE converts) with out16."""
    return "float16" if p.out16 else DTYPES[p.dtype][1]


def _direction(p: PipeSpec) -> str:
    return {"c2v": "DIR_C2V", "v2c": "DIR_V2C", "both": "DIR_BOTH"}[p.kind] + ("_GM" if p.gm_dir else "")


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
        if p.kind == "v2c":                  # the Acc stored (FIX converts to an f16 output)
            out[f"out{i}"] = y.astype(_out_dtype(p))
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
