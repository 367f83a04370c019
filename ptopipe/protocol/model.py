"""The ring protocol as data: :class:`ProtocolModel` with :class:`SpecModel` (seed 003) and
:class:`PtoIsaModel` (what pto-isa's C++ does: the fixed library, a named release with its bugs
- :func:`model_for` with ``library``, the bugs being :mod:`.versions` data - or pto-isa's CPU
simulator, ``PTO_ISA_CPUSIM``).

Everything that differs between the two protocols is decided here - flag ids of each way,
SyncPeriod, the credits the consumer posts at bind, when the producer waits for a free
slot, when the consumer sends a free, whether a tile TPOP from a GM ring frees inside TPOP
(and what the tile TFREE after it does), how many slots one free SET releases, what may be
left on a flag at exit.  pto-isa's A2A3 and A5 headers differ, so the pto-isa model has one
instance per platform (:func:`model_for`, decided once when a pipe binds); every difference
is listed, with the pto-isa function it models, in ``docs/protocols.md``.  The pipe ops, the
checks, the runtime and the report ask a channel's ``model`` (``ch.model``); none of them
tests which protocol is selected.

The hot ops read these decisions as plain attributes that :class:`Channel` copies at bind
time (``wait_every``, ``hold_limit``, ``pop_frees``, ``always_stage``, ``sync_period``); only
pto-isa's sparse rules are method calls (:meth:`ProtocolModel.producer_waits`,
:meth:`ProtocolModel.consumer_frees` of the index :meth:`ProtocolModel.notice_index` gives).
"""
from __future__ import annotations

from dataclasses import dataclass, replace
from functools import lru_cache

from ..arch import PipeUnit
from ..arch.catalogue import PUSH_PIPE
from ..arch.vocab import C2V, Direction, FIFOType, Protocol, TileSplitAxis, TileType
from .geometry import free_split_problem
from .versions import bugs_at, parse as parse_protocol

#: the FlagID of the first pipe of a Vector-Cube peer (seed 003: one direction uses flags
#: 0..7, both directions 0..3 and 4..7)
FIRST_FLAG_ID = 0


