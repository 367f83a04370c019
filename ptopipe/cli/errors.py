"""Turning any exception into one readable CLI message (no traceback)."""
from __future__ import annotations

import os
import sys
import traceback

from ..errors import PtoPipeError

_PKG = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def color(text: str, code: str, stream=sys.stderr) -> str:
    if stream.isatty() and not os.environ.get("NO_COLOR"):
        return f"\033[{code}m{text}\033[0m"
    return text


def report_exception(e: BaseException) -> int:
    """Print ``e`` for a user and return the exit code."""
    if isinstance(e, PtoPipeError):
        head, _, rest = e.render().partition("\n")
        print(color(f"error: {type(e).__name__}: ", "1;31") + head, file=sys.stderr)
        if rest:
            print(rest, file=sys.stderr)
        return 1
    # an exception raised by user code (the kernel, the scenario file): show where it is
    tb = traceback.extract_tb(e.__traceback__)
    user = [f for f in tb if not f.filename.startswith(_PKG)]
    where = f"{user[-1].filename}:{user[-1].lineno}" if user else None
    print(color(f"error: {type(e).__name__}: ", "1;31") + str(e), file=sys.stderr)
    if where:
        print(f"  at {where}", file=sys.stderr)
        if user[-1].line:
            print(f"    {user[-1].line}", file=sys.stderr)
    if os.environ.get("PTOPIPE_DEBUG"):
        traceback.print_exception(e)
    else:
        print("  (set PTOPIPE_DEBUG=1 to see the full Python traceback)", file=sys.stderr)
    return 1
