"""Alert configuration: validate the plain dict read from TOML and build a :class:`Notifier`.

The daemon passes its ``[alerts]`` table. Every problem is reported at once,
each naming its key and the fix, because a typo here silently means nobody
gets paged. A TOML example::

    [alerts]
    labels = { service = "shadowd" }             # added to every alert (part of identity)

    [alerts.sinks.am]
    type = "alertmanager"
    urls = ["http://127.0.0.1:9093"]             # every replica
    # ends_at_horizon_s = 300                    # must exceed resend_interval_s (60 by default)

    [alerts.sinks.pd]
    type = "pagerduty"
    routing_key = "<Events API v2 integration key>"

    [alerts.sinks.ops]
    type = "slack"
    webhook_url = "https://hooks.slack.com/services/..."

    [alerts.sinks.journal]
    type = "log"

    [[alerts.routes]]                            # first match wins unless continue = true
    match = { severity = "page" }
    sinks = ["pd", "am"]
    continue = true

    [[alerts.routes]]                            # no match: catch-all
    sinks = ["ops", "journal"]

Without ``routes`` every alert goes to every sink. Keys every sink accepts:
``resend_interval_s`` (default per type: alertmanager 60, pagerduty 3600,
slack 14400, webhook 3600, log 3600; 0 disables), ``queue_size`` (1000),
``max_attempts`` (5), ``backoff_initial_s`` (1), ``backoff_max_s`` (60); the HTTP
sinks also take ``timeout_s`` (10 s per attempt). Each sink type's own keys are
in its module's ``options``.

Secrets need not sit in the TOML: any string value written ``"credential:NAME"`` is read from
the file ``NAME`` in ``$CREDENTIALS_DIRECTORY``, where systemd puts what the unit's
``LoadCredential=NAME:/path`` names (readable by the service only), e.g.
``routing_key = "credential:pagerduty-key"``.

>>> validate({"sinks": {"pd": {"type": "pagerduty", "routing_key": "k", "timeout": 5}},
...           "routes": [{"match": {"severity": "critical"}, "sinks": ["pd", "slack"]}]})
Traceback (most recent call last):
...
alerts.config.ConfigError: invalid alert configuration:
  - alerts.sinks.pd.timeout: unknown key; did you mean 'timeout_s'?
  - alerts.routes[0].match.severity: 'critical' is not a severity; use page, warning or info
  - alerts.routes[0].sinks: 'slack' is not defined; define [alerts.sinks.slack] or use one of: pd
"""

from __future__ import annotations

import difflib
import os
import re
import time
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from .alert import SEVERITIES
from .backoff import Backoff
from .notifier import Notifier
from .router import Route, Router
from .sinks import SINK_TYPES
from .sinks.base import Option, non_negative, positive

COMMON_OPTIONS: dict[str, Option] = {
    "resend_interval_s": Option(
        float, check=non_negative, help="seconds between resends while firing; 0 never resends"
    ),
    "queue_size": Option(int, default=1000, check=positive, help="notifications held while the sink is slow"),
    "max_attempts": Option(int, default=5, check=positive, help="attempts per notification, first included"),
    "backoff_initial_s": Option(float, default=1.0, check=positive, help="wait before the first retry"),
    "backoff_max_s": Option(float, default=60.0, check=positive, help="longest wait between retries"),
}
TOP_KEYS = ("labels", "sinks", "routes")
ROUTE_KEYS = ("match", "sinks", "continue")
_LABEL_NAME = re.compile(r"^[a-zA-Z_][a-zA-Z0-9_]*$")


class ConfigError(ValueError):
    """The alert configuration is unusable; ``problems`` lists every reason."""

    def __init__(self, problems: list[str]):
        self.problems = problems
        super().__init__("invalid alert configuration:\n" + "\n".join(f"  - {p}" for p in problems))


