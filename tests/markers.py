"""Finding the line a test expects an error at: a marker comment in the kernel source,
so a test asserts the exact line without hard-coding a number that moves with edits."""
import inspect


def line_of(fn, marker: str) -> int:
    """The source line of ``fn`` that carries ``# <marker>``."""
    lines, first = inspect.getsourcelines(fn)
    hits = [first + i for i, ln in enumerate(lines) if ln.rstrip().endswith("# " + marker)]
    assert len(hits) == 1, (marker, hits)
    return hits[0]
