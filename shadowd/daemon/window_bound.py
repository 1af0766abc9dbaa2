"""How many request rows a window of the step log may hold, and how often one was cut.

The windows read with every request row: the warm-up calibration's, a re-fit's, an envelope
extension's and the scheduled share-stability test's.  Their memory grows with their rows
(``benchmarks/window_memory.py`` measures it per row).  Two bounds cut them: the operator's
``[calibration] max_window_rows`` (calibration, re-fit and extension windows), and, under a
cgroup memory limit (the unit's ``MemoryMax``), the rows the daemon can still afford
(``CgroupMemory``, ``[calibration] memory_guard``).  Where the memory bound cuts, the design's
window would have had the daemon killed, and on restart killed again: a narrower window that
may leave a step class unwatched is the lesser harm, and it is logged, counted
(``shadowd_calibration_windows_cut_total``) and raised as the ``CalibrationWindowCut``
warning.  With no limit set, as in every held-out run, it cuts nothing.

The per-row allowances sit above what ``benchmarks/window_memory.py`` measured (its page reads
them against the measured peaks, on a second log too), and that benchmark also runs a re-fit's
and the warm-up's windows under a real cgroup limit.

>>> WindowBound().rows(None, loading=True)
(None, None)
>>> WindowBound().rows(50_000, loading=True)
(50000, 'rows')
"""

from __future__ import annotations

import logging
import threading
from collections import Counter
from typing import Any

from shadowd.daemon.cgroup_memory import CgroupMemory

log = logging.getLogger("shadowd.daemon.window_bound")

# Bytes per request row a window holds once loaded without request ids, and a calibration's peak
# above it (the fit, its drift thresholds, the stability baseline): allowances over the figures
# ``benchmarks/window_memory.py`` measured, which that page compares with them.
LOADED_BYTES_PER_ROW = 100
CALIBRATION_BYTES_PER_ROW = 400
# Below this many rows a window is not cut further: a smaller one could not calibrate anything
# (the least ``max_window_rows`` an operator may set).
MIN_ROWS = 10_000


def affordable_rows(spare: int, held: int = 0) -> int:
    """The most rows a window may hold with ``spare`` bytes left and ``held`` rows resident.

    Every row costs its loaded bytes and the calibration's peak over them; rows held already
    (the warm-up window's) are in the resident figure, their loaded bytes spent.  With none held
    this is a re-fit's case: the whole window still to load.

    >>> affordable_rows(50_000_000), affordable_rows(0)
    (100000, 10000)
    """
    per_row = LOADED_BYTES_PER_ROW + CALIBRATION_BYTES_PER_ROW
    return max(MIN_ROWS, (spare + held * LOADED_BYTES_PER_ROW) // per_row)


class WindowBound:
    """Owns the bound on a window's request rows and the count of windows each bound cut."""

    def __init__(self, memory: CgroupMemory | None = None) -> None:
        self.memory = memory  # None: [calibration] memory_guard off
        self._cuts: Counter[str] = Counter()
        self._unreadable = False
        # Per kind of window ("calibration", "re-fit", "envelope extension", "stability"), its
        # last read where the memory bound cut it, most recent last: what the
        # CalibrationWindowCut alert says until each such kind is read whole again.
        self._memory_cuts: dict[str, dict[str, Any]] = {}
        self._lock = threading.Lock()

    @property
    def last_memory_cut(self) -> dict[str, Any] | None:
        """The most recent memory cut of a kind of window whose last read was cut (None: none)."""
        with self._lock:
            return list(self._memory_cuts.values())[-1] if self._memory_cuts else None

    def rows(self, configured: int | None, *, loading: bool, held: int = 0) -> tuple[int | None, str | None]:
        """The most rows the next window may hold, and which bound set it ("rows", "memory"; None
        for no bound).  ``loading``: the window is still to be read (a re-fit); otherwise its
        ``held`` rows are resident already (the warm-up window) and only the calibration's peak
        is still to come."""
        afford = self._affordable(loading, held)
        if afford is not None and (configured is None or afford < configured):
            return afford, "memory"
        return configured, None if configured is None else "rows"

    def _affordable(self, loading: bool, held: int) -> int | None:
        if self.memory is None:
            return None
        try:
            spare = self.memory.headroom_bytes()
        except (OSError, ValueError, IndexError) as e:  # unreadable /proc: no memory bound
            if not self._unreadable:  # said once: the warm-up asks on every part it keeps
                log.warning("memory guard off: cannot read the daemon's memory (%s)", e)
            self._unreadable = True
            return None
        return None if spare is None else affordable_rows(spare, 0 if loading else held)

    def _limit(self) -> int | None:
        try:
            return self.memory.limit_bytes() if self.memory else None
        except (OSError, ValueError):
            return None

    def read(self, what: str, steps: int, cap: int | None, by: str | None, cut: bool) -> None:
        """Record one window read (``cut``: short of the design's, at bound ``by``)."""
        if cut and by is not None and cap is not None:
            self.cut(by, cap, steps, what)
        else:
            with self._lock:
                self._memory_cuts.pop(what, None)

    def cut(self, by: str, rows: int, steps: int, what: str) -> None:
        """Count and log one window cut short by bound ``by``."""
        limit = self._limit() if by == "memory" else None
        with self._lock:
            self._cuts[by] += 1
            self._memory_cuts.pop(what, None)
            if by == "memory":
                self._memory_cuts[what] = {
                    "window": what,
                    "steps": steps,
                    "rows": rows,
                    "memory_limit_bytes": limit,
                }
        if by == "memory":
            log.warning(
                "%s window cut to %d steps (%d request rows): more would not fit under the daemon's "
                "memory limit (%s bytes, less DuckDB's memory_limit and a reserve); the window may be "
                "narrower than the gate's design asks (a class left unwatched). Raise MemoryMax or "
                "set [calibration] max_window_rows (docs/operations.md)",
                what,
                steps,
                rows,
                limit,
            )
        else:
            log.warning(
                "%s window cut to %d steps at [calibration] max_window_rows = %d request rows: the "
                "window may be narrower than the gate's design asks (a class left unwatched)",
                what,
                steps,
                rows,
            )

    def cuts(self) -> dict[str, int]:
        """Windows cut short so far, per bound ("rows", "memory")."""
        with self._lock:
            return {"rows": self._cuts["rows"], "memory": self._cuts["memory"]}
