"""The IR interpreter: executes one AIC or AIV function of the op IR (a ``pl.func`` op) on
the simulated core it is running on, through :mod:`ptopipe.isa` (the one implementation of
tiles, moves, compute and the TPUSH/TPOP protocol).

The interpreter owns a run's state (arguments, tiles, GM views, pipes, layout checks); the
function's ops are compiled to Python closures once per run (:mod:`.closures`), and before
each step the core's ``loc_override`` is set to its DSL source location, so every ISA error,
checker report and deadlock report names the DSL line.  Tiles are made at the addresses
AllocateMemoryAddr wrote on their ops (the layout :func:`~ptopipe.ir.layout.read_layout`
gives).

An AIV function with ``split=TILE_NO_SPLIT`` (``@pl.aiv(split=pl.TILE_NO_SPLIT)``, what
ExpandMixedKernel emits for a no-split mixed function) works on whole tiles on AIV0.  On
AIV1 it replays the same sequence with every tile's valid shape empty (no byte moved, no
element computed, every handshake made: the A2A3 no-split replay of docs/layouts.md),
unless its pipes are initialised with ``lanes=1`` (AIV0 their only peer, an A5
NO_SPLIT pipe): then AIV1 runs nothing.
"""
from __future__ import annotations

import numpy as np

from .. import isa
from ..arch import MemSpace
from ..arch.vocab import PLAIN_DIRECTION, Direction, TileSplitAxis, row_major_strides
from ..errors import ConfigError, KernelError, MemoryConflictError
from ..ir import ops as irops
from ..ir.vocab import FunctionKind
from ..ir.opdefs import INITIALIZE_PIPE, Barrier, BufferAttrOp, InitializePipe, RecordEvent, ReserveBufferOp, WaitEvent
from ..ir.types import FLOAT_DTYPES, TensorType, TileValueType, np_dtype
from ..sim.location import SourceLoc
from ..sim.pipesync import PTO_EVENTS, EventWords
from ..protocol.model import FIRST_FLAG_ID, cluster_model
from ..ir.layout import (gm_window_problem, reserve_fit_problem, ring_size_problem, tiles_fit_problem,
                         tiles_past, tiles_past_details)
from ..ir.pipe_config import local_slot_num
from .closures import Compiler, FunctionReturn, run_steps, shown_name, valid_of

# seed 003's DIR_MASK values (the C2V and V2C bits); a ring both ways takes SlotNum per direction
_LOCAL_DIRS = (Direction.DIR_C2V, Direction.DIR_V2C, Direction.DIR_BOTH)
_BOTH_DIRS = (Direction.DIR_BOTH, Direction.DIR_BOTH_GM)


#: the valid shape of every tile lane 1 of a TILE_NO_SPLIT AIV function creates (docs/layouts.md)
_EMPTY = {"valid_rows": 0, "valid_cols": 0}


#: how a message spells the event calls of a ``pl`` DSL kernel (its op definitions' names)
DSL_EVENTS = EventWords(RecordEvent.name, WaitEvent.name, f"{Barrier.name}()", "(pl.{src}, pl.{dst}, {eid})")


def event_words_of(fn) -> EventWords:
    """The event spelling of the source ``fn`` came from: a ``.pto`` file's, else the DSL's."""
    return PTO_EVENTS if fn.loc is not None and str(fn.loc.file).endswith(".pto") else DSL_EVENTS


def _one_lane(op) -> bool:
    """Is ``op`` a pipe initialisation whose only Vector lane is AIV0 (``lanes=1``)?"""
    return op.is_a(*INITIALIZE_PIPE) and op.lanes == 1


def _out_of_bounds(name: str, shape, offs: list, window: list, c, where: str):
    """The error of a GM window outside its tensor (:func:`~ptopipe.ir.layout.gm_window_problem`:
    for a load / store a split mode sliced for one Vector core, in the coordinates of the
    statement as written, naming the lane and its slice)."""
    split = getattr(getattr(c, "loc", None), "lane_split", None)
    what, details, fix = gm_window_problem(name, shape, offs, window, split,
                                           isa.get_subblockid() if split is not None else None)
    return MemoryConflictError(what, where=where, fix=fix, details=details)


