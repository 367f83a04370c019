"""Pipe configuration: ``TPipe`` / ``TMPipe`` (pto-isa) and seed 003's
``aic_initialize_pipe`` / ``aiv_initialize_pipe``.  All of them end in
:func:`~ptopipe.isa.pipe.binding.bind_pipe`; the enums live in :mod:`ptopipe.arch.vocab`.
"""
from __future__ import annotations

from dataclasses import dataclass, field

from ...arch.vocab import C2V, LOCAL_SLOT_NUM, V2C, Direction, FIFOType, VecCubeRatio
from ...errors import ConfigError
from ...sim import CoreKind
from ..context import current_core, site
from ..tile import Tile, TileType


@dataclass(frozen=True)
class TPipe:
    """``TPipe<FlagID, DirType, SlotSize, SlotNum, LocalSlotNum>`` - a pipe type.

    Call it on a core to bind that core's half: ``pipe = TPipe(0, DIR_C2V, 16384, 4)(gm_buf)``
    or ``TPipe[0, DIR_C2V, 16384, 4](gm_buf, c2v_consumer_buf, v2c_consumer_buf)``.
    ``peers`` are the Vector sub-blocks on the pipe (both by default).
    """
    flag_id: int
    direction: Direction
    slot_size: int
    slot_num: int
    local_slot_num: int = LOCAL_SLOT_NUM
    peers: tuple = (0, 1)
    sync_period: int | None = None   # None: the pto-isa rule; TMPipe sets FiFoSyncT
    fifo: FIFOType | None = None     # TMPipe's FIFO kind; None: implied by the direction
    #: the kernel declared the pipe one-lane (C++ ``TPipe<..., IsNoSplit = true>``), whatever
    #: lanes the run's protocol gives it (``peers``): what a stall's diagnosis tells the user
    one_lane: bool = field(default=False, compare=False)
    #: the peers only pto-isa's CPU simulator gives the pipe, not the device: AIV1 of an A5
    #: C2V IsNoSplit pipe (the device's one lane is AIV0), whose dual-lane protocol lets AIV1 pop
    #: (zeros) and free each tile and releases a slot only after both lanes freed it.  Every
    #: slot starts free there, whether or not that lane constructs the pipe; a lane that never
    #: pops leaves the ring to stall at push #SlotNum (diagnostics._simulator_stall)
    sim_lanes: tuple = field(default=(), compare=False)
    #: every Vector core runs the code that constructs it, as in ptoas's C++ of a ``.pto`` and the
    #: ``.pto`` itself (a no-split pipe set up outside the AIV0 guard): a core that is no peer
    #: constructs it stray - a warning, as a C++ kernel's is, not a refusal; its use is the error
    stray_ok: bool = field(default=False, compare=False)

    def __class_getitem__(cls, params):
        return cls(*params) if isinstance(params, tuple) else cls(params)

    def __call__(self, gm_slot_buffer=None, c2v_consumer_buf: int = 0, v2c_consumer_buf: int = 0):
        from .binding import bind_pipe      # binding needs TPipe; binding happens once per pipe
        return bind_pipe(self, gm_slot_buffer, c2v_consumer_buf, v2c_consumer_buf)


def TMPipe(flag_id: int, fifo_type: FIFOType, depth: int, sync_t: int, prod_tile: Tile,
           cons_tile: Tile, en_unit_flag: bool = False, local_depth: int = 2,
           vc_ratio: VecCubeRatio = VecCubeRatio.V2C1_VECS) -> TPipe:
    """``TMPipe<FlagID, FiFoType, FiFoDepth, FiFoSyncT, TileProd, TileCons, ...>`` as a TPipe.

    The direction follows from the tile locations (Acc->Vec: C2V, Vec->Mat: V2C) or the
    FIFO kind (CTRL_FIFO: V2C control); the slot size from the larger of the two tiles."""
    if fifo_type is FIFOType.CTRL_FIFO:
        direction = Direction.DIR_V2C_CTRL
    elif prod_tile.loc is TileType.Acc and cons_tile.loc is TileType.Vec:
        direction = Direction.DIR_C2V
    elif prod_tile.loc is TileType.Vec and cons_tile.loc is TileType.Mat:
        direction = Direction.DIR_V2C
    else:
        raise ConfigError(f"TMPipe: producer {prod_tile.loc.value} -> consumer {cons_tile.loc.value} "
                          "is not a cross-core path", where=site(),
                          fix="give the producer and consumer tiles the locations of a ring: Acc -> Vec "
                              "(C2V), Vec -> Mat (V2C), or FIFOType.CTRL_FIFO for V2C control")
    slot = max(prod_tile.nbytes, cons_tile.nbytes)
    return TPipe(flag_id, direction, slot, depth, local_depth, tuple(vc_ratio.value),
                 sync_period=sync_t, fifo=fifo_type)


