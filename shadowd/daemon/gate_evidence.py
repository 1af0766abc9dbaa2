"""Evidence for the gate, read from the database the daemon writes.

Everything the gate judges comes from stored rows attributed by the model
version now in force (hence out of sample: calibration never saw them), over
an evaluation window, plus what only the daemon knows (the running platform
key, the latest stability result, the envelope summary).  A number that
cannot be computed is left missing: the gate treats missing as inconclusive.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import duckdb

import checks

RESIDUAL_DETECTORS = ("page_hinkley", "adwin", "coefficient")
MAX_TENANTS_COUNTED = 1000  # distinct tenants read back per evaluation; the gate needs two


@dataclass
class DaemonFacts:
    """What the gate needs that is not in the step tables."""

    model_version: str | None
    calibrated_platform_key: str | None
    running_platform_key: str | None
    stability: dict[str, dict[str, Any]] | None = None
    envelope: dict[str, Any] | None = None
    calibrated_at_s: float | None = None
    watched_classes: tuple[str, ...] = ()  # step classes with calibrated drift detectors
    unwatched_why: dict[str, str] | None = None  # class -> why its drift detectors cannot speak
    drift_partial: dict[str, str] | None = None  # watched class -> detectors relied on, and why
    drift_dull: dict[str, str] | None = None  # watched class -> why its detectors miss a 5 % fault (r19)
    calibrated_max_context: int | None = None  # longest context in the calibration window
    # The model in force and the versions it was re-fitted from (``shadowd.daemon.refit``),
    # oldest first: the steps each of them scored are the gate's evidence.
    lineage: tuple[str, ...] = ()
    barely_held: dict[str, str] | None = None  # class -> why calibration did not identify it
    # Design r23: tenants the calibration (and a re-fit's parents) scored out of sample.
    scored_tenants: tuple[str, ...] = ()

    @property
    def versions(self) -> list[str]:
        return list(self.lineage) or ([self.model_version] if self.model_version else [])


# One aggregate pass in bounded memory: t-digest quantiles (approx_quantile: well under 1 % rank
# error, constant memory) and R² from running sums.  Exact quantiles keep every value, and over
# 24 h of steps ran DuckDB out of its [storage] memory_limit (benchmarks/gate_eval.py: 2.6 M steps
# needed > 160 MB; this form passes at 32 MB).
_ACCURACY_SQL = """
WITH {envelopes}e AS (
  SELECT kind, latency_ms AS l, predicted_ms AS p, baseline_ms AS b
  FROM steps s
  WHERE list_contains(?, model_version) AND latency_ms > 0 AND predicted_ms IS NOT NULL
    AND ts >= (SELECT max(ts) FROM steps WHERE list_contains(?, model_version)) - to_seconds(?)
    {without})
SELECT coalesce(kind, 'all') AS kind, count(*) AS n,
       approx_quantile(abs(l - p) / l, [0.5, 0.9, 0.99]) AS q,
       1 - sum((l - p) ^ 2) / nullif(sum(l * l) - sum(l) ^ 2 / count(*), 0) AS r2,
       approx_quantile(abs(l - b) / l, [0.5, 0.9, 0.99]) AS bq
