"""Named versions of the pto-isa library, as data: the releases of hw-native-sys/pto-isa where
the device behaved differently (:data:`RELEASES`, in the order they landed on pto-isa's main
line) and the library bugs each one has or fixes (:data:`BUGS`: which model decision differs,
the commit range, a one-line description).

``protocol="pto-isa@<commit>"`` runs the pto-isa model of the run's platform with every bug
in force at that commit (:func:`resolve`: a known commit or an unambiguous prefix of one;
anything else is a ConfigError listing the known versions).  A bug is one set of
:class:`~ptopipe.protocol.model.ProtocolModel` field values; the model carries the bugs it
was built with, so a diagnosis can name the bug and the release that fixes it
(:meth:`LibraryBug.note`).  ``docs/protocols.md`` has one row per bug.
"""
from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Release:
    """One commit of pto-isa's main line that changed what the device does."""
    commit: str          # the full hash
    date: str            # commit date on the main line
    subject: str

    @property
    def short(self) -> str:
        return self.commit[:8]


#: pto-isa releases that change a modelled behaviour, oldest first (the main line's order:
#: 8d74fb38 was authored in May but landed on main on 2026-07-16, over 1d873362's drain)
RELEASES = (
    Release("1d8733622611e22ba59d99bcdcd5106d12f8cfbc", "2026-06-24", "Update SyncPeroid and drain counts."),
    Release("8d74fb3808e9e12b4404a0b8a336da0411bbfdd5", "2026-07-16",
            "update TALLOC/TPUSH/TPOP/TFREE to support push or pop GlobalTensor."),
    Release("d2b30a8401a60dfdb58858fe5a012b322a98a10e", "2026-08-11",
            "fix(a2a3): give the V2C ring its own base in a bidirectional TPipe"),
    Release("ab903c91bf2d1347d45e9fb89ad066a2ddb77e62", "2026-08-13",
            "fix(a2a3): stride the consumer's local FIFO ring by SLOT_SIZE"),
    Release("0a15e15c627deef86b4281fb08e84d39dad793de", "2026-08-14",
            "fix(a2a3): harden pending-credit drain across dispatches"),
    Release("3186c381bd49e1164092e67ff1b3564302754e76", "2026-08-21",
            "Merge pull request #264 from Crystal-wzy/gitcode-sync"),
    # known by its short hash only (pto-isa PR #274, merged 2026-08-27)
    Release("0956aa8c", "2026-08-27", "fix(backend): Restore A5 FIFO credits and scatter synchronization (#274)"),
)
_ORDER = {r.commit: k for k, r in enumerate(RELEASES)}


#: a pto-isa git repository (a checkout or a bare clone) in which a commit that is not one of
#: the releases is placed among them (:func:`release`)
GIT_ENV = "PTO_ISA_GIT"


def release(ref: str, ancestors=None) -> Release:
    """The release whose model is in force at pto-isa commit ``ref``: a release it names (a
    full hash or an unambiguous prefix of 4+ hex digits), else - with a pto-isa repository in
    $PTO_ISA_GIT - the newest release that is an ancestor of ``ref`` there.  ``ancestors(ref)``
    (default: that repository's) gives the releases ``ref`` contains, None if it is unknown."""
    ref = str(ref).strip().lower()
    hits = [r for r in RELEASES if len(ref) >= 4 and r.commit.startswith(ref)]
    if len(hits) == 1:
        return hits[0]
    contained = (ancestors or _git_ancestors)(ref) if len(ref) >= 4 and not hits else None
    if contained:
        return max(contained, key=lambda r: _ORDER[r.commit])
    from ..errors import ConfigError
    known = ", ".join(f"{r.short} ({r.date}: {r.subject})" for r in RELEASES)
    older = contained is not None          # a commit of the repository, older than every release
    raise ConfigError(f"unknown pto-isa version {ref!r}: " +
                      ("it is older than every release ptopipe models" if older else
                       "ptopipe models the pto-isa releases where the device behaved differently, and "
                       f"{ref!r} is not one of them"),
                      details=f"known versions, oldest first: {known}",
                      fix="name one of them (pto-isa@" + RELEASES[-1].short + "; a prefix of 4+ hex digits "
                          "will do), or 'pto-isa' for the fixed library; a commit between two of them "
                          f"behaves as the older one - with a pto-isa git repository in ${GIT_ENV} ptopipe "
                          "finds that one itself")


