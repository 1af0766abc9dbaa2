"""Routing: which sinks an alert goes to, decided by its labels and severity.

Routes are checked in order, like Alertmanager's: the first route whose
``match`` fits sends the alert to its ``sinks`` and stops, unless it sets
``continue``, in which case later routes are checked too. A route with no
``match`` fits every alert (a catch-all, usually last). ``match`` sees the
alert's labels plus ``alertname`` and ``severity``; each value is either one
string (equality) or a list of strings (any of them).

>>> router = Router([
...     Route(sinks=("pagerduty",), match={"severity": "page"}, continue_=True),
...     Route(sinks=("slack",), match={"alertname": ["TapSilent", "TapDroppingFrames"]}),
...     Route(sinks=("journal",)),
... ])
>>> from alerts.alert import Alert
>>> router.sinks_for(Alert("AttributionNotGo", "page"))
('pagerduty', 'journal')
>>> router.sinks_for(Alert("TapSilent", "warning"))
('slack',)
>>> Router().sinks_for(Alert("X", "info"))  # no routes: nothing is routed here
()
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence

from .alert import Alert

Matcher = Mapping[str, "str | Sequence[str]"]


@dataclasses.dataclass(frozen=True)
class Route:
    """Send alerts whose labels fit ``match`` to ``sinks``; ``continue_`` keeps looking."""

    sinks: tuple[str, ...]
    match: Matcher = dataclasses.field(default_factory=dict, hash=False)
    continue_: bool = False

    def matches(self, labels: Mapping[str, str]) -> bool:
        """Whether every key in ``match`` has an allowed value in ``labels``."""
        for key, wanted in self.match.items():
            value = labels.get(key)
            if value is None or (value != wanted if isinstance(wanted, str) else value not in wanted):
                return False
        return True

    @classmethod
    def from_config(cls, table: Mapping) -> Route:
        """From a validated ``[[alerts.routes]]`` table (see :mod:`alerts.config`)."""
        return cls(
            sinks=tuple(table["sinks"]),
            match=dict(table.get("match", {})),
            continue_=bool(table.get("continue", False)),
        )


class Router:
    """An ordered list of routes."""

    def __init__(self, routes: Sequence[Route] = ()):
        self.routes = tuple(routes)

    def sinks_for(self, alert: Alert) -> tuple[str, ...]:
        """Sink names for this alert, in route order, each once."""
        labels = alert.match_labels
        chosen: dict[str, None] = {}
        for route in self.routes:
            if route.matches(labels):
                chosen.update(dict.fromkeys(route.sinks))
                if not route.continue_:
                    break
        return tuple(chosen)
