"""Turning any exception into one readable CLI message (no traceback)."""
from __future__ import annotations

import os
import sys
import traceback

from ..driver.check import with_dsl_line
from ..errors import PtoPipeError, near_name, shown_path, user_frame


def color(text: str, code: str, stream=None) -> str:
    """``text`` in ANSI colour ``code`` when ``stream`` (default: the current sys.stderr,
    looked up at the call) is a terminal and NO_COLOR is not set."""
    if stream is None:
        stream = sys.stderr
    if stream.isatty() and not os.environ.get("NO_COLOR"):
        return f"\033[{code}m{text}\033[0m"
    return text


def report_exception(e: BaseException) -> int:
    """Print ``e`` for a user and return the exit code."""
    if isinstance(e, PtoPipeError):
        head, _, rest = with_dsl_line(e).render().partition("\n")
        print(color(f"error: {type(e).__name__}: ", "1;31") + head, file=sys.stderr)
        if rest:
            print(rest, file=sys.stderr)
        return 1
    # an exception raised by user code (the kernel, the scenario file): show where it is
    f = user_frame(e)
    print(color(f"error: {type(e).__name__}: ", "1;31") + str(e) + near_name(e), file=sys.stderr)
    if f:
        print(f"  at {shown_path(f.filename)}:{f.lineno}", file=sys.stderr)
        if f.line:
            print(f"    {f.line}", file=sys.stderr)
    by = getattr(e, "ptopipe_raised_by", None)      # (set by the simulator for a kernel's own)
    if by:
        print(f"  raised by {by}", file=sys.stderr)
    if os.environ.get("PTOPIPE_DEBUG"):
        traceback.print_exception(e)
    else:
        print("  (set PTOPIPE_DEBUG=1 to see the full Python traceback)", file=sys.stderr)
    return 1
