"""HTTP routes of a running daemon (what ``shadowd report``/``gate --daemon`` read).

Routes see the daemon only through three callables: the status snapshot, the gate's
latest decision and a read cursor, so they cannot reach into its parts.

Reports share the ingesting process, so each is bounded: without a window it covers the
last ``default_window_s``, a longer window than ``max_window_s`` is refused (400), and one
report runs at a time (another gets 503; matplotlib's state is global too).
Aggregation runs inside DuckDB under ``[storage] memory_limit`` (``shadowd.reports.model``).
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

import duckdb

from shadowd.daemon.http_server import Route, json_body
from shadowd.daemon.status import DaemonStatus

CONTENT_TYPES = {"text": "text/plain; charset=utf-8", "html": "text/html; charset=utf-8"}
MAX_REPORT_STEPS = 5_000_000  # ``steps=N`` beyond this is refused (a top-N over N rows)


@dataclass(frozen=True)
class ReportLimits:
    default_window_s: float = 3600.0
    max_window_s: float = 86400.0


def _when(text: str, name: str) -> datetime:
    try:
        t = datetime.fromisoformat(text.strip())
    except ValueError:
        raise ValueError(f"{name} {text!r} is not a timestamp; write it like 2025-01-01T10:00") from None
    return t.astimezone(UTC).replace(tzinfo=None) if t.tzinfo else t


def bounded_window(window: Any, limits: ReportLimits, now_s: float) -> Any:
    """``window`` with the daemon's bounds: a default start, and no more than the maximum span.

    >>> from shadowd.steps.log_reader import Window
    >>> bounded_window(Window(), ReportLimits(3600, 86400), 86400.0).since
    '1970-01-01T23:00:00'
    """
    import dataclasses

    if window.last_steps is not None and window.last_steps > MAX_REPORT_STEPS:
        raise ValueError(f"steps must be at most {MAX_REPORT_STEPS}, got {window.last_steps}")
    until = (
        _when(window.until, "until")
        if window.until
        else datetime.fromtimestamp(now_s, UTC).replace(tzinfo=None)
    )
    if window.since:
        since = _when(window.since, "since")
        if (until - since).total_seconds() > limits.max_window_s:
            raise ValueError(
                f"window {since.isoformat()} .. {until.isoformat()} is longer than the daemon's "
                f"report.max_window_s ({limits.max_window_s:g} s); narrow it, or read the exports "
                "with shadowd report --parquet"
            )
    elif window.last_steps:
        since = until - timedelta(seconds=limits.max_window_s)  # the last N steps, within the bound
    else:
        since = until - timedelta(seconds=limits.default_window_s)
    return dataclasses.replace(window, since=since.isoformat(), until=window.until and until.isoformat())


def daemon_routes(
    status: Callable[[], DaemonStatus],
    decision: Callable[[], dict[str, Any] | None],
    cursor: Callable[[], duckdb.DuckDBPyConnection],
    limits: ReportLimits = ReportLimits(),
    tenant_counters: Callable[[], dict[str, dict[str, float]]] | None = None,
) -> dict[str, Route]:
    one_report = threading.Lock()

    def healthz(q: dict) -> tuple[int, str, bytes]:
        s = status()
        return json_body(s.to_dict(), 200 if s.healthy else 503)

    def gate(q: dict) -> tuple[int, str, bytes]:
        d = decision()
        if d is None:
            d = {
                "verdict": "INCONCLUSIVE",
                "exit_code": 2,
                "reason": "not evaluated yet",
                "evaluated_at": time.time(),
                "checks": [],
            }
        return json_body(d)

    def report(fmt: str) -> Route:
        def route(q: dict) -> tuple[int, str, bytes]:
            from shadowd.reports.sources import window_from_query

            try:
                window = bounded_window(window_from_query(q), limits, time.time())
            except ValueError as exc:
                return json_body({"error": str(exc)}, 400)
            if not one_report.acquire(blocking=False):
                return json_body({"error": "another report is running; retry shortly"}, 503)
            try:
                body = render(fmt, window)
            finally:
                one_report.release()
            if fmt == "json":
                return json_body(body)
            return 200, CONTENT_TYPES[fmt], body.encode()

        return route

    def render(fmt: str, window: Any) -> Any:
        from shadowd.reports.html import render_html
        from shadowd.reports.model import collect, to_json
        from shadowd.reports.text import render_text

        data = collect(cursor(), window)
        return {"json": to_json, "text": render_text, "html": render_html}[fmt](data)

    def counters(q: dict) -> tuple[int, str, bytes]:
        d = decision() or {}
        tenants = tenant_counters() if tenant_counters is not None else {}
        return json_body(tenant_counters_body(d, tenants, time.time()))

    return {
        "/v1/tenant-counters": counters,
        "/healthz": healthz,
        "/gate": gate,
        "/report": report("json"),
        "/report.html": report("html"),
        "/report.txt": report("text"),
    }


TENANT_COUNTERS_SCHEMA = "shadowd.tenant-counters/v1"


def tenant_counters_body(decision: dict[str, Any], tenants: dict[str, dict[str, float]], now: float) -> dict:
    """The ``/v1/tenant-counters`` contract, for a gateway's fairness policy (see docs/operations.md).

    ``active_unit`` says which counter the governed scheduler charges now: attributed GPU time
    while the gate says GO (and has not expired), VTC tokens otherwise, so a gateway can follow
    the same rule.  Counters are cumulative since the daemon started; a consumer takes differences.

    >>> body = tenant_counters_body({"verdict": "GO", "valid_until": 200.0, "model": {"version": "ab12"}},
    ...                             {"acme": {"attributed_gpu_ms": 5.0, "vtc_tokens": 3.0, "token_split_ms": 4.0}}, 100.0)
    >>> body["schema"], body["active_unit"], body["tenants"][0]["tenant"]
    ('shadowd.tenant-counters/v1', 'attributed_gpu_ms', 'acme')
    """
    valid_until = decision.get("valid_until")
    go = decision.get("verdict") == "GO" and (valid_until is None or float(valid_until) > now)
    model = decision.get("model") or {}
    return {
        "schema": TENANT_COUNTERS_SCHEMA,
        "generated_at": now,
        "verdict": decision.get("verdict", "INCONCLUSIVE"),
        "valid_until": valid_until,
        "model_version": model.get("version") if isinstance(model, dict) else None,
        "active_unit": "attributed_gpu_ms" if go else "vtc_tokens",
        "tenants": [{"tenant": t, **c} for t, c in tenants.items()],
    }