def ways(direction: Direction) -> tuple:
    """The unidirectional rings (C2V, V2C) of a pipe direction, in flag order."""
    d = Direction(direction)
    if d in (Direction.DIR_C2V, Direction.DIR_C2V_GM):
        return (C2V,)
    if d in (Direction.DIR_V2C, Direction.DIR_V2C_GM, Direction.DIR_V2C_CTRL):
        return (V2C,)
    return (C2V, V2C)


def _dir_mask(mask) -> Direction:
    try:
        d = Direction(mask)
    except ValueError:
        d = None
    if d not in (Direction.DIR_C2V, Direction.DIR_V2C, Direction.DIR_BOTH):
        raise ConfigError(f"invalid DIR_MASK {mask!r}", where=str(current_core().where()),
                          fix="use DIR_C2V, DIR_V2C or DIR_C2V | DIR_V2C")
    return d


def _initialize(dir_mask, slot_size, gm_slot_buffer, c2v_consumer_buf, v2c_consumer_buf, peers, want):
    from .binding import bind_pipe
    core = current_core()
    if core.kind is not want:
        name = "aic_initialize_pipe" if want is CoreKind.AIC else "aiv_initialize_pipe"
        raise ConfigError(f"{name} called on {core.name}", where=str(core.where()),
                          fix="call aic_initialize_pipe on the Cube core and aiv_initialize_pipe on Vector cores")
    d = _dir_mask(dir_mask)
    plat = core.cluster.platform
    n = plat.slot_num_for(d is Direction.DIR_BOTH)
    # FlagID 0: the protocol model assigns the flags of each way, as for a TPipe
    cfg = TPipe(0, d, int(slot_size), n, peers=tuple(peers))
    return bind_pipe(cfg, gm_slot_buffer if plat.ring_in_gm else None, c2v_consumer_buf, v2c_consumer_buf)


def aic_initialize_pipe(DIR_MASK, SLOT_SIZE, GM_SLOT_BUFFER=None, C2V_CONSUMER_BUF: int = 0,
                        V2C_CONSUMER_BUF: int = 0, peers=(0, 1)):
    """Seed 003: bind the Cube core's rings; SLOT_NUM = 8 one way, 4 per direction both ways.

    As V2C consumer it pre-signals every slot free.  A2A3 rings live in GM_SLOT_BUFFER
    (C2V ring first, then V2C); A5 rings in the consumer's UB (C2V) / L1 (V2C)."""
    return _initialize(DIR_MASK, SLOT_SIZE, GM_SLOT_BUFFER, C2V_CONSUMER_BUF, V2C_CONSUMER_BUF,
                       peers, CoreKind.AIC)


def aiv_initialize_pipe(DIR_MASK, SLOT_SIZE, GM_SLOT_BUFFER=None, C2V_CONSUMER_BUF: int = 0,
                        V2C_CONSUMER_BUF: int = 0, peers=(0, 1)):
    """Seed 003: bind a Vector core's rings; as C2V consumer it pre-signals every slot free."""
    return _initialize(DIR_MASK, SLOT_SIZE, GM_SLOT_BUFFER, C2V_CONSUMER_BUF, V2C_CONSUMER_BUF,
                       peers, CoreKind.AIV)
