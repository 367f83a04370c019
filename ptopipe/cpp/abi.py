"""The Python side of the C ABI a C++ kernel calls (``ptopipe/cpp/include/pto/pto-inst.hpp``).

Every instruction of a C++ kernel calls one function, ``callback(op, n, words, file, line)``:
``op`` an ABI id (:func:`ptopipe.cpp.headergen.op_names`), ``words`` its arguments (each a
kind word and its payload, :data:`~ptopipe.cpp.headergen.KINDS`), ``file:line`` its C++ call
site.  The :class:`Dispatcher` decodes the arguments into :mod:`ptopipe.isa` objects - Tiles it
made for the kernel's tile handles, GlobalTensors over GM, the pipes and events of this run,
enums from :mod:`ptopipe.arch.vocab` - sets the calling core's location to the C++ line and
calls the ISA instruction.  So the protocol, the checkers, the timing and the traces are
those of every other kernel; nothing here re-implements an instruction.

A call site is decoded once: a call's words split into its key (op, call site and every word
that names a fixed object: tile and pipe handles, enums, a tensor's shape) and its changing
values (:data:`CHANGING`: scalars, addresses, events); the first call with a key builds the
site's *prepared call* (:meth:`Dispatcher.prepare`) - the ISA function, its fixed operands and
its source location - and every later one only converts the changing values and calls it.
Two callbacks do that split: the C-API bridge (:mod:`.bridge`, ``bridge.cpp``: one vectorcall
per instruction) and, where it cannot be built, :meth:`Dispatcher.callback` through ctypes;
both reach the same prepared calls, so a run is the same either way.

The C++ code of a core runs on that core's greenlet (the kernel function is called from it
through ctypes), so a blocking instruction switches greenlets, C++ stack and all, and one
core runs at a time under ptopipe's scheduler.  An error raised by an instruction cannot
cross the C++ frames: the callback keeps it and returns ``ABORT``; the header throws a C++
exception that unwinds the kernel to its entry point, which returns 1, and the kernel's
Python wrapper raises the kept error (:meth:`Dispatcher.kernel`).

GM pointers handed to C++ are GM addresses in spaces of their own (:mod:`.gmview`: one space
per array argument), not host memory; behind them GM is mapped read-only, so ``p[0]`` reads
GM's bytes (the inputs, and the stores issued before the core's last ``pipe_barrier(PIPE_ALL)``
or ``wait_flag`` into ``PIPE_S``: this module applies the queued data work there) and a write
through one faults and is reported as a crash at its line.

A side's kernel must do something (:class:`KernelSide`): the wrapper counts the instructions
each core's kernel issued besides intra-core synchronisation, and a side with none on all its
cores - a body its build's side macros left out - is reported when the cluster's kernels end
(:meth:`Dispatcher.check_work`) or, when the other side waits for it, as a deadlock's cause.
"""
from __future__ import annotations

import ctypes
import struct
from functools import partial

import greenlet
import ml_dtypes
import numpy as np

from ..arch.dtypes import as_dtype, bfloat16
from ..arch.vocab import CUSTOM_PAD_BASE, GM_LAYOUTS, CustomPad, Direction
from ..codegen.pto_exec.values import ExecutedList
from ..errors import ConfigError, KernelError, PtoPipeError
from ..isa import mad_mode
from ..isa.events import Event, new_event, record
from ..isa.pipe.binding import end_scope
from ..isa.prefetch_async import EmptyAsyncEvent
from ..isa.tensor import PointerArg
from ..protocol.model import cluster_model, nosplit_one_lane, platform_kind
from ..sim import CoreKind
from ..sim.location import SourceLoc
from .. import isa
from .gmview import ARG_BITS, ARG_MASK, GM_BASE, SCALAR_SYNC, VIEW
from .headergen import (ABORT, DTYPES, KEYWORDS, KIND_WORDS, KINDS, MAX_WORDS, PIPE_STATUS, SPECIAL,
                        UNMODELLED_GM_LAYOUTS, enum_values, enums, op_names)

CALLBACK = ctypes.CFUNCTYPE(ctypes.c_int64, ctypes.c_int32, ctypes.c_int32, ctypes.c_void_p,
                            ctypes.c_void_p, ctypes.c_int32)
#: events an instruction returned that a kernel can still name (older ones are forgotten)
EVENT_WINDOW = 1 << 16
#: prepared calls kept (a kernel that makes tiles in a loop makes new keys: the cache starts over)
CACHE_LIMIT = 1 << 14
#: the bridge's front table of recent call keys (bridge.cpp): slots, and the most key words a
#: slot holds (a call with a longer key is looked up in the cache dict alone)
FRONT_SLOTS, FRONT_KEY = 512, 32
#: per argument kind, the payload word that may change between calls at one call site (its
#: position in the payload), and whether it is a double's bits; every other word is fixed there
CHANGING = {"INT": (0, False), "FLT": (0, True), "GT": (0, False), "EVENT": (0, False), "PTR": (0, False),
            "COUNTS": (0, False), "CONV": (0, False)}
#: the argument layout the bridge splits words by: three bytes per kind id (payload words,
#: 1 + the changing word or 0, 1 for a double's bits)
LAYOUT = bytes(b for k in range(max(KINDS.values()) + 1)
               for name in [next((n for n, v in KINDS.items() if v == k), None)]
               for b in ((KIND_WORDS[name], CHANGING[name][0] + 1, int(CHANGING[name][1]))
                         if name in CHANGING else (KIND_WORDS.get(name, 0), 0, 0)))

_K_INT, _K_FLT, _K_TILE, _K_GT, _K_PIPE, _K_EVENT, _K_ENUM, _K_PTR, _K_NULL, _K_KW, _K_COUNTS, _K_CONV = (
    KINDS[k] for k in ("INT", "FLT", "TILE", "GT", "PIPE", "EVENT", "ENUM", "PTR", "NULL", "KW", "COUNTS", "CONV"))
