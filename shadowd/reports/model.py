"""The report model: one ``collect(con, window)`` feeds the text, JSON and HTML renderers.

Everything is aggregated in DuckDB (quantiles, buckets, a fixed-seed sample for the scatter), so a
report over weeks of raw rows stays cheap in memory.  An empty or not-yet-calibrated database gives
a report that says so and what to do, not an error.

Accuracy is out of sample, computed one way per data set and labelled (``accuracy_source``):

* ``stored``: the per-step predictions the daemon stored, against measured latency.  Each step was
  scored by the model version in force when it ran, and calibration warm-up steps carry no
  prediction, so no step scored was used to fit the model that scored it.
* ``refit``: a step log with no stored predictions (imported, or a Parquet export of an engine the
  daemon never calibrated) is fitted on the earlier half of the window and scored on the later half,
  from the raw contract columns alone.  This loads the window's rows into memory, so it is bounded
  by ``MAX_REFIT_STEPS`` (the latest steps of the window).

Per-tenant time combines raw rows with the per-minute roll-ups of minutes whose raw rows retention
has already removed.

>>> import duckdb
>>> from storage.schema import migrate
>>> con = duckdb.connect(); _ = migrate(con)
>>> data = collect(con)
>>> data.has_steps, to_json(data)["steps"]
(False, 0)
"""

from __future__ import annotations

import datetime as dt
import json
import math
from dataclasses import dataclass, field
from typing import Any

import duckdb
import numpy as np

from shadowd.attribution.accuracy import out_of_sample_report
from shadowd.steps.log_reader import Window, load_batch
from storage.records import latest_gate_decision

CLASSES = ("prefill", "decode", "mixed")
MODELS = (("llmvisor", "predicted_ms", "LLMVisor"), ("token", "baseline_ms", "token baseline"))
CDF_P = [round(0.005 + 0.01 * i, 4) for i in range(100)]
SCATTER_POINTS = 3000
MAX_TENANTS = 7
BUCKETS = (
    (60, "1 minute"),
    (300, "5 minutes"),
    (900, "15 minutes"),
    (3600, "1 hour"),
    (6 * 3600, "6 hours"),
    (86400, "1 day"),
)
MAX_REFIT_STEPS = 200_000
STORED, REFIT = "stored", "refit"


@dataclass
class ReportData:
    """What both renderers show, gathered by :func:`collect`."""

    title: str
    since: dt.datetime | None
    until: dt.datetime | None
    engine_id: str | None
    bucket_label: str = "1 hour"
    overview: dict[str, Any] = field(default_factory=dict)
    accuracy: dict[str, dict[str, dict[str, Any]]] = field(default_factory=dict)  # class -> model -> stats
    cdf: dict[str, dict[str, list[float]]] = field(default_factory=dict)  # class -> model -> quantiles
    scatter: dict[str, np.ndarray] = field(default_factory=dict)
    error_series: dict[str, np.ndarray] = field(default_factory=dict)
    tenants: list[dict[str, Any]] = field(default_factory=list)
    tenant_series: dict[str, np.ndarray] = field(default_factory=dict)
    service: list[dict[str, Any]] = field(default_factory=list)  # per tenant: service received
    service_series: dict[str, np.ndarray] = field(default_factory=dict)  # TTFT p99 per bucket, tenant
    drift: list[tuple] = field(default_factory=list)
    gate: list[tuple] = field(default_factory=list)
    models: list[tuple] = field(default_factory=list)
    latest_gate: dict[str, Any] | None = None
    accuracy_source: str | None = None  # STORED or REFIT; None when there is no accuracy
    accuracy_note: str = ""

    @property
    def has_steps(self) -> bool:
        return bool(self.overview.get("steps"))

    @property
    def attributed(self) -> bool:
        return bool(self.overview.get("attributed_steps"))


def _time_where(
    column: str, since, until, engine: str | None, engine_col: str | None = "engine_id"
) -> tuple[str, list]:
    clauses, params = ["TRUE"], []
    if since is not None:
        clauses.append(f"{column} >= CAST(? AS TIMESTAMP)")
        params.append(since)
    if until is not None:
        clauses.append(f"{column} < CAST(? AS TIMESTAMP)")
        params.append(until)
    if engine and engine_col:
        clauses.append(f"{engine_col} = ?")
        params.append(engine)
    return " AND ".join(clauses), params