class Interpreter:
    """Runs ``pl.func`` op ``fn`` on the current core (call :meth:`run` inside a kernel
    greenlet); ``layout`` is the :class:`~ptopipe.ir.layout.FunctionLayout` of its tiles and
    buffers (import_peer_buffer bases resolved)."""

    def __init__(self, fn, layout):
        self.fn = fn
        self.name = fn.sym_name
        self.layout = layout
        self.locs = {}

    def where(self, node) -> SourceLoc | None:
        return self.at(node.loc)

    def at(self, loc) -> SourceLoc | None:
        """The SourceLoc of IR location ``loc`` (one object per location)."""
        if loc is None:
            return None
        s = self.locs.get(id(loc))
        if s is None:
            s = self.locs[id(loc)] = SourceLoc(loc.file, loc.line, loc.col, self.name)
        return s

    # -- entry ------------------------------------------------------------------------------
    def run(self, args: dict) -> None:
        self.core = isa.current_core()
        self.env = {}
        self.pipes = {}             # (DIR_C2V / DIR_V2C, pipe id) -> the pipe bound for that ring
        self.next_flag = FIRST_FLAG_ID
        self.core.loc_override = self.where(self.fn)
        self.core.event_words = event_words_of(self.fn)
        body = self.fn.body
        for p in body.args:
            self.env[p] = self.bind_param(p, args)
        self.tiles = {}             # tile op -> its Tile, or [its Tiles, the next turn]
        self.check_tiles_fit()
        self.reserves = {op.buf: op for op in body if op.is_a(ReserveBufferOp)}
        for r in self.reserves.values():
            if r.memory_space:
                self.check_fits(r)
        self.empty = {}
        if self.fn.split == TileSplitAxis.TILE_NO_SPLIT and isa.get_subblockid() == 1:
            if any(_one_lane(op) for op in body):
                return                  # the pipes' only lane is AIV0: lane 1 takes no part
            self.empty = _EMPTY         # lane 1 replays every handshake on empty valid shapes
        try:
            run_steps(self.core, Compiler(self).block(body))
        except FunctionReturn:
            pass

    def bind_param(self, p, args: dict):
        if p.name not in args:
            fix = (f"add {p.name!r} to the run's args (a kernel file's Scenario: to the dict its "
                   "make_args returns)")
            if p.name.startswith(irops.GM_SLOT_PARAM):     # ExpandMixedKernel's ring parameter
                fix = ("a compiled mixed function takes a GM slot buffer (the A2A3 ring; A5 does not "
                       "touch it): args = ptopipe.passes.slot_buffer.with_slot_buffer(program, args) "
                       "adds one of the right size")
            raise ConfigError(f"kernel {self.name} needs argument {p.name!r}",
                              where=str(self.where(self.fn)), fix=fix)
        v = args[p.name]
        t = p.type
        if isinstance(t, TensorType):
            if not isinstance(v, isa.GlobalTensor):
                raise ConfigError(f"argument {p.name!r} of {self.name} must be a numpy array "
                                  f"(a GM tensor), got {type(v).__name__}",
                                  where=str(self.where(self.fn)),
                                  fix=f"pass a numpy array of the declared {t} (np.asarray(value, dtype=...))")
            want = np_dtype(t.dtype)
            shape = (1,) * (5 - len(t.shape)) + tuple(t.shape)
            if v.dtype != want or tuple(v.shape) != shape:
                got = tuple(x for x in v.shape)
                raise ConfigError(f"argument {p.name!r} of {self.name} is {v.dtype.name} "
                                  f"{got[5 - len(t.shape):] if len(got) == 5 else got} but the "
                                  f"kernel declares {t}", where=str(self.where(self.fn)),
                                  fix="pass an array of the declared shape and dtype")
            return v
        if isinstance(v, (float, np.floating)) and getattr(t, "dtype", None) not in FLOAT_DTYPES + ("bool",):
            # an integer scalar (a trip count, an offset) given a float: pl.range(2.5) would run 2
            # iterations and a window would start mid-element - refused, not truncated
            raise ConfigError(f"argument {p.name!r} of {self.name} is the float {v!r} but the kernel "
                              f"declares pl.Scalar[pl.{t.dtype}], an integer", where=str(self.where(self.fn)),
                              fix=f"pass an int ({p.name}={int(v)}?)" if float(v).is_integer() else
                                  "pass an int, or declare the parameter pl.Scalar[pl.f32]")
        if isinstance(v, (bool, int, float, np.integer, np.floating)):
            return v
        raise ConfigError(f"argument {p.name!r} of {self.name} must be a scalar, got "
                          f"{type(v).__name__}", where=str(self.where(self.fn)),
                          fix="pass a Python or numpy number (the kernel declares a pl.Scalar)")

    def dest_tile(self, op):
        """The tile tile op ``op`` writes its result into (made at its first execution; a
        rotation's tiles in turn)."""
        tile = self.tiles.get(op)
        if tile is None:
            t = op.results[0].type
            addrs = self.layout.rotations.get(op)
            if addrs is not None:           # several buffers, used in turn (liveness.py)
                tile = self.tiles[op] = [[self._tile(op, t, a) for a in addrs], 0]
            else:
                tile = self.tiles[op] = self._tile(op, t, self.layout.tiles[op][1])
                return tile
        if tile.__class__ is list:
            tiles, k = tile
            tile[1] = (k + 1) % len(tiles)
            return tiles[k]
        return tile

    def _tile(self, op, t: TileValueType, addr: int):
        """The ISA tile of ``op``'s result: in the static shape the compiled program declares
        (``TileValueType.static_shape``: padded, or its box), the data's shape valid."""
        name = shown_name(op) or f"<{op.spec.name} result>"
        rows, cols = t.static_shape
        return isa.Tile(t.space, np_dtype(t.dtype), rows, cols, addr=addr, name=name,
                        layout=t.layout, **(self.empty or valid_of(t)))

    def gm_view(self, gt, ttype: TensorType, offs, window, c=None):
        shape = ttype.shape
        name = gt.name or "tensor"
        if len(offs) != len(shape):
            raise KernelError(f"{len(offs)} offsets for {name!r} of rank {len(shape)}",
                              where=str(self.core.where()), fix="give one offset per dimension")
        if any(o < 0 or o + w > n for o, w, n in zip(offs, window, shape)):
            raise _out_of_bounds(name, shape, [int(o) for o in offs], list(window), c,
                                 str(self.core.where()))
        strides = row_major_strides(shape)
        off = sum(int(o) * st for o, st in zip(offs, strides))
        return isa.GlobalTensor(gt.data() + off, tuple(window), strides)

    def check_fits(self, r) -> None:
        mem = self.core.memory(MemSpace(r.memory_space), lambda: f"reserve_buffer {r.buffer_name!r}")
        bad = reserve_fit_problem(r.buffer_name, self.layout.buffers[r.buf][0], r.size, self.core.name,
                                  mem.space.value, mem.size)
        if bad is not None:
            raise ConfigError(bad[0], where=str(self.where(r)), fix=bad[1])

    def check_tiles_fit(self) -> None:
        """The tiles live at one time (AllocateMemoryAddr's peak) must fit each memory."""
        for space, peak in self.layout.peak.items():
            mem = self.core.memory(MemSpace(space), lambda: f"the tiles of {self.name}")
            usable = self.core.cluster.platform.tile_space(MemSpace(space))
            bad = tiles_fit_problem(self.name, space, peak, self.core.name, mem.size, usable)
            if bad is not None:         # at the first tile that does not fit, as AllocateMemoryAddr says
                over = tiles_past(self.layout, space, min(mem.size, usable))
                raise ConfigError(bad[0], where=str(self.where(over[0][0] if over else self.fn)),
                                  details=tiles_past_details(over, bad[1], self.where), fix=bad[2])

    def check_ring_size(self, r, slot_num: int, slot_size: int, c, staged: int | None) -> None:
        bad = None if r is None else ring_size_problem(r.buffer_name, r.size, slot_num, slot_size, staged)
        if bad is not None:
            raise ConfigError(bad[0], where=str(self.where(r)),
                              details=f"pipe initialised at {self.where(c)}", fix=bad[1])

    def way_of(self, producer: bool) -> Direction:
        """The direction this core produces into (TPUSH, TALLOC) or consumes from (TPOP,
        TFREE): the Cube produces C2V, a Vector core V2C."""
        return Direction.DIR_C2V if producer == (self.fn.kind is FunctionKind.AIC) else Direction.DIR_V2C

    def pipe_of(self, producer: bool, pipe_id: int = 0):
        """The pipe of ring (``way_of(producer)``, ``pipe_id``); a KernelError when no init
        has set it up."""
        way = self.way_of(producer)
        pipe = self.pipes.get((way, pipe_id))
        if pipe is None:
            ring = f"{way.name[4:]} id={pipe_id} ring" if pipe_id else f"{way.name[4:]} direction"
            raise KernelError(f"{'TPUSH' if producer else 'TPOP'} on the {ring}, "
                              f"which no initialize_pipe of {self.name} has set up",
                              where=str(self.core.where()),
                              fix=f"initialise the pipe with DIR_{way.name[4:]} (or DIR_C2V | "
                                  "DIR_V2C) first")
        return pipe

    def init_pipe(self, a, at, c):
        ini = InitializePipe              # the fields of both initialisations
        dir_mask, slot_size, slot_num = ini.dir_mask.of(at), ini.slot_size.of(at), ini.slot_num.of(at)
        gm = ini.gm_slot_buffer.of(a)
        c2v, v2c = int(ini.c2v_consumer_buf.of(a) or 0), int(ini.v2c_consumer_buf.of(a) or 0)
        plat = self.core.cluster.platform
        if dir_mask in _LOCAL_DIRS:     # a consumer-local ring: the buffer holds every slot
            n = slot_num or plat.slot_num_for(dir_mask in _BOTH_DIRS)
            # an explicit LocalSlotNum says the reserve holds the staging slots only
            staged = ini.local_slot_num.of(at) if plat.ring_in_gm else None
            for bit, arg in ((Direction.DIR_C2V, ini.c2v_consumer_buf.get(c)),
                             (Direction.DIR_V2C, ini.v2c_consumer_buf.get(c))):
                d = getattr(arg, "op", None)
                if dir_mask & bit and d.__class__ is BufferAttrOp:
                    self.check_ring_size(self.reserves.get(d.buffer), n, slot_size, c, staged)
        if plat.ring_in_gm:         # *_GM directions: the plain ones where rings are in GM
            dir_mask = PLAIN_DIRECTION.get(dir_mask, dir_mask)
        peers = (0,) if ini.lanes.of(at) == 1 else (0, 1)
        n = slot_num or plat.slot_num_for(dir_mask in _BOTH_DIRS)
        # AllocateFlags' FlagID; a kernel run without it: the same numbering, in init order
        flag_id = ini.flag_id.of(at)
        if flag_id is None:
            flag_id = self.next_flag
        ways = irops.init_ways(dir_mask)
        self.next_flag = cluster_model(self.core.cluster).next_flag_id(flag_id, len(ways), n)
        # seed 003's init (isa.aic_initialize_pipe) hands a consumer-local ring no GM buffer
        buf = None if slot_num is None and dir_mask in _LOCAL_DIRS and not plat.ring_in_gm else gm
        off = ini.gm_offset.of(at)
        if buf is not None and off:         # a ring further into its GM slot buffer
            ptr = buf.data() if isinstance(buf, isa.GlobalTensor) else buf
            buf = ptr + off // ptr.dtype.itemsize
        pipe = isa.TPipe(flag_id, isa.Direction(dir_mask), slot_size, n, local_slot_num(at, n),
                          peers=peers)(buf, c2v, v2c)
        pid = ini.pipe_id.of(at) or 0
        for way in ways:
            self.pipes[(way, pid)] = pipe
        return None