_CONV_WORDS = KIND_WORDS["CONV"]
_SPLIT = tuple((LAYOUT[3 * k], LAYOUT[3 * k + 1] - 1, LAYOUT[3 * k + 2]) for k in range(len(LAYOUT) // 3))
_OP_TPOP = op_names().index("TPOP")
_OP_TFREE = op_names().index("TFREE")
_GT_WORDS = KIND_WORDS["GT"]
_DTYPES = tuple(as_dtype(n) for n in DTYPES)
_ENUMS = tuple(enum_values(cls) for _n, cls, _ns, _s in enums())
_TILE_TYPES, _BLAYOUTS, _SLAYOUTS, _PADS = (enum_values(cls) for cls in (isa.TileType, isa.BLayout, isa.SLayout,
                                                                          isa.PadValue))
_PAD_TABLE = next(k for k, e in enumerate(enums()) if e[1] is isa.PadValue)
#: the C++ ``Layout`` value of NC1HWC0 (after the modelled ones: headergen.UNMODELLED_GM_LAYOUTS)
_NC1HWC0 = len(GM_LAYOUTS) + UNMODELLED_GM_LAYOUTS.index("NC1HWC0")
#: an integer kernel parameter's kind letter (ptopipe_entry.hpp ``int_kind``): its C type, and the
#: values it holds (None: any - a bool takes every integer, as C++ converts one)
INT_KINDS = {"b": ("bool", None), "a": ("int8_t", (-1 << 7, (1 << 7) - 1)), "h": ("int16_t", (-1 << 15, (1 << 15) - 1)),
             "i": ("int32_t", (-1 << 31, (1 << 31) - 1)), "l": ("int64_t", (-1 << 63, (1 << 63) - 1)),
             "A": ("uint8_t", (0, (1 << 8) - 1)), "H": ("uint16_t", (0, (1 << 16) - 1)),
             "I": ("uint32_t", (0, (1 << 32) - 1)), "L": ("uint64_t", (0, (1 << 64) - 1))}


#: a floating-point kernel parameter's kind letter (ptopipe_entry.hpp ``kind_of``): its C type and numpy dtype
FLOAT_KINDS = {"e": ("half", np.dtype(np.float16)), "B": ("bfloat16_t", bfloat16), "f": ("float", np.dtype(np.float32)),
               "d": ("double", np.dtype(np.float64))}


def float_word(label: str, name: str, kind: str, v) -> int:
    """The argument word of floating-point parameter ``name`` of kind ``kind`` (:data:`FLOAT_KINDS`)
    for the value ``v`` (a double's bits): a finite value beyond its type's largest is a ConfigError,
    as the conversion would make it an infinity (``scale=70000`` for a ``half scale``)."""
    if isinstance(v, isa.GlobalTensor):
        raise ConfigError(f"parameter {name!r} is a number, got {v!r}", where=label,
                          fix=f"pass a number for {name!r}")
    v = float(v)
    ctype, dtype = FLOAT_KINDS.get(kind, ("double", np.dtype(np.float64)))
    top = float(ml_dtypes.finfo(dtype).max)
    if abs(v) > top and abs(v) != float("inf"):
        raise ConfigError(f"parameter {name!r} is {ctype}, whose largest value is {top:g}: {v:g} would reach "
                          "the kernel as an infinity", where=label,
                          fix=f"pass a value within +-{top:g} for {name!r}, or declare the parameter with a wider type")
    return struct.unpack("<q", struct.pack("<d", v))[0]


def int_word(label: str, name: str, kind: str, v) -> int:
    """The argument word of integer parameter ``name`` of kind ``kind`` (:data:`INT_KINDS`) for
    the value ``v``: a value its C type cannot hold is a ConfigError, as the conversion would
    change it (``n=4294967299`` for an ``int n`` would run with n = 3); a uint64 above int64's
    range goes as its bit pattern."""
    if isinstance(v, isa.GlobalTensor) or isinstance(v, float) and not float(v).is_integer():
        raise ConfigError(f"parameter {name!r} is an integer, got {v!r}",
                          where=label, fix=f"pass an integer for {name!r}")
    v = int(v)
    ctype, span = INT_KINDS.get(kind, ("int64_t", None))
    if span is not None and not span[0] <= v <= span[1]:
        raise ConfigError(f"parameter {name!r} is {ctype}, which cannot hold {v}: the kernel would "
                          f"run with another value", where=label,
                          fix=f"pass a value from {span[0]} to {span[1]} for {name!r}, or declare the parameter "
                              "with a wider type")
    return v - (1 << 64) if v >= 1 << 63 else v


_WORDS = {}


def _pad(word: int):
    """The PadValue a C++ ``PadValue`` word means: an enumerator, or from CustomBase up a
    custom pad's bits (constants.hpp ``PadValueCustom``)."""
    return CustomPad(word & 0xFFFFFFFF) if word >= CUSTOM_PAD_BASE else _PADS[word]
_string_at = ctypes.string_at
_getcurrent = greenlet.getcurrent


def _pop_afresh(tile, *a):
    """The ABI's TPOP into a tile: every pop binds the tile afresh, as the DSL runtime's new
    tile per pop - what the C++ variable held before (its scoreboard times, checker state) is
    not a use of the slot popped now (a copy of the earlier value has a handle of its own).
    Its ring binding stays: it tells TPOP the address came from a ring, so the pop stages into
    the next staging slot (pto-isa's TPOP TASSIGNs tileIndex % LOCAL_SLOT_NUM) rather than
    loading in place at the last one (a tile the kernel placed itself has none: TASSIGN
    clears it).  One instruction to the fast-forward engine (sim.periodic): the fresh binding
    is part of the pop."""
    core = _getcurrent().core
    if core.ff is not None:
        return core.ff.call(core, _pop_afresh, (tile, *a), None)
    tile._push = tile.hbw = tile.hbu = None          # (its memory views stay: TPOP re-binds them)
    tile.ready_at = tile.read_end = 0
    return isa.TPOP(*a)


def _tmpop(pipe, tile, *rest):
    """``TPOP(tile, pipe)`` of a TMPipe: pto-isa's ``TPOP_IMPL(tile, pipe)``, whose pop of a GM
    FIFO frees the slot itself (``cons.free()`` inside; the kernel has no TFREE for it) - the
    ISA's TPOP, then its TFREE where the run's protocol does not free inside the pop already
    (``Channel.pop_frees``: the spec protocol); an A5 VEC / MAT FIFO's pop frees nothing (its
    TFREE does).  One instruction to the fast-forward engine (sim.periodic)."""
    core = _getcurrent().core
    if core.ff is not None:
        return core.ff.call(core, _tmpop, (pipe, tile, *rest), None)
    event = _pop_afresh(tile, pipe, tile, *rest)
    _tmpop_free(pipe)
    return event


def _tmpop_free(pipe) -> None:
    """What ``TPOP(tile, pipe)`` of a TMPipe does after the ISA's TPOP (:func:`_tmpop`)."""
    ch, side = pipe.consumer_end
    if ch.pop_frees:
        # the ISA's pop freed the slot and waits for a (no-op) TFREE to pair with it, which
        # this form has none of
        side.popped.pop()
        side.self_freed -= 1
    elif ch.in_gm:
        # the free is the GM slot's: the tile staged in the consumer's local FIFO stays the
        # kernel's until a later pop stages into its place (as after a pop that frees)
        h = side.held[0]
        side.held[0] = h[:-1] + (None,)
        isa.TFREE(pipe)
_double = struct.Struct("<d")
_int64 = struct.Struct("<q")


def _unpack(n: int):
    s = _WORDS.get(n)
    if s is None:
        s = _WORDS[n] = struct.Struct(f"<{n}q").unpack
    return s


def _as_float(bits: int) -> float:
    return _double.unpack(_int64.pack(bits))[0]


def _counts(_core, address: int) -> ExecutedList:
    """A kernel's MrgSortExecutedNumList (four uint16_t at ``address`` in the kernel's memory)
    as the ISA's: TMRGSORT's counts are written into the kernel's list."""
    return ExecutedList(np.ctypeslib.as_array((ctypes.c_uint16 * 4).from_address(address)))


class KernelSide:
    """A side (``aic`` / ``aiv``) whose C++ kernel must do something: ``name`` the function,
    ``where`` its file:line, ``macros(platform)`` the macros its build defined, ``sided``: the
    file tests the side macros (an empty body is then one they left out, unless ``kept(platform)``
    - :func:`~ptopipe.cpp.build.side_body_kept` - says the build kept the side's section: its
    code ran and, with these arguments, did nothing)."""

    def __init__(self, role: str, name: str, where: str, macros, sided: bool, kept=None):
        self.role, self.name, self.where, self.macros, self.sided = role, name, where, macros, sided
        self.kept = kept

    def compiled_away(self, platform) -> bool:
        """Did the build leave this side's body out: a sided file whose section for the side the
        build's macros drop (or one that cannot be told to be kept)?"""
        return self.sided and (self.kept is None or self.kept(platform) is not True)

    def what(self, set_up: bool = False, platform=None) -> str:
        """What an empty run of the side says; ``set_up``: its kernel made tiles or pipes (its
        body is there, the arguments gave it nothing to do); ``platform``: the run's, whose build
        decides whether a sided file's body compiled away."""
        from .build import SIDE_NAMES
        head = (f"the {SIDE_NAMES[self.role]} kernel {self.name} issued no PTO instruction besides intra-core "
                f"synchronisation (set_flag / wait_flag / pipe_barrier) on any {self.role.upper()} core")
        if set_up:
            return head + ": it set up tiles or pipes, and with these arguments did nothing with them"
        if self.sided and not self.compiled_away(platform):
            return head + ": its section for the side is compiled in, and with these arguments did nothing"
        return head + (": its body compiled away" if self.sided else ": its body does nothing")

    def error(self, platform) -> KernelError:
        return KernelError(self.what(platform=platform), where=self.where, fix=self.fix(platform))

    def warning(self, set_up: bool, platform=None) -> tuple:
        """The run warning ``(what, where)`` of an empty side that is not an error."""
        quiet = set_up or self.sided        # (a sided file's side is the file's: naming it is no fix)
        return (self.what(set_up, platform) + ("" if quiet else " (a side with nothing to do needs no kernel: "
                                                                "name only the other, --aic / --aiv)"), self.where)

    def fix(self, platform) -> str:
        from .build import SIDE_NAMES
        side = SIDE_NAMES[self.role]
        return (f"ptopipe compiled it with {' '.join('-D' + m for m in self.macros(platform))}, as the device "
                f"compiler builds the {side} side: a body under an #if of another side or platform is left out "
                "(run it with --platform of the one its #if names); a side with nothing to do needs no kernel "
                "(name only the other: --aic / --aiv)")

    def kind(self) -> CoreKind:
        return CoreKind.AIC if self.role == "aic" else CoreKind.AIV


def _scalar_sees_gm(core, what: str) -> None:
    """After ``what``, a synchronisation that makes the stores visible to the scalar unit: the
    queued data work applied, so the kernel's raw reads of GM (:mod:`.gmview`) see it.  A raw
    read cannot be seen, so while the fast-forward engine records (:mod:`ptopipe.sim.periodic`:
    the recorded blocks' data work is applied only with the exact state) the exact state first."""
    core.unrecorded(f"{what} (the scalar unit may read GM after it)")
    core.cluster.sync()


class Dispatcher:
    """The ABI of one run: the tiles, pipes and events its C++ kernels hold handles of, and
    the prepared call of each call site."""

    def __init__(self):
        self.tiles = [None]
        self.aliases = set()            # id(Tile) of tiles TRESHAPE bound to their source's storage
        self.pipes = [None]
        # the events a kernel can name, field by field (op, core, end): no Event tuple stays
        # alive per instruction for the collector to walk
        self.ev_op = [None] * EVENT_WINDOW
        self.ev_core = [None] * EVENT_WINDOW
        self.ev_end = [0] * EVENT_WINDOW
        self.files = {}
        self.sites = {}
        self.errors = {}
        self.regions = []               # [(lo, hi, GlobalTensor)] of the GM arguments
        # what each side's C++ kernel did on the cluster running it: (cluster, {role: [KernelSide,
        # instructions besides intra-core synchronisation, tiles and pipes it made]}); while a
        # core's kernel runs, core -> [instructions its sync calls issued, tiles and pipes made]
        self.work = None
        self.running = {}
        self.bounds = []                # their GMPtr bounds, named as the C++ pointers (PointerArg)
        # an operation is an ISA function whose Event the kernel gets (every instruction of the
        # catalogue, TPUSH, TFREE), or a handler(core, operands) for the rest
        ops = {name: getattr(self, "op_" + name) for name in SPECIAL + ("TRESHAPE",) if hasattr(self, "op_" + name)}
        self.handlers = [ops.get(name) for name in op_names()]
        self.functions = [None if name in ops else getattr(isa, name) for name in op_names()]
        self.first_instruction = len(SPECIAL)
        #: call key -> entry: (prepared call, its SourceLoc, whether it returns an Event to keep)
        self.cache = {}
        self.fixed_calls = {}           # (the ctypes callback's) call words -> entry, for calls with no changing value
        self.c_callback = CALLBACK(self.callback)
        #: what the bridge reads at words[-4] (bridge.cpp: the same order)
        self.context = (self.cache, self.miss, LAYOUT, _getcurrent, self.errors, self.ev_op, self.ev_core,
                        self.ev_end, EVENT_WINDOW, self.keep, Event, [None, None])
        self.front = (ctypes.c_int64 * (2 + FRONT_SLOTS * (4 + FRONT_KEY)))(FRONT_SLOTS, FRONT_KEY)
        #: shared with the kernel libraries (from word 4 on): the last call site (2 words), then a
        #: call's words; before them what the bridge reads: its context, the number of events
        #: made, the generation of the cache (:meth:`forget`) and the front table's address
        self.shared = (ctypes.c_int64 * (6 + MAX_WORDS))(id(self.context), 0, 0, ctypes.addressof(self.front))
        self.words = memoryview(self.shared).cast("B")[48:]

    @property
    def shared_address(self) -> int:
        """The buffer address the kernel libraries are given (``ptopipe_init``)."""
        return ctypes.addressof(self.shared) + 32

    def forget(self) -> None:
        """Empty the call cache (and so the bridge's front table, by its generation)."""
        self.cache.clear()
        self.fixed_calls.clear()
        self.shared[2] += 1

    @property
    def nevents(self) -> int:
        return self.shared[1]

    # -- the callbacks ---------------------------------------------------------------------------
    def callback(self, op, n, words, file, line):
        """The ctypes callback: bridge.cpp's call, in Python (a call whose words never change
        is found by them, without splitting them)."""
        try:
            file = file or 0
            raw = (op, line, file, self.words[:8 * n].tobytes() if n > 0 else n)
            entry = self.fixed_calls.get(raw)
            if entry is not None:
                return self.run(entry, ())
            key, vals = self.split(op, n, file, line)
            entry = self.cache.get(key) if key is not None else None
        except BaseException as e:   # noqa: BLE001 - every exception crosses back as ABORT
            self.errors[_getcurrent()] = e
            return ABORT
        if entry is None:
            return self.miss(op, n, file, line, key)
        if not vals:
            self.fixed_calls[raw] = entry
        return self.run(entry, vals)

    def run(self, entry, vals) -> int:
        """A call of prepared ``entry`` with changing values ``vals``: the core's location set,
        its Event kept; an error kept for the kernel's wrapper (ABORT)."""
        call, loc, keeps = entry
        try:
            _getcurrent().core.loc_override = loc
            r = call(*vals)
            return self.keep(r) if keeps else r
        except BaseException as e:   # noqa: BLE001
            self.errors[_getcurrent()] = e
            return ABORT

    def split(self, op: int, n: int, file: int, line: int):
        """(key bytes or None, changing values) of the call in the shared words, as bridge.cpp
        makes them (None: words that are not arguments of this ABI, or too many)."""
        key, vals = [op, line, file, n], []
        if n < 0:
            return None, vals
        w = _unpack(n)(self.words[:8 * n])
        i = 0
        while i < n:
            k = w[i]
            i += 1
            key.append(k)
            if k < 0 or k >= len(_SPLIT) or i + _SPLIT[k][0] > n:
                return None, vals
            size, changing, is_float = _SPLIT[k]
            if changing < 0:
                key.extend(w[i:i + size])
            else:
                key.extend(w[i:i + changing])
                vals.append(_as_float(w[i + changing]) if is_float else w[i + changing])
                key.extend(w[i + changing + 1:i + size])
            i += size
        return struct.pack(f"<{len(key)}q", *key), vals

    def miss(self, op, n, file, line, key):
        """A call whose key has no entry yet: decode it, keep its entry under ``key`` (None: not
        to be kept) and run it."""
        try:
            core = _getcurrent().core
            loc = self.sites.get((file, line))
            if loc is None:
                loc = self.sites[(file, line)] = self._site(file, line)
            core.loc_override = loc
            if n < 0:
                raise KernelError(f"{op_names()[op]} has more arguments than ptopipe's C++ ABI carries "
                                  f"({MAX_WORDS} words)", fix="pass fewer operands / wait events")
            entry, vals = self.prepare(op, _unpack(n)(self.words[:8 * n]), loc)
        except BaseException as e:   # noqa: BLE001 - every exception crosses back as ABORT
            self.errors[_getcurrent()] = e
            return ABORT
        if key is not None:
            if len(self.cache) >= CACHE_LIMIT:
                self.forget()
            self.cache[key] = entry
        return self.run(entry, vals)

    def _site(self, file, line) -> SourceLoc:
        name = self.files.get(file)
        if name is None:
            name = self.files[file] = _string_at(file).decode(errors="replace") if file else "?"
        return SourceLoc(name, line, None, None)

    def raise_pending(self, frames=None, libs=()):
        """In a kernel's wrapper after its C++ unwound: raise the error the callback kept (with
        the kernel lines that called its call site: ``frames``, the library's
        ``ptopipe_abort_frames``, and the kernel libraries' paths ``libs``)."""
        g = _getcurrent()
        e = self.errors.pop(g, None)
        if e is None:
            raise KernelError("the C++ kernel stopped without an error from the simulator")
        if frames is not None:
            # a kernel suspended in a call, unwound as the run ends with another error (a
            # deadlock at that call): its frames give that error the lines that called it
            failing = e if isinstance(e, PtoPipeError) else getattr(g.core.cluster, "raising", None) \
                if isinstance(e, greenlet.GreenletExit) else None
            if isinstance(failing, PtoPipeError):
                from .callers import abort_frames, with_callers
                with_callers(failing, abort_frames(frames), libs)
        raise e

    # -- prepared calls ----------------------------------------------------------------------------
    def prepare(self, op: int, w, loc):
        """(the entry of a call site, this call's changing values) for op ``op`` with argument
        words ``w``: its fixed operands decoded here, once; the changing ones (at
        :data:`CHANGING` words) converted at each call.  A tensor operand of a tile instruction
        is one GlobalTensor per core and call site, re-pointed at each call (as the DSL runtime's
        load / store sites are, per core), not made anew."""
        fixed, slots, vals, kw = [], [], [], {}
        instruction = op >= self.first_instruction
        i, n = 0, len(w)
        while i < n:
            k = w[i]
            if k == _K_TILE:
                fixed.append(self.tiles[w[i + 1]])
                i += 2
            elif k == _K_INT or k == _K_FLT:
                slots.append((len(fixed), None))
                fixed.append(None)
                vals.append(w[i + 1] if k == _K_INT else _as_float(w[i + 1]))
                i += 2
            elif k == _K_GT:
                g = w[i + 1:i + 1 + _GT_WORDS]
                slots.append((len(fixed), self._windows(g, loc) if instruction else self._tensors(g, loc)))
                fixed.append(None)
                vals.append(g[0])
                i += 1 + _GT_WORDS
            elif k == _K_ENUM:
                fixed.append(self.enum(w[i + 1], w[i + 2], loc))
                i += 3
            elif k == _K_PIPE:
                fixed.append(self.pipes[w[i + 1]])
                i += 2
            elif k == _K_EVENT:
                slots.append((len(fixed), self._event_of))
                fixed.append(None)
                vals.append(w[i + 1])
                i += 2
            elif k == _K_PTR:
                slots.append((len(fixed), self._pointers(w[i + 2])))
                fixed.append(None)
                vals.append(w[i + 1])
                i += 3
            elif k == _K_NULL:
                fixed.append(None)
                i += 1
            elif k == _K_CONV:              # a ConvTile: its handle (changing) and its fields (fixed)
                slots.append((len(fixed), partial(self._conv, tuple(w[i + 2:i + 1 + _CONV_WORDS]))))
                fixed.append(None)
                vals.append(w[i + 1])
                i += 1 + _CONV_WORDS
            elif k == _K_COUNTS:
                slots.append((len(fixed), _counts))
                fixed.append(None)
                vals.append(w[i + 1])
                i += 2
            elif k == _K_KW:                # a mode template argument: a keyword of the Python form
                kw[KEYWORDS[w[i + 1]]] = self.enum(w[i + 2], w[i + 3], loc) if w[i + 2] >= 0 else w[i + 3]
                i += 4
            else:
                raise KernelError(f"argument kind {k} is not part of ptopipe's C++ ABI (a kernel built "
                                  "against other headers?)", fix="rebuild against ptopipe --include")
        fn = self.functions[op]
        if op == _OP_TPOP and not slots and isinstance(fixed[1], isa.Tile):
            fn = self._pop_tile(fixed)
        elif op == _OP_TFREE and len(fixed) > 2 and fixed[2] is None:
            # the headers' TFREE<Pipe>(pipe) / TFREE(pipe) send no split (the C++ forms with one
            # always do): pto-isa's form without a split, the library's own
            fn = partial(fn, unsplit=True)
        elif kw and fn is not None:
            fn = partial(fn, **kw)
        return (self._call(op, fn, fixed, tuple(slots)), loc, fn is not None), vals

    @staticmethod
    def _pop_tile(fixed: list):
        """A TPOP into a tile (with no wait events): op_TPOP's fresh binding of the tile, then
        the pop (whose Event the kernel gets)."""
        return partial(_pop_afresh, fixed[1])

    def _call(self, op, fn, fixed: list, slots: tuple):
        """The prepared call of an op with operands ``fixed`` whose positions in ``slots`` take
        the changing values (each through its converter, or as it is): the ISA function bound to
        its fixed operands where it can be (no Python frame of ours per call)."""
        if fn is None:
            handler = self.handlers[op]
            if not slots:
                return lambda: handler(_getcurrent().core, fixed)

            def call(*vals):
                core = _getcurrent().core
                a = fixed.copy()
                for (pos, conv), v in zip(slots, vals):
                    a[pos] = v if conv is None else conv(core, v)
                return handler(core, a)
            return call
        first = len(fixed) - len(slots)
        if all(conv is None and pos == first + j for j, (pos, conv) in enumerate(slots)):
            return partial(fn, *fixed[:first])        # the changing operands are its last ones
        if len(slots) == 1:                           # (one converted operand: a tensor's address)
            (pos, conv), = slots

            def call(v):
                a = fixed.copy()
                a[pos] = v if conv is None else conv(_getcurrent().core, v)
                return fn(*a)
            return call

        def call(*vals):
            core = _getcurrent().core
            a = fixed.copy()
            for (pos, conv), v in zip(slots, vals):
                a[pos] = v if conv is None else conv(core, v)
            return fn(*a)
        return call

    def _windows(self, g, loc):
        """The converter of a tile instruction's tensor operand ``g`` (its words: KIND_WORDS):
        the calling core's GlobalTensor of this site, pointed at the call's address."""
        code, shape, stride, layout = g[1], g[2:7], g[7:12], self.layout(g[12], loc)
        per_core = {}

        def conv(core, p):
            w = per_core.get(core)
            if w is None:
                w = per_core[core] = [self.tensor(p, code, shape, stride, layout), p]
            elif p != w[1]:
                gt, d = w[0], p - w[1]
                if (p ^ w[1]) >> ARG_BITS == 0 and d % gt.item == 0:
                    gt.ptr = gt.ptr + d // gt.item        # the same argument: GMPtr keeps its bounds
                else:
                    gt.assign(self.pointer(p, code))
                w[1] = p
            return w[0]
        return conv

    def _tensors(self, g, loc):
        code, shape, stride, layout = g[1], g[2:7], g[7:12], self.layout(g[12], loc)
        return lambda core, p: self.tensor(p, code, shape, stride, layout)

    @staticmethod
    def layout(value: int, loc=None):
        """The GM layout (``arch.vocab.GM_LAYOUTS``) of C++ ``Layout`` value ``value``."""
        if 0 <= value < len(GM_LAYOUTS):
            return GM_LAYOUTS[value]
        if value == _NC1HWC0:
            raise KernelError("a Layout::NC1HWC0 GlobalTensor here: ptopipe moves an NC1HWC0 tensor only into a "
                              "ConvTile (TLOAD(convTile, tensor))", where=loc and str(loc),
                              fix="load the feature map into an NC1HWC0 ConvTile; store results through an ND "
                                  "GlobalTensor (an Acc tile's rows are the output positions, NHWC)")
        raise KernelError(f"GlobalTensor layout value {value} is not one of ptopipe's "
                          f"{', '.join(f'Layout::{l.name}' for l in GM_LAYOUTS)}", where=loc and str(loc),
                          fix="declare the GlobalTensor with Layout::ND, Layout::DN or Layout::NZ")

    def _conv(self, fields: tuple, core, handle: int):
        """A ConvTile operand: the tile of ``handle`` with the fields its C++ object had at the call."""
        return self.tiles[handle].set_words(fields)

    def _pointers(self, code):
        return lambda core, p: self.pointer(p, code)

    def _event_of(self, core, eid):
        return self.event(eid)

    @staticmethod
    def enum(table: int, value: int, loc=None):
        """The member of enum ``table`` (:func:`~ptopipe.cpp.headergen.enums`) with C++ value
        ``value``; not one is an error at ``loc`` (the call site)."""
        try:
            return _ENUMS[table][value] if table != _PAD_TABLE else _pad(value)
        except (IndexError, KeyError):
            name = enums()[table][0] if 0 <= table < len(_ENUMS) else f"enum #{table}"
            raise KernelError(f"enum value {value} is not a value of {name}", where=loc and str(loc),
                              fix="pass one of the enumerators") from None

    def event(self, eid: int):
        if eid == 0:
            return None
        if eid <= self.nevents - EVENT_WINDOW:
            raise KernelError(f"the event of instruction #{eid} is older than the last {EVENT_WINDOW} "
                              "instructions' events ptopipe keeps", fix="wait on events soon after they are made")
        i = eid % EVENT_WINDOW
        return new_event((self.ev_op[i], self.ev_core[i], self.ev_end[i]))

    def keep(self, e) -> int:
        """The id a kernel names Event ``e`` by (0: no event)."""
        if e is None:
            return 0
        if not isinstance(e, Event):
            if e.__class__ is EmptyAsyncEvent:      # (TPREFETCH_ASYNC's: comm::AsyncEvent handle 0)
                return 0
            raise KernelError(f"the instruction returned {type(e).__name__}, not an Event",
                              fix="report this: every instruction returns its Event")
        self.shared[1] = n = self.shared[1] + 1
        i = n % EVENT_WINDOW
        self.ev_op[i], self.ev_core[i], self.ev_end[i] = e
        return n

    def pointer(self, p: int, code: int):
        """A C++ GM pointer as a GMPtr: in the space of the argument it was derived from, with
        that argument's bounds (so a view past its end is reported, not read from the next)."""
        off = p - GM_BASE
        k = (off >> ARG_BITS) - 1
        if p == 0 or off < 0 or k >= len(self.regions):
            raise KernelError(f"pointer {p:#x} is not a GM address ptopipe handed to the kernel",
                              fix="derive GM pointers from the kernel's __gm__ parameters")
        if k < 0:
            return isa.GMPtr(off, _DTYPES[code])
        return isa.GMPtr(off & ARG_MASK, _DTYPES[code], self.bounds[k])

    def fake(self, addr: int) -> int:
        """The C++ pointer of GM address ``addr``: in the space of the argument holding it."""
        for k, (lo, hi, _gt) in enumerate(self.regions):
            if lo <= addr < hi:
                return GM_BASE + ((k + 1) << ARG_BITS) + addr
        return GM_BASE + addr

    def tensor(self, p, code, shape, stride, layout=GM_LAYOUTS[0]):
        if any(s < 0 for s in shape) or any(s < 0 for s in stride):
            raise KernelError(f"GlobalTensor shape {list(shape)} / stride {list(stride)} has a DYNAMIC "
                              "dimension that was not given", fix="construct the Shape / Stride with its values")
        if p == 0:
            return isa.GlobalTensor(_DTYPES[code], shape, stride, layout=layout)     # an address-flow descriptor
        return isa.GlobalTensor(self.pointer(p, code), shape, stride, layout=layout)

    # -- instructions ------------------------------------------------------------------------
    def _set_up(self, core) -> None:
        """A tile or pipe made by a core's kernel: its body is there (see :meth:`check_work`)."""
        r = self.running.get(core)
        if r is not None:
            r[1] += 1

    def op_CONV_NEW(self, core, a):
        """A C++ ConvTile's first use: its Python :class:`~ptopipe.isa.convtile.ConvTile` (the
        NC1HWC0 shape its C++ type static_asserts)."""
        self._set_up(core)
        code, *shape = a
        t = isa.ConvTile(isa.TileType.Mat, _DTYPES[code], tuple(shape))
        self.tiles.append(t)
        return len(self.tiles) - 1

    def op_TILE_NEW(self, core, a):
        self._set_up(core)
        loc, code, rows, cols, bl, vr, vc, sl, pad = a
        t = isa.Tile(_TILE_TYPES[loc], _DTYPES[code], rows, cols, _BLAYOUTS[bl], vr, vc, _SLAYOUTS[sl],
                     pad=_pad(pad))
        self.tiles.append(t)
        return len(self.tiles) - 1

    def op_TRESHAPE(self, core, a):
        # pto-isa's TRESHAPE aliases a destination that has no storage of its own to the
        # source's (its A2A3 form), as kernels use it to view a tile in another shape
        # (and again at every TRESHAPE: the source may be a handle re-bound since)
        dst, src = a[0], a[1]
        if isinstance(dst, isa.Tile) and isinstance(src, isa.Tile) and src.addr is not None and \
                (dst.addr is None or id(dst) in self.aliases):
            isa.TASSIGN(dst, src.addr)
            self.aliases.add(id(dst))
        return self.keep(isa.TRESHAPE(*a))

    def op_TASSIGN(self, core, a):
        self.aliases.discard(id(a[0]))
        isa.TASSIGN(a[0], a[1])
        return 0

    def op_TILE_ADDR(self, core, a):
        t = a[0].tile if isinstance(a[0], isa.ConvTile) else a[0]
        if t.addr is None:
            raise KernelError(f"data() of a tile with no address: {t.describe()} was never bound",
                              where=str(core.where()), fix="bind it first: TASSIGN(tile, addr), or TPOP into it")
        return t.addr

    def op_TILE_GET(self, core, a):
        """``tile.GetValue(offset)``: the element's bits (zero-extended), which the C++ side reads back."""
        t, offset = a
        raw = int(np.asarray(t.GetValue(offset)).view(f"u{t.item}"))
        return raw - (1 << 64) if raw >= 1 << 63 else raw         # (an int64 word)

    def op_TILE_SET(self, core, a):
        """``tile.SetValue(offset, value)``, the value as its bits."""
        t, offset, bits = a
        t.SetValue(offset, np.array(bits & ((1 << (8 * t.item)) - 1), f"u{t.item}").view(t.dtype)[()])
        return 0

    def op_EVENT_RECORD(self, core, a):
        """``Event<SrcOp, DstOp>::Init()`` / ``Record()``: the event of SrcOp's pipe as it stands."""
        return self.keep(record(a[0]))

    def op_MAD_MODE(self, core, a):
        """``tile.SetMadTF32Mode(mode)`` (a RoundMode) / ``tile.ResetMadMode()`` (no argument)."""
        if a:
            mad_mode.set_tf32(a[0])
        else:
            mad_mode.reset()
        return 0

    def op_SETVALID(self, core, a):
        a[0].SetValid(a[1], a[2])
        return 0

    def op_TPIPE(self, core, a):
        self._set_up(core)
        flag, d, size, num, local, nosplit, c2v, v2c, gm = a
        # the lanes of the device's pipe, the one the kernel is written for (pto-isa's CPU
        # simulator too runs a one-lane pipe: it then waits for a second Vector thread only to
        # release slots, ProtocolModel.lost_lanes)
        peers = (0,) if nosplit and nosplit_one_lane(platform_kind(core.cluster.platform)) else (0, 1)
        sim_lanes = ()
        if peers == (0,) and d in (Direction.DIR_C2V, Direction.DIR_C2V_GM) and \
                cluster_model(core.cluster).nosplit_c2v_all_lanes:
            # pto-isa's CPU simulator runs a C2V IsNoSplit pipe with every Vector thread it has
            # (its dual-lane protocol, cpu/TPush.hpp IsDualLaneC2VActive): AIV1 may pop and free
            # each tile too (it gets zeros), and a slot is released once both lanes freed it
            peers, sim_lanes = (0, 1), (1,)
        gm = self._whole(gm)
        try:
            direction = Direction(d)
        except ValueError:
            raise ConfigError(f"invalid pipe direction {d}", where=str(core.where()),
                              fix="use DIR_C2V, DIR_V2C, DIR_BOTH, DIR_V2C_CTRL or a *_GM direction (A5)") from None
        pipe = isa.TPipe(flag, direction, size, num, local, peers=peers, one_lane=bool(nosplit),
                         sim_lanes=sim_lanes)(gm, c2v, v2c)
        self.pipes.append(pipe)
        return len(self.pipes) - 1

    def op_TMPIPE(self, core, a):
        self._set_up(core)
        flag, depth, sync_t, unit, local_depth, local, fifo, ratio, *rest = a
        prod, cons = (isa.Tile(_TILE_TYPES[t[0]], _DTYPES[t[1]], t[2], t[3]) for t in (rest[0:4], rest[4:8]))
        gm = self._whole(rest[8])
        cfg = isa.TMPipe(flag, fifo, depth, sync_t, prod, cons, bool(unit), local_depth, ratio)
        pipe = cfg(gm, local, 0) if cfg.direction is Direction.DIR_C2V else cfg(gm, 0, local)
        self.pipes.append(pipe)
        return len(self.pipes) - 1

    def op_PIPE_END(self, core, a):
        """A TPipe / TMPipe object's destructor: the core may construct the pipe again
        (``isa.pipe.binding.end_scope``; its teardown runs then, or at kernel end)."""
        end_scope(a[0])
        return 0

    def _whole(self, gm):
        """A GM slot buffer pointer at the start of an argument as that whole argument (its
        size is then checked against the ring, as a Python kernel's is)."""
        if gm is not None:
            for lo, _hi, gt in self.regions:
                if gm.addr == lo and gm.bounds is gt.ptr.bounds:
                    return gt
        return gm

    def op_TPOP(self, core, a):
        obj = a[1]
        if isinstance(obj, isa.GlobalTensor):
            isa.TPOP(*a)
            return self.fake(obj.ptr.addr)
        # every pop binds the tile afresh, as the DSL runtime's new tile per pop: what the C++
        # variable held before (its scoreboard times, checker state) is not a use of the slot
        # popped now (a copy of the earlier value has a handle of its own).  Its ring binding
        # stays: it tells TPOP the address came from a ring, so the pop stages into the next
        # staging slot (pto-isa's TPOP TASSIGNs tileIndex % LOCAL_SLOT_NUM) rather than loading
        # in place at the last one (a tile the kernel placed itself has none: TASSIGN clears it)
        return self.keep(_pop_afresh(obj, *a))

    def op_TMPOP(self, core, a):
        """``TPOP(tile, pipe)`` of a TMPipe (:func:`_tmpop`)."""
        if isinstance(a[1], isa.GlobalTensor):
            r = self.op_TPOP(core, a)
            _tmpop_free(a[0])
            return r
        return self.keep(_tmpop(*a))

    def op_PIPE_STATUS(self, core, a):
        """``pipe.prod.setAllocateStatus(on)`` ... (headergen.PIPE_STATUS): the switch of the
        pipe's producer / consumer side on this core (``PipeHandle.prod`` / ``.cons``)."""
        pipe, which, on = a
        name = PIPE_STATUS[which]
        side = pipe.prod if name in ("setAllocateStatus", "setRecordStatus") else pipe.cons
        getattr(side, name)(bool(on))
        return 0

    def op_SUBBLOCK_ID(self, core, a):
        """The sub-block id a ``TPUSH`` (0) / ``TPOP`` (1) of a TPipe names explicitly (pto-isa's
        ``subBlockId`` argument): the Vector lane whose part of the slot it moves.  ptopipe models
        each lane moving its own part; the Cube moves the whole tile and does not read it."""
        op, sub = ("TPUSH", "TPOP")[a[0]], a[1]
        if core.kind is CoreKind.AIV and sub != core.subblock:
            raise KernelError(f"{op} with subBlockId {sub} on {core.name}: it would move sub-block {sub}'s "
                              f"part of the slot, and ptopipe models each Vector lane moving its own",
                              where=str(core.where()),
                              fix=f"pass get_subblockid() ({core.subblock} here), or leave the id out")
        return 0

    def op_TALLOC(self, core, a):
        isa.TALLOC(*a)
        return self.fake(a[1].ptr.addr)

    def op_TSYNC(self, core, a):
        isa.TSYNC(*a)
        return 0

    op_TSYNC_OP = op_TSYNC

    def _sync(self, core, fn, a) -> int:
        """An intra-core sync call, its instructions counted apart (they are not the kernel's work)."""
        n = core.instructions
        fn(*a)
        r = self.running.get(core)
        if r is not None:
            r[0] += core.instructions - n
        return 0

    def op_set_flag(self, core, a):
        return self._sync(core, isa.set_flag, a)

    def op_wait_flag(self, core, a):
        self._sync(core, isa.wait_flag, a)
        if a[1] is SCALAR_SYNC[1] and VIEW.maps:       # the scalar unit waits: GM reads see the stores
            _scalar_sees_gm(core, "wait_flag into PIPE_S")
        return 0

    def op_pipe_barrier(self, core, a):
        self._sync(core, isa.pipe_barrier, a)
        if a[0] is SCALAR_SYNC[0] and VIEW.maps:
            _scalar_sees_gm(core, "pipe_barrier(PIPE_ALL)")
        return 0

    def op_SYNCALL(self, core, a):
        """``SYNCALL<CoreType>()`` / ``SYNCALL<Mode, CoreType>(gmWorkspace, usedCores)``: the
        barrier drains the core's pipes, so the kernel's scalar GM reads after it see every
        participant's stores."""
        self._sync(core, isa.SYNCALL, a)
        if VIEW.maps:
            core.cluster.sync()
        return 0

    def _cross_core(self, core, fn, a) -> int:
        """A cross-core flag instruction of the kernel's own: a WAIT holds the core until the
        SET, so the kernel's scalar GM reads after it see the stores the SET ordered."""
        self._sync(core, fn, a)
        if VIEW.maps:
            core.cluster.sync()
        return 0

    def op_ffts_cross_core_sync(self, core, a):
        return self._cross_core(core, isa.ffts_cross_core_sync, a)

    def op_wait_flag_dev(self, core, a):
        return self._cross_core(core, isa.wait_flag_dev, a)

    def op_set_intra_block(self, core, a):
        return self._cross_core(core, isa.set_intra_block, a)

    def op_wait_intra_block(self, core, a):
        return self._cross_core(core, isa.wait_intra_block, a)

    def op_get_subblockid(self, core, a):
        return isa.get_subblockid()

    def op_get_block_idx(self, core, a):
        return isa.get_block_idx()

    def op_get_block_num(self, core, a):
        return isa.get_block_num()

    def op_get_subblockdim(self, core, a):
        return isa.get_subblockdim()

    # -- kernels ---------------------------------------------------------------------------------
    def kernel(self, run_fn, sig: str, params: list, label: str, elements: list | None = None,
               side: "KernelSide | None" = None, frames=None, libs=(), start: tuple | None = None,
               stop_at=None):
        """A Python kernel function (for :func:`ptopipe.isa.run`) that calls C++ entry point
        ``run_fn`` with the run's arguments, by the C++ parameter names ``params``; an array
        for a pointer to another element type (``elements``: the declared ones, None where
        unknown) is a ConfigError: the kernel would read its bytes as its own type.  With
        ``side``, a run in which every core of that side returned from the kernel having issued
        no instruction besides intra-core synchronisation is reported (:meth:`check_work`).
        ``start`` (file, line word): the call site the kernel leaves on the crash descriptor
        as it starts, which a crash or a kill before its first instruction names
        (``runner.site_state``).  ``stop_at(deadline)``: gives the library the run's wall-clock
        bound before each call (a run in this process: ``runner._stop_at``)."""
        if len(sig) != len(params):
            raise ConfigError(f"{label}: found {len(params)} parameters in the source, the compiled "
                              f"function has {len(sig)}", fix="declare the kernel with plain parameters")
        argv_t = ctypes.c_int64 * max(1, len(params))
        me = self
        start_file = ctypes.create_string_buffer(start[0].encode()) if start else None    # (kept alive here)
        start_line = start[1] if start else 0

        def kernel(**kw):
            gts = [v for v in kw.values() if isinstance(v, isa.GlobalTensor)]
            if [r[2] for r in me.regions] != gts:       # a new run: its arguments' spaces
                me.regions = [(v.ptr.addr, v.ptr.addr + v.nbytes, v) for v in gts]
                me.bounds = [b if b is None or not isinstance(b[2], str) else (b[0], b[1], PointerArg(b[2]))
                             for b in (v.ptr.bounds for v in gts)]
                me.forget()
            core = _getcurrent().core
            # GM behind the kernel's pointers: this run's (a launch has a GM of its own)
            VIEW.show(core.cluster.gm, [(lo, hi) for lo, hi, _gt in me.regions])
            words = []
            for name, kind in zip(params, sig):
                if name not in kw:
                    raise ConfigError(f"the C++ kernel needs argument {name!r}", where=label,
                                      fix=f"give it: --input {name}=FILE.npy (or args={{{name!r}: ...}})")
                v = kw[name]
                if kind == "p" and v is None:       # nullptr (pto-isa's tests: a matmul's absent bias)
                    words.append(0)
                elif kind == "p":
                    if not isinstance(v, isa.GlobalTensor):
                        raise ConfigError(f"parameter {name!r} is a GM pointer, got {type(v).__name__}",
                                          where=label, fix=f"pass a numpy array for {name!r} (None: nullptr)")
                    want = elements[len(words)] if elements else None
                    # raw bytes (gm_buffer's uint8: a ring's GM_SLOT_BUFFER) are untyped memory
                    if want is not None and v.dtype != want and v.dtype != np.uint8:
                        lib = "np" if want.type.__module__ == "numpy" else want.type.__module__
                        fix = f"convert the array: {name}.astype({lib}.{want})"
                        if want.kind == "V":      # numpy saves bf16 / float8 as void: the CLI takes that
                            fix += (f" (--input {name}=FILE.npy: np.save(FILE, x.astype({lib}.{want})), or its "
                                    f"bits x.view(np.uint{8 * want.itemsize}); in Python, view bits as "
                                    f"{name}.view({lib}.{want}))")
                        else:
                            fix += f" (--input {name}=FILE.npy: save that array)"
                        raise ConfigError(
                            f"argument {name!r} is an array of {v.dtype}, but parameter {name!r} "
                            f"points to {want} elements: the kernel would read its bytes as {want}",
                            where=label, fix=fix)
                    words.append(me.fake(v.ptr.addr))
                elif kind == "c":       # a pto::MrgSortExecutedNumList by value: a copy of 4 counts
                    if not isinstance(v, isa.GlobalTensor) or v.dtype.kind not in "iu" or v.dtype.itemsize != 2 \
                            or v.nbytes != 8:
                        got = (f"an array of {v.nbytes // v.dtype.itemsize} {v.dtype}" if isinstance(v, isa.GlobalTensor)
                               else type(v).__name__)
                        raise ConfigError(f"parameter {name!r} is a pto::MrgSortExecutedNumList (four 16-bit "
                                          f"counts, taken by value), got {got}", where=label,
                                          fix=f"pass a numpy array of 4 int16 / uint16 values for {name!r}")
                    words.append(me.fake(v.ptr.addr))
                elif kind in FLOAT_KINDS:
                    words.append(float_word(label, name, kind, v))
                else:
                    words.append(int_word(label, name, kind, v))
            if start_file is not None:      # (shared words 4 and 5: the libraries' call site)
                me.shared[4], me.shared[5] = ctypes.addressof(start_file), start_line
            if stop_at is not None:
                stop_at(core.cluster.deadline)
            if side is None:
                if run_fn(argv_t(*words)) != 0:
                    me.raise_pending(frames, libs)
                return
            start, me.running[core] = core.instructions, [0, 0]
            try:
                if run_fn(argv_t(*words)) != 0:
                    me.raise_pending(frames, libs)
            finally:
                synced, made = me.running.pop(core, (0, 0))
            me.did(core.cluster, side, core.instructions - start - synced, made)
        kernel.__name__ = label
        kernel.maps_gm = True           # its pointers read GM (gmview): GM must be shareable
        return kernel

    def did(self, cluster, side: "KernelSide", n: int, made: int) -> None:
        """``side``'s kernel returned on a core of ``cluster`` having issued ``n`` instructions
        besides intra-core synchronisation and made ``made`` tiles and pipes; the cluster checks
        them all when its kernels end."""
        if self.work is None or self.work[0] is not cluster:
            self.work = (cluster, {})
            cluster.finishers.append(self.check_work)
            cluster.hinters.insert(0, self.empty_cause)     # before the pipe layer's: the root cause
        rec = self.work[1].setdefault(side.role, [side, 0, 0])
        rec[1] += n
        rec[2] += made

    def empty_cause(self, cluster, blocked) -> dict | None:
        """A deadlock's cause (:mod:`ptopipe.sim.deadlock`'s hinter): a side of a sided file
        whose cores all returned having done nothing - its peers wait for it forever."""
        if self.work is None or self.work[0] is not cluster:
            return None
        waiting = {c.kind for c in blocked}
        for side, n, made in self.work[1].values():
            if n == 0 and made == 0 and side.compiled_away(cluster.platform) and side.kind() not in waiting:
                what = side.what(platform=cluster.platform)
                return {"cause": what, "fix": side.fix(cluster.platform), "where": side.where,
                        "finding": {"kind": "empty_side", "core": side.role.upper(), "where": side.where,
                                    "text": what}}
        return None

    def check_work(self, cluster) -> None:
        """A side whose kernel issued nothing but intra-core synchronisation on every core that
        ran it did nothing.  In a file that tests the side macros, a kernel that also made no
        tile or pipe has its body under an ``#if`` the build left out (a ptoas kernel built
        without its side's macro): a KernelError, never a clean run - unless the build kept its
        section for the side (:meth:`KernelSide.compiled_away`: the tiles it would make are under
        a branch its arguments skip).  Otherwise - a function written empty, or one whose
        arguments gave it nothing to do (a trip count of 0) - a run warning."""
        work, self.work = self.work, None
        if work is None or work[0] is not cluster:
            return
        empty = []
        for side, n, made in work[1].values():
            if n == 0 and made == 0 and side.compiled_away(cluster.platform):
                empty.append(side)
            elif n == 0:
                cluster.warnings.append(side.warning(made > 0, cluster.platform))
        if empty:
            err = empty[0].error(cluster.platform)
            for other in empty[1:]:
                err.add_detail(f"also: {other.what(platform=cluster.platform)} ({other.where})")
            raise err

