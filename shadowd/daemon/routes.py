"""HTTP routes of a running daemon (what ``shadowd report``/``gate --daemon`` read).

Routes see the daemon only through three callables: the status snapshot, the gate's
latest decision and a read cursor, so they cannot reach into its parts.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

import duckdb

from shadowd.daemon.http_server import Route, json_body
from shadowd.daemon.status import DaemonStatus

CONTENT_TYPES = {"text": "text/plain; charset=utf-8", "html": "text/html; charset=utf-8"}


def daemon_routes(
    status: Callable[[], DaemonStatus],
    decision: Callable[[], dict[str, Any] | None],
    cursor: Callable[[], duckdb.DuckDBPyConnection],
) -> dict[str, Route]:
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
                window = window_from_query(q)
            except ValueError as exc:
                return json_body({"error": str(exc)}, 400)
            body = render(fmt, window)
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

    return {
        "/healthz": healthz,
        "/gate": gate,
        "/report": report("json"),
        "/report.html": report("html"),
        "/report.txt": report("text"),
    }