@dataclass(frozen=True)
class ProtocolModel:
    """What one ring protocol does; one instance per protocol (see :func:`model_for`)."""
    protocol: Protocol
    #: one ready/free flag per slot tag (seed 003) rather than one counter flag per way
    per_tag_flags: bool
    #: the producer waits for a free credit before every push / the consumer sends a free
    #: after every release (otherwise: pto-isa's sparse rule, :meth:`producer_waits`)
    wait_every: bool
    #: a consumer may hold at most SlotNum popped slots (a TPOP beyond that is misuse)
    bounded_hold: bool
    #: a tile TPOP from a GM ring frees the slot inside TPOP; the tile TFREE is a no-op (a
    #: GlobalTensor TPOP never frees: :meth:`pop_frees`)
    frees_in_pop: bool
    #: a tile TPOP from a GM ring always lands in the consumer's LocalSlotNum staging ring
    #: (else only a tile without an address of its own does)
    always_stage: bool
    #: the most a free flag may hold at kernel end (None: anything, sparse credits)
    free_left_max: int | None
    #: the FIFO depth is limited by the platform's ``max_fifo_depth``
    depth_limited: bool
    #: the platform whose library code this model follows (None: the same on every platform)
    platform: str | None = None
    #: a tile TFREE after a GM-ring TPOP that already freed sends a free again (pto-isa A5
    #: ``TFREE_IMPL(pipe)`` notifies whatever ring the pipe has; A2A3's is a no-op)
    tfree_after_pop_frees: bool = False
    #: a TILE_NO_SPLIT transfer has one lane, AIV0 (:func:`nosplit_one_lane`: A5, under spec
    #: and pto-isa alike): the Cube's NO_SPLIT SET/WAIT use flag id FlagID only, never AIV1's
    #: id + 16 (pto-isa A5 ``setIntraBlockBySplit`` / ``waitIntraBlockBySplit``), and a
    #: NO_SPLIT TALLOC on lane 1 gets the LEFT_RIGHT offset (A5 ``getSubAIVOffset`` tests
    #: NO_SPLIT after the split cases)
    nosplit_lane0: bool = False
    #: ``TPipe(DIR_V2C_CTRL)`` compiles (pto-isa: it does not; CTRL goes through TMPipe)
    tpipe_ctrl: bool = True
    #: a TMPipe has its own protocol: the constructor posts one free (``cons.free()``), every
    #: push waits (``TPUSH_IMPL(tile, pipe)`` calls ``allocate()`` unconditionally), every
    #: release frees, the destructor waits once (``prod.allocate()``); FiFoSyncT is never
    #: consulted; and the Cube's end of every handshake is both Vector lanes', whatever the
    #: VecCubeRatio (:meth:`handshake_lanes`) (pto-isa ``TMPipe`` in a2a3/ and a5/ ``TPush.hpp``,
    #: ``TPop.hpp``, ``TFree.hpp``)
    tmpipe_rendezvous: bool = False
    #: pto-isa A5 at its newest stored version (0956aa8c, PRs #266/#274): a TPipe that is
    #: GM-backed or split (``!uses_local_no_split_credit_protocol``) gets SyncPeriod free
    #: credits from its constructor *and* keeps the shouldWaitFree window, and its destructor
    #: waits SyncPeriod times; a local no-split TPipe has the window and the
    #: numPopFree - numPushWait drain.  Off in ``PTO_ISA_A5`` (the counted-twice credits
    #: overrun and leave stale credits in correct kernels, docs/protocols.md); on in
    #: ``PTO_ISA_A5_HEAD``
    ctor_credit_pipes: bool = False
    #: the consumer's free SET follows every read of the popped tile, on any pipe (seed 003:
    #: TFREE releases the slot "after the consumer has finished reading" it); otherwise the
    #: SET is an instruction on :meth:`free_pipe` and follows only what is ordered before that
    #: pipe's next instruction - pto-isa's ``Consumer::free`` is one ``set_intra_block`` /
    #: ``ffts_cross_core_sync`` on PIPE_V / MTE1 / MTE2 / S, so a TSTORE still reading a UB
    #: slot on MTE3 is not waited for (a set_flag / wait_flag from MTE3 to V before TFREE is)
    free_after_readers: bool = True
    #: the TPipe destructor waits SyncPeriod times whatever is pending (pto-isa A2A3 from
    #: 8d74fb38 until 0a15e15c; ``versions.BUGS``)
    fixed_drain: bool = False
    #: with ``ctor_credit_pipes``: a local no-split TPipe gets the constructor credits too (pto-isa
    #: A5 from 8d74fb38 until PR #274)
    ctor_credit_local: bool = False
    #: both rings of a DIR_BOTH pipe in GM start at GM_SLOT_BUFFER (pto-isa A2A3 before d2b30a84:
    #: the V2C way's entryOffset is never set)
    both_rings_alias: bool = False
    #: the address flow of a two-way pipe in GM adds no V2C offset: TALLOC and the GlobalTensor
    #: TPOP of the V2C way address the C2V way's slots (pto-isa ``TALLOC_IMPL`` /
    #: ``TPOP_IMPL(pipe, GlobalData)``: ``GM_SLOT_BUFFER + slotOffset`` in the a2a3 ``is_both`` and
    #: a5 ``is_both_gm`` branches, where the tile flow's V2C ring starts SlotNum x SlotSize after
    #: the C2V ring - ``setEntryOffset``): :meth:`both_address_error`
    both_addr_shared: bool = False
    #: pto-isa's CPU simulator: every slot starts free (SlotNum start-up credits, SyncPeriod 1)
    #: and a stall the device would not have is the simulator's (diagnoses say so)
    simulator: bool = False
    #: the CPU simulator hands a TILE_NO_SPLIT C2V tile to every Vector thread it runs (two) and
    #: releases the slot after both freed it (``IsDualLaneC2VActive``: ``remaining_consumers =
    #: get_subblockdim()``), so a one-lane pipe's slots are never released
    nosplit_c2v_all_lanes: bool = False
    #: the CPU simulator's TPOP of a TILE_NO_SPLIT Vec tile from a C2V ring fills the tile's
    #: valid region with zeros on AIV1 (pto-isa ``TPOP_IMPL``: after the pop when the lane takes
    #: part, ``ShouldNoSplitC2VConsumerLaneParticipate`` and ``IsDualLaneC2VActive``; instead of
    #: it otherwise, ``IsInactiveNoSplitVecLane``) - the device loads the tile on both lanes
    nosplit_c2v_lane1_zeros: bool = False
    #: the CPU simulator's slot state, replayed by ``ptopipe.isa.pipe.cpusim.SharedRing``: one
    #: ring of SlotNum slots per pipe, for both ways of a DIR_BOTH pipe too (one producer cursor;
    #: a split V2C lane claims the cursor slot without waiting for it to be free), and a TFREE
    #: that releases the slot of the core's latest TPOP
    slot_state_replay: bool = False
    #: where a TPUSH puts a tile's elements in a slot and where a TPOP reads them
    #: (:mod:`.slots`): "npu" - pto-isa's device code (a GM slot packed at the valid columns,
    #: a local slot at the static columns); "cpusim" - its CPU simulator (a split transfer laid
    #: out by the static box, every pop at the consumer's static columns)
    slot_placement: str = "npu"
    #: the protocol whose model the compiler targets for a run under this one (the CPU
    #: simulator runs code compiled for pto-isa's device headers); None: this one
    compiles_as: Protocol | None = None
    #: a tile TPOP from a GM ring stages its tile at ``staging + (pop index % LocalSlotNum) *``
    #: the popped tile's byte size instead of ``* SlotSize`` (pto-isa A2A3 before ab903c91; A5
    #: ``*_GM`` pipes): tiles of different sizes overlap in the staging ring
    stage_stride_tile: bool = False
    #: what a tile TFREE written without a TileSplitAxis frees with (pto-isa builds both
    #: ``TFREE<Pipe>(pipe)`` and ``TFREE(pipe)``: ``TFREE_IMPL<Pipe>(pipe)``): None - the split of
    #: its TPOP, by the protocol's own notification rule (seed 003; A2A3, whose tile TFREE is a
    #: no-op either way); else that split, sent on every call (:attr:`unsplit_free_every`)
    unsplit_free: TileSplitAxis | None = None
    #: a TFREE without a split notifies on every call, not every SyncPeriod-th (A5
    #: ``TFREE_IMPL<Pipe>(pipe)``: ``cons.free()`` without the ``shouldNotifyFree`` test)
    unsplit_free_every: bool = False
    #: the sparse notification rule tests the index of the consumer's latest TPOP of the pipe, not
    #: the index of the tile a release frees (pto-isa: ``TFREE_IMPL`` sends its free when
    #: ``shouldNotifyFree(cons.tileIndex - 1)``, a TPOP that frees when ``shouldNotifyFree`` of the
    #: tile it pops - a2a3 / a5 ``TFree.hpp``, ``TPop.hpp``): a consumer that frees a tile after a
    #: later TPOP of its ring sends the credit of that TPOP's position (:meth:`notice_index`)
    notice_at_latest_pop: bool = False
    #: the model's name in messages when it is not the protocol's (``pto-isa@<commit>``)
    label: str | None = None
    #: the library bugs this model was built with (``versions.LibraryBug``), for diagnoses
    bugs: tuple = ()

    #: pto-isa's free index rule in words (:attr:`notice_at_latest_pop`)
    NOTICE_RULE = ("pto-isa's TFREE decides whether to send its free credit from the index of the consumer's "
                   "latest TPOP of the pipe (shouldNotifyFree(cons.tileIndex - 1)), not of the tile it releases")
    #: how to keep to it (SlotNum 1 and 3 have SyncPeriod 1)
    NOTICE_FIX = ("free each popped tile before the next TPOP of its pipe (hold one tile at a time; copy a tile "
                  "still needed, or use it first), or give the ring SyncPeriod 1 (SlotNum 1 or 3 - ptoas takes 4 "
                  "or 8 only - or a TMPipe, which frees on every release), where every TFREE sends its credit")

    @property
    def name(self) -> str:
        """The protocol as the user selected it: "spec", "pto-isa", "pto-isa@8d74fb38", ..."""
        return self.label or self.protocol.value

    def bug(self, field: str):
        """The library bug that sets model field ``field`` in this model, else None."""
        return next((b for b in self.bugs if any(f == field for f, _v in b.changes)), None)

    def ring_base(self, gm_addr: int, way_index: int, slot_num: int, slot_size: int) -> int:
        """The GM address of way ``way_index``'s ring of a pipe whose GM_SLOT_BUFFER is at
        ``gm_addr``: the C2V ring first, the V2C ring after its SlotNum x SlotSize bytes."""
        if self.both_rings_alias:
            return gm_addr
        return gm_addr + way_index * slot_num * slot_size

    def both_address_error(self, direction) -> tuple | None:
        """(why, fix) when the address flow cannot use the V2C way of a two-way GM pipe of
        ``direction`` (:attr:`both_addr_shared`), else None."""
        if not self.both_addr_shared:
            return None
        flag = "is_both_gm" if direction is Direction.DIR_BOTH_GM else "is_both"
        one = "DIR_C2V_GM" if direction is Direction.DIR_BOTH_GM else "DIR_C2V"
        two = "DIR_V2C_GM" if direction is Direction.DIR_BOTH_GM else "DIR_V2C"
        return (f"both ways use the same GM ring (TALLOC/TPOP add no V2C offset to GM_SLOT_BUFFER for "
                f"{flag}: the V2C way's slot k is the C2V way's slot k)",
                f"use a {one} pipe and a {two} pipe with their own GM_SLOT_BUFFERs and FlagIDs two apart")

    # -- flags ------------------------------------------------------------------------
    def flag_ids(self, flag_id: int, way_index: int, slot_num: int) -> tuple:
        """(ready id, free id) of way ``way_index`` (0, or 1 for the V2C way of DIR_BOTH)."""
        raise NotImplementedError

    def flag_limit(self, plat) -> int:
        """How many flag ids a pipe may use per direction on ``plat``."""
        raise NotImplementedError

    def flags_top(self, ready_id: int, free_id: int, slot_num: int) -> int:
        """One past the highest flag id a way uses."""
        raise NotImplementedError

    def flag_range_error(self, way: str, ready_id: int, free_id: int, flag_id: int, slot_num: int,
                         plat, both: bool) -> tuple:
        """(message, fix) of a way whose flags do not fit the platform."""
        raise NotImplementedError

    def flag_claims(self, flag_id: int, ways: tuple, slot_num: int, plat) -> set | None:
        """The ``(setter, flag id)`` pairs the rings ``ways`` (C2V / V2C, in the pipe's order)
        of a pipe at ``flag_id`` use - setter "AIC" for a flag the Cube sets, "AIV" for one a
        Vector core sets, two separate flags - or None when a ring's flags do not fit
        ``plat``'s ids (:meth:`flag_limit`).  Two pipes of one peer clash when they share a pair."""
        out, count = set(), slot_num if self.per_tag_flags else 1
        for k, way in enumerate(ways):
            ready, free = self.flag_ids(flag_id, k, slot_num)
            if min(ready, free) < 0 or self.flags_top(ready, free, slot_num) > self.flag_limit(plat):
                return None
            prod, cons = ("AIC", "AIV") if way == C2V else ("AIV", "AIC")
            out |= {(prod, ready + t) for t in range(count)} | {(cons, free + t) for t in range(count)}
        return out

    def next_flag_id(self, flag_id: int, n_ways: int, slot_num: int) -> int:
        """The FlagID of the next pipe of the same Vector-Cube peer after a pipe with
        ``flag_id`` and ``n_ways`` rings of ``slot_num`` slots: the pipes of a peer take
        consecutive flag ranges, the first starting at :data:`FIRST_FLAG_ID`."""
        return max(self.flags_top(*self.flag_ids(flag_id, k, slot_num), slot_num)
                   for k in range(n_ways))

    # -- credits and notifications ------------------------------------------------------
    def sync_period(self, cfg) -> int:
        """Slots released by one free SET (pto-isa ``SyncPeriod``; ptopipe's ``TPipe(sync_period=)``;
        1 for a pto-isa TMPipe, whose FiFoSyncT the protocol never reads)."""
        raise NotImplementedError

    def held_limit(self, slot_num: int, ring_in_gm: bool) -> int:
        """The most slots of a ring a consumer may hold at a TPOP (the popped one included)
        before the TPOP waits forever for a push the producer cannot make: SLOT_NUM, unless
        frees reach the producer in batches (pto-isa's SyncPeriod)."""
        return slot_num

    def fifo_depth(self, plat) -> int | None:
        """The most slots a ring may have on ``plat`` under this protocol (pto-isa's TPipe
        static_asserts the platform's FIFO depth), None for no limit.  The runtime binding
        and Validate both ask here."""
        return plat.max_fifo_depth if self.depth_limited else None

    def counter_overflow(self, slot_num: int, plat, split: bool) -> str | None:
        """Why a ring of ``slot_num`` slots can overflow a flag on ``plat`` under some
        schedules (None: it cannot).  Per-slot flags are set once per wrap, so never; a
        counter flag counts the tiles pushed and not yet popped by its consumer lane, up to
        SLOT_NUM (the producer waits for a free only from push #SLOT_NUM on), and holds at
        most ``plat.flag_counter_max``."""
        if self.per_tag_flags or slot_num <= plat.flag_counter_max:
            return None
        lane = ("a Vector lane of this split ring (each lane has its own ready flag; AIV1 "
                "starved by the schedule)" if split else "its consumer")
        return (f"SLOT_NUM {slot_num} on {self.protocol.value}'s counter flags can overflow on "
                f"{plat.name}: the producer waits for a free slot only from push #{slot_num} on, so "
                f"when {lane} falls {slot_num} tiles behind, its ready flag counts {slot_num}, more "
                f"than the {plat.flag_counter_max} a flag holds (a ProtocolError under some "
                f"schedules - `ptopipe check` explores them); a SLOT_NUM of at most "
                f"{plat.flag_counter_max} cannot overflow")

    def startup_credits(self, slot_num: int, cfg=None) -> int:
        """Free SETs the consumer posts on each link when it binds (a pipe of ``cfg``;
        ``Channel.startup_credits`` holds the decision for a bound ring)."""
        raise NotImplementedError

    def ctor_credit_pipe(self, ch) -> bool:
        """Does the TPipe constructor of ``ch`` post SyncPeriod free credits (pto-isa on A5, and
        some releases on A2A3: :attr:`ctor_credit_pipes`)?"""
        return False

    def stray_ctor_credits(self, cfg, way: str) -> int:
        """Free SETs the TPipe constructor posts on a Vector core that constructs a pipe of
        ``cfg`` without being one of its peers (AIV1 and a one-lane IsNoSplit pipe, which is
        consumer-local: pto-isa A5 ``TPipe::TPipe`` runs its ``cons.free()`` calls on every core;
        on a ``way`` C2V ring the Vector's ``free()`` sets its own free flag, on a V2C ring only
        the Cube's does).  The constructor's credits of a local no-split pipe: none in the fixed
        library, SyncPeriod where :attr:`ctor_credit_local`."""
        if way != C2V or self.wait_every or not (self.ctor_credit_pipes and self.ctor_credit_local):
            return 0
        return self.sync_period(cfg)

    def channel_credits(self, ch) -> int:
        """Start-up credits of the bound ring ``ch`` (its pipe kind decided at bind)."""
        return self.startup_credits(ch.slot_num, ch.cfg)

    def waits_every(self, cfg) -> bool:
        """Does every push on a pipe of ``cfg`` wait for a free and every release send one?
        Decided once at bind (``Channel.wait_every``)."""
        return self.wait_every or (self.tmpipe_rendezvous and cfg.fifo is not None)

    def producer_waits(self, ch, i: int) -> bool:
        """Does push ``i`` wait for a free credit?"""
        return True

    def handshake_lanes(self, cfg) -> tuple:
        """The Vector lanes whose flags the Cube's end of a pipe of ``cfg`` waits on and sets:
        its peers - except a pto-isa TMPipe (:attr:`tmpipe_rendezvous`), whose Cube waits for and
        signals both Vector cores whatever its VecCubeRatio (which decides only how a tile's data is
        split, ``VEC_CORES``).  A5 ``TMPipe``: ``Producer::allocate`` (C2V) waits
        ``FlagIDPlusOne`` and ``FlagIDPlusOne + VEC_CORE_ID_OFFSET``, ``record`` sets ``FlagID`` and
        ``FlagID + 16``, ``Consumer::wait`` (V2C, CTRL) waits ``FlagID`` and ``FlagID + 16``,
        ``free`` and the constructor's ``cons.free()`` set ``FlagIDPlusOne`` and ``+ 16``; a
        Vector core sets and waits on its own ids (AIV1's are the Cube's ``+ 16``).  A2A3
        ``TMPipe``: every SET is ``ffts_cross_core_sync`` in ``CV_CORES_SYNC`` mode - the Cube's
        reaches both Vector cores and its ``wait_flag_dev`` completes once both have set the id.
        So a TMPipe of one lane (``V1C1_VEC0`` / ``V1C1_VEC1``) whose other lane does not make
        every handshake hangs at the Cube's wait for that lane's flag."""
        return (0, 1) if self.lanes_fixed(cfg) else tuple(cfg.peers)

    def lanes_fixed(self, cfg) -> bool:
        """Are the Cube's handshakes of a pipe of ``cfg`` both Vector lanes' whatever the split of a
        transfer - a pto-isa TMPipe (:meth:`handshake_lanes`), whose flag code takes no split, so
        that a TILE_NO_SPLIT transfer does not make it AIV0's as a TPipe's does on A5
        (:attr:`nosplit_lane0`)?"""
        return self.tmpipe_rendezvous and cfg.fifo is not None

    def lost_lanes(self, ch) -> tuple:
        """The Vector lanes the library waits for before it releases a slot of ``ch`` that are
        not the pipe's peers (so never free anything): the CPU simulator's second lane of a
        one-lane C2V pipe (:attr:`nosplit_c2v_all_lanes`); decided at bind (``Channel.lost_lanes``)."""
        if self.nosplit_c2v_all_lanes and ch.way == C2V and tuple(ch.peers) == (0,):
            return (1,)
        return ()

    def pop_zeroes(self, ch, split, loc, subblock: int) -> bool:
        """Does a tile TPOP of ``ch`` with ``split`` into a tile of location ``loc`` on Vector
        sub-block ``subblock`` hand the kernel zeros instead of the tile
        (:attr:`nosplit_c2v_lane1_zeros`)?  Asked only where ``Channel.zero_pops`` is set."""
        return (self.nosplit_c2v_lane1_zeros and ch.way == C2V and split is TileSplitAxis.TILE_NO_SPLIT
                and loc is TileType.Vec and subblock != 0)

    def consumer_frees(self, ch, k: int) -> bool:
        """Does a release whose notification tests index ``k`` (:meth:`notice_index`) send a
        free SET?"""
        return True

    def notice_index(self, k: int, popped: int) -> int:
        """The index the notification rule (:meth:`consumer_frees`) tests for release ``k``
        (0-based) of a consumer that has made ``popped`` TPOPs of the pipe: the release itself,
        or the latest TPOP, ``popped - 1`` (:attr:`notice_at_latest_pop`: pto-isa's
        ``shouldNotifyFree(cons.tileIndex - 1)``).  The two are one index when every tile is
        freed before the next TPOP of its ring."""
        return popped - 1 if self.notice_at_latest_pop else k

    def notice_moves(self, slot_num: int, sync_period: int | None = None) -> bool:
        """Can a TFREE of a TPipe ring of ``slot_num`` slots (``sync_period``: the pipe's own,
        else the protocol's default) send its free for another index than the tile it releases
        - the rule tests the latest TPOP (:attr:`notice_at_latest_pop`) and frees are sent in
        batches (SyncPeriod > 1)?  Then every tile must be freed before the next TPOP of its
        ring for the credits to be the producer's count (:meth:`moved_notice`)."""
        return False

    def moved_notice(self, slot_num: int, k: int, popped: int, sync_period: int | None = None) -> bool:
        """Does release ``k``, made after ``popped`` TPOPs of such a ring (:meth:`notice_moves`),
        send a free SET where the producer counts on none (one per SyncPeriod releases), or none
        where it counts on one?"""
        if not self.notice_moves(slot_num, sync_period):
            return False
        ring = _PipeShape(slot_num, sync_period or self.sync_period(_PipeShape(slot_num)))
        return self.consumer_frees(ring, k) != self.consumer_frees(ring, self.notice_index(k, popped))

    def unsplit_free_error(self, ch, pop_split) -> tuple | None:
        """(why, fix) when a TFREE without a split cannot release a tile of ``ch`` popped with
        ``pop_split`` as the kernel means it (:attr:`unsplit_free`), else None.  Only the Cube
        consumer's free depends on the split on the device (``setIntraBlockBySplit`` adds AIV1's
        id + 16 for any split but TILE_NO_SPLIT); the CPU simulator's no-split free is made by
        AIV0 alone (``IsInactiveNoSplitVecConsumerLane``)."""
        d = self.unsplit_free
        if d is None or TileSplitAxis(pop_split) == d:
            return None
        pop = TileSplitAxis(pop_split)
        spelled = f"TFREE<Pipe, TileSplitAxis::{pop.name}>(pipe)"
        if self.simulator:
            if pop is TileSplitAxis.TILE_NO_SPLIT:
                return None
            return (f"{self.name}'s TFREE(pipe) is TFREE<Pipe, TileSplitAxis::{d.name}>(pipe) (cpu/TPop.hpp): "
                    f"AIV1 frees nothing for a no-split free, so the {pop.name} slot AIV1 popped is never "
                    "released", f"give TFREE the split of its TPOP: {spelled}")
        if free_split_problem(ch.way, pop, d) is None:
            return None         # a Vector consumer's free sets one flag, whatever the split
        return (f"pto-isa on {self.platform.upper()} frees with Consumer::free's default split, "
                f"{d.name}, when TFREE has none (TFREE_IMPL<Pipe>(pipe)); the Cube's {d.name} free also "
                f"sets AIV1's free flag (id + 16), a credit for a slot AIV1 never popped",
                f"give TFREE the split of its TPOP: {spelled}")

    def free_pipe(self, ch) -> PipeUnit:
        """The pipe a consumer's TFREE of bound ring ``ch`` signals from (:meth:`free_signal_pipe`)."""
        return self.free_signal_pipe(ch.way, ch.in_gm)

    @staticmethod
    def free_signal_pipe(way: str, in_gm: bool) -> PipeUnit:
        """The pipe a consumer's TFREE signals from (pto-isa ``Consumer::free``): MTE2 for a
        ring in GM; for a consumer-local ring the pipe that used the slot last - V for a C2V
        ring in UB, MTE1 for a V2C ring in L1 (A5 ``set_intra_block(PIPE_V)`` /
        ``setIntraBlockBySplit<PIPE_MTE1>``).  A pipe is an in-order queue: the free follows
        that pipe's earlier work (and, with :attr:`free_after_readers`, every read of the
        popped tile)."""
        if in_gm:
            return PipeUnit.MTE2
        return PipeUnit.V if way == "C2V" else PipeUnit.MTE1

    def free_needs_event(self, way: str, in_gm: bool, pipe: PipeUnit) -> bool:
        """Must a read of a popped tile of a ``way`` ring (in GM or consumer-local) on ``pipe``
        be ordered before its TFREE by an event (``set_flag(pipe, free pipe)`` /
        ``wait_flag``)?  Only where the free SET follows its own pipe's work alone
        (:attr:`free_after_readers` False) and the TFREE really releases the slot the tile
        is bound to (a tile TPOP from a GM ring that frees inside TPOP reads a staged copy);
        a read on the free's own pipe is ordered already.  The race checker judges a run by
        the same rule (``KernelChecks.free_unordered``); the compiler asks here for the
        TFREEs it places (InsertTfree, LowerPlatform)."""
        if self.free_after_readers or (in_gm and self.frees_in_pop):
            return False
        return pipe is not self.free_signal_pipe(way, in_gm)

    @staticmethod
    def ring_data(op: str, way: str, in_gm: bool, ctrl: bool = False, platform: str = "a2a3") -> tuple:
        """How ring instruction ``op`` ("TPUSH" / "TPOP") moves its tile on its own core, as
        pto-isa compiles it on ``platform`` ("a2a3" / "a5"; the same under every protocol: the
        flag protocol does not change the data movement): ``(pipe, after)`` - ``pipe`` reads
        (TPUSH) or writes (TPOP) the tile, None when no byte of it moves on this core;
        ``after`` is a pipe whose earlier work the instruction orders before itself with an
        event of its own (None: none).  Nothing else is ordered inside a ring instruction: the
        kernel's events must order the tile's other users (manual mode checks them as it does
        every instruction's, ``sim.pipesync``; PTOAS's InsertSync places them):

        * TPUSH of an Acc tile: ``TSTORE_IMPL`` to the GM slot (A2A3 ``pushAcc2GMFiFo``; A5
          ``*_GM`` pipes) or ``TMOV_IMPL`` L0C -> UB (A5 ``pushAcc2VecFiFo``), both on PIPE_FIX;
        * TPUSH of a Vec tile: ``TSTORE_IMPL`` to the GM slot (``pushVec2GMFiFo``) or on A5
          ``TINSERT_IMPL`` UB -> L1 (``pushVec2MatFiFo``: copy_ubuf_to_cbuf), both on PIPE_MTE3
          (:data:`~ptopipe.arch.catalogue.PUSH_PIPE`);
        * TPUSH of a control tile: a scalar read of ``tile.data()`` on PIPE_S (a blocking load:
          its value is stored to the control slot next, so what the core issues later follows
          it); A2A3's ``pushVec2CtrlFiFo`` (TPipe and TMPipe) first makes ``set_flag(PIPE_V,
          PIPE_S)`` / ``wait_flag(PIPE_V, PIPE_S)`` - every earlier Vector instruction before the
          read - A5's does not;
        * TPOP from a GM ring: ``TASSIGN_IMPL`` to the staging slot and ``TLOAD_IMPL`` on
          PIPE_MTE2 (``popVecTileFromGMFiFo`` / ``popMatTileFromGMFiFo``), after the cross-core
          wait only: a reader on another pipe needs an MTE2 -> reader event, and the next TPOP
          into a staging slot a reader of its last tile used needs a reader -> MTE2 one;
        * TPOP from a consumer-local ring (A5): ``TASSIGN_IMPL`` alone (``popTileFromVecFiFo`` /
          ``popTileFromMatFiFo``): the producer core wrote the bytes, and the consumer's ready
          wait holds one pipe only (:meth:`ready_wait_pipe`): a reader on another pipe needs an
          event from that one;
        * TFREE, TALLOC and the address flow (a GlobalTensor TPUSH / TPOP) move no tile: the
          kernel's own TLOAD / TSTORE of the slot are ordinary instructions."""
        if ctrl:
            return PipeUnit.S, (PipeUnit.V if op == "TPUSH" and platform == "a2a3" else None)
        if op == "TPUSH":
            return PUSH_PIPE[way], None
        return (PipeUnit.MTE2 if in_gm else None), None

    def pop_frees(self, in_gm: bool, tile: bool = True) -> bool:
        """Does a TPOP free its slot itself on a ring in GM (``in_gm``) - pto-isa's tile TPOP,
        whose tile TFREE there is a no-op - so that a TPOP without a TFREE runs (a portability
        warning, not an error: the runtime and VerifyPipes both ask this)?  A GlobalTensor TPOP
        (``tile`` False: the address flow) never does, on any platform: pto-isa's
        ``TPOP_IMPL(pipe, GlobalTensor)`` waits and assigns the slot's address only, and its
        ``TFREE_IMPL(pipe, GlobalTensor)`` sends the free (a2a3 / a5 TPop.hpp, TFree.hpp)."""
        return self.frees_in_pop and in_gm and tile

    @staticmethod
    def ready_wait_pipe(way: str) -> PipeUnit:
        """The pipe a consumer-local ring's (A5) ready wait holds - A5 ``Consumer::wait``:
        ``wait_intra_block(PIPE_V, ...)`` for the C2V ring in UB, ``PIPE_MTE1`` for the V2C
        ring in L1 (``is_v2c_mat``): only that pipe's later work follows the producer's write
        of the slot; a popped tile read on another pipe needs an event from it."""
        return PipeUnit.V if way == C2V else PipeUnit.MTE1

    def slots_per_free(self, ch) -> int:
        """Slots one free SET releases (for the report's occupancy)."""
        return 1

    def overwrite_fix(self, ch=None, allocate: bool = True) -> str:
        """How to fix a push that overwrote a slot still in use (on ``ch``; ``allocate``:
        the producer's free-slot wait was on)."""
        raise NotImplementedError

    def static_ring(self, slot_num: int, in_gm: bool) -> "StaticRing":
        """A TPipe ring of ``slot_num`` slots (in GM or consumer-local) as a compiler sees it
        before any run: the decisions a bound channel copies (SyncPeriod, wait rule, start-up
        credits, a TPOP that frees its slot), so that VerifyPipes runs the kernels' push /
        pop / free orders by this protocol's rules (:meth:`frees_needed`)."""
        cfg = _PipeShape(slot_num)
        return StaticRing(self, slot_num, self.sync_period(cfg), self.waits_every(cfg),
                          self.startup_credits(slot_num, cfg), self.pop_frees(in_gm), cfg)

    # -- diagnoses ----------------------------------------------------------------------
    def frees_needed(self, ch, i: int) -> int:
        """TFREEs (of each consumer lane) before push ``i`` may write its slot."""
        return max(0, i - ch.slot_num + 1)

    def withheld_credit(self, ch, i: int, freed: int, consumer: str, cpp: bool = False) -> tuple | None:
        """(cause, fix) when a producer blocked at push ``i`` still waits although
        ``consumer`` made ``freed`` TFREEs - enough for a slot, but not for this protocol's
        notification; None otherwise (``cpp``: the fix is spelt for a pto-isa C++ kernel)."""
        return None

    def held_fix(self, loc, ch=None) -> str:
        """How to fix a deadlock where a consumer holds a slot popped at ``loc`` (of ``ch``)."""
        return (f"call TFREE after the TPOP at {loc} (every TPOP needs a TFREE before the ring wraps "
                "back to its slot)")

    # -- binding ------------------------------------------------------------------------
    def unsupported(self, cfg, direction) -> tuple | None:
        """(message, fix) of a pipe this protocol's library cannot build, else None."""
        return None

    # -- teardown (the producer's TPipe going out of scope at kernel end) -----------------
    def frees_due(self, ch, pushed: int, tag: int = 0) -> int:
        """Free SETs the consumer sends on the free flag of slot ``tag`` (per-tag flags; else
        the way's one counter flag) for ``pushed`` tiles popped and released, start-up
        credits included."""
        if self.per_tag_flags:
            n = ch.slot_num
            return ch.startup_credits // n + sum(1 for i in range(pushed) if i % n == tag)
        return ch.startup_credits + sum(1 for i in range(pushed) if ch.wait_every or self.consumer_frees(ch, i))

    def teardown_drain(self, ch, pushed: int) -> int:
        """Free credits the producer's teardown WAITs for on each free flag of each link,
        after ``pushed`` tiles: what the protocol says the consumer sent (start-up credits
        and the frees of ``pushed`` releases) minus what the producer's pushes waited for,
        spread over the way's free flags (one per slot tag with per-tag flags).  A correct
        run leaves exactly that much, so the drain ends the launch with empty free flags."""
        if ch.wait_every:                 # every push waits and every release frees
            if ch.lost_lanes:             # no free reaches the producer: what the pushes left
                return max(0, ch.startup_credits - pushed)
            return ch.startup_credits // (ch.slot_num if self.per_tag_flags else 1)
        waited = sum(1 for i in range(pushed) if self.producer_waits(ch, i))
        return max(0, self.frees_due(ch, pushed) - waited)


