"""The daemon's memory limit and use, as its cgroup sees them: what a calibration can afford.

Under systemd the unit's ``MemoryMax`` is a cgroup limit, and at that limit the kernel kills the
daemon: a calibration or re-fit whose window outgrew it would stop the gate's signal, and on
restart the same window would stop it again.  ``WindowBound`` reads this to cut such a window
to what fits instead.  Both cgroup versions are read: v2's ``memory.max`` and ``memory.high``
(``MemoryHigh``: above it the kernel throttles the daemon so hard that a calibration would
crawl) and v1's ``memory.limit_in_bytes``, on the daemon's own cgroup and every ancestor that
is visible (the smallest limit binds); where none is set, or none can be read, there is no
limit and nothing is cut.

>>> import tempfile, pathlib
>>> root = pathlib.Path(tempfile.mkdtemp())
>>> (root / "proc").mkdir(); _ = (root / "proc" / "cgroup").write_text("0::/system.slice/shadowd.service\\n")
>>> unit = root / "cg" / "system.slice" / "shadowd.service"; unit.mkdir(parents=True)
>>> _ = (unit / "memory.max").write_text("1610612736\\n")
>>> _ = (root / "cg" / "system.slice" / "memory.max").write_text("max\\n")
>>> CgroupMemory(proc_self=str(root / "proc"), cgroup_root=str(root / "cg")).limit_bytes()
1610612736
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

UNLIMITED = 1 << 62  # v1 writes "no limit" as a page-rounded 2**63 - 1
_UNITS = {"": 1, "B": 1, "KB": 10**3, "MB": 10**6, "GB": 10**9, "TB": 10**12}
_UNITS |= {"KIB": 1 << 10, "MIB": 1 << 20, "GIB": 1 << 30, "TIB": 1 << 40}


def memory_bytes(size: str) -> int:
    """A memory size as ``[storage] memory_limit`` writes it, in bytes.

    >>> memory_bytes("192MB"), memory_bytes("1GiB"), memory_bytes(" 1.5 kib ")
    (192000000, 1073741824, 1536)
    """
    m = re.fullmatch(r"\s*(\d+(?:\.\d+)?)\s*([KMGT]?I?B)?\s*", size, re.I)
    if not m:
        raise ValueError(f"{size!r} is not a memory size; write it like '256MB' or '1GiB'")
    return int(float(m.group(1)) * _UNITS[(m.group(2) or "").upper()])


@dataclass(frozen=True)
class CgroupMemory:
    """Where to read the daemon's cgroup (paths, so a test can point it at a tree of its own),
    and what to keep aside from it: ``reserve_bytes`` (DuckDB's own ``memory_limit``, which the
    window's load and the daemon's queries draw on) and ``reserve_fraction`` of the limit (the
    ingest, the gate and the HTTP server, which run beside a calibration)."""

    reserve_bytes: int = 0
    reserve_fraction: float = 0.2
    proc_self: str = "/proc/self"
    cgroup_root: str = "/sys/fs/cgroup"

    def limit_bytes(self) -> int | None:
        """The smallest memory limit on the daemon's cgroup or a visible ancestor (None: none)."""
        limits = [n for d, name in self._candidates() if (n := _read_limit(d / name)) is not None]
        return min(limits) if limits else None

    def resident_bytes(self) -> int:
        """The daemon's anonymous resident memory now: what a calibration adds to and the kernel
        charges it for.  Not all of VmRSS: the shared libraries' pages (numpy, DuckDB) are
        charged to whichever cgroup read them first, and the page cache is reclaimed before the
        limit kills (``benchmarks/window_memory.py`` found VmRSS overstating the charge)."""
        for line in Path(self.proc_self, "status").read_text().splitlines():
            if line.startswith("RssAnon:"):
                return int(line.split()[1]) * 1024  # kB
        raise ValueError(f"no RssAnon in {self.proc_self}/status")

    def headroom_bytes(self) -> int | None:
        """Bytes a calibration may still take before the limit, less the reserves (None: no limit)."""
        limit = self.limit_bytes()
        return None if limit is None else self.spare_under(limit, self.resident_bytes())

    def spare_under(self, limit: int, resident: int) -> int:
        """Bytes left under ``limit`` with ``resident`` held, less the reserves."""
        return max(0, int(limit * (1.0 - self.reserve_fraction) - self.reserve_bytes - resident))

    def _candidates(self) -> list[tuple[Path, str]]:
        """(cgroup directory, limit file) for the daemon's cgroup and its ancestors, both versions."""
        try:
            lines = Path(self.proc_self, "cgroup").read_text().splitlines()
        except OSError:
            return []
        out = []
        for line in lines:
            if line.count(":") < 2:
                continue  # not a cgroup line
            _, controllers, path = line.split(":", 2)
            if controllers == "":  # v2, the unified hierarchy; memory.high throttles hard
                base, names = Path(self.cgroup_root), ("memory.max", "memory.high")
            elif "memory" in controllers.split(","):
                base, names = Path(self.cgroup_root, "memory"), ("memory.limit_in_bytes",)
            else:
                continue
            parts = [p for p in path.split("/") if p]
            out += [(base.joinpath(*parts[:i]), n) for i in range(len(parts), -1, -1) for n in names]
        return out


def _read_limit(path: Path) -> int | None:
    try:
        text = path.read_text().strip()
    except OSError:
        return None  # not this version, or a cgroup namespace hides the path
    if text == "max" or not text.isdigit() or int(text) >= UNLIMITED:
        return None
    return int(text)