def _resolve(con: duckdb.DuckDBPyConnection, window: Window) -> tuple[Any, Any]:
    """The window as a time range; ``last_steps`` becomes the time of the Nth latest step."""
    since, until = window.since, window.until
    if window.last_steps:
        where, params = window.where()
        row = con.execute(
            f"SELECT min(ts) FROM (SELECT ts FROM steps WHERE {where} "
            f"ORDER BY ts DESC LIMIT {int(window.last_steps)})",
            params,
        ).fetchone()
        since = row[0] if row and row[0] is not None else since
    return since, until


def _bucket(span_s: float) -> tuple[int, str]:
    return next(((s, label) for s, label in BUCKETS if span_s / s <= 300), BUCKETS[-1])


def _num(x: Any) -> float | None:
    return float(x) if x is not None and math.isfinite(float(x)) else None


def collect(
    con: duckdb.DuckDBPyConnection, window: Window = Window(), *, title: str = "shadowd report"
) -> ReportData:
    """Run the report's queries over ``window``."""
    since, until = _resolve(con, window)
    data = ReportData(title=title, since=since, until=until, engine_id=window.engine_id)
    sw, sp = _time_where("ts", since, until, window.engine_id)
    sw += " AND latency_ms > 0"
    o = con.execute(
        f"""SELECT count(*), count(predicted_ms), min(ts), max(ts),
                               count(DISTINCT engine_id), count(DISTINCT model_version),
                               sum(num_requests), max(dropped_frames_total)
                        FROM steps WHERE {sw}""",
        sp,
    ).fetchone()
    data.overview = dict(
        zip(
            (
                "steps",
                "attributed_steps",
                "first",
                "last",
                "engines",
                "model_versions",
                "request_rows",
                "dropped_frames",
            ),
            o,
        )
    )
    first, last = data.overview["first"] or since, data.overview["last"] or until
    span = (last - first).total_seconds() if first and last else 3600.0
    width, data.bucket_label = _bucket(max(span, 60.0))
    _collect_accuracy(con, data, sw, sp)
    _collect_series(con, data, sw, sp, width)
    _collect_tenants(con, data, since, until, window.engine_id, width)
    if _has(con, "requests"):
        _collect_service(con, data, since, until, window.engine_id, width)
    if data.accuracy:
        data.accuracy_source = STORED
    elif data.has_steps:
        _refit_accuracy(con, data, window)
    # Parquet exports (``storage.export.attach_exports``) carry steps and requests only.
    if _has(con, "drift_events"):
        dw, dp = _time_where("ts", since, until, window.engine_id)
        data.drift = con.execute(
            f"""SELECT ts, engine_id, step_seq, detector, step_class, statistic,
                                            threshold, resolved_at FROM drift_events WHERE {dw}
                                     ORDER BY ts""",
            dp,
        ).fetchall()
    if _has(con, "gate_decisions"):
        data.latest_gate = latest_gate_decision(con)
        gw, gp = _time_where("ts", since, until, None)
        data.gate = con.execute(
            f"SELECT ts, verdict, reason, consecutive_passes FROM gate_decisions WHERE {gw} ORDER BY ts", gp
        ).fetchall()
    if _has(con, "model_versions"):
        data.models = con.execute(
            f"""
            SELECT m.version, m.platform_key, m.created_at, m.fit_steps, coalesce(s.n, 0)
            FROM model_versions m LEFT JOIN (SELECT model_version, count(*) AS n FROM steps
                                             WHERE {sw} GROUP BY 1) s ON s.model_version = m.version
            ORDER BY m.created_at""",
            sp,
        ).fetchall()
    return data


def _has(con: duckdb.DuckDBPyConnection, table: str) -> bool:
    try:
        con.execute(f"SELECT * FROM {table} LIMIT 0")
        return True
    except duckdb.CatalogException:
        return False