def validate(config: Mapping[str, Any], *, prefix: str = "alerts") -> dict[str, dict[str, Any]]:
    """Check ``config``; return each sink's settings with defaults filled, or raise :class:`ConfigError`."""
    problems: list[str] = []
    _unknown_keys(config, TOP_KEYS, prefix, problems)
    _check_labels(config.get("labels", {}), f"{prefix}.labels", problems)
    sinks = _check_sinks(config.get("sinks"), f"{prefix}.sinks", problems)
    _check_routes(config.get("routes"), sinks, prefix, problems)
    if problems:
        raise ConfigError(problems)
    return sinks


def build_notifier(
    config: Mapping[str, Any], *, prefix: str = "alerts", clock: Callable[[], float] = time.time
) -> Notifier:
    """A started :class:`Notifier` for ``config`` (validated first)."""
    settings = validate(config, prefix=prefix)
    routes = config.get("routes")
    router = Router([Route.from_config(r) for r in routes]) if routes is not None else None
    notifier = Notifier(router, labels=config.get("labels"), clock=clock)
    for name, values in settings.items():
        own = {k: v for k, v in values.items() if k not in COMMON_OPTIONS and k != "type"}
        notifier.add_sink(
            SINK_TYPES[values["type"]].from_config(name, own),
            resend_interval_s=values["resend_interval_s"],
            queue_size=values["queue_size"],
            max_attempts=values["max_attempts"],
            backoff=Backoff(initial_s=values["backoff_initial_s"], max_s=values["backoff_max_s"]),
        )
    return notifier


def _unknown_keys(table: Mapping, allowed, where: str, problems: list[str]) -> None:
    for key in table:
        if key not in allowed:
            close = difflib.get_close_matches(str(key), list(allowed), n=1)
            hint = f"did you mean {close[0]!r}?" if close else f"allowed keys: {', '.join(allowed)}"
            problems.append(f"{where}.{key}: unknown key; {hint}")


def _check_labels(labels: Any, where: str, problems: list[str]) -> None:
    if not isinstance(labels, Mapping):
        problems.append(f'{where}: expected a table of name = "value" strings')
        return
    for key, value in labels.items():
        if not _LABEL_NAME.match(str(key)) or key in ("alertname", "severity"):
            problems.append(
                f"{where}.{key}: label names must match [a-zA-Z_][a-zA-Z0-9_]* "
                "and not be alertname or severity"
            )
        elif not isinstance(value, str):
            problems.append(f"{where}.{key}: label values must be strings; quote it")


def _check_sinks(sinks: Any, where: str, problems: list[str]) -> dict[str, dict[str, Any]]:
    if not isinstance(sinks, Mapping) or not sinks:
        problems.append(f'{where}: define at least one sink, e.g. [{where}.journal] with type = "log"')
        return {}
    parsed = {}
    for name, table in sinks.items():
        here = f"{where}.{name}"
        if not isinstance(table, Mapping):
            problems.append(f"{here}: expected a table with a type key")
            continue
        kind = table.get("type")
        if kind not in SINK_TYPES:
            problems.append(
                f"{here}.type: {'missing' if kind is None else repr(kind) + ' is unknown'}; "
                f"use one of {', '.join(sorted(SINK_TYPES))}"
            )
            continue
        parsed[name] = _check_sink(SINK_TYPES[kind], table, here, problems)
    return parsed


CREDENTIAL = "credential:"


def credential(name: str, env: Mapping[str, str] | None = None) -> str:
    """The secret systemd handed the service as credential ``name`` (``LoadCredential=``).

    >>> credential("pd", env={})
    Traceback (most recent call last):
    ...
    ValueError: credential 'pd' not available: no $CREDENTIALS_DIRECTORY (add LoadCredential=pd:/path/to/secret to the unit)
    """
    env = os.environ if env is None else env
    base = env.get("CREDENTIALS_DIRECTORY")
    hint = f"add LoadCredential={name}:/path/to/secret to the unit"
    if not base:
        raise ValueError(f"credential {name!r} not available: no $CREDENTIALS_DIRECTORY ({hint})")
    if not name or "/" in name or name in (".", ".."):
        raise ValueError(f"credential name {name!r} is not a file name")
    try:
        return (Path(base) / name).read_text().strip()
    except OSError as exc:
        raise ValueError(f"credential {name!r} not readable ({exc.strerror}; {hint})") from None