@dataclass(frozen=True)
class _PipeShape:
    """What the protocol reads of a TPipe's configuration when no TPipe is bound: a DSL
    ``*_initialize_pipe`` sets no SyncPeriod (the protocol's default) and is not a TMPipe."""
    slot_num: int
    sync_period: int | None = None
    fifo: FIFOType | None = None


@dataclass(frozen=True)
class StaticRing:
    """A ring's protocol decisions without a bound channel (:meth:`ProtocolModel.static_ring`);
    it reads as a channel to :meth:`ProtocolModel.frees_needed` and
    :meth:`ProtocolModel.withheld_credit`."""
    model: ProtocolModel
    slot_num: int
    sync_period: int
    wait_every: bool
    startup_credits: int
    #: the TPOP frees its slot itself (pto-isa on a ring in GM), the TFREE releases nothing
    pop_frees: bool
    cfg: _PipeShape

    def frees_needed(self, i: int) -> int:
        """TFREEs before push ``i`` may write its slot (:meth:`ProtocolModel.frees_needed`)."""
        return self.model.frees_needed(self, i)

    @property
    def notice_moves(self) -> bool:
        """Can a TFREE's free notification test another index than its release's
        (:meth:`ProtocolModel.notice_moves`)?"""
        return self.model.notice_moves(self.slot_num, self.sync_period)

    def sends(self, k: int, popped: int) -> bool:
        """Does release ``k`` after ``popped`` TPOPs send a free SET
        (:meth:`ProtocolModel.notice_index`)?"""
        return self.model.consumer_frees(self, self.model.notice_index(k, popped))

    def withheld_credit(self, i: int, freed: int, consumer: str):
        """(cause, fix) when push ``i`` waits only for this protocol's sparse notification
        (:meth:`ProtocolModel.withheld_credit`), else None."""
        return self.model.withheld_credit(self, i, freed, consumer)