def _collect_accuracy(con, data: ReportData, sw: str, sp: list) -> None:
    for key, col, _ in MODELS:
        rows = con.execute(
            f"""
            WITH e AS (SELECT kind, latency_ms AS t, {col} AS p, abs({col} - latency_ms) / latency_ms AS err
                       FROM steps WHERE {sw} AND {col} IS NOT NULL)
            SELECT kind, count(*), quantile_cont(err, [0.5, 0.9, 0.99]),
                   1 - sum((p - t) ^ 2) / nullif(count(*) * var_pop(t), 0),
                   quantile_cont(err, {CDF_P})
            FROM e GROUP BY ROLLUP (kind)""",
            sp,
        ).fetchall()
        for kind, n, q, r2, grid in rows:
            if not n:
                continue
            name = kind or "all"
            data.accuracy.setdefault(name, {})[key] = {
                "steps": n,
                "p50": _num(q[0]),
                "p90": _num(q[1]),
                "p99": _num(q[2]),
                "r2": _num(r2),
            }
            data.cdf.setdefault(name, {})[key] = grid
    data.scatter = con.execute(
        f"""
        SELECT kind, latency_ms, predicted_ms, baseline_ms FROM
            (SELECT * FROM steps WHERE {sw} AND predicted_ms IS NOT NULL AND baseline_ms IS NOT NULL)
        USING SAMPLE reservoir({SCATTER_POINTS} ROWS) REPEATABLE (7)""",
        sp,
    ).fetchnumpy()


def _collect_series(con, data: ReportData, sw: str, sp: list, width: int) -> None:
    data.error_series = con.execute(
        f"""
        SELECT time_bucket(INTERVAL '{width} seconds', ts) AS b,
               quantile_cont(abs(predicted_ms - latency_ms) / latency_ms, 0.9) AS llmvisor,
               quantile_cont(abs(baseline_ms - latency_ms) / latency_ms, 0.9) AS token
        FROM steps WHERE {sw} AND predicted_ms IS NOT NULL GROUP BY b ORDER BY b""",
        sp,
    ).fetchnumpy()


def _collect_tenants(con, data: ReportData, since, until, engine, width: int) -> None:
    rw, rp = _time_where("s.ts", since, until, engine, "s.engine_id")
    mw, mp = _time_where("minute", since, until, engine)
    rollups = (
        f"""UNION ALL
        SELECT minute, engine_id, tenant, steps, new_tokens, llmvisor_ms, llmvisor_measured_ms, vtc_ms
        FROM tenant_minutes t WHERE {mw}
          AND NOT EXISTS (SELECT 1 FROM raw WHERE raw.engine_id = t.engine_id AND raw.minute = t.minute)
        """
        if _has(con, "tenant_minutes")
        else ""
    )
    con.execute(
        f"""CREATE OR REPLACE TEMP TABLE _report_tm AS
        WITH raw AS (
            SELECT date_trunc('minute', s.ts) AS minute, r.engine_id, r.tenant,
                   count(DISTINCT (r.run_id, r.step_seq)) AS steps, sum(r.new_tokens) AS new_tokens,
                   sum(r.llmvisor_ms) AS llmvisor_ms, sum(r.llmvisor_measured_ms) AS llmvisor_measured_ms,
                   sum(r.vtc_ms) AS vtc_ms
            FROM step_requests r JOIN steps s ON s.engine_id = r.engine_id AND s.run_id = r.run_id
                                             AND s.step_seq = r.step_seq
            WHERE {rw} GROUP BY ALL)
        SELECT * FROM raw
        {rollups}""",
        rp + (mp if _has(con, "tenant_minutes") else []),
    )
    try:
        rows = con.execute("""SELECT tenant, sum(steps), sum(new_tokens), sum(llmvisor_ms),
                                     sum(llmvisor_measured_ms), sum(vtc_ms)
                              FROM _report_tm GROUP BY tenant
                              ORDER BY sum(coalesce(llmvisor_measured_ms, vtc_ms, 0)) DESC, tenant""").fetchall()
        lv_total = sum(r[4] or 0.0 for r in rows)
        vtc_total = sum(r[5] or 0.0 for r in rows)
        data.tenants = [
            {
                "tenant": t,
                "steps": int(s or 0),
                "new_tokens": int(n or 0),
                "llmvisor_s": _sec(lv),
                "llmvisor_measured_s": _sec(lvm),
                "vtc_s": _sec(v),
                "llmvisor_pct": 100 * lvm / lv_total if lvm is not None and lv_total else None,
                "vtc_pct": 100 * v / vtc_total if v is not None and vtc_total else None,
            }
            for t, s, n, lv, lvm, v in rows
        ]
        top = [r["tenant"] for r in data.tenants[:MAX_TENANTS]]
        data.tenant_series = con.execute(
            f"""
            SELECT time_bucket(INTERVAL '{width} seconds', minute) AS b,
                   CASE WHEN list_contains(CAST(? AS VARCHAR[]), tenant) THEN tenant ELSE 'other' END
                       AS tenant,
                   sum(coalesce(llmvisor_measured_ms, 0)) / 1000.0 AS seconds
            FROM _report_tm GROUP BY ALL ORDER BY b""",
            [top],
        ).fetchnumpy()
    finally:
        con.execute("DROP TABLE IF EXISTS _report_tm")