def _git_ancestors(ref: str):
    """The releases that pto-isa commit ``ref`` contains, in the repository $PTO_ISA_GIT (None:
    no repository, or ``ref`` is not a commit there)."""
    import os
    import subprocess
    repo = os.environ.get(GIT_ENV)
    if not repo:
        return None

    def git(*args):
        return subprocess.run(["git", "-C", repo, *args], capture_output=True, text=True, timeout=30)
    try:
        head = git("rev-parse", "--verify", "--quiet", f"{ref}^{{commit}}")
        if head.returncode:
            return None
        full = head.stdout.strip()
        return [r for r in RELEASES if git("merge-base", "--is-ancestor", r.commit, full).returncode == 0]
    except (OSError, subprocess.SubprocessError):
        return None


@dataclass(frozen=True)
class LibraryBug:
    """A behaviour of pto-isa's device headers that a range of releases had: the model field
    values that reproduce it (``changes``), on ``platform``, from release ``since`` until
    ``fixed`` (None: not fixed in the releases ptopipe knows)."""
    key: str
    platform: str                  # "a2a3" | "a5"
    since: str                     # the first release with the bug (full hash)
    fixed: str | None              # the release that fixes it
    summary: str                   # what the library does, one line ("drains a fixed SyncPeriod ...")
    effect: str                    # what the user sees on the device
    changes: tuple = ()            # ((ProtocolModel field, value), ...)

    def in_force(self, commit: str) -> bool:
        k = _ORDER[commit]
        return _ORDER[self.since] <= k and (self.fixed is None or k < _ORDER[self.fixed])

    def note(self) -> str:
        """"pto-isa before <fix> <summary>: <effect>; fixed by <fix> (<subject>)" - for diagnoses."""
        if self.fixed is None:
            return (f"pto-isa since {self.since[:8]} {self.summary}: {self.effect}; no pto-isa release "
                    "ptopipe knows fixes it")
        r = RELEASES[_ORDER[self.fixed]]
        return (f"pto-isa before {r.short} {self.summary}: {self.effect}; fixed by {r.short} ({r.subject})")

    def upgrade(self) -> str:
        """How to get rid of it: the release to move to."""
        if self.fixed is None:
            return "no pto-isa release ptopipe knows fixes this; work around it in the kernel"
        return f"upgrade pto-isa to {self.fixed[:8]} or later"


_V1, _V2, _V3, _V_STRIDE, _V4, _V5, _V6 = (r.commit for r in RELEASES)