@dataclass(frozen=True)
class SpecModel(ProtocolModel):
    """Seed 003: per-tag flags ``ready[tag] = free[tag] = FlagID + tag`` (the V2C way of a
    bidirectional pipe after the C2V way's SlotNum flags); the consumer pre-signals every
    slot free at bind; every push waits and every TFREE signals."""

    def flag_ids(self, flag_id, way_index, slot_num):
        f = flag_id + way_index * slot_num
        return f, f

    def flag_limit(self, plat):
        return plat.flags_per_direction

    def flags_top(self, ready_id, free_id, slot_num):
        return ready_id + slot_num

    def flag_range_error(self, way, ready_id, free_id, flag_id, slot_num, plat, both):
        limit = self.flag_limit(plat)
        if both:        # the C2V ring's flags come first, then the V2C ring's
            fix = (f"a pipe both ways numbers its flags C2V ring then V2C ring: use FlagID + 2 * SlotNum "
                   f"<= {limit} (SlotNum {plat.slot_num_bidirectional} per direction, the seed-003 "
                   "default for both ways; slot_num= of the init calls or of @pl.incore)")
        else:
            fix = f"use FlagID + SlotNum <= {limit} (slot_num= of the init calls or of @pl.incore)"
        if flag_id < 0:
            fix = f"a FlagID is a flag number, 0 or more; {fix}"
        return (f"{way} ring uses flags {ready_id}..{ready_id + slot_num - 1} (FlagID {flag_id}, "
                f"SlotNum {slot_num}) but a peer has only {limit} flags per direction", fix)

    def sync_period(self, cfg):
        return 1

    def startup_credits(self, slot_num, cfg=None):
        return slot_num

    def overwrite_fix(self, ch=None, allocate=True):
        return "do not skip the free-slot wait (setAllocateStatus) while slots are in use"