SERVICE_QUANTILES = {
    "queue_ms": (0.5, 0.99),
    "ttft_ms": (0.5, 0.99),
    "tpot_ms": (0.5, 0.99),
    "e2e_ms": (0.99,),
}


def _collect_service(con, data: ReportData, since, until, engine, width: int) -> None:
    """Service received per tenant: queue time, TTFT, TPOT, E2E and how requests ended.

    From the raw ``requests`` rows of the window; when retention has already dropped them, from
    the per-minute histograms (``storage.service_rollup``), which read back within a bucket.
    """
    rw, rp = _time_where("ended_ts", since, until, engine)
    cols = ", ".join(
        f"quantile_cont({m}, [{', '.join(str(q) for q in qs)}]) AS {m}" for m, qs in SERVICE_QUANTILES.items()
    )
    rows = con.execute(
        f"""SELECT tenant, count(*), count(*) FILTER (finish_reason = 'abort'),
                   count(*) FILTER (finish_reason = 'length'), sum(preemptions), sum(output_tokens), {cols}
            FROM requests WHERE {rw} GROUP BY tenant ORDER BY tenant""",
        rp,
    ).fetchall()
    source = "raw"
    if not rows and _has(con, "service_minutes"):
        rows, source = _service_from_rollups(con, since, until, engine), "rollup"
    data.service = [
        {
            "tenant": t,
            "requests": int(n),
            "aborted": int(ab or 0),
            "length_limited": int(ln or 0),
            "preemptions": int(pre or 0),
            "output_tokens": int(out or 0),
            **{
                f"{m.removesuffix('_ms')}_p{round(q * 100)}_ms": _num(v[i]) if v else None
                for (m, qs), v in zip(SERVICE_QUANTILES.items(), vals)
                for i, q in enumerate(qs)
            },
            "source": source,
        }
        for t, n, ab, ln, pre, out, *vals in rows
    ]
    if source == "raw" and rows:
        data.service_series = con.execute(
            f"""SELECT time_bucket(INTERVAL '{width} seconds', ended_ts) AS b, tenant,
                       quantile_cont(ttft_ms, 0.99) AS ttft_p99_ms
                FROM requests WHERE {rw} AND ttft_ms IS NOT NULL GROUP BY ALL ORDER BY b""",
            rp,
        ).fetchnumpy()


def _service_from_rollups(con, since, until, engine) -> list[tuple]:
    from storage.service_rollup import service_quantiles

    kw = {"since": since, "until": until}
    q = {m: service_quantiles(con, m, list(qs), **kw) for m, qs in SERVICE_QUANTILES.items()}
    mw, mp = _time_where("minute", since, until, engine)
    outcomes = con.execute(
        f"""SELECT tenant, sum(requests), sum(requests) FILTER (finish_reason = 'abort'),
                   sum(requests) FILTER (finish_reason = 'length'), sum(preemptions), sum(output_tokens)
            FROM outcome_minutes WHERE {mw} GROUP BY tenant ORDER BY tenant""",
        mp,
    ).fetchall()
    return [(*o, *(q[m].get(o[0]) for m in SERVICE_QUANTILES)) for o in outcomes]


def _sec(ms: float | None) -> float | None:
    return None if ms is None else ms / 1000.0


