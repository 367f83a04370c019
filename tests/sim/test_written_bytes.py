"""sim.written.WrittenBytes against a byte map: ``covers`` (every byte written) and
``touches`` (some byte written) agree with it after any writes, whether a memory holds a few
ranges (scanned) or many (bisected)."""
from hypothesis import given, settings, strategies as st

from ptopipe.sim.written import WrittenBytes

SIZE = 256
span = st.tuples(st.integers(0, SIZE - 1), st.integers(1, SIZE)).map(lambda p: (min(p), max(p[0] + 1, p[1])))


@settings(max_examples=30, deadline=None)
@given(st.lists(span, min_size=1, max_size=30), st.lists(span, min_size=1, max_size=20))
def test_covers_and_touches_agree_with_a_byte_map(writes, reads):
    w, mem = WrittenBytes(), bytearray(SIZE + 1)
    for lo, hi in writes:
        w.add("UB", lo, hi)
        mem[lo:hi] = b"\1" * (hi - lo)
    for lo, hi in reads:
        assert w.covers("UB", lo, hi) == all(mem[lo:hi])
        assert w.touches("UB", lo, hi) == any(mem[lo:hi])
    assert not w.covers("L1", 0, 1) and not w.touches("L1", 0, 1)


def test_many_ranges_are_bisected_alike():
    w, mem = WrittenBytes(), bytearray(SIZE + 1)
    for lo in range(0, SIZE, 8):                    # 32 disjoint ranges
        w.add("UB", lo, lo + 4)
        mem[lo:lo + 4] = b"\1" * 4
    assert len(w.ranges["UB"]) == SIZE // 8
    for lo in range(0, 40):
        for hi in range(lo + 1, 44):
            assert w.covers("UB", lo, hi) == all(mem[lo:hi]), (lo, hi)
            assert w.touches("UB", lo, hi) == any(mem[lo:hi]), (lo, hi)