#: every modelled bug, one row each in docs/protocols.md
BUGS = (
    LibraryBug(
        "a2a3-ctor-credits", "a2a3", _V2, _V3,
        "posts SyncPeriod free credits in the TPipe constructor on top of the shouldWaitFree start-up "
        "window (credits counted twice)",
        "push #SlotNum passes its wait before any TFREE and overwrites slot 0, and the fixed destructor "
        "drain leaves the release notifications on the free flag for the next launch",
        (("ctor_credit_pipes", True),)),
    LibraryBug(
        "a2a3-fixed-drain", "a2a3", _V2, _V4,
        "drains a fixed SyncPeriod in ~TPipe instead of the pending credits (numPopFree - numPushWait)",
        "a launch whose pending credits are fewer than SyncPeriod hangs in the destructor "
        "(507018, S1:running-stalled; pto-isa #240/#248), one with more leaves stale credits",
        (("fixed_drain", True),)),
    LibraryBug(
        "a2a3-both-alias", "a2a3", _V1, _V3,
        "places both rings of a DIR_BOTH TPipe at GM_SLOT_BUFFER (entryOffset never set for the V2C "
        "way)",
        "the C2V and V2C tiles overwrite each other once more than one is in flight - wrong results, "
        "no fault, no hang (pto-isa #195/#226)",
        (("both_rings_alias", True),)),
    LibraryBug(
        "a2a3-stage-stride", "a2a3", _V1, _V_STRIDE,
        "strides the consumer's local staging ring by the popped tile's size instead of SlotSize",
        "a smaller tile popped after a larger one lands inside the larger one's staged copy while it is "
        "still in use - wrong results, no fault (pto-isa #521: pl.matmul with N < M)",
        (("stage_stride_tile", True),)),
    LibraryBug(
        "a5-gm-stage-stride", "a5", _V1, None,
        "strides the consumer's local staging ring of a *_GM pipe by the popped tile's size instead of "
        "SlotSize (popVecTileFromGMFiFo / popMatTileFromGMFiFo)",
        "a smaller tile popped after a larger one lands inside the larger one's staged copy while it is "
        "still in use - wrong results, no fault (the A2A3 fix, ab903c91, has no A5 counterpart yet)",
        (("stage_stride_tile", True),)),
    LibraryBug(
        "a5-ctor-credits-local", "a5", _V2, _V6,
        "posts SyncPeriod free credits in the TPipe constructor of every pipe, a local no-split one "
        "too, on top of the shouldWaitFree window (credits counted twice)",
        "push #SlotNum passes its wait before any TFREE and overwrites slot 0, and the fixed SyncPeriod "
        "destructor drain leaves the release notifications for the next launch",
        (("ctor_credit_pipes", True), ("ctor_credit_local", True))),
    LibraryBug(
        "a5-ctor-credits", "a5", _V2, None,
        "posts SyncPeriod free credits in the constructor of a GM-backed or split TPipe on top of the "
        "shouldWaitFree window (credits counted twice)",
        "push #SlotNum passes its wait before any TFREE and overwrites slot 0, and the fixed SyncPeriod "
        "destructor drain leaves the release notifications for the next launch",
        (("ctor_credit_pipes", True),)),
)


def bugs_at(ref: str, platform: str) -> tuple:
    """(the release ``ref`` names, the bugs in force there on ``platform``)."""
    r = release(ref)
    return r, tuple(b for b in BUGS if b.platform == platform and b.in_force(r.commit))


def parse(selector) -> tuple:
    """``(Protocol, release hash or None)`` of a protocol name: "spec", "pto-isa",
    "pto-isa-head", "pto-isa-cpusim" or "pto-isa@<commit>" (a ConfigError names the choices)."""
    from ..arch.vocab import Protocol
    if isinstance(selector, Protocol):
        return selector, None
    text = str(selector).strip()
    name, at, ref = text.partition("@")
    if at:
        if name != Protocol.PTO_ISA.value:
            from ..errors import ConfigError
            raise ConfigError(f"unknown protocol {text!r}: only pto-isa has named versions",
                              fix=f"use pto-isa@<commit>, e.g. pto-isa@{RELEASES[1].short}")
        return Protocol.PTO_ISA, release(ref).commit
    try:
        return Protocol(name), None
    except ValueError:
        from ..errors import ConfigError
        raise ConfigError(f"unknown protocol {text!r}",
                          fix="use " + ", ".join(repr(p.value) for p in Protocol) +
                              f" or 'pto-isa@<commit>' (known: {', '.join(r.short for r in RELEASES)})") from None


def name(selector) -> str:
    """The canonical name of a protocol selector ("pto-isa@8d74fb38" for any prefix of it)."""
    proto, commit = parse(selector)
    return f"{proto.value}@{commit[:8]}" if commit else proto.value