def _refit_accuracy(con: duckdb.DuckDBPyConnection, data: ReportData, window: Window) -> None:
    """Out-of-sample accuracy of a log without stored predictions: fit earlier half, score later half."""
    last = min(window.last_steps or MAX_REFIT_STEPS, MAX_REFIT_STEPS)
    batch = load_batch(
        con, Window(since=window.since, until=window.until, last_steps=last, engine_id=window.engine_id)
    )
    if batch.num_steps < 100:
        data.accuracy_note = (
            f"only {batch.num_steps} steps with a measured latency in the window; "
            "need at least 100 to fit on one part and score on another"
        )
        return
    rep = out_of_sample_report(batch, _platform_key(con))
    for name, acc in (rep.get("accuracy") or {}).items():
        if not acc or not acc.get("steps"):
            continue
        for key, src_key in (("llmvisor", "llmvisor"), ("token", "token_baseline")):
            s = acc.get(src_key) or {}
            data.accuracy.setdefault(name, {})[key] = {
                "steps": acc["steps"],
                **{k: s.get(k) for k in ("p50", "p90", "p99", "r2")},
            }
    data.accuracy_source = REFIT
    if not any(t.get("llmvisor_measured_s") is not None for t in data.tenants):
        data.tenants = _refit_tenants(rep.get("tenants") or [])
    data.accuracy_note = (
        f"no stored predictions in this window: both models fitted on the earlier half "
        f"of its latest {batch.num_steps} steps, scored on the later half"
    )


def _refit_tenants(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Per-tenant totals of the refit's scored half, in the report's tenant shape."""
    lv_total = sum(r["llmvisor_measured_ms"] for r in rows) or None
    tok_total = sum(r["token_ms"] for r in rows) or None
    out = [
        {
            "tenant": r["tenant"],
            "steps": None,
            "new_tokens": None,
            "requests": r["requests"],
            "vtc_tokens": r["vtc_tokens"],
            "llmvisor_s": _sec(r["llmvisor_ms"]),
            "llmvisor_measured_s": _sec(r["llmvisor_measured_ms"]),
            "vtc_s": _sec(r["token_ms"]),
            "llmvisor_pct": 100 * r["llmvisor_measured_ms"] / lv_total if lv_total else None,
            "vtc_pct": 100 * r["token_ms"] / tok_total if tok_total else None,
        }
        for r in rows
    ]
    return sorted(out, key=lambda t: -(t["llmvisor_measured_s"] or 0.0))


def _platform_key(con: duckdb.DuckDBPyConnection) -> dict[str, Any]:
    if not _has(con, "model_versions"):
        return {"source": "step log"}
    row = con.execute("SELECT body FROM model_versions ORDER BY created_at DESC LIMIT 1").fetchone()
    if row:
        return json.loads(row[0]).get("platform_key") or {"source": "step log"}
    return {"source": "step log"}


def to_json(data: ReportData) -> dict[str, Any]:
    """The JSON report (``shadowd report --json``, the daemon's ``/report``)."""
    o = data.overview
    accuracy = {}
    for name, acc in data.accuracy.items():
        lv, tb = acc.get("llmvisor", {}), acc.get("token", {})
        strip = lambda s: {k: s.get(k) for k in ("r2", "p50", "p90", "p99")}  # noqa: E731
        ratio = {q: (tb[q] / lv[q]) if lv.get(q) and tb.get(q) is not None else None for q in ("p90", "p99")}
        accuracy[name] = {
            "steps": lv.get("steps") or tb.get("steps") or 0,
            "llmvisor": strip(lv),
            "token_baseline": strip(tb),
            "ratio": ratio,
        }
    return {
        "title": data.title,
        "window": {"since": data.since, "until": data.until, "engine_id": data.engine_id},
        "steps": int(o.get("steps") or 0),
        "attributed_steps": int(o.get("attributed_steps") or 0),
        "requests": int(o.get("request_rows") or 0),
        "first_step": o.get("first"),
        "last_step": o.get("last"),
        "accuracy_source": data.accuracy_source,
        "accuracy_note": data.accuracy_note,
        "accuracy": accuracy,
        "tenants": data.tenants,
        "service": data.service,
        "drift_events": [
            dict(
                zip(
                    (
                        "ts",
                        "engine_id",
                        "step_seq",
                        "detector",
                        "step_class",
                        "statistic",
                        "threshold",
                        "resolved_at",
                    ),
                    d,
                )
            )
            for d in data.drift
        ],
        "gate_history": len(data.gate),
        "gate": data.latest_gate,
        "model_versions": [
            dict(zip(("version", "platform_key", "created_at", "fit_steps", "steps_here"), m))
            for m in data.models
        ],
    }
