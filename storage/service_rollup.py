"""Per-tenant service histograms: what retention keeps of the ``requests`` table.

Quantiles do not merge (the p99 of two minutes is not a function of their p99s), so the roll-up
keeps a histogram per tenant, minute and metric instead: log-spaced buckets of ``RATIO`` relative
width, counts that merge by addition.  Reading a quantile back from any span of minutes gives the
bucket's geometric middle, within half a bucket (a relative error of about ``(RATIO - 1) / 2``) of
the exact quantile of the raw values — the kind of sketch DDSketch and HdrHistogram keep.

>>> import duckdb, datetime as dt
>>> from storage.schema import migrate
>>> con = duckdb.connect(); _ = migrate(con)
>>> rows = [("e0", "r", f"q{i}", "acme", dt.datetime(2025, 1, 1, 8, 0, i), 10.0 * (i + 1)) for i in range(50)]
>>> _ = con.executemany("INSERT INTO requests (engine_id, run_id, req_id, tenant, ended_ts, ttft_ms, "
...                     "prompt_tokens, output_tokens, finish_reason) VALUES (?, ?, ?, ?, ?, ?, 1, 1, 'stop')",
...                     rows)
>>> buckets, outcomes = rollup_service(con, until=dt.datetime(2025, 1, 1, 9))
>>> outcomes, rollup_service(con, until=dt.datetime(2025, 1, 1, 9))  # a second run adds nothing
(1, (0, 0))
>>> median = service_quantiles(con, "ttft_ms", [0.5])["acme"][0]  # exact median: 255 ms
>>> abs(median / 255.0 - 1) < RATIO - 1
True
"""

from __future__ import annotations

import datetime as dt
import math

import duckdb

RATIO = 1.04  # bucket width: values within 4 % share a bucket
METRICS = ("queue_ms", "ttft_ms", "tpot_ms", "e2e_ms")
_LOG = math.log(RATIO)
MIN_MS = 1e-3  # smaller values (and zeros) fall in the lowest bucket


def bucket_sql(column: str) -> str:
    """The bucket of a millisecond value, as SQL."""
    return f"CAST(floor(ln(greatest({column}, {MIN_MS})) / {_LOG}) AS SMALLINT)"


def bucket_value_sql(column: str = "bucket") -> str:
    """The geometric middle of a bucket, as SQL."""
    return f"exp(({column} + 0.5) * {_LOG})"


def rollup_service(con: duckdb.DuckDBPyConnection, *, until: dt.datetime) -> tuple[int, int]:
    """Histogram every request that ended before ``until`` and is not rolled up yet.

    Idempotent per minute: minutes already in ``outcome_minutes`` for an engine are skipped, so a
    retry after a crash between roll-up and prune does not count twice.  Returns the
    ``(service_minutes, outcome_minutes)`` rows written.
    """
    pending = """
        SELECT r.*, date_trunc('minute', r.ended_ts) AS minute FROM requests r
        WHERE r.ended_ts < CAST(? AS TIMESTAMP)
          AND NOT EXISTS (SELECT 1 FROM outcome_minutes o WHERE o.engine_id = r.engine_id
                          AND o.minute = date_trunc('minute', r.ended_ts))"""
    unions = " UNION ALL ".join(
        f"SELECT minute, engine_id, tenant, '{m}' AS metric, {bucket_sql(m)} AS bucket FROM p WHERE {m} IS NOT NULL"
        for m in METRICS
    )
    hist = con.execute(
        f"""INSERT INTO service_minutes
            WITH p AS ({pending}), v AS ({unions})
            SELECT minute, engine_id, tenant, metric, bucket, count(*) FROM v GROUP BY ALL""",
        [until],
    ).fetchone()[0]
    outcomes = con.execute(
        f"""INSERT INTO outcome_minutes
            WITH p AS ({pending})
            SELECT minute, engine_id, tenant, finish_reason, count(*), sum(output_tokens), sum(preemptions)
            FROM p GROUP BY ALL""",
        [until],
    ).fetchone()[0]
    return int(hist), int(outcomes)


def service_quantiles(
    con: duckdb.DuckDBPyConnection,
    metric: str,
    quantiles: list[float],
    *,
    since: dt.datetime | None = None,
    until: dt.datetime | None = None,
) -> dict[str, list[float]]:
    """Per tenant, ``quantiles`` of ``metric`` from the rolled-up histograms of a span of minutes."""
    if metric not in METRICS:
        raise ValueError(f"metric must be one of {METRICS}, got {metric!r}")
    where, params = ["metric = ?"], [metric]
    if since is not None:
        where.append("minute >= CAST(? AS TIMESTAMP)")
        params.append(since)
    if until is not None:
        where.append("minute < CAST(? AS TIMESTAMP)")
        params.append(until)
    rows = con.execute(
        f"""SELECT tenant, bucket, sum(count) AS n FROM service_minutes WHERE {" AND ".join(where)}
            GROUP BY tenant, bucket ORDER BY tenant, bucket""",
        params,
    ).fetchall()
    by_tenant: dict[str, list[tuple[int, int]]] = {}
    for tenant, bucket, n in rows:
        by_tenant.setdefault(tenant, []).append((int(bucket), int(n)))
    return {t: [_quantile(h, q) for q in quantiles] for t, h in by_tenant.items()}


def _quantile(hist: list[tuple[int, int]], q: float) -> float:
    total = sum(n for _, n in hist)
    rank, seen = q * (total - 1), 0
    for bucket, n in hist:
        seen += n
        if seen > rank:
            return math.exp((bucket + 0.5) * _LOG)
    return math.exp((hist[-1][0] + 0.5) * _LOG)


def retire_requests(
    con: duckdb.DuckDBPyConnection,
    *,
    raw_days: int,
    rollup_days: int,
    now: dt.datetime,
    protect_since: dt.datetime | None = None,
) -> tuple[int, int]:
    """Roll up and delete ``requests`` rows older than ``raw_days`` (never at or after
    ``protect_since``), and drop histograms older than ``rollup_days``; one transaction.

    Returns ``(requests deleted, histogram rows deleted)``.
    """
    cutoff = (now - dt.timedelta(days=raw_days)).replace(second=0, microsecond=0)
    if protect_since is not None:
        cutoff = min(cutoff, protect_since)
    old = now - dt.timedelta(days=rollup_days)
    con.execute("BEGIN TRANSACTION")
    try:
        rollup_service(con, until=cutoff)
        deleted = con.execute("DELETE FROM requests WHERE ended_ts < ?", [cutoff]).fetchone()[0]
        dropped = con.execute("DELETE FROM service_minutes WHERE minute < ?", [old]).fetchone()[0]
        con.execute("DELETE FROM outcome_minutes WHERE minute < ?", [old])
        con.execute("COMMIT")
    except BaseException:
        con.execute("ROLLBACK")
        raise
    return int(deleted), int(dropped)
