"""Small writes and reads of the daemon's bookkeeping tables (run on the writer thread).

Model versions, drift events and gate decisions are a few rows at a time, so
plain parameterised statements are right here; bulk step rows go through
``Writer.append``.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from datetime import UTC, datetime
from typing import Any

import duckdb


def _ts(seconds: float | None) -> datetime | None:
    if seconds is None:
        return None
    return datetime.fromtimestamp(float(seconds), tz=UTC).replace(tzinfo=None)


def save_model_version(
    con: duckdb.DuckDBPyConnection,
    version: str,
    platform_key: str,
    body: str,
    fit_steps: int | None,
    fit_since: str | None,
    fit_until: str | None,
) -> None:
    """Store a model version once (content-hashed ids make re-saving a no-op)."""
    con.execute(
        """INSERT INTO model_versions VALUES (?, ?, now(), ?, CAST(? AS TIMESTAMP), CAST(? AS TIMESTAMP), ?)
                   ON CONFLICT (version) DO NOTHING""",
        [version, platform_key, fit_steps, fit_since, fit_until, body],
    )


def replace_model_body(con: duckdb.DuckDBPyConnection, version: str, body: str) -> None:
    """Store a new body for a stored version: its coefficients (and so its id) unchanged, what
    travels with them (the workload envelope, widened by the daemon's design r43) changed."""
    con.execute("UPDATE model_versions SET body = ? WHERE version = ?", [body, version])


def latest_model_version(
    con: duckdb.DuckDBPyConnection, platform_key: str | None = None
) -> tuple[str, str] | None:
    """(version, body JSON) of the newest stored version, optionally for one platform key."""
    where, params = ("WHERE platform_key = ?", [platform_key]) if platform_key else ("", [])
    row = con.execute(
        f"SELECT version, body FROM model_versions {where} ORDER BY created_at DESC LIMIT 1", params
    ).fetchone()
    return (row[0], row[1]) if row else None


def save_drift_events(
    con: duckdb.DuckDBPyConnection, engine_id: str | None, events: Iterable[dict[str, Any]]
) -> int:
    rows = [
        (
            _ts(e["ts"]),
            engine_id,
            e.get("step_seq"),
            e["detector"],
            e.get("statistic"),
            e.get("threshold"),
            e.get("step_class"),
            json.dumps(e.get("details") or {}, default=str),
        )
        for e in events
    ]
    if rows:
        con.executemany(
            "INSERT INTO drift_events (ts, engine_id, step_seq, detector, statistic, "
            "threshold, step_class, details) VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
            rows,
        )
    return len(rows)


def resolve_drift_events(con: duckdb.DuckDBPyConnection, at_s: float) -> None:
    """Mark every open drift event resolved (a new model version was validated from here)."""
    con.execute("UPDATE drift_events SET resolved_at = ? WHERE resolved_at IS NULL", [_ts(at_s)])


def save_gate_decision(con: duckdb.DuckDBPyConnection, decision: dict[str, Any]) -> None:
    con.execute(
        "INSERT INTO gate_decisions (ts, verdict, reason, consecutive_passes, checks, "
        "valid_until, decision) VALUES (?, ?, ?, ?, ?, ?, ?)",
        [
            _ts(decision["evaluated_at"]),
            decision["verdict"],
            decision.get("reason"),
            decision.get("consecutive_passes"),
            json.dumps(decision.get("checks", []), default=str),
            _ts(decision.get("valid_until")),
            json.dumps(decision, default=str),
        ],
    )


def latest_gate_decision(con: duckdb.DuckDBPyConnection) -> dict[str, Any] | None:
    """The last decision the daemon recorded, as the dict it was saved from."""
    row = con.execute(
        "SELECT decision FROM gate_decisions WHERE decision IS NOT NULL ORDER BY ts DESC LIMIT 1"
    ).fetchone()
    return json.loads(row[0]) if row else None
