"""The ring protocol as data: :class:`ProtocolModel` with :class:`SpecModel` (seed 003) and
:class:`PtoIsaModel` (what pto-isa's C++ does).

Everything that differs between the two protocols is decided here - flag ids of each way,
SyncPeriod, the credits the consumer posts at bind, when the producer waits for a free
slot, when the consumer sends a free, whether an A2A3 tile TPOP frees inside TPOP (and the
tile TFREE is then a no-op), how many slots one free SET releases, what may be left on a
flag at exit.  The pipe ops, the checks, the runtime and the report ask a channel's
``model`` (``ch.model``); none of them tests which protocol is selected.

The hot ops read these decisions as plain attributes that :class:`Channel` copies at bind
time (``wait_every``, ``hold_limit``, ``pop_frees``, ``always_stage``, ``sync_period``); only
pto-isa's sparse rules are method calls (:meth:`ProtocolModel.producer_waits`,
:meth:`ProtocolModel.consumer_frees`).
"""
from __future__ import annotations

from dataclasses import dataclass

from ...arch.vocab import Protocol


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
    #: a tile TPOP from a GM ring frees the slot inside TPOP; the tile TFREE is a no-op
    frees_in_pop: bool
    #: a tile TPOP from a GM ring always lands in the consumer's LocalSlotNum staging ring
    #: (else only a tile without an address of its own does)
    always_stage: bool
    #: the most a free flag may hold at kernel end (None: anything, sparse credits)
    free_left_max: int | None
    #: the FIFO depth is limited by the platform's ``max_fifo_depth``
    depth_limited: bool

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

    # -- credits and notifications ------------------------------------------------------
    def sync_period(self, cfg) -> int:
        """Slots released by one free SET (pto-isa ``SyncPeriod``, TMPipe's ``FiFoSyncT``)."""
        raise NotImplementedError

    def startup_credits(self, slot_num: int) -> int:
        """Free SETs the consumer posts on each link when it binds."""
        raise NotImplementedError

    def producer_waits(self, ch, i: int) -> bool:
        """Does push ``i`` wait for a free credit?"""
        return True

    def consumer_frees(self, ch, k: int) -> bool:
        """Does release ``k`` send a free SET?"""
        return True

    def slots_per_free(self, ch) -> int:
        """Slots one free SET releases (for the report's occupancy)."""
        return 1

    def overwrite_fix(self) -> str:
        """How to fix a push that overwrote a slot still in use."""
        raise NotImplementedError

    # -- teardown (the producer's TPipe going out of scope at kernel end) -----------------
    def teardown_drain(self, ch, pushed: int) -> int:
        """Free credits the producer's teardown WAITs for on each free flag of each link,
        after ``pushed`` tiles: what the protocol says the consumer sent (start-up credits
        and the frees of ``pushed`` releases) minus what the producer's pushes waited for,
        spread over the way's free flags (one per slot tag with per-tag flags).  A correct
        run leaves exactly that much, so the drain ends the launch with empty free flags."""
        sent = self.startup_credits(ch.slot_num)
        waited = 0
        if ch.wait_every:                 # every push waits and every release frees
            return sent // (ch.slot_num if self.per_tag_flags else 1)
        for i in range(pushed):
            if ch.wait_every or self.consumer_frees(ch, i):
                sent += 1
            if ch.wait_every or self.producer_waits(ch, i):
                waited += 1
        per = ch.slot_num if self.per_tag_flags else 1
        return max(0, sent - waited) // per


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
        return (f"{way} ring uses flags {ready_id}..{ready_id + slot_num - 1} (FlagID {flag_id}, "
                f"SlotNum {slot_num}) but a peer has only {limit} flags per direction",
                f"use FlagID + SlotNum <= {limit} per direction (SlotNum {plat.slot_num_bidirectional} "
                "per direction when bidirectional)")

    def sync_period(self, cfg):
        return 1

    def startup_credits(self, slot_num):
        return slot_num

    def overwrite_fix(self):
        return "do not skip the free-slot wait (setAllocateStatus) while slots are in use"


@dataclass(frozen=True)
class PtoIsaModel(ProtocolModel):
    """pto-isa: counter flags ready = FlagID + 2k, free = FlagID + 2k + 1 (k = 1 for the V2C
    way of DIR_BOTH); ``SyncPeriod = SlotNum <= 2 ? SlotNum : SlotNum / 2`` unless the
    TMPipe sets ``FiFoSyncT``; the producer waits only when ``i >= SlotNum and
    i % SyncPeriod == 0``, the consumer notifies when ``(k + 1) % SyncPeriod == 0``; no
    start-up credits; on A2A3 the tile TPOP frees inside TPOP."""

    def flag_ids(self, flag_id, way_index, slot_num):
        return flag_id + 2 * way_index, flag_id + 2 * way_index + 1

    def flag_limit(self, plat):
        return plat.hw_flag_ids

    def flags_top(self, ready_id, free_id, slot_num):
        return max(ready_id, free_id) + 1

    def flag_range_error(self, way, ready_id, free_id, flag_id, slot_num, plat, both):
        limit = self.flag_limit(plat)
        return (f"{way} ring uses flag ids {ready_id}/{free_id}; the hardware has ids 0..{limit - 1}",
                f"use FlagID + {3 if both else 1} < {limit}")

    def sync_period(self, cfg):
        n = cfg.slot_num
        return cfg.sync_period or (n if n <= 2 else n // 2)

    def startup_credits(self, slot_num):
        return 0

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

    def overwrite_fix(self):
        return ("pto-isa's sparse free notifications need SlotNum % SyncPeriod == 0 "
                "(SlotNum <= 3 or even); use an even SlotNum")

    def teardown_drain(self, ch, pushed):
        # pto-isa's ~TPipe(): numPopFree - numPushWait WAITs on the free flag, from the
        # producer's tileIndex alone; the closed form holds for the rule above (no start-up
        # credits, the shouldWaitFree window), else the generic count of the base class
        if self.startup_credits(ch.slot_num) or type(self).producer_waits is not PtoIsaModel.producer_waits:
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


SPEC = SpecModel(Protocol.SPEC, per_tag_flags=True, wait_every=True, bounded_hold=True,
                 frees_in_pop=False, always_stage=False, free_left_max=1, depth_limited=False)
PTO_ISA = PtoIsaModel(Protocol.PTO_ISA, per_tag_flags=False, wait_every=False, bounded_hold=False,
                      frees_in_pop=True, always_stage=True, free_left_max=None, depth_limited=True)
_MODELS = {Protocol.SPEC: SPEC, Protocol.PTO_ISA: PTO_ISA}


def model_for(protocol: Protocol) -> ProtocolModel:
    return _MODELS[protocol]


def cluster_model(cluster) -> ProtocolModel:
    """The protocol model of a run (``ptopipe.run(protocol=...)``; spec by default)."""
    return _MODELS[cluster.shared.get("protocol", Protocol.SPEC)]
