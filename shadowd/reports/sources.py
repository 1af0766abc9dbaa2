"""Where a report reads from: a database file, a Parquet export, or a running daemon.

DuckDB allows one writing process per file: while the daemon runs it holds
the file, so ``report``/``gate`` ask the daemon over loopback HTTP instead;
when it does not, they open the file themselves.
"""

from __future__ import annotations

import json
import time
import urllib.parse
import urllib.request
from typing import Any

import duckdb

import checks
from shadowd.reports.html import render_html
from shadowd.reports.model import collect, to_json
from shadowd.reports.text import render_text
from shadowd.steps.log_reader import Window, open_db

FORMATS = {"json": "/report", "text": "/report.txt", "html": "/report.html"}


def report_any(
    *,
    db_path: str | None,
    daemon_url: str | None,
    parquet_glob: str | None,
    window: Window,
    formats: tuple[str, ...],
    title: str = "shadowd report",
) -> dict[str, Any]:
    """The report in each of ``formats`` (json: a dict, text/html: a string), from one source.

    From a file or Parquet exports one ``collect`` feeds every renderer; from a daemon each
    format is asked of it with the same window.
    """
    if sum(x is not None for x in (db_path, daemon_url, parquet_glob)) != 1:
        raise ValueError("give exactly one of --db, --daemon or --parquet")
    if daemon_url:
        query = urllib.parse.urlencode(window_query(window))
        base = daemon_url.rstrip("/")
        out: dict[str, Any] = {}
        for fmt in formats:
            body = _http_get(f"{base}{FORMATS[fmt]}?{query}")
            out[fmt] = json.loads(body) if fmt == "json" else body.decode()
        return out
    con = open_db(db_path, read_only=True) if db_path else _parquet_views(parquet_glob)
    try:
        data = collect(con, window, title=title)
    finally:
        con.close()
    renderers = {"json": to_json, "text": render_text, "html": render_html}
    return {fmt: renderers[fmt](data) for fmt in formats}


def window_query(window: Window) -> dict[str, str]:
    """The window as the daemon's query parameters (``window_from_query`` reads them back)."""
    q = {"since": window.since, "until": window.until, "steps": window.last_steps, "engine": window.engine_id}
    return {k: str(v) for k, v in q.items() if v is not None}


def window_from_query(q: dict[str, str]) -> Window:
    """A window from HTTP query parameters; a bad ``steps`` is a ValueError (a 400, not a 500)."""
    steps = q.get("steps")
    if steps is not None and (not steps.isdigit() or int(steps) <= 0):
        raise ValueError(f"steps must be a positive integer, got {steps!r}")
    return Window(
        since=q.get("since"),
        until=q.get("until"),
        last_steps=int(steps) if steps else None,
        engine_id=q.get("engine"),
    )


def _http_get(url: str) -> bytes:
    with urllib.request.urlopen(url, timeout=120) as resp:  # loopback daemon
        return resp.read()


def _parquet_views(location: str) -> duckdb.DuckDBPyConnection:
    """An in-memory database whose contract tables are views over Parquet exports of one
    or many hosts (``storage.export.attach_exports``): a fleet is analysed by DuckDB over
    Parquet, local or on object storage, not by new code."""
    from storage.export import attach_exports
    from storage.schema import migrate

    con = duckdb.connect()
    migrate(con)
    con.execute("DROP TABLE steps")
    con.execute("DROP TABLE step_requests")
    attach_exports(con, location)
    return con


def read_verdict(*, db_path: str | None, daemon_url: str | None) -> dict[str, Any]:
    """The daemon's current decision, or the last stored one (INCONCLUSIVE once expired)."""
    from storage.records import latest_gate_decision

    if (db_path is None) == (daemon_url is None):
        raise ValueError("give exactly one of --db or --daemon")
    if daemon_url:
        decision = json.loads(_http_get(f"{daemon_url.rstrip('/')}/gate"))
    else:
        con = open_db(db_path, read_only=True)
        try:
            decision = latest_gate_decision(con)
        finally:
            con.close()
        if decision is None:
            return {"verdict": "INCONCLUSIVE", "reason": "no gate decision recorded yet", "checks": []}
    verdict = checks.effective_verdict(decision, time.time())
    if verdict != decision["verdict"]:
        decision = {
            **decision,
            "verdict": verdict,
            "reason": f"last decision ({decision['verdict']}) expired; {decision.get('reason')}",
        }
    return decision
