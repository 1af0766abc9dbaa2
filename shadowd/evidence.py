"""Evidence for the gate, read from the database the daemon writes.

Everything the gate judges comes from stored rows attributed by the model
version now in force (hence out of sample: calibration never saw them), over
an evaluation window, plus what only the daemon knows (the running platform
key, the latest stability result, the envelope summary).  A number that
cannot be computed is left missing: the gate treats missing as inconclusive.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import duckdb

import checks

RESIDUAL_DETECTORS = ("page_hinkley", "adwin", "coefficient")


@dataclass
class DaemonFacts:
    """What the gate needs that is not in the step tables."""

    model_version: str | None
    calibrated_platform_key: str | None
    running_platform_key: str | None
    stability: dict[str, dict[str, Any]] | None = None
    envelope: dict[str, Any] | None = None
    calibrated_at_s: float | None = None
    watched_classes: tuple[str, ...] = ()     # step classes with calibrated drift detectors


_ACCURACY_SQL = """
WITH e AS (
  SELECT kind, latency_ms,
         abs(latency_ms - predicted_ms) / latency_ms AS err,
         abs(latency_ms - baseline_ms) / latency_ms AS base_err, predicted_ms
  FROM steps
  WHERE model_version = ? AND latency_ms > 0 AND predicted_ms IS NOT NULL
    AND ts >= (SELECT max(ts) FROM steps WHERE model_version = ?) - to_seconds(?))
SELECT coalesce(kind, 'all') AS kind, count(*) AS n,
       quantile_cont(err, 0.5), quantile_cont(err, 0.9), quantile_cont(err, 0.99),
       1 - sum((latency_ms - predicted_ms) ^ 2) / nullif(sum((latency_ms - l_mean) ^ 2), 0),
       quantile_cont(base_err, 0.9), quantile_cont(base_err, 0.99)
FROM (SELECT *, avg(latency_ms) OVER (PARTITION BY kind) AS l_mean FROM e)
GROUP BY ROLLUP (kind)
"""


def class_accuracy(con: duckdb.DuckDBPyConnection, version: str, window_s: float) -> dict[str, dict]:
    rows = con.execute(_ACCURACY_SQL, [version, version, float(window_s)]).fetchall()
    return {k: {"steps": int(n), "p50": p50, "p90": p90, "p99": p99, "r2": r2,
                "baseline_p90": b90, "baseline_p99": b99}
            for k, n, p50, p90, p99, r2, b90, b99 in rows}


def gather(con: duckdb.DuckDBPyConnection, facts: DaemonFacts, *, window_s: float = 86400.0,
           required_classes: tuple[str, ...] = ()) -> checks.Evidence:
    """Evidence over the last ``window_s`` seconds of steps attributed by ``facts.model_version``.

    Drift evidence is missing (so the drift check is inconclusive, never a pass) while a
    required step class has no calibrated drift detector: silence there proves nothing."""
    ev: dict[str, Any] = {"calibrated_platform_key": facts.calibrated_platform_key,
                          "running_platform_key": facts.running_platform_key,
                          "stability": facts.stability or {}}
    last = con.execute("SELECT epoch(max(ts)) FROM steps").fetchone()[0]
    ev["last_step_ts"] = float(last) if last is not None else None
    ev["tap_drop_rate"] = drop_rate(con, window_s)
    if facts.envelope:
        ev["extrapolated_fraction"] = facts.envelope.get("extrapolated_fraction")
        ev["new_tenants"] = len(facts.envelope.get("new_tenants", []))
    if facts.model_version is None:
        return checks.Evidence.from_dict(ev)
    v = facts.model_version
    acc = class_accuracy(con, v, window_s)
    ev["accuracy"] = {k: a for k, a in acc.items() if k != "all"}
    span, tenants, reach = con.execute("""
        SELECT epoch(max(ts)) - epoch(min(ts)),
               (SELECT count(DISTINCT tenant) FROM step_requests WHERE model_version = ?),
               (SELECT max(context_tokens + new_tokens) FROM step_requests WHERE model_version = ?)
        FROM steps WHERE model_version = ?""", [v, v, v]).fetchone()
    ev["shadow_duration_s"] = float(span) if span is not None else None
    ev["tenants_seen"] = int(tenants) if tenants is not None else None
    ev["max_context_seen"] = int(reach) if reach is not None else None
    if not set(required_classes) - set(facts.watched_classes):
        ev["unresolved_drift_events"] = int(con.execute(
            f"SELECT count(*) FROM drift_events WHERE resolved_at IS NULL AND detector IN "
            f"({','.join('?' * len(RESIDUAL_DETECTORS))})", list(RESIDUAL_DETECTORS)).fetchone()[0])
    return checks.Evidence.from_dict(ev)


def drop_rate(con: duckdb.DuckDBPyConnection, window_s: float) -> float | None:
    """Frames the tap dropped / (stored + dropped) over the window, summed over runs."""
    row = con.execute("""
        SELECT sum(n), sum(dropped) FROM (
          SELECT count(*) AS n, max(dropped_frames_total) - min(dropped_frames_total) AS dropped
          FROM steps WHERE ts >= (SELECT max(ts) FROM steps) - to_seconds(?)
          GROUP BY engine_id, run_id)""", [float(window_s)]).fetchone()
    if not row or row[0] is None:
        return None
    n, dropped = float(row[0]), float(row[1] or 0)
    return dropped / (n + dropped) if n + dropped > 0 else None
