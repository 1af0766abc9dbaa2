"""One detected drift, as the daemon stores it in its ``drift_events`` table.

Every drift check in this package (residual detectors, coefficient refits, the workload
envelope) reports through the same small record, so storage and alerting need to know
only one shape.

>>> e = DriftEvent(ts=12.5, step_seq=4012, detector="page_hinkley", statistic=14.2,
...                threshold=11.0, step_class="decode", details={"direction": "up"})
>>> e.to_dict()["detector"]
'page_hinkley'
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any


@dataclass(frozen=True)
class DriftEvent:
    """A detection: when, at which step, by which detector, how far past its threshold.

    ``statistic`` and ``threshold`` are in the detector's own units (documented by each
    detector); ``details`` holds anything else worth keeping (direction, window sizes).
    ``step_class`` is ``None`` for checks that are not per step class (e.g. new tenants).
    """

    ts: float
    step_seq: int
    detector: str
    statistic: float
    threshold: float
    step_class: str | None = None
    details: dict[str, Any] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        """Plain dict, ready for a table row or JSON."""
        return asdict(self)