def _with_credentials(table: Mapping, here: str, problems: list[str]) -> dict[str, Any]:
    out = dict(table)
    for key, value in table.items():
        if isinstance(value, str) and value.startswith(CREDENTIAL):
            try:
                out[key] = credential(value[len(CREDENTIAL) :])
            except ValueError as exc:
                problems.append(f"{here}.{key}: {exc}")
    return out


def _check_sink(cls, table: Mapping, here: str, problems: list[str]) -> dict[str, Any]:
    table = _with_credentials(table, here, problems)
    options = {**cls.options, **COMMON_OPTIONS}
    _unknown_keys({k: v for k, v in table.items() if k != "type"}, tuple(options), here, problems)
    values: dict[str, Any] = {"type": cls.type}
    for key, option in options.items():
        if key not in table:
            if option.required:
                problems.append(f"{here}.{key}: missing; set it to {option.help}")
            values[key] = option.default
        elif (why := option.problem(table[key])) is not None:
            problems.append(f"{here}.{key}: {why}")
            values[key] = option.default
        else:
            values[key] = table[key]
    if values["resend_interval_s"] is None:
        values["resend_interval_s"] = cls.default_resend_interval_s
    if values["backoff_max_s"] < values["backoff_initial_s"]:
        problems.append(f"{here}.backoff_max_s: must be >= backoff_initial_s ({values['backoff_initial_s']})")
    if cls.type == "alertmanager":
        resend = values["resend_interval_s"]
        if not resend or resend >= values["ends_at_horizon_s"]:
            problems.append(
                f"{here}.resend_interval_s: Alertmanager expires alerts at endsAt, so resends must come "
                f"more often than ends_at_horizon_s ({values['ends_at_horizon_s']}); "
                "use e.g. 60 with a horizon of 300"
            )
    return values


def _check_routes(routes: Any, sinks: Mapping[str, Any], prefix: str, problems: list[str]) -> None:
    if routes is None:
        return
    if not isinstance(routes, list):
        problems.append(f"{prefix}.routes: expected an array of tables ([[{prefix}.routes]])")
        return
    for i, route in enumerate(routes):
        here = f"{prefix}.routes[{i}]"
        if not isinstance(route, Mapping):
            problems.append(f"{here}: expected a table with sinks = [...]")
            continue
        _unknown_keys(route, ROUTE_KEYS, here, problems)
        _check_match(route.get("match", {}), f"{here}.match", problems)
        if not isinstance(route.get("continue", False), bool):
            problems.append(f"{here}.continue: expected true or false")
        names = route.get("sinks")
        if not isinstance(names, list) or not names or not all(isinstance(n, str) for n in names):
            problems.append(f"{here}.sinks: expected a non-empty list of sink names")
            continue
        for name in names:
            if name not in sinks:
                problems.append(
                    f"{here}.sinks: {name!r} is not defined; define [{prefix}.sinks.{name}] "
                    f"or use one of: {', '.join(sinks) or '(none defined)'}"
                )


def _check_match(match: Any, where: str, problems: list[str]) -> None:
    if not isinstance(match, Mapping):
        problems.append(f'{where}: expected a table of label = "value" or label = ["a", "b"]')
        return
    for key, wanted in match.items():
        values = [wanted] if isinstance(wanted, str) else wanted
        if not isinstance(values, list) or not values or not all(isinstance(v, str) for v in values):
            problems.append(f"{where}.{key}: expected a string or a non-empty list of strings")
        elif key == "severity":
            for value in values:
                if value not in SEVERITIES:
                    problems.append(
                        f"{where}.severity: {value!r} is not a severity; use page, warning or info"
                    )
