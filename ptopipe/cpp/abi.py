"""The Python side of the C ABI a C++ kernel calls (``ptopipe/cpp/include/pto/pto-inst.hpp``).

Every instruction of a C++ kernel calls one function, ``callback(op, n, words, file, line)``:
``op`` an ABI id (:func:`ptopipe.cpp.headergen.op_names`), ``words`` its arguments (each a
kind word and its payload, :data:`~ptopipe.cpp.headergen.KINDS`), ``file:line`` its C++ call
site.  The :class:`Dispatcher` decodes the arguments into :mod:`ptopipe.isa` objects - Tiles it
made for the kernel's tile handles, GlobalTensors over GM, the pipes and events of this run,
enums from :mod:`ptopipe.arch.vocab` - sets the calling core's location to the C++ line and
calls the ISA instruction.  So the protocol, the checkers, the timing and the traces are
those of every other kernel; nothing here re-implements an instruction.

The C++ code of a core runs on that core's greenlet (the kernel function is called from it
through ctypes), so a blocking instruction switches greenlets, C++ stack and all, and one
core runs at a time under ptopipe's scheduler.  An error raised by an instruction cannot
cross the C++ frames: the callback keeps it and returns ``ABORT``; the header throws a C++
exception that unwinds the kernel to its entry point, which returns 1, and the kernel's
Python wrapper raises the kept error (:meth:`Dispatcher.kernel`).

GM pointers handed to C++ are simulator addresses (:data:`GM_BASE`, one space per array
argument), not host memory: a raw dereference faults, and is reported as a crash.
"""
from __future__ import annotations

import ctypes
import struct

import greenlet
from ..arch.dtypes import as_dtype
from ..arch.vocab import Direction
from ..errors import ConfigError, KernelError
from ..protocol.model import cluster_model
from ..sim.location import SourceLoc
from .. import isa
from .headergen import ABORT, DTYPES, KINDS, MAX_WORDS, SPECIAL, enum_values, enums, op_names

#: where GM is in a C++ kernel's address space (an unmapped range: a raw access faults); each
#: array argument has a space of its own (2**ARG_BITS bytes: the k-th at GM_BASE + (k + 1) <<
#: ARG_BITS), so a pointer keeps the argument it was derived from however far it moves
GM_BASE = 1 << 44
ARG_BITS = 36
ARG_MASK = (1 << ARG_BITS) - 1
CALLBACK = ctypes.CFUNCTYPE(ctypes.c_int64, ctypes.c_int32, ctypes.c_int32, ctypes.c_void_p,
                            ctypes.c_void_p, ctypes.c_int32)
#: events an instruction returned that a kernel can still name (older ones are forgotten)
EVENT_WINDOW = 1 << 16

_K_INT, _K_FLT, _K_TILE, _K_GT, _K_PIPE, _K_EVENT, _K_ENUM, _K_PTR, _K_NULL = (
    KINDS[k] for k in ("INT", "FLT", "TILE", "GT", "PIPE", "EVENT", "ENUM", "PTR", "NULL"))
_DTYPES = tuple(as_dtype(n) for n in DTYPES)
_ENUMS = tuple(enum_values(cls) for _n, cls, _ns, _s in enums())
_TILE_TYPES, _BLAYOUTS, _SLAYOUTS = (enum_values(cls) for cls in (isa.TileType, isa.BLayout, isa.SLayout))
_WORDS = {}
#: what a Tile carries over from its last value: its slot binding, queued copies and checker
#: state (its memory views stay: TPOP re-binds them)
_TILE_STATE = ("binding", "_push", "hbw", "hbu")
_string_at = ctypes.string_at
_getcurrent = greenlet.getcurrent


def _unpack(n: int):
    s = _WORDS.get(n)
    if s is None:
        s = _WORDS[n] = struct.Struct(f"<{n}q").unpack
    return s


