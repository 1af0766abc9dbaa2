"""The outcome of one gate check: pass, fail or inconclusive, with value, threshold and why.

``critical`` marks checks whose inconclusive outcome (unknown platform, stale data) must end
a GO at once; ``missing`` marks an inconclusive outcome caused by absent evidence. The gate
tolerates neither while GO (see ``checks.gate``).

>>> c = CheckResult("drift", "fail", 2, 0, "2 unresolved drift events (max 0)")
>>> c.to_dict()["status"]
'fail'
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any

STATUSES = ("pass", "fail", "inconclusive")


@dataclass(frozen=True)
class CheckResult:
    name: str
    status: str
    value: Any
    threshold: Any
    reason: str
    critical: bool = False
    missing: bool = False

    def __post_init__(self) -> None:
        if self.status not in STATUSES:
            raise ValueError(f"check status must be one of {STATUSES}, got {self.status!r}")

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)
