"""The engines' governors as ``/metrics`` shows them: their status files, read at scrape time.

Each governed engine writes ``governor*.json`` beside the gate state file
(:mod:`shadowd.govern.status_file`); the daemon reads them only when scraped, with bounds on
everything an engine controls: at most ``MAX_FILES`` files of at most ``MAX_BYTES`` each, at most
``MAX_REASONS`` switch reasons of at most 40 characters, non-negative finite numbers.  A file that
breaks a bound is skipped and counted (``unreadable``), not half-read.  The engine label is the
file's name without ``.json`` (``governor``, ``governor-gpu1``).
"""

from __future__ import annotations

import json
import math
import os
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

MAX_FILES = 16
MAX_BYTES = 16384
MAX_REASONS = 32
CHARGING = ("attributed", "vtc")
CHARGED_ON = ("thread", "inline")  # where the engine's governor charges its steps


@dataclass(frozen=True)
class GovernorStatus:
    engine: str
    charging: str
    reason: str
    switches: dict[str, int]
    steps_charged: dict[str, int]
    errors: int
    age_s: float
    charged_on: str = ""  # "thread" or "inline"; "" from a governor that does not say


@dataclass
class GovernorFiles:
    """The status files in ``directory`` (the gate state file's), parsed per scrape."""

    directory: str
    unreadable: int = 0
    _skipped: set[str] = field(default_factory=set)

    def read(self, now: float | None = None) -> list[GovernorStatus]:
        now = time.time() if now is None else now
        try:
            paths = sorted(Path(self.directory).glob("governor*.json"))[:MAX_FILES]
        except OSError:
            return []
        out = []
        for path in paths:
            status = _parse(path, now)
            if status is None:
                if path.name not in self._skipped:  # count each bad file once, not per scrape
                    self._skipped.add(path.name)
                    self.unreadable += 1
                continue
            self._skipped.discard(path.name)
            out.append(status)
        return out


def _parse(path: Path, now: float) -> GovernorStatus | None:
    try:
        if path.stat().st_size > MAX_BYTES:
            return None
        doc = json.loads(path.read_bytes()[: MAX_BYTES + 1])
        if not isinstance(doc, dict) or doc.get("charging") not in CHARGING:
            return None
        switches = _counts(doc.get("switches"), MAX_REASONS)
        steps = _counts(doc.get("steps_charged"), len(CHARGING))
        if switches is None or steps is None or set(steps) - set(CHARGING):
            return None
        errors, written = _count(doc.get("errors")), doc.get("written_at")
        if errors is None or not _finite(written):
            return None
        reason, charged_on = doc.get("reason"), doc.get("charged_on", "")
        if charged_on not in ("", *CHARGED_ON):
            return None
        return GovernorStatus(
            engine=path.name[: -len(".json")][:64],
            charging=doc["charging"],
            reason=reason[:40] if isinstance(reason, str) else "",
            switches=switches,
            steps_charged=steps,
            errors=errors,
            age_s=max(0.0, now - float(written)),
            charged_on=charged_on,
        )
    except (OSError, ValueError):
        return None


def _counts(value: Any, most: int) -> dict[str, int] | None:
    if not isinstance(value, dict) or len(value) > most:
        return None
    out = {}
    for k, v in value.items():
        n = _count(v)
        if not isinstance(k, str) or not k or len(k) > 40 or n is None:
            return None
        out[k] = n
    return out


def _count(v: Any) -> int | None:
    return v if isinstance(v, int) and not isinstance(v, bool) and 0 <= v < 2**62 else None


def _finite(v: Any) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v)


def governor_directory(state_file: str | None) -> str | None:
    return os.path.dirname(os.path.abspath(state_file)) if state_file else None
