"""Progress of a long command on stderr: a bar redrawn in place on a terminal; elsewhere (a
CI log, a pipe) a line every ``every`` seconds with done / total, elapsed time and the ETA,
so a long ``check`` / ``sweep`` is never silent.  Quiet for work that ends before the first
line is due."""
from __future__ import annotations

import shutil
import sys
import time

EVERY = 5.0            # seconds between progress lines off a terminal


class Progress:
    """``step(done, note)`` as work completes (``note``: what is under way, if anything to
    say - the bar shows the elapsed time too, so that a long step is seen to go on); ``close()``
    when it ends."""

    def __init__(self, label: str, total: int, stream=None, every: float = EVERY, clock=time.monotonic):
        self.label, self.total = label, max(int(total), 1)
        self.stream = stream or sys.stderr
        self.tty = self.stream.isatty()
        self.every, self.clock = every, clock
        self.start = self.last = clock()
        self.drawn = False

    def step(self, done: int, note: str = "") -> None:
        now = self.clock()
        if self.tty:
            width = 24
            filled = int(width * min(done, self.total) / self.total)
            line = (f"  {self.label}: [{'#' * filled}{'.' * (width - filled)}] {done}/{self.total}"
                    + (f", {now - self.start:.0f} s; {note}" if note else ""))
            cols = shutil.get_terminal_size((100, 24)).columns - 1      # (a wrapped line is not redrawn)
            self.stream.write(f"\r{line[:cols]}\033[K")
            self.stream.flush()
            self.drawn = True
        elif now - self.last >= self.every:
            self.last = now
            elapsed = now - self.start
            eta = elapsed / done * (self.total - done) if done else None
            self.stream.write(f"  {self.label}: {done}/{self.total} done, {elapsed:.0f} s"
                              + (f", about {eta:.0f} s left" if eta is not None else "")
                              + (f"; {note}" if note else "") + "\n")
            self.stream.flush()

    def close(self) -> None:
        if self.tty and self.drawn:
            self.stream.write("\r\033[K")
            self.stream.flush()
