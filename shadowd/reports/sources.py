"""Where a report reads from: a database file, a Parquet export, or a running daemon.

DuckDB allows one writing process per file: while the daemon runs it holds
the file, so ``report``/``gate`` ask the daemon over loopback HTTP instead;
when it does not, they open the file themselves.
"""

from __future__ import annotations

import json
import time
import urllib.request
from typing import Any

import duckdb

import checks


class DatabaseBusy(RuntimeError):
    pass


def open_db(path: str, *, read_only: bool) -> duckdb.DuckDBPyConnection:
    """Open a shadowd database, with an error that says what to do when it is locked."""
    try:
        return duckdb.connect(
            path,
            read_only=read_only,
            config={"autoinstall_known_extensions": False, "autoload_known_extensions": False},
        )
    except duckdb.IOException as exc:
        if "lock" in str(exc).lower():
            raise DatabaseBusy(
                f"{path} is held by a running shadowd daemon; ask it instead with "
                "--daemon http://127.0.0.1:9477 (or stop it first)"
            ) from None
        raise


def _http_json(url: str) -> dict[str, Any]:
    with urllib.request.urlopen(url, timeout=30) as resp:  # loopback daemon
        return json.loads(resp.read())


def report_any(
    *,
    db_path: str | None,
    daemon_url: str | None,
    parquet_glob: str | None,
    since: str | None,
    until: str | None,
    steps: int | None,
    want_html: bool,
) -> tuple[dict[str, Any], str | None]:
    from shadowd.reports.refit import build_report

    if sum(x is not None for x in (db_path, daemon_url, parquet_glob)) != 1:
        raise SystemExit("give exactly one of --db, --daemon or --parquet")
    if daemon_url:
        q = "&".join(f"{k}={v}" for k, v in (("since", since), ("until", until), ("steps", steps)) if v)
        rep = _http_json(f"{daemon_url.rstrip('/')}/report?{q}")
        html = None
        if want_html:
            with urllib.request.urlopen(f"{daemon_url.rstrip('/')}/report.html", timeout=60) as r:
                html = r.read().decode()
        return rep, html
    con = open_db(db_path, read_only=True) if db_path else _parquet_views(parquet_glob)
    try:
        rep = build_report(con, since=since, until=until, last_steps=steps)
        html = None
        if want_html:
            from shadowd.reports.html import render_report

            html = render_report(con)
        return rep, html
    finally:
        con.close()


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
        decision = _http_json(f"{daemon_url.rstrip('/')}/gate")
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
