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

    def report(q: dict) -> tuple[int, str, bytes]:
        from shadowd.reports.refit import build_report

        return json_body(
            build_report(
                cursor(),
                since=q.get("since"),
                until=q.get("until"),
                last_steps=int(q["steps"]) if "steps" in q else None,
            )
        )

    def report_html(q: dict) -> tuple[int, str, bytes]:
        from shadowd.reports.html import render_report

        return 200, "text/html; charset=utf-8", render_report(cursor()).encode()

    def report_text(q: dict) -> tuple[int, str, bytes]:
        from shadowd.reports.refit import build_report, render_text

        rep = build_report(cursor(), since=q.get("since"), until=q.get("until"))
        return 200, "text/plain; charset=utf-8", render_text(rep).encode()

    return {
        "/healthz": healthz,
        "/gate": gate,
        "/report": report,
        "/report.html": report_html,
        "/report.txt": report_text,
    }