FROM e
GROUP BY ROLLUP (kind)
"""
_WITHOUT_TENANTS = """AND NOT EXISTS (SELECT 1 FROM step_requests r
                    WHERE r.engine_id = s.engine_id AND r.run_id = s.run_id AND r.step_seq = s.step_seq
                      AND list_contains(?, r.tenant))"""
# A step beyond the envelope as ``checks.EnvelopeMonitor`` counts it (``drift_watch``): more
# requests, more new tokens, or a longer reach (context + new tokens) than calibration allowed,
# or fewer requests than its floor (design r17), or a decode-only step outside decode-only steps'
# own batch range or reading more KV tokens (summed context) than they did (design r20), or fewer
# new tokens than the floor under tokens per step (design r21).
_WITHIN_ENVELOPE = """AND NOT EXISTS (SELECT 1 FROM step_requests r
                    WHERE r.engine_id = s.engine_id AND r.run_id = s.run_id AND r.step_seq = s.step_seq
                    GROUP BY r.engine_id
                    HAVING count(*) > ? OR count(*) < ? OR sum(r.new_tokens) > ? OR sum(r.new_tokens) < ?
                           OR max(r.context_tokens + r.new_tokens) > ?
                           OR (s.kind = 'decode' AND (count(*) > ? OR count(*) < ? OR sum(r.context_tokens) > ?)))"""


# Design r17: a step an earlier version of the lineage scored counts only if it lay inside that
# version's own envelope (as stored in its body; bodies before r17 have no floor).  A re-fit is
# installed because traffic left its parent's envelope, and those steps were the parent's
# extrapolation: left out of the evidence while the parent was in force (r12), they must not
# page once its successor is.
_PARENT_ENVELOPES = """envelopes AS (
  SELECT version,
         CAST(json_extract(body, '$.envelope.max_batch_size') AS DOUBLE) AS most,
         coalesce(CAST(json_extract(body, '$.envelope.min_batch_size') AS DOUBLE), 0) AS fewest,
         CAST(json_extract(body, '$.envelope.max_tokens_per_step') AS DOUBLE) AS tokens,
         CAST(json_extract(body, '$.envelope.max_context') AS DOUBLE) AS reach,
         coalesce(CAST(json_extract(body, '$.envelope.max_decode_batch_size') AS DOUBLE), 'inf') AS most_decode,
         coalesce(CAST(json_extract(body, '$.envelope.min_decode_batch_size') AS DOUBLE), 0) AS fewest_decode,
         coalesce(CAST(json_extract(body, '$.envelope.max_decode_kv_tokens') AS DOUBLE), 'inf') AS kv_decode,
         coalesce(CAST(json_extract(body, '$.envelope.min_tokens_per_step') AS DOUBLE), 0) AS fewest_tokens
  FROM model_versions WHERE list_contains(?, version) AND version <> ?),
"""
_WITHIN_OWN_ENVELOPE = """AND NOT EXISTS (SELECT 1 FROM step_requests r JOIN envelopes v ON v.version = s.model_version
                    WHERE r.engine_id = s.engine_id AND r.run_id = s.run_id AND r.step_seq = s.step_seq
                    GROUP BY r.engine_id, v.most, v.fewest, v.tokens, v.reach, v.most_decode, v.fewest_decode, v.kv_decode,
                             v.fewest_tokens
                    HAVING count(*) > v.most OR count(*) < v.fewest OR sum(r.new_tokens) > v.tokens
                           OR sum(r.new_tokens) < v.fewest_tokens
                           OR max(r.context_tokens + r.new_tokens) > v.reach
                           OR (s.kind = 'decode' AND (count(*) > v.most_decode OR count(*) < v.fewest_decode
                                                       OR sum(r.context_tokens) > v.kv_decode)))"""


def _list(versions: str | Sequence[str]) -> list[str]:
    return [versions] if isinstance(versions, str) else list(versions)


def class_accuracy(
    con: duckdb.DuckDBPyConnection,
    versions: str | Sequence[str],
    window_s: float,
    without_tenants: Sequence[str] = (),
    within: dict[str, float] | None = None,
    current: str | None = None,
) -> dict[str, dict]:
    """Per class (and ``all``), the out-of-sample errors of the steps ``versions`` scored, less
    the steps carrying a request of ``without_tenants`` and, with ``within`` (an envelope's
    ``limits()``), less the steps beyond it.  With ``current`` (the version in force), a step
    any other of ``versions`` scored counts only inside that version's own envelope (r17)."""
    v = _list(versions)
    envelopes, without, args = "", "", [v, v, float(window_s)]
    if current is not None and any(x != current for x in v):
        envelopes = _PARENT_ENVELOPES
        args = [v, current, *args]
        without += _WITHIN_OWN_ENVELOPE
    if without_tenants:  # the common case has neither anti-join over the requests table
        without += _WITHOUT_TENANTS
        args.append(list(without_tenants))
    if within:
        without += "\n    " + _WITHIN_ENVELOPE
        floor = float(within.get("batch_floor", 0.0))
        args += [
            float(within["batch_size"]),
            floor,
            float(within["tokens"]),
            float(within.get("tokens_floor", 0.0)),
        ]
        args.append(float(within["context"]))
        args += [float(within.get("decode_batch", math.inf)), float(within.get("decode_floor", 0.0))]
        args.append(float(within.get("decode_kv", math.inf)))
    rows = con.execute(_ACCURACY_SQL.format(envelopes=envelopes, without=without), args).fetchall()
    out = {}
    for k, n, q, r2, bq in rows:
        (p50, p90, p99), (b50, b90, b99) = q or (None,) * 3, bq or (None,) * 3
        out[k] = {
            "steps": int(n),
            "p50": p50,
            "p90": p90,
            "p99": p99,
            "r2": r2,
            "baseline_p50": b50,
            "baseline_p90": b90,
            "baseline_p99": b99,
        }
    return out