class Dispatcher:
    """The ABI of one run: the tiles, pipes and events its C++ kernels hold handles of."""

    def __init__(self):
        self.tiles = [None]
        self.aliases = set()            # id(Tile) of tiles TRESHAPE bound to their source's storage
        self.pipes = [None]
        self.events = [None] * EVENT_WINDOW
        self.nevents = 0
        self.files = {}
        self.sites = {}
        self.errors = {}
        self.regions = []               # [(lo, hi, GlobalTensor)] of the GM arguments
        ops = {name: getattr(self, "op_" + name) for name in SPECIAL + ("TRESHAPE",)}
        self.handlers = [ops.get(name) or self._instruction(getattr(isa, name)) for name in op_names()]
        self.first_instruction = len(SPECIAL)
        self.decoded = {}               # argument words -> their objects, where that cannot change
        self.stable = False
        self.windows = {}               # (core, call site, operand) -> [GlobalTensor, its C++ pointer]
        self.c_callback = CALLBACK(self.callback)
        #: shared with the kernel libraries: the last call site (2 words), then a call's words
        self.shared = (ctypes.c_int64 * (2 + MAX_WORDS))()
        self.words = memoryview(self.shared).cast("B")[16:]

    # -- the callback ------------------------------------------------------------------------
    def callback(self, op, n, words, file, line):
        try:
            core = _getcurrent().core
            key = (file, line)
            loc = self.sites.get(key)
            if loc is None:
                loc = self.sites[key] = self._site(file, line)
            core.loc_override = loc
            if not n:
                return self.handlers[op](core, [])
            if n < 0:
                raise KernelError(f"{op_names()[op]} has more arguments than ptopipe's C++ ABI carries "
                                  f"({MAX_WORDS} words)", fix="pass fewer operands / wait events")
            raw = self.words[:8 * n].tobytes()
            a = self.decoded.get(raw)
            if a is None:
                a = self.decode(_unpack(n)(raw), (core, key) if op >= self.first_instruction else None)
                if self.stable:
                    self.decoded[raw] = a
            return self.handlers[op](core, a)
        except BaseException as e:   # noqa: BLE001 - every exception crosses back as ABORT
            self.errors[_getcurrent()] = e
            return ABORT

    def _site(self, file, line) -> SourceLoc:
        name = self.files.get(file)
        if name is None:
            name = self.files[file] = _string_at(file).decode(errors="replace") if file else "?"
        return SourceLoc(name, line, None, None)

    def raise_pending(self):
        """In a kernel's wrapper after its C++ unwound: raise the error the callback kept."""
        e = self.errors.pop(_getcurrent(), None)
        if e is None:
            raise KernelError("the C++ kernel stopped without an error from the simulator")
        raise e

    # -- arguments -----------------------------------------------------------------------------
    def decode(self, w, site=None) -> list:
        """The ISA objects of argument words ``w``; ``site`` ((core, call site) of a tile
        instruction, else None): its GlobalTensor operands are one object per core, site and
        operand, re-pointed at each call (as the DSL runtime's load / store sites are, per core),
        not made anew."""
        out = []
        i, n = 0, len(w)
        self.stable = True      # the same words give the same objects (no tensor, pointer or event)
        while i < n:
            k = w[i]
            if k == _K_TILE:
                out.append(self.tiles[w[i + 1]])
                i += 2
            elif k == _K_INT:
                out.append(w[i + 1])
                i += 2
            elif k == _K_GT:
                self.stable = False
                if site is None:
                    out.append(self.tensor(w[i + 1], w[i + 2], w[i + 3:i + 8], w[i + 8:i + 13]))
                else:
                    out.append(self.window(site, len(out), w[i + 1:i + 13]))
                i += 13
            elif k == _K_ENUM:
                out.append(self.enum(w[i + 1], w[i + 2]))
                i += 3
            elif k == _K_FLT:
                out.append(struct.unpack("<d", struct.pack("<q", w[i + 1]))[0])
                i += 2
            elif k == _K_PIPE:
                out.append(self.pipes[w[i + 1]])
                i += 2
            elif k == _K_EVENT:
                self.stable = False
                out.append(self.event(w[i + 1]))
                i += 2
            elif k == _K_PTR:
                self.stable = False
                out.append(self.pointer(w[i + 1], w[i + 2]))
                i += 3
            elif k == _K_NULL:
                out.append(None)
                i += 1
            else:
                raise KernelError(f"argument kind {k} is not part of ptopipe's C++ ABI (a kernel built "
                                  "against other headers?)", fix="rebuild against ptopipe --include")
        return out

    @staticmethod
    def enum(table: int, value: int):
        try:
            return _ENUMS[table][value]
        except (IndexError, KeyError):
            raise KernelError(f"enum value {value} is not a value of {enums()[table][0]}",
                              fix="pass one of the enumerators") from None

    def event(self, eid: int):
        if eid == 0:
            return None
        if eid <= self.nevents - EVENT_WINDOW:
            raise KernelError(f"the event of instruction #{eid} is older than the last {EVENT_WINDOW} "
                              "instructions' events ptopipe keeps", fix="wait on events soon after they are made")
        return self.events[eid % EVENT_WINDOW]

    def keep(self, e) -> int:
        if e is None:
            return 0
        self.nevents = n = self.nevents + 1
        self.events[n % EVENT_WINDOW] = e
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
        lo, _hi, gt = self.regions[k]
        return isa.GMPtr(lo + (off & ARG_MASK), _DTYPES[code], gt.ptr.bounds)

    def fake(self, addr: int) -> int:
        """The C++ pointer of GM address ``addr``: in the space of the argument holding it."""
        for k, (lo, hi, _gt) in enumerate(self.regions):
            if lo <= addr < hi:
                return GM_BASE + ((k + 1) << ARG_BITS) + (addr - lo)
        return GM_BASE + addr

    def window(self, site, pos, g):
        key = (site, pos, g[1:])
        w = self.windows.get(key)
        if w is None:
            w = self.windows[key] = [self.tensor(g[0], g[1], g[2:7], g[7:12]), g[0]]
        elif g[0] != w[1]:
            gt, d = w[0], g[0] - w[1]
            if (g[0] ^ w[1]) >> ARG_BITS == 0 and d % gt.item == 0:
                gt.ptr = gt.ptr + d // gt.item        # the same argument: GMPtr keeps its bounds
            else:
                gt.assign(self.pointer(g[0], g[1]))
            w[1] = g[0]
        return w[0]

    def tensor(self, p, code, shape, stride):
        if any(s < 0 for s in shape) or any(s < 0 for s in stride):
            raise KernelError(f"GlobalTensor shape {list(shape)} / stride {list(stride)} has a DYNAMIC "
                              "dimension that was not given", fix="construct the Shape / Stride with its values")
        if p == 0:
            return isa.GlobalTensor(_DTYPES[code], shape, stride)     # an address-flow descriptor
        return isa.GlobalTensor(self.pointer(p, code), shape, stride)

    # -- instructions ------------------------------------------------------------------------
    def _instruction(self, fn):
        keep = self.keep

        def run(core, a):
            return keep(fn(*a))
        return run

    def op_TILE_NEW(self, core, a):
        loc, code, rows, cols, bl, vr, vc, sl = a
        t = isa.Tile(_TILE_TYPES[loc], _DTYPES[code], rows, cols, _BLAYOUTS[bl], vr, vc, _SLAYOUTS[sl])
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

    def op_SETVALID(self, core, a):
        a[0].SetValid(a[1], a[2])
        return 0

    def op_TPIPE(self, core, a):
        flag, d, size, num, local, nosplit, c2v, v2c, gm = a
        peers = (0,) if nosplit and cluster_model(core.cluster).nosplit_lane0 else (0, 1)
        gm = self._whole(gm)
        try:
            direction = Direction(d)
        except ValueError:
            raise ConfigError(f"invalid pipe direction {d}", where=str(core.where()),
                              fix="use DIR_C2V, DIR_V2C, DIR_BOTH, DIR_V2C_CTRL or a *_GM direction (A5)") from None
        pipe = isa.TPipe(flag, direction, size, num, local, peers=peers)(gm, c2v, v2c)
        self.pipes.append(pipe)
        return len(self.pipes) - 1

    def op_TMPIPE(self, core, a):
        flag, depth, sync_t, unit, local_depth, local, fifo, ratio, *rest = a
        prod, cons = (isa.Tile(_TILE_TYPES[t[0]], _DTYPES[t[1]], t[2], t[3]) for t in (rest[0:4], rest[4:8]))
        gm = self._whole(rest[8])
        cfg = isa.TMPipe(flag, fifo, depth, sync_t, prod, cons, bool(unit), local_depth, ratio)
        pipe = cfg(gm, local, 0) if cfg.direction is Direction.DIR_C2V else cfg(gm, 0, local)
        self.pipes.append(pipe)
        return len(self.pipes) - 1

    def _whole(self, gm):
        """A GM slot buffer pointer at the start of an argument as that whole argument (its
        size is then checked against the ring, as a Python kernel's is)."""
        if gm is not None:
            for lo, _hi, gt in self.regions:
                if gm.addr == lo and gm.bounds is gt.ptr.bounds:
                    return gt
        return gm

    def op_TPUSH(self, core, a):
        return self.keep(isa.TPUSH(*a))

    def op_TPOP(self, core, a):
        obj = a[1]
        if isinstance(obj, isa.GlobalTensor):
            isa.TPOP(*a)
            return self.fake(obj.ptr.addr)
        # every pop binds the tile afresh, as the DSL runtime's new tile per pop: what the C++
        # variable held before (its scoreboard times, slot binding, checker state) is not a
        # use of the slot popped now (a copy of the earlier value has a handle of its own)
        for f in _TILE_STATE:
            setattr(obj, f, None)
        obj.ready_at = obj.read_end = 0
        return self.keep(isa.TPOP(*a))

    def op_TALLOC(self, core, a):
        isa.TALLOC(*a)
        return self.fake(a[1].ptr.addr)

    def op_TFREE(self, core, a):
        pipe, obj, split, *events = a
        return self.keep(isa.TFREE(pipe, obj, split, *events))

    def op_TSYNC(self, core, a):
        isa.TSYNC(*a)
        return 0

    op_TSYNC_OP = op_TSYNC

    def op_set_flag(self, core, a):
        isa.set_flag(*a)
        return 0

    def op_wait_flag(self, core, a):
        isa.wait_flag(*a)
        return 0

    def op_pipe_barrier(self, core, a):
        isa.pipe_barrier(*a)
        return 0

    def op_get_subblockid(self, core, a):
        return isa.get_subblockid()

    def op_get_block_idx(self, core, a):
        return isa.get_block_idx()

    # -- kernels ---------------------------------------------------------------------------------
    def kernel(self, run_fn, sig: str, params: list, label: str):
        """A Python kernel function (for :func:`ptopipe.isa.run`) that calls C++ entry point
        ``run_fn`` with the run's arguments, by the C++ parameter names ``params``."""
        if len(sig) != len(params):
            raise ConfigError(f"{label}: found {len(params)} parameters in the source, the compiled "
                              f"function has {len(sig)}", fix="declare the kernel with plain parameters")
        argv_t = ctypes.c_int64 * max(1, len(params))
        me = self

        def kernel(**kw):
            gts = [v for v in kw.values() if isinstance(v, isa.GlobalTensor)]
            if [r[2] for r in me.regions] != gts:       # a new run: its arguments' spaces
                me.regions = [(v.ptr.addr, v.ptr.addr + v.nbytes, v) for v in gts]
                me.windows.clear()
                me.decoded.clear()
            words = []
            for name, kind in zip(params, sig):
                if name not in kw:
                    raise ConfigError(f"{label} needs argument {name!r}", where=label,
                                      fix=f"give it: --input {name}=FILE.npy (or args={{{name!r}: ...}})")
                v = kw[name]
                if kind == "p":
                    if not isinstance(v, isa.GlobalTensor):
                        raise ConfigError(f"{label}: parameter {name!r} is a GM pointer, got {type(v).__name__}",
                                          where=label, fix=f"pass a numpy array for {name!r}")
                    words.append(me.fake(v.ptr.addr))
                elif kind == "f":
                    words.append(struct.unpack("<q", struct.pack("<d", float(v)))[0])
                else:
                    if isinstance(v, isa.GlobalTensor) or isinstance(v, float) and not float(v).is_integer():
                        raise ConfigError(f"{label}: parameter {name!r} is an integer, got {v!r}",
                                          where=label, fix=f"pass an integer for {name!r}")
                    words.append(int(v))
            if run_fn(argv_t(*words)) != 0:
                me.raise_pending()
        kernel.__name__ = label
        return kernel

