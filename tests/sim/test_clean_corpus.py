"""No false positive on the registered correct kernels (tests/corpus.py: the
CLEAN_KERNELS registries of test_events, test_launches, test_layouts, test_ptoisa_platforms
and test_diagnoses): each runs clean, with its golden, under 2 schedules of each exploration
policy (random, pct, exhaustive; mix draws from them) on every combo where it is valid; where it is excluded by design, its default run does
fail (so an exclusion cannot outlive its reason).  benchmarks/schedules.py --kernels new runs
the same entries under 200 schedules per mode."""
import pytest

from ptopipe import PtoPipeError
from ptopipe.isa.explore import MODES, explore, run_schedule
from ptopipe.isa.unwritten import UNWRITTEN

from corpus import all_clean_kernels

KERNELS = all_clean_kernels()


@pytest.mark.parametrize("entry", [k for _, k in KERNELS], ids=[k.name for _, k in KERNELS])
def test_correct_kernel_clean_under_every_mode_where_valid(entry, no_hang):
    assert entry.combos, entry.name
    for plat, proto in entry.combos:
        # (mix takes its schedules from the three policies' own: tests/isa/test_explore_mix.py)
        for i, mode in enumerate(m for m in MODES if m != "mix"):
            res = explore(entry.scenario, schedules=2, seed=1, variant=entry.variant, platform=plat,
                          protocol=proto, mode=mode, include_default=i == 0)
            assert res.ok, f"{entry.name} {plat}/{proto} {mode}: {res.first}"
            # (nor does it read a tile nothing wrote: isa.unwritten)
            assert not [w for w, _ in res.warnings if UNWRITTEN in w], f"{entry.name} {plat}/{proto}: {res.warnings}"
    for (plat, proto), why in entry.excluded.items():
        with pytest.raises(PtoPipeError):
            run_schedule(entry.scenario, None, entry.variant, plat, proto)