def gather(
    con: duckdb.DuckDBPyConnection,
    facts: DaemonFacts,
    *,
    window_s: float = 86400.0,
    required_classes: tuple[str, ...] = (),
    new_tenant_limit: float | None = None,
    extrapolation_limit: float | None = None,
    new_tenant_recent_steps: int | None = None,
) -> checks.Evidence:
    """Evidence over the last ``window_s`` seconds of steps attributed by ``facts.model_version``
    and the versions it was re-fitted from (each step scored by the model in force then).

    Design r10: while tenants calibration never saw carry more than ``new_tenant_limit`` of the
    recent attributed time (the coverage check is then INCONCLUSIVE: recalibrate with them), the
    steps carrying their requests are left out of the accuracy evidence. The model's error there
    is on traffic it does not vouch for (held-out 10: a long-context tenant silent through the
    calibration window paged on decode accuracy); accuracy beyond its limits on the rest still
    pages. Below the limit every step is judged.  Design r27: that share is of the last
    ``new_tenant_recent_steps`` attributed steps (all of the window with ``None``).

    Design r12, the same for the envelope: while more than ``extrapolation_limit`` of the steps
    lie beyond the calibrated envelope (coverage.extrapolation is then INCONCLUSIVE), those steps
    are left out of the accuracy evidence (held-out 12: a swing to batches six times the
    calibration's largest paged on mixed-step accuracy).

    Drift evidence is missing (so the drift check is inconclusive, never a pass) while a
    required step class has no calibrated drift detector: silence there proves nothing."""
    ev: dict[str, Any] = {
        "calibrated_platform_key": facts.calibrated_platform_key,
        "running_platform_key": facts.running_platform_key,
        "stability": facts.stability or {},
        "calibrated_max_context": facts.calibrated_max_context,
        "evidence_window_s": float(window_s),
    }
    last = con.execute("SELECT epoch(max(ts)) FROM steps").fetchone()[0]
    ev["last_step_ts"] = float(last) if last is not None else None
    ev["tap_drop_rate"] = drop_rate(con, window_s)
    fresh: list[str] = []
    if facts.envelope:
        ev["extrapolated_fraction"] = facts.envelope.get("extrapolated_fraction")
        fresh = list(facts.envelope.get("new_tenants", []))
        ev["new_tenants"] = len(fresh)
        if facts.model_version is not None:
            ev["new_tenant_share"] = tenant_time_share(
                con, facts.versions, fresh, window_s, recent_steps=new_tenant_recent_steps
            )
    if facts.model_version is None:
        return checks.Evidence.from_dict(ev)
    v = facts.versions
    share = ev.get("new_tenant_share")
    over = new_tenant_limit is not None and share is not None and share > new_tenant_limit
    frac = ev.get("extrapolated_fraction")
    beyond = extrapolation_limit is not None and frac is not None and frac > extrapolation_limit
    limits = (facts.envelope or {}).get("limits") if beyond else None
    acc = class_accuracy(con, v, window_s, fresh if over else (), limits, current=facts.model_version)
    ev["accuracy"] = {k: a for k, a in acc.items() if k != "all"}
    span, reach = con.execute(
        """
        SELECT epoch(max(ts)) - epoch(min(ts)),
               (SELECT max(context_tokens + new_tokens) FROM step_requests
                WHERE list_contains(?, model_version))
        FROM steps WHERE list_contains(?, model_version)""",
        [v, v],
    ).fetchone()
    ev["shadow_duration_s"] = float(span) if span is not None else None
    ev["tenants_seen"] = tenants_scored(con, v, facts.scored_tenants)
    ev["max_context_seen"] = int(reach) if reach is not None else None
    if facts.barely_held:
        ev["barely_held"] = dict(facts.barely_held)
    if facts.drift_partial:
        ev["drift_partial"] = {c: w for c, w in facts.drift_partial.items() if c in required_classes}
    if facts.drift_dull:
        ev["drift_dull"] = {c: w for c, w in facts.drift_dull.items() if c in required_classes}
    blind = set(required_classes) - set(facts.watched_classes)
    if blind:
        why = facts.unwatched_why or {}
        ev["drift_blind"] = {c: why.get(c, "no calibrated drift detectors") for c in sorted(blind)}
    ev["unresolved_drift_events"] = unresolved_drift_events(con)  # design r31: counted even then
    return checks.Evidence.from_dict(ev)


