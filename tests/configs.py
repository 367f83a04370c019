"""The platform / protocol pairs a test runs a kernel on: every pair under
``PTOPIPE_FULL=1``, else one pair per case, rotated over the cases, so that the default suite
still runs each pair on some cases (and stays within its CPU budget)."""
import os

PAIRS = [("a2a3", "spec"), ("a5", "pto-isa"), ("a5", "spec"), ("a2a3", "pto-isa")]
FULL = os.environ.get("PTOPIPE_FULL") == "1"


def rotated(cases: list) -> list:
    """``[(*case, platform, protocol)]``: each case with every pair (full run) or with the
    pair its position picks."""
    if FULL:
        return [(*c, p, q) for c in cases for p, q in PAIRS]
    return [(*c, *PAIRS[k % len(PAIRS)]) for k, c in enumerate(cases)]