@dataclass(frozen=True)
class PtoIsaModel(ProtocolModel):
    """pto-isa: counter flags ready = FlagID + 2k, free = FlagID + 2k + 1 (k = 1 for the V2C
    way of DIR_BOTH); ``SyncPeriod = SlotNum <= 2 ? SlotNum : SlotNum / 2`` unless the
    pipe sets ``sync_period``; the producer waits only when ``i >= SlotNum and
    i % SyncPeriod == 0``, the consumer notifies when ``(k + 1) % SyncPeriod == 0``; no
    start-up credits; a tile TPOP from a GM ring frees inside TPOP.  On A5 (``platform``
    "a5") a tile TFREE frees again after such a TPOP, a NO_SPLIT transfer reaches AIV0
    only and DIR_BOTH_GM cannot work; ``TPipe(DIR_V2C_CTRL)`` compiles on
    neither platform.  A TMPipe (``tmpipe_rendezvous``) has one constructor credit, waits
    before every push, frees on every release and drains one credit at teardown."""

    def flag_ids(self, flag_id, way_index, slot_num):
        return flag_id + 2 * way_index, flag_id + 2 * way_index + 1

    #: :meth:`flag_ids` in words, for messages that compare it with a flag-per-slot protocol's
    #: (pto-isa's TPipe: record FlagID / wait FlagIDPlusOne; a DIR_BOTH pipe's Vector end
    #: records FlagIDPlusTwo / waits FlagIDPlusThree - include/pto/npu/a2a3/TPush.hpp)
    FLAG_RULE = ("two counter flags per ring, whatever its SlotNum (ready FlagID, free FlagID+1; "
                 "a DIR_BOTH pipe's V2C ring: FlagID+2 and FlagID+3)")

    def flag_limit(self, plat):
        return plat.hw_flag_ids

    def flags_top(self, ready_id, free_id, slot_num):
        return max(ready_id, free_id) + 1

    def flag_range_error(self, way, ready_id, free_id, flag_id, slot_num, plat, both):
        limit = self.flag_limit(plat)
        return (f"{way} ring uses flag ids {ready_id}/{free_id}; the hardware has ids 0..{limit - 1}",
                f"use FlagID + {3 if both else 1} < {limit}")

    def sync_period(self, cfg):
        if self.simulator:
            return 1                        # the CPU simulator releases a slot at every TFREE
        if self.tmpipe_rendezvous and cfg.fifo is not None:
            return 1                        # a TMPipe frees every release; FiFoSyncT is unused
        return cfg.sync_period or self.default_sync_period(cfg.slot_num)

    @staticmethod
    def default_sync_period(n: int) -> int:
        return n if n <= 2 else n // 2

    def notice_moves(self, slot_num, sync_period=None):
        return (self.notice_at_latest_pop and not self.wait_every and slot_num > 1
                and (sync_period or self.default_sync_period(slot_num)) > 1)

    def held_limit(self, slot_num, ring_in_gm):
        # push i (i >= SLOT_NUM, i % SP == 0) waits for a free SET, which the consumer sends
        # every SP-th TFREE: popping tile p while holding h others, it has freed p - h, so
        # the SETs cover the waits for every p only if h <= SLOT_NUM - SP.  A GM ring's tile
        # TPOP frees inside the TPOP (holding costs no ring slot).
        if ring_in_gm:
            return slot_num
        return slot_num - self.default_sync_period(slot_num) + 1

    def pop_waits_forever(self, slot_num: int, pops: int, others: int) -> bool:
        """On a consumer-local ring: does the TPOP of tile ``pops`` (0-based), made while
        ``others`` popped slots are held, wait for a push that can never come?  Push i waits
        for a free SET when ``i >= SLOT_NUM and i % SP == 0`` (every push after the first
        for SLOT_NUM 1); the consumer has sent ``(pops - others) // SP`` SETs."""
        sp = self.default_sync_period(slot_num)
        waits = 0 if pops < slot_num else pops // sp - (slot_num - 1) // sp
        return others >= slot_num or (pops - others) // sp < waits

    def startup_credits(self, slot_num, cfg=None):
        if self.simulator:
            return slot_num                 # the CPU simulator's slots start free
        # TPipe: none, the shouldWaitFree window gives the start-up capacity (A5: pto-isa's
        # protocol of local no-split FIFOs; the newest code's GM/split constructor credits are
        # ``channel_credits`` under ``ctor_credit_pipes``); TMPipe: the constructor's one cons.free()
        return 1 if cfg is not None and self.tmpipe_rendezvous and cfg.fifo is not None else 0

    def producer_waits(self, ch, i):
        if ch.slot_num == 1:
            return i > 0
        return i >= ch.slot_num and i % ch.sync_period == 0

    def consumer_frees(self, ch, k):
        if ch.slot_num == 1:
            return True
        return (k + 1) % ch.sync_period == 0

    def slots_per_free(self, ch):
        return 1 if ch.slot_num == 1 else ch.sync_period

    def overwrite_fix(self, ch=None, allocate=True):
        if not allocate:
            return "do not skip the free-slot wait (setAllocateStatus) while slots are in use"
        if ch is not None and ch.startup_credits and self.ctor_credit_pipe(ch):
            bug = self.bug("ctor_credit_local") or self.bug("ctor_credit_pipes")
            if bug is not None:
                return (f"{bug.note()} - the TPipe constructor posts SyncPeriod = {ch.sync_period} free credits "
                        f"on top of the shouldWaitFree window, so push #{ch.slot_num} passes its wait before "
                        f"any TFREE: the library, not the kernel, overruns the ring; {bug.upgrade()}")
            return (f"pto-isa on A5 (newest TPush.hpp): this GM-backed or split TPipe's constructor posts "
                    f"SyncPeriod = {ch.sync_period} free credits on top of the shouldWaitFree window, so "
                    f"push #{ch.slot_num} passes its wait before any TFREE - the library overruns the ring; "
                    "a local no-split TPipe (one consumer lane, ring in UB/L1) is not affected")
        if ch is not None and getattr(ch, "moved_extra", None):
            return self.moved_notice_fix(ch, ch.moved_extra, extra=True)
        if ch is not None and getattr(ch, "unsplit_free_at", None):
            return (f"the TFREE without a split at {ch.unsplit_free_at} frees on every call on "
                    f"{self.platform.upper()} (pto-isa's TFREE_IMPL<Pipe>(pipe) sends cons.free() without "
                    f"the shouldNotifyFree test), while the producer waits only every SyncPeriod = "
                    f"{ch.sync_period} pushes: the extra credits let a push pass before its slot is freed; "
                    "give TFREE the split of its TPOP (TFREE<Pipe, TileSplitAxis::S>(pipe)), which notifies "
                    "every SyncPeriod-th free")
        if ch is not None and ch.tfree_frees and ch.slot_num % ch.sync_period == 0:
            return ("on A5 a tile TPOP from a GM ring already frees the slot and a tile TFREE after it "
                    "frees it a second time, so the producer passes its wait early: do not TFREE tiles "
                    "popped from a GM ring under pto-isa on A5")
        if ch is not None and ch.slot_num > 1 and ch.slot_num % ch.sync_period == 0:
            return (f"pto-isa's producer waits only every SyncPeriod = {ch.sync_period} pushes: free the "
                    "slots in pop order, and do not bypass the pipe's flags")
        return ("pto-isa's sparse free notifications need SlotNum % SyncPeriod == 0 "
                "(SlotNum <= 3 or even); use an even SlotNum")

    def moved_notice_fix(self, ch, note, extra: bool) -> str:
        """The fix of an overwrite (``extra``: the TFREE ``note`` = (line, release #, latest TPOP #)
        sent a credit the producer does not count on) or of a hang (it sent none where the
        producer counts on one) caused by :attr:`notice_at_latest_pop` on ring ``ch``."""
        loc, k, j = note
        sp = ch.sync_period
        if extra:
            did = (f"whose position ends a SyncPeriod, and sent a credit where the producer counts on none (it "
                   f"counts one free per SyncPeriod = {sp} releases, sent with the last of the period): a wait of "
                   "the producer passes before the period's slots are all freed, or the credit is left on the "
                   "flag")
        else:
            did = (f"whose position does not end a SyncPeriod, and sent no credit where the producer counts on "
                   f"one (one free per SyncPeriod = {sp} releases, sent with the last of the period: tile #{k})")
        return (f"the TFREE at {loc} released tile #{k} after the TPOP of tile #{j}: {self.NOTICE_RULE}, "
                f"so it tested #{j}, {did}; {self.NOTICE_FIX}")

    def ctor_credit_pipe(self, ch) -> bool:
        """pto-isa A5 ``!uses_local_no_split_credit_protocol``: a TPipe whose ring is in GM or
        that is split (two consumer lanes; a one-lane pipe is the IsNoSplit pipe)."""
        return (self.ctor_credit_pipes and not self.waits_every(ch.cfg)
                and (self.ctor_credit_local or ch.in_gm or len(ch.peers) > 1))

    def channel_credits(self, ch):
        if self.ctor_credit_pipe(ch):
            return ch.sync_period               # the constructor's SyncPeriod cons.free() calls
        return self.startup_credits(ch.slot_num, ch.cfg)

    def frees_needed(self, ch, i):
        if ch.wait_every:                   # TMPipe: one start-up credit, then one free per push
            return max(0, i + 1 - ch.startup_credits)
        n, sp = ch.slot_num, ch.sync_period
        if n == 1:
            return i
        if i < n:
            return 0
        return ((i - n) // sp + 1) * sp       # notification w = (i - n) // sp + 1, at TFREE w * sp

    def withheld_credit(self, ch, i, freed, consumer, cpp: bool = False):
        # (a pto-isa C++ TPipe takes no SyncPeriod - it follows from SlotNum -: there the fix
        # names the TMPipe, which frees on every release)
        n, sp = ch.slot_num, ch.sync_period
        need = self.frees_needed(ch, i)
        if sp <= 1 or freed >= need or freed < ProtocolModel.frees_needed(self, ch, i):
            return None                     # not the notification rule: a slot is really in use
        rule = (f"the pipe's sync_period {sp}" if ch.cfg.sync_period else
                f"SlotNum {n} <= 2 ? SlotNum : SlotNum / 2 = {sp}")
        w = need // sp
        cause = (f"the free credit is withheld by pto-isa's SyncPeriod: {consumer} notifies the producer once "
                 f"every SyncPeriod = {sp} TFREEs ({rule}); push #{i} waits for notification #{w}, sent "
                 f"at TFREE #{need}, but {consumer} has made {freed} TFREE(s) = {freed // sp} notification(s) "
                 f"({freed % sp} TFREE(s) not yet notified) - a slot is free, the producer is not told")
        early = ("free each popped tile before the next TPOP of the pipe (its TFREE sends the credit of the "
                 "latest TPOP's index, so a tile held across a TPOP moves it)" if self.notice_at_latest_pop else
                 f"free earlier (hold at most SlotNum - SyncPeriod = {n - sp} popped tiles when popping the next)")
        fix = (f"{consumer} has freed {freed % sp} slot(s) since its last notification, but pto-isa notifies "
               f"only every {sp} TFREEs (SyncPeriod): {early}, deepen the ring, or "
               + ("drive it with a TMPipe, which frees on every release (a TPipe's SyncPeriod follows from its "
                  "SlotNum)" if cpp else "give the pipe sync_period=1 (a pto-isa TMPipe frees on every release)"))
        return cause, fix

    def withheld_by_index(self, ch, i: int, freed: int, consumer: str, silent: list) -> tuple | None:
        """(cause, fix) when the producer blocked at push ``i`` of ``ch`` waits for a credit its
        count says ``consumer``'s ``freed`` TFREEs have sent, and the TFREEs ``silent`` (line,
        release #, latest TPOP #) sent none because they tested a later TPOP's index
        (:attr:`notice_at_latest_pop`); else None."""
        need = self.frees_needed(ch, i)
        if not silent or ch.wait_every or freed < need:
            return None
        where = ", ".join(f"{loc} (tile #{k}, after the TPOP of #{j})" for loc, k, j in silent)
        cause = (f"the free credit is withheld by pto-isa's free index: {consumer} has made {freed} TFREE(s), the "
                 f"{need} push #{i} needs by the producer's count (one free per SyncPeriod = {ch.sync_period} "
                 f"releases), but its TFREE(s) at {where} tested the index of its latest TPOP, not of the tile "
                 "released, and sent no credit - the slot is free, the producer is not told")
        return cause, self.moved_notice_fix(ch, silent[0], extra=False)

    def held_fix(self, loc, ch=None):
        if ch is not None and ch.wait_every:
            return (f"call TFREE after the TPOP at {loc} before popping the next tile: pto-isa's TMPipe has "
                    "one start-up credit and its producer waits for a free before every push, so at most "
                    "one tile is in the ring (use a TPipe for a deeper ring)")
        if self.notice_at_latest_pop:
            return (f"call TFREE after the TPOP at {loc}; pto-isa's producer waits only every SyncPeriod "
                    "pushes and its consumer's TFREE sends the credit of the latest TPOP's index, so free each "
                    "tile in pop order, before the next TPOP of the pipe")
        return (f"call TFREE after the TPOP at {loc}; pto-isa's producer waits only every SyncPeriod "
                "pushes, so free in pop order and keep at most SlotNum - SyncPeriod tiles held when "
                "popping the next")

    def unsupported(self, cfg, direction):
        if direction is Direction.DIR_V2C_CTRL and cfg.fifo is not FIFOType.CTRL_FIFO and not self.tpipe_ctrl:
            return ("TPipe(DIR_V2C_CTRL) does not compile in pto-isa (TPipe::Consumer::pop calls "
                    "popCtrlFromCtrlFiFo(fifo, tile), which takes only the FIFO)",
                    "send control values through TMPipe(FlagID, FIFOType.CTRL_FIFO, depth, FiFoSyncT, "
                    "vec_tile, ctrl_tile), both Vector lanes pushing every word (its Cube waits for both "
                    "lanes' flags whatever the VecCubeRatio)")
        if direction is Direction.DIR_BOTH_GM and self.platform == "a5":
            why, fix = self.both_address_error(direction)
            return (f"DIR_BOTH_GM does not work in pto-isa on A5: {why}, and the Vector's "
                    "C2V TPOP waits on flag FlagID+1 while the Cube's TPUSH records FlagID "
                    "(TPipe::Consumer::wait vs Producer::record, is_both_gm)", fix)
        return None

    def teardown_drain(self, ch, pushed):
        if self.ctor_credit_pipe(ch) or (self.fixed_drain and not ch.wait_every):
            return ch.sync_period               # A5 GM/split ~TPipe(): SyncPeriod prod.allocate()
        # pto-isa's ~TPipe(): numPopFree - numPushWait WAITs on the free flag, from the
        # producer's tileIndex alone; the closed form holds for the rule above (no start-up
        # credits, the shouldWaitFree window), else the generic count of the base class
        if (ch.wait_every or ch.startup_credits
                or type(self).producer_waits is not PtoIsaModel.producer_waits):
            return ProtocolModel.teardown_drain(self, ch, pushed)
        return pto_isa_drain(ch.slot_num, ch.sync_period, pushed)


def pto_isa_drain(slot_num: int, sync_period: int, pushed: int) -> int:
    """pto-isa's TPipe destructor arithmetic: the frees the consumer sent for ``pushed``
    tiles (one per SyncPeriod releases) minus the free WAITs the producer's TPUSHes made
    (none in the first SlotNum pushes, then one per SyncPeriod-aligned push; SlotNum 1:
    every push but the first)."""
    pop_free = pushed // sync_period
    if slot_num == 1:
        push_wait = max(0, pushed - 1)
    else:
        push_wait = 0
        if pushed > slot_num:
            first = -(-slot_num // sync_period) * sync_period    # SlotNum rounded up to the period
            last = (pushed - 1) // sync_period * sync_period
            if last >= first:
                push_wait = (last - first) // sync_period + 1
    return max(0, pop_free - push_wait)


def nosplit_one_lane(platform: str) -> bool:
    """Does a TILE_NO_SPLIT pipe on ``platform`` ("a2a3" / "a5") have one Vector lane, AIV0,
    whose core alone pushes, pops and frees each whole tile (AIV1 takes no part)?  The rule of
    every front end - ``.pto`` (ptoas's ``get_subblockid() == 0`` guard), ptoas's C++
    (``TPipe<..., IsNoSplit = true>``), the DSL's compile, the ISA checks - under spec and
    pto-isa alike, as the device decides it, not the protocol:

    * A5: yes.  The Cube's NO_SPLIT C2V push moves the tile into AIV0's UB only (``TMOV`` with
      ``AccToVecMode::SingleModeVec0``) and its NO_SPLIT SET / WAIT use AIV0's flag only, never
      AIV1's ``id + 16`` (pto-isa ``include/pto/npu/a5/TPush.hpp``: ``pushAcc2VecFiFo``,
      ``setIntraBlockBySplit`` / ``waitIntraBlockBySplit``), so one flag handshake per tile,
      with AIV0; seed 001 calls NO_SPLIT "single writer, no decomposition", and seed 003's ring
      has one consumer.  pto-isa's A5 no-split tests and ptoas run the Vector code under
      ``if (get_subblockid() == 0)``.
    * A2A3: no - the ring is in GM and both Vector cores take part in every NO_SPLIT
      handshake (pto-isa ``docs/isa/TPOP.md``: "On A2A3, this mode requires AIV0/AIV1 to
      participate"); a lane without data replays it with an empty valid shape.

    pto-isa's CPU simulator is the one model that differs (it hands the tile to both Vector
    threads: ``nosplit_c2v_all_lanes``)."""
    return platform == "a5"


SPEC = SpecModel(Protocol.SPEC, per_tag_flags=True, wait_every=True, bounded_hold=True,
                 frees_in_pop=False, always_stage=False, free_left_max=1, depth_limited=False)
#: seed 003 on A5: a TILE_NO_SPLIT transfer has one lane (:func:`nosplit_one_lane`)
SPEC_A5 = replace(SPEC, nosplit_lane0=nosplit_one_lane("a5"))
#: pto-isa on A2A3 (include/pto/npu/a2a3/*.hpp)
PTO_ISA = PtoIsaModel(Protocol.PTO_ISA, per_tag_flags=False, wait_every=False, bounded_hold=False,
                      frees_in_pop=True, always_stage=True, free_left_max=None, depth_limited=True,
                      platform="a2a3", tpipe_ctrl=False, tmpipe_rendezvous=True,
                      free_after_readers=False, both_addr_shared=True, notice_at_latest_pop=True)
#: pto-isa on A5 (include/pto/npu/a5/*.hpp)
PTO_ISA_A5 = PtoIsaModel(Protocol.PTO_ISA, per_tag_flags=False, wait_every=False, bounded_hold=False,
                         frees_in_pop=True, always_stage=True, free_left_max=None, depth_limited=True,
                         platform="a5", tfree_after_pop_frees=True,
                         unsplit_free=TileSplitAxis.TILE_UP_DOWN, unsplit_free_every=True,
                         nosplit_lane0=nosplit_one_lane("a5"), tpipe_ctrl=False, tmpipe_rendezvous=True,
                         free_after_readers=False, both_addr_shared=True, notice_at_latest_pop=True)
#: pto-isa on A5 at its newest stored version, constructor credits of GM/split TPipes included
#: (``protocol="pto-isa-head"``; not the default: see ``ctor_credit_pipes`` and docs/protocols.md)
PTO_ISA_A5_HEAD = replace(PTO_ISA_A5, ctor_credit_pipes=True)
#: pto-isa's CPU simulator (include/pto/cpu/TPush.hpp, TPop.hpp at 3186c381): one shared slot
#: state per pipe instead of flags - every slot starts free, a push waits for its slot, every
#: TFREE releases (no SyncPeriod, no constructor credit, no destructor drain), a tile TPOP
#: from a GM ring frees nothing, and every instruction completes before the next one starts
#: (a free follows every read of the slot); AIV1's TILE_NO_SPLIT C2V tile is zeros; a stall only it
#: causes is blamed on it (``simulator``)
PTO_ISA_CPUSIM = replace(PTO_ISA, protocol=Protocol.PTO_ISA_CPUSIM, wait_every=True, bounded_hold=True,
                         notice_at_latest_pop=False,
                         unsplit_free=TileSplitAxis.TILE_NO_SPLIT,
                         frees_in_pop=False, tmpipe_rendezvous=False, simulator=True, free_after_readers=True,
                         nosplit_c2v_all_lanes=True, nosplit_c2v_lane1_zeros=True, slot_state_replay=True,
                         compiles_as=Protocol.PTO_ISA, both_addr_shared=False, slot_placement="cpusim")
PTO_ISA_CPUSIM_A5 = replace(PTO_ISA_A5, protocol=Protocol.PTO_ISA_CPUSIM, wait_every=True, bounded_hold=True,
                            notice_at_latest_pop=False,
                            frees_in_pop=False, tfree_after_pop_frees=False, nosplit_lane0=False,
                            unsplit_free=TileSplitAxis.TILE_NO_SPLIT, unsplit_free_every=False,
                            tmpipe_rendezvous=False, simulator=True, nosplit_c2v_all_lanes=True,
                            nosplit_c2v_lane1_zeros=True,
                            slot_state_replay=True, compiles_as=Protocol.PTO_ISA, free_after_readers=True,
                            both_addr_shared=False, slot_placement="cpusim")
_MODELS = {(Protocol.SPEC, "a2a3"): SPEC, (Protocol.SPEC, "a5"): SPEC_A5,
           (Protocol.PTO_ISA, "a2a3"): PTO_ISA, (Protocol.PTO_ISA, "a5"): PTO_ISA_A5,
           (Protocol.PTO_ISA_HEAD, "a2a3"): PTO_ISA, (Protocol.PTO_ISA_HEAD, "a5"): PTO_ISA_A5_HEAD,
           (Protocol.PTO_ISA_CPUSIM, "a2a3"): PTO_ISA_CPUSIM, (Protocol.PTO_ISA_CPUSIM, "a5"): PTO_ISA_CPUSIM_A5}


def platform_kind(plat) -> str:
    """Whose library code a platform runs: "a2a3" (rings always in GM) or "a5"."""
    return "a2a3" if plat.ring_in_gm else "a5"


def model_for(protocol: Protocol, platform: str = "a2a3", library: str | None = None) -> ProtocolModel:
    """The model of ``protocol`` on ``platform`` ("a2a3" or "a5"); ``library``: a pto-isa
    release (a hash ``versions.release`` knows) whose bugs the pto-isa model takes on."""
    if library is not None:
        return _versioned(library, platform)
    return _MODELS[(Protocol(protocol), platform)]


def compile_model(protocol, platform: str = "a2a3") -> ProtocolModel:
    """The model the compiler targets (flag numbering, hold limits, the A5 no-split lane) for
    kernels run under ``protocol`` (a Protocol or its name, ``pto-isa@<commit>`` too: a
    release's bugs change no compile decision) on ``platform``."""
    m = model_for(parse_protocol(protocol)[0], platform)
    return model_for(m.compiles_as, platform) if m.compiles_as is not None else m


@lru_cache(maxsize=None)
def _versioned(library: str, platform: str) -> ProtocolModel:
    rel, bugs = bugs_at(library, platform)
    changes = {f: v for b in bugs for f, v in b.changes}
    return replace(_MODELS[(Protocol.PTO_ISA, platform)], label=f"pto-isa@{rel.short}", bugs=bugs, **changes)


def cluster_model(cluster) -> ProtocolModel:
    """The protocol model of a run (``ptopipe.run(protocol=...)``; spec by default) on its
    platform, decided once when a pipe binds."""
    ctx = cluster.context
    if ctx.library is not None:
        return _versioned(ctx.library, platform_kind(cluster.platform))
    return _MODELS[(ctx.protocol, platform_kind(cluster.platform))]
