"""HTTP routes of a running daemon (what ``shadowd report``/``gate --daemon`` read)."""

from __future__ import annotations

import time
from typing import TYPE_CHECKING

from shadowd.daemon.http_server import Route, json_body

if TYPE_CHECKING:
    from shadowd.daemon.service import Daemon


def daemon_routes(d: Daemon) -> dict[str, Route]:
    def healthz(q: dict) -> tuple[int, str, bytes]:
        ok = d.healthy()
        return json_body(
            {
                "healthy": ok,
                "steps_ingested": d.pipeline.steps_ingested,
                "rows_ingested": d.pipeline.rows_ingested,
                "frames_received": d.receiver.frames_received if d.receiver else 0,
                "faults": dict(d.receiver.faults) if d.receiver else {},
                "calibration": d.calibrator.state if d.calibrator else "no platform",
                "model_version": d.calibration.model.version if d.calibration else None,
            },
            200 if ok else 503,
        )

    def gate(q: dict) -> tuple[int, str, bytes]:
        decision = d.gatekeeper.last
        if decision is None:
            decision = {
                "verdict": "INCONCLUSIVE",
                "exit_code": 2,
                "reason": "not evaluated yet",
                "evaluated_at": time.time(),
                "checks": [],
            }
        return json_body(decision)

    def report(q: dict) -> tuple[int, str, bytes]:
        from shadowd.reports.refit import build_report

        return json_body(
            build_report(
                d.writer.cursor(),
                since=q.get("since"),
                until=q.get("until"),
                last_steps=int(q["steps"]) if "steps" in q else None,
            )
        )

    def report_html(q: dict) -> tuple[int, str, bytes]:
        from shadowd.reports.html import render_report

        return 200, "text/html; charset=utf-8", render_report(d.writer.cursor()).encode()

    def report_text(q: dict) -> tuple[int, str, bytes]:
        from shadowd.reports.refit import build_report, render_text

        rep = build_report(d.writer.cursor(), since=q.get("since"), until=q.get("until"))
        return 200, "text/plain; charset=utf-8", render_text(rep).encode()

    return {
        "/healthz": healthz,
        "/gate": gate,
        "/report": report,
        "/report.html": report_html,
        "/report.txt": report_text,
    }
