"""Schedule policies: who runs next at each cross-core visible event of an exploring run.

The default run has no policy: a core runs until it blocks and the ready core with the
smallest clock goes next (:mod:`ptopipe.sim.cluster`).  With a policy, every cross-core
*visible event* - SET, WAIT, a GM access (TLOAD/TSTORE), a ring access
(TPUSH/TPOP/TFREE/TALLOC) - is a choice point: the policy picks the core that performs its
next visible event, so the order of the data operations (applied in issue order) follows
the explored schedule, and a store and an unsynchronised load of the same bytes by another
core land in either order.

Policies (each deterministic for its parameters, so a schedule replays exactly):

- :class:`RandomPolicy` - at each event continue with probability ``1 - q`` (``q`` drawn per
  schedule, from "run to block" to "re-choose every event"), else pick the ready core with
  the smallest clock (simulated order) or a random one; with ``perturb`` it also jitters
  every SET's cross-core latency and starts the cores at random offsets (lane skew).
- :class:`PCTPolicy` - probabilistic concurrency testing (Burckhardt et al., ASPLOS 2010):
  random core priorities, the highest-priority ready core runs; at ``depth - 1`` random
  change points among the ``k`` visible events the running core drops to the lowest
  priority.  Finds a bug of depth ``d`` with probability >= 1 / (n k^(d-1)).
- :class:`BoundedPolicy` - one schedule of the bounded exhaustive search: the default
  choice everywhere except at the listed choice points (``deviations``: point -> option
  index, option 0 being the default), so that a search over deviation sets of total cost
  <= depth (delay bounding) enumerates every schedule within the bound exactly once.

Each policy keeps ``digest``, a hash of the sequence of (core, event kind) it saw: two
runs with the same digest are the same interleaving of visible events.
"""
from __future__ import annotations

import random

# visible event kinds (recorded in the digest)
SET, WAIT, TLOAD, TSTORE, TPUSH, TPOP, TFREE, TALLOC = range(1, 9)
KIND_NAMES = {SET: "SET", WAIT: "WAIT", TLOAD: "TLOAD", TSTORE: "TSTORE", TPUSH: "TPUSH",
              TPOP: "TPOP", TFREE: "TFREE", TALLOC: "TALLOC"}


def _clock_order(c):
    return (c.clock, c.index)


class SchedulePolicy:
    """Base: counts and hashes the visible events; subclasses implement :meth:`choose`."""
    #: per-core start offsets in cycles (lane skew), or None
    skew = None
    #: per-SET latency jitter: (low, high) factors of the platform latency, or None
    jitter = None

    def __init__(self):
        self.events = 0          # visible events seen
        self.digest = 0          # hash of the (core, kind) sequence
        self.rng = None

    def note(self, core, kind: int) -> None:
        """Core ``core`` is about to perform (SET: has performed) a visible event."""
        self.events += 1
        self.digest = hash((self.digest, core.index, kind))

    def choose(self, ready: list, current):
        """The core to run next among ``ready`` (cores in READY state) and ``current`` (the
        core at a visible event, still runnable; None at a block or end).  Only called when
        there are at least two options."""
        raise NotImplementedError

    def latency(self, base: int) -> int:
        lo, hi = self.jitter
        return max(1, int(base * self.rng.uniform(lo, hi)))


class RandomPolicy(SchedulePolicy):
    """Random choices at visible events (see the module docstring)."""
    SWITCH = (0.0, 0.02, 0.1, 0.3, 1.0)     # per-schedule probability of re-choosing at an event

    def __init__(self, seed: int, perturb: bool = False, max_skew: int = 2000):
        super().__init__()
        self.seed = seed
        self.rng = rng = random.Random(seed)
        self.q = rng.choice(self.SWITCH)
        if perturb:
            self.skew = tuple(0 if rng.random() < 0.25 else rng.randrange(max_skew) for _ in range(3))
            self.jitter = (0.25, 4.0)

    def choose(self, ready, current):
        rng = self.rng
        if current is not None and rng.random() >= self.q:
            return current
        opts = ready if current is None else ready + [current]
        if rng.random() < 0.5:
            return min(opts, key=_clock_order)       # the simulated order
        return opts[rng.randrange(len(opts))]


class PCTPolicy(SchedulePolicy):
    """Probabilistic concurrency testing with bug depth ``depth`` over ``k`` visible events."""

    def __init__(self, seed: int, depth: int = 3, k: int = 0, cores: int = 3):
        super().__init__()
        self.seed, self.depth, self.k = seed, depth, k
        self.rng = rng = random.Random(seed * 2654435761 + depth)
        prio = list(range(depth, depth + cores))
        rng.shuffle(prio)
        self.prio = prio                              # per core index; higher runs first
        n = min(depth - 1, k)
        pts = rng.sample(range(1, k + 1), n) if n > 0 else []
        # change point (event number) -> the priority the running core drops to
        self.changes = {p: depth - 1 - i for i, p in enumerate(sorted(pts))}

    def note(self, core, kind):
        super().note(core, kind)
        p = self.changes.get(self.events)
        if p is not None:
            self.prio[core.index] = p

    def choose(self, ready, current):
        prio = self.prio
        best = current
        for c in ready:
            if best is None or prio[c.index] > prio[best.index]:
                best = c
        return best


class BoundedPolicy(SchedulePolicy):
    """One schedule of the bounded exhaustive search: default choices except ``deviations``.

    Options at a choice point, in order: the current core (continue), then the ready cores
    by (clock, index); at a block, the ready cores by (clock, index) - option 0 is what the
    default scheduler does.  ``options`` records the number of options of each point."""

    def __init__(self, deviations: dict | None = None):
        super().__init__()
        self.deviations = dict(deviations or {})
        self.options: list[int] = []

    def choose(self, ready, current):
        opts = sorted(ready, key=_clock_order)
        if current is not None:
            opts.insert(0, current)
        point = len(self.options)
        self.options.append(len(opts))
        j = self.deviations.get(point, 0)
        return opts[j] if j < len(opts) else opts[0]


def bounded_children(deviations: dict, options: list, depth: int):
    """The schedules one deviation further than ``deviations`` (whose run had ``options``
    choices per point), with total cost (sum of option indices) <= ``depth``; each schedule
    within the bound is the child of exactly one parent (deviations added in point order)."""
    cost = sum(deviations.values())
    start = max(deviations) + 1 if deviations else 0
    for point in range(start, len(options)):
        for j in range(1, min(options[point], depth - cost + 1)):
            d = dict(deviations)
            d[point] = j
            yield d
