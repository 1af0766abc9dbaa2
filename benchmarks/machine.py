"""The machine a figure was measured on: cores, CPU model, RAM, versions."""

from __future__ import annotations

import os
import platform
import sys
from importlib import metadata


def _cpu_model() -> str:
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown"


def _ram_gib() -> float | None:
    try:
        with open("/proc/meminfo") as f:
            for line in f:
                if line.startswith("MemTotal:"):
                    return round(int(line.split()[1]) / 2**20, 1)
    except OSError:
        pass
    return None


def _version(dist: str) -> str | None:
    try:
        return metadata.version(dist)
    except metadata.PackageNotFoundError:
        return None


def machine() -> dict:
    """What a reader needs to compare a figure with their own host."""
    return {
        "nproc": len(os.sched_getaffinity(0)),
        "cpu_model": _cpu_model(),
        "ram_gib": _ram_gib(),
        "python": sys.version.split()[0],
        "platform": platform.platform(),
        "versions": {d: _version(d) for d in ("vllm", "duckdb", "pyzmq", "msgspec", "numpy")},
    }
