"""Progress of a long run on stderr: a bar on a terminal, a plain line every few seconds in a pipe.

A terminal redraws one line in place; a pipe (CI logs, ``| tee``) cannot, so it gets a full line
at most every ``interval_s`` seconds and one at the end, never a wall of carriage returns.

>>> import io
>>> out = io.StringIO()
>>> p = Progress(10, stream=out, tty=False, interval_s=0.0)
>>> p.update(5, "calibration done"); p.finish()
>>> out.getvalue().splitlines()[0]
'  step 5/10 (50%)  calibration done'
"""

from __future__ import annotations

import sys
import time
from typing import TextIO

BAR_WIDTH = 24


class Progress:
    def __init__(
        self, total: int, *, stream: TextIO | None = None, tty: bool | None = None, interval_s: float = 5.0
    ) -> None:
        self.total = max(1, total)
        self.stream = stream or sys.stderr
        self.tty = self.stream.isatty() if tty is None else tty
        self.interval_s = interval_s
        self._last_line = float("-inf")
        self._shown = ""

    def update(self, done: int, status: str = "") -> None:
        frac = min(1.0, done / self.total)
        if self.tty:
            fill = int(round(frac * BAR_WIDTH))
            bar = "#" * fill + "." * (BAR_WIDTH - fill)
            self.stream.write(f"\r  [{bar}] step {done}/{self.total}  {status:<40}")
            self.stream.flush()
            return
        self._shown = f"  step {done}/{self.total} ({100 * frac:.0f}%)  {status}".rstrip()
        now = time.monotonic()
        if now - self._last_line >= self.interval_s:
            self._last_line = now
            self.stream.write(self._shown + "\n")
            self.stream.flush()
            self._shown = ""

    def finish(self) -> None:
        if self.tty:
            self.stream.write("\n")
        elif self._shown:
            self.stream.write(self._shown + "\n")
        self.stream.flush()


class NoProgress(Progress):
    """For machine-readable runs (``--json``): says nothing."""

    def __init__(self) -> None:
        super().__init__(1, stream=sys.stderr, tty=False)

    def update(self, done: int, status: str = "") -> None:
        pass

    def finish(self) -> None:
        pass
