"""Retention: roll raw rows up into per-tenant minutes, then drop what is past its keep time.

Raw ``steps``/``step_requests`` grow by millions of rows a day; billing and capacity questions
over months need only per-tenant per-minute totals (``tenant_minutes``).  ``apply_retention``
runs, in one transaction, :func:`rollup` and then :func:`prune`, so a failure leaves both
tables as they were.

Roll-up is incremental and idempotent: per engine, the last minute already in
``tenant_minutes`` is its high-water mark; that minute and every later *complete* minute
(ending ``settle_s`` before ``now``, so rows still in the writer's buffer are not missed) are
recomputed from the raw rows and replace what was there.  Running it twice gives the same table.  ``requests`` counts
distinct requests seen in the minute (not additive across minutes); every other column is a
sum and is.

Pruning never deletes a raw row whose minute is past its engine's high-water mark, i.e. not
yet rolled up, nor any row at or after ``protect_since`` (the daemon passes the start of the
first day not yet exported to Parquet).

>>> import duckdb, datetime as dt
>>> from storage.schema import migrate
>>> con = duckdb.connect(); _ = migrate(con)
>>> now = dt.datetime(2025, 1, 20, 12, 0)
>>> con.execute("INSERT INTO steps (engine_id, run_id, step_seq, ts, kind, num_requests, "
...             "prefill_tokens, decode_tokens, dropped_frames_total) VALUES "
...             "('e0', 'r', 1, '2025-01-01 08:00:30', 'decode', 1, 0, 1, 0)").fetchall()
[(1,)]
>>> con.execute("INSERT INTO step_requests (engine_id, run_id, step_seq, req_id, tenant, phase, "
...             "new_tokens, context_tokens, prompt_tokens, spec_tokens, llmvisor_ms) VALUES "
...             "('e0', 'r', 1, 'q', 'acme', 'decode', 1, 10, 5, 0, 7.5)").fetchall()
[(1,)]
>>> apply_retention(con, raw_days=14, rollup_days=400, now=now)
RetentionResult(rollup_rows=1, steps_deleted=1, requests_deleted=1, rollups_deleted=0)
>>> con.execute("SELECT minute, tenant, steps, llmvisor_ms FROM tenant_minutes").fetchall()
[(datetime.datetime(2025, 1, 1, 8, 0), 'acme', 1, 7.5)]
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass

import duckdb


@dataclass(frozen=True)
class RetentionResult:
    rollup_rows: int  # tenant_minutes rows (re)written
    steps_deleted: int
    requests_deleted: int
    rollups_deleted: int


def utcnow() -> dt.datetime:
    """Naive UTC, the convention of every TIMESTAMP column."""
    return dt.datetime.now(dt.UTC).replace(tzinfo=None)


def _count(con: duckdb.DuckDBPyConnection, sql: str, params: list) -> int:
    row = con.execute(sql, params).fetchone()
    return int(row[0]) if row else 0


def rollup(con: duckdb.DuckDBPyConnection, *, now: dt.datetime | None = None, settle_s: float = 120.0) -> int:
    """Re-derive ``tenant_minutes`` from each engine's high-water minute up to the last complete
    minute; returns the rows written.  Call inside a transaction (``apply_retention`` does)."""
    upto = (now or utcnow()) - dt.timedelta(seconds=settle_s)
    upto = upto.replace(second=0, microsecond=0)
    con.execute(
        """CREATE OR REPLACE TEMP TABLE _rollup AS
        WITH hw AS (SELECT engine_id, max(minute) AS hw FROM tenant_minutes GROUP BY engine_id)
        SELECT date_trunc('minute', s.ts) AS minute, r.engine_id, r.tenant,
               count(DISTINCT (r.run_id, r.step_seq)) AS steps,
               count(DISTINCT (r.run_id, r.req_id)) AS requests,
               sum(r.new_tokens) AS new_tokens, sum(r.llmvisor_ms) AS llmvisor_ms,
               sum(r.llmvisor_measured_ms) AS llmvisor_measured_ms,
               sum(r.vtc_ms) AS vtc_ms, sum(r.vtc_tokens) AS vtc_tokens
        FROM step_requests r
        JOIN steps s ON s.engine_id = r.engine_id AND s.run_id = r.run_id AND s.step_seq = r.step_seq
        LEFT JOIN hw ON hw.engine_id = r.engine_id
        WHERE s.ts < ? AND (hw.hw IS NULL OR s.ts >= hw.hw)
        GROUP BY ALL""",
        [upto],
    )
    try:
        # Replace only minutes that still have raw rows: an idle engine's high-water minute,
        # pruned since, keeps its roll-up.
        con.execute("""DELETE FROM tenant_minutes t
                       USING (SELECT DISTINCT engine_id, minute FROM _rollup) m
                       WHERE t.engine_id = m.engine_id AND t.minute = m.minute""")
        return _count(
            con,
            """INSERT INTO tenant_minutes
            (minute, engine_id, tenant, steps, requests, new_tokens,
             llmvisor_ms, llmvisor_measured_ms, vtc_ms, vtc_tokens)
            SELECT minute, engine_id, tenant, steps, requests, new_tokens,
                   llmvisor_ms, llmvisor_measured_ms, vtc_ms, vtc_tokens FROM _rollup""",
            [],
        )
    finally:
        con.execute("DROP TABLE IF EXISTS _rollup")


def prune(
    con: duckdb.DuckDBPyConnection,
    *,
    raw_days: int,
    rollup_days: int,
    now: dt.datetime | None = None,
    protect_since: dt.datetime | None = None,
) -> tuple[int, int, int]:
    """Delete raw rows older than ``raw_days`` that are rolled up (and older than
    ``protect_since``), and roll-ups older than ``rollup_days``.

    Returns (steps, step_requests, tenant_minutes) rows deleted.
    """
    now = now or utcnow()
    cutoff = now - dt.timedelta(days=raw_days)
    if protect_since is not None:
        cutoff = min(cutoff, protect_since)
    cutoff = cutoff.replace(second=0, microsecond=0)  # whole minutes: no roll-up sees half a minute
    # A raw step may go once its minute is at or before its engine's high-water mark.
    # Steps without request rows have nothing to roll up and go by age alone.
    con.execute(
        """CREATE OR REPLACE TEMP TABLE _prune AS
        SELECT s.engine_id, s.run_id, s.step_seq FROM steps s
        LEFT JOIN (SELECT engine_id, max(minute) AS hw FROM tenant_minutes GROUP BY engine_id) h
               ON h.engine_id = s.engine_id
        WHERE s.ts < ? AND (date_trunc('minute', s.ts) <= h.hw
              OR NOT EXISTS (SELECT 1 FROM step_requests r WHERE r.engine_id = s.engine_id
                             AND r.run_id = s.run_id AND r.step_seq = s.step_seq))""",
        [cutoff],
    )
    try:
        requests = _count(
            con,
            """DELETE FROM step_requests r USING _prune p
            WHERE r.engine_id = p.engine_id AND r.run_id = p.run_id AND r.step_seq = p.step_seq""",
            [],
        )
        steps = _count(
            con,
            """DELETE FROM steps s USING _prune p
            WHERE s.engine_id = p.engine_id AND s.run_id = p.run_id AND s.step_seq = p.step_seq""",
            [],
        )
    finally:
        con.execute("DROP TABLE IF EXISTS _prune")
    rollups = _count(
        con, "DELETE FROM tenant_minutes WHERE minute < ?", [now - dt.timedelta(days=rollup_days)]
    )
    return steps, requests, rollups


def apply_retention(
    con: duckdb.DuckDBPyConnection,
    *,
    raw_days: int,
    rollup_days: int,
    now: dt.datetime | None = None,
    settle_s: float = 120.0,
    protect_since: dt.datetime | None = None,
) -> RetentionResult:
    """Roll up, then prune, in one transaction; see the module docstring."""
    if raw_days < 1 or rollup_days < 1:
        raise ValueError("raw_days and rollup_days must be ≥ 1")
    now = now or utcnow()
    con.execute("BEGIN TRANSACTION")
    try:
        rows = rollup(con, now=now, settle_s=settle_s)
        steps, requests, rollups = prune(
            con, raw_days=raw_days, rollup_days=rollup_days, now=now, protect_since=protect_since
        )
        con.execute("COMMIT")
    except BaseException:
        con.execute("ROLLBACK")
        raise
    return RetentionResult(rows, steps, requests, rollups)
