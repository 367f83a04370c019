"""Progress of a long command on stderr: a bar redrawn in place on a terminal; elsewhere (a
CI log, a pipe) a line every ``every`` seconds with done / total, elapsed time and the ETA,
so a long ``check`` / ``sweep`` is never silent.  Quiet for work that ends before the first
line is due."""
from __future__ import annotations

import sys
import time

EVERY = 5.0            # seconds between progress lines off a terminal


class Progress:
    """``step(done)`` as work completes; ``close()`` when it ends."""

    def __init__(self, label: str, total: int, stream=None, every: float = EVERY, clock=time.monotonic):
        self.label, self.total = label, max(int(total), 1)
        self.stream = stream or sys.stderr
        self.tty = self.stream.isatty()
        self.every, self.clock = every, clock
        self.start = self.last = clock()
        self.drawn = False

    def step(self, done: int) -> None:
        now = self.clock()
        if self.tty:
            width = 24
            filled = int(width * min(done, self.total) / self.total)
            self.stream.write(f"\r  {self.label}: [{'#' * filled}{'.' * (width - filled)}] "
                              f"{done}/{self.total}\033[K")
            self.stream.flush()
            self.drawn = True
        elif now - self.last >= self.every:
            self.last = now
            elapsed = now - self.start
            eta = elapsed / done * (self.total - done) if done else None
            self.stream.write(f"  {self.label}: {done}/{self.total} done, {elapsed:.0f} s"
                              + (f", about {eta:.0f} s left" if eta is not None else "") + "\n")
            self.stream.flush()

    def close(self) -> None:
        if self.tty and self.drawn:
            self.stream.write("\r\033[K")
            self.stream.flush()