def tenants_scored(
    con: duckdb.DuckDBPyConnection, versions: Sequence[str], calibration: Sequence[str]
) -> int:
    """How many tenants the model has been scored on out of sample: those of the lineage's steps
    and, design r23, those of the calibration window's held-out part (``calibration``).

    Before r23 only the shadow steps counted, and traffic whose other tenants went quiet after
    calibration (bursty traces: held-out 20) held the gate INCONCLUSIVE on ``evidence.tenants``
    though the model had been scored on them out of sample in calibration, as the gate's own
    steps are (why and on which runs: DESIGN in ``benchmarks/gate_designs.py``)."""
    rows = con.execute(
        "SELECT DISTINCT tenant FROM step_requests WHERE list_contains(?, model_version) LIMIT ?",
        [list(versions), MAX_TENANTS_COUNTED],
    ).fetchall()
    return len({r[0] for r in rows} | set(calibration))


def unresolved_drift_events(con: duckdb.DuckDBPyConnection) -> int:
    """Residual drift events not yet resolved by a (re)calibration."""
    return int(
        con.execute(
            f"SELECT count(*) FROM drift_events WHERE resolved_at IS NULL AND detector IN "
            f"({','.join('?' * len(RESIDUAL_DETECTORS))})",
            list(RESIDUAL_DETECTORS),
        ).fetchone()[0]
    )


def tenant_time_share(
    con: duckdb.DuckDBPyConnection,
    versions: str | Sequence[str],
    tenants: list[str],
    window_s: float,
    *,
    recent_steps: int | None = None,
) -> float | None:
    """Share of the window's attributed time (LLMVisor shares of measured latency) that ``tenants``
    carry: how much of the recent workload a model calibrated without them speaks for.  With
    ``recent_steps`` (design r27), of the last that many attributed steps only, when those span
    less than the window.  ``None`` when nothing is attributed in the window."""
    version = _list(versions)
    start = _recent_start(con, version, recent_steps)
    if not tenants:
        total = con.execute(
            "SELECT count(*) FROM steps WHERE list_contains(?, model_version) AND predicted_ms IS NOT NULL",
            [version],
        ).fetchone()[0]
        return 0.0 if total else None
    row = con.execute(
        """
        SELECT sum(r.llmvisor_measured_ms) FILTER (WHERE list_contains(?, r.tenant)),
               sum(r.llmvisor_measured_ms)
        FROM step_requests r JOIN steps s USING (engine_id, run_id, step_seq)
        WHERE list_contains(?, r.model_version)
          AND s.ts >= (SELECT max(ts) FROM steps WHERE list_contains(?, model_version)) - to_seconds(?)
          AND (? IS NULL OR s.ts >= ?)""",
        [tenants, version, version, float(window_s), start, start],
    ).fetchone()
    if not row or not row[1]:
        return None
    return float(row[0] or 0.0) / float(row[1])


def _recent_start(con: duckdb.DuckDBPyConnection, version: list[str], steps: int | None) -> Any:
    """Timestamp of the ``steps``-th most recent attributed step of ``version`` (``None``: no
    limit, or fewer steps than that)."""
    if not steps or steps < 1:
        return None
    row = con.execute(
        """
        SELECT min(ts), count(*) FROM (
            SELECT ts FROM steps WHERE list_contains(?, model_version) AND predicted_ms IS NOT NULL
            ORDER BY ts DESC LIMIT ?)""",
        [version, int(steps)],
    ).fetchone()
    return row[0] if row and row[1] >= steps else None


def drop_rate(con: duckdb.DuckDBPyConnection, window_s: float) -> float | None:
    """Frames the tap dropped / (stored + dropped) over the window, summed over runs."""
    row = con.execute(
        """
        SELECT sum(n), sum(dropped) FROM (
          SELECT count(*) AS n, max(dropped_frames_total) - min(dropped_frames_total) AS dropped
          FROM steps WHERE ts >= (SELECT max(ts) FROM steps) - to_seconds(?)
          GROUP BY engine_id, run_id)""",
        [float(window_s)],
    ).fetchone()
    if not row or row[0] is None:
        return None
    n, dropped = float(row[0]), float(row[1] or 0)
    return dropped / (n + dropped) if n + dropped > 0 else None
