"""One gate verdict with its evidence trail, and the exit codes the CLI uses.

A decision is valid until ``valid_until``; a reader (the scheduler reading the state file)
must treat an expired decision as not GO: ``effective_verdict`` does that.

>>> d = Decision("GO", [], 3, 3, "ok", evaluated_at=100.0, valid_until=400.0)
>>> d.exit_code, effective_verdict(d.to_dict(), now=500.0), exit_code("NO_GO")
(0, 'INCONCLUSIVE', 1)
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from checks.check_result import CheckResult

VERDICTS = ("GO", "NO_GO", "INCONCLUSIVE")
EXIT_CODES = {"GO": 0, "NO_GO": 1, "INCONCLUSIVE": 2}
EXIT_ERROR = 3


def exit_code(verdict: str) -> int:
    """0 GO, 1 NO_GO, 2 INCONCLUSIVE; anything else is an error (3)."""
    return EXIT_CODES.get(verdict, EXIT_ERROR)


@dataclass(frozen=True)
class Decision:
    verdict: str
    checks: list[CheckResult]
    consecutive_passes: int
    required_passes: int
    reason: str
    evaluated_at: float
    valid_until: float
    since: float | None = None
    policy_scale: float = 1.0
    details: dict[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if self.verdict not in VERDICTS:
            raise ValueError(f"verdict must be one of {VERDICTS}, got {self.verdict!r}")

    @property
    def exit_code(self) -> int:
        return exit_code(self.verdict)

    def counts(self) -> dict[str, int]:
        out = {"pass": 0, "fail": 0, "inconclusive": 0}
        for c in self.checks:
            out[c.status] += 1
        return out

    def to_dict(self) -> dict[str, Any]:
        return {
            "verdict": self.verdict,
            "exit_code": self.exit_code,
            "reason": self.reason,
            "consecutive_passes": self.consecutive_passes,
            "required_passes": self.required_passes,
            "evaluated_at": self.evaluated_at,
            "valid_until": self.valid_until,
            "since": self.since,
            "policy_scale": self.policy_scale,
            "counts": self.counts(),
            "checks": [c.to_dict() for c in self.checks],
            "details": dict(self.details),
        }


def effective_verdict(decision: Mapping[str, Any], now: float) -> str:
    """The verdict of a stored decision, or INCONCLUSIVE once it has expired or is malformed."""
    verdict = decision.get("verdict")
    valid_until = decision.get("valid_until")
    if verdict not in VERDICTS or not isinstance(valid_until, (int, float)) or now > valid_until:
        return "INCONCLUSIVE"
    return str(verdict)
