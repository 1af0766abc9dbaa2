"""The alert model: what is wrong, how urgent, and which thing it is about.

An :class:`Alert` is a plain value. Its *identity* is its ``name`` plus its
``labels``; everything else (severity, summary, details, times) may change
while the same alert keeps firing. Identity is what dedup, resend, resolve,
Alertmanager grouping and PagerDuty's ``dedup_key`` all key on, so labels must
name *which* thing is affected (a platform, a step class), never a measured
value: a value in a label would make every evaluation a new alert.

Times are seconds since the epoch (``time.time()``), so clocks can be injected
as plain callables in tests.

>>> a = Alert("AttributionNotGo", "page", {"platform": "h100-llama8b"},
...           summary="attribution confidence dropped")
>>> a.fingerprint == Alert("AttributionNotGo", "info", {"platform": "h100-llama8b"}).fingerprint
True
>>> a.fingerprint == Alert("AttributionNotGo", "page", {"platform": "a100"}).fingerprint
False
>>> rfc3339(0.0)
'1970-01-01T00:00:00.000Z'
"""

from __future__ import annotations

import dataclasses
import functools
import hashlib
import json
import re
from collections.abc import Mapping
from datetime import UTC, datetime
from typing import Any, Literal

Severity = Literal["page", "warning", "info"]
SEVERITIES: tuple[str, ...] = ("page", "warning", "info")

# Alertmanager (and Prometheus) label names; stricter names travel everywhere.
_LABEL_NAME = re.compile(r"^[a-zA-Z_][a-zA-Z0-9_]*$")
_RESERVED = ("alertname", "severity")


def fingerprint(name: str, labels: Mapping[str, str]) -> str:
    """A stable identity hash: same name and labels give the same key in every process.

    Python's ``hash()`` is salted per process, so it would break PagerDuty
    dedup across daemon restarts; a SHA-256 of a canonical JSON form does not.

    >>> fingerprint("X", {"b": "2", "a": "1"}) == fingerprint("X", {"a": "1", "b": "2"})
    True
    >>> len(fingerprint("X", {}))
    16
    """
    canonical = json.dumps([name, sorted(labels.items())], separators=(",", ":"))
    return hashlib.sha256(canonical.encode()).hexdigest()[:16]


def rfc3339(ts: float) -> str:
    """Format epoch seconds as the UTC RFC 3339 timestamp Alertmanager and PagerDuty expect."""
    dt = datetime.fromtimestamp(ts, tz=UTC)
    return dt.strftime("%Y-%m-%dT%H:%M:%S.") + f"{dt.microsecond // 1000:03d}Z"


@dataclasses.dataclass(frozen=True)
class Alert:
    """One condition that on-call should know about, identified by name + labels.

    ``starts_at`` and ``ends_at`` are filled in by the notifier (fire time and
    resolve time) when left ``None``.
    """

    name: str
    severity: Severity
    labels: Mapping[str, str] = dataclasses.field(default_factory=dict, hash=False)
    summary: str = ""
    details: Mapping[str, Any] = dataclasses.field(default_factory=dict, hash=False)
    starts_at: float | None = None
    ends_at: float | None = None

    def __post_init__(self) -> None:
        if not self.name:
            raise ValueError("alert name must be non-empty")
        if self.severity not in SEVERITIES:
            raise ValueError(f"alert severity {self.severity!r}: use one of {', '.join(SEVERITIES)}")
        for key, value in self.labels.items():
            if not _LABEL_NAME.match(key) or key in _RESERVED:
                raise ValueError(
                    f"alert label name {key!r}: use [a-zA-Z_][a-zA-Z0-9_]*, not {'/'.join(_RESERVED)}"
                )
            if not isinstance(value, str):
                raise ValueError(f"alert label {key}={value!r}: label values must be str")
        object.__setattr__(self, "labels", dict(self.labels))
        object.__setattr__(self, "details", dict(self.details))

    @functools.cached_property
    def fingerprint(self) -> str:
        """The identity key (name + labels), see :func:`fingerprint`; computed once per alert."""
        return fingerprint(self.name, self.labels)

    @property
    def match_labels(self) -> dict[str, str]:
        """Labels as routes and Alertmanager see them: with ``alertname`` and ``severity``.

        >>> Alert("X", "info", {"a": "1"}).match_labels
        {'alertname': 'X', 'severity': 'info', 'a': '1'}
        """
        return {"alertname": self.name, "severity": self.severity, **self.labels}

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready form (used by the webhook sink and logs)."""
        return {
            "name": self.name,
            "severity": self.severity,
            "labels": dict(self.labels),
            "summary": self.summary,
            "details": dict(self.details),
            "starts_at": self.starts_at,
            "ends_at": self.ends_at,
            "fingerprint": self.fingerprint,
        }
