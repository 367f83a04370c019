"""The flag ledger of a launch (ptopipe/isa/pipe/teardown.py ``ledger``), through its own
API on hand-driven clusters: a row says, per flag, the credits the launch inherited, sent,
consumed (WAITs that took a credit, inherited ones included), drained and left; the next
launch inherits exactly what the previous one left, and every row balances:
inherited + sent = consumed + drained + left."""
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ptopipe.isa.pipe.teardown import describe_row, ledger
from ptopipe.sim import Cluster

PROPS = settings(max_examples=40, deadline=None, derandomize=True, database=None,
                 suppress_health_check=list(HealthCheck))


def _next_launch(prev: Cluster, rows: list, platform: str) -> Cluster:
    """A launch after ``prev`` with its flag counters (as ``run(..., launches=K)`` starts one);
    each carried flag's origin is its row of the previous exit."""
    cl = Cluster(platform)
    k = max((r["launch"] for r in rows), default=0)
    last = {r["name"]: r for r in rows if r["launch"] == k}
    cl.carry_flags(prev, origin=lambda f: last.get(f.name))
    return cl


@pytest.mark.parametrize("platform", ["a2a3", "a5"])
def test_second_launch_counts_inherited_credits_it_consumed(platform):
    first = Cluster(platform)
    f = first.flag(first.aic, first.aiv0, 3)
    for _ in range(3):
        first.set_flag(first.aic, f, 0)
    first.aiv0.wait_flag(f, "first launch's wait")
    rows = ledger(first, 1)
    (r1,) = rows
    assert (r1["inherited"], r1["sent"], r1["consumed"], r1["drained"], r1["left"]) == (0, 3, 1, 0, 2)

    second = _next_launch(first, rows, platform)
    g = second.flag(second.aic, second.aiv0, 3)
    assert g.count == g.carried == 2
    second.aiv0.wait_flag(g, "takes an inherited credit")
    second.aiv0.wait_flag(g, "takes the other inherited credit")
    second.set_flag(second.aic, g, 0)
    (r2,) = ledger(second, 2)
    # two WAITs took credits (both inherited) and the one SET of this launch is left
    assert (r2["launch"], r2["inherited"], r2["sent"], r2["consumed"], r2["left"]) == (2, 2, 1, 2, 1)
    assert describe_row(r2) == ("flag 3 (AIC->AIV0): inherited 2 / sent 1 / consumed 2 / drained 0 "
                                "/ left 1")


# a launch: per flag of a few (sender, receiver, id), a sequence of SETs (True) and WAITs
# (False); a WAIT with no credit on the flag is skipped (it would block)
_FLAGS = [("aic", 0, 0), ("aic", 1, 5), (0, "aic", 2)]
_launch = st.lists(st.tuples(st.integers(0, len(_FLAGS) - 1), st.booleans()), max_size=14)


def _core(cl, who):
    return cl.aic if who == "aic" else cl.aiv(who)


@PROPS
@given(st.sampled_from(["a2a3", "a5"]), st.lists(_launch, min_size=2, max_size=4))
def test_ledger_across_launches_balances_and_carries(platform, launches):
    prev, rows = None, []
    for k, events in enumerate(launches, start=1):
        cl = Cluster(platform) if prev is None else _next_launch(prev, rows, platform)
        flags = [cl.flag(_core(cl, s), _core(cl, r), i) for s, r, i in _FLAGS]
        sent = [0] * len(flags)
        took = [0] * len(flags)
        for i, is_set in events:
            f = flags[i]
            if is_set:
                cl.set_flag(f.sender, f, 0)
                sent[i] += 1
            elif f.count:
                f.receiver.wait_flag(f, "wait")
                took[i] += 1
        before = {r["name"]: r["left"] for r in rows if r["launch"] == k - 1}
        mine = {r["name"]: r for r in ledger(cl, k)}
        rows.extend(mine.values())
        for i, f in enumerate(flags):
            r = mine.get(f.name)
            inherited = before.get(f.name, 0)
            if r is None:                # a flag the launch did not touch and nothing reached
                assert sent[i] == took[i] == inherited == 0
                continue
            assert r["launch"] == k
            assert r["inherited"] == inherited
            assert (r["sent"], r["consumed"], r["left"]) == (sent[i], took[i], f.count)
            assert r["inherited"] + r["sent"] == r["consumed"] + r["drained"] + r["left"]
        prev = cl
