"""Retention: roll raw rows up into per-tenant minutes, then drop what is past its keep time.

Raw ``steps``/``step_requests`` grow by millions of rows a day; billing and capacity questions
over months need only per-tenant per-minute totals (``tenant_minutes``).  ``run_retention`` rolls
up, then prunes, in *chunks* (consecutive minutes holding at most ``chunk_rows`` request rows,
one transaction per chunk), so no transaction grows with the database or the host's rate: on a busy host one transaction over 14 days of rows would
run for minutes, hold the writer, and a watchdog kill would roll it back, every hour, forever.
The caller hands each chunk to ``run`` (the daemon: the writer thread, one job per chunk, so
ingest flushes in between and each chunk shows as progress); a failed chunk leaves the chunks
before it done and itself undone.  Measured over a 14-day busy database in
``benchmarks/retention_cost.py`` (``docs/benchmarks.md``).

Roll-up is exact and idempotent.  ``rollup_marks`` records, per engine and minute, how many raw
steps ``tenant_minutes`` holds.  A complete minute (ending ``settle_s`` before ``now``, so rows
still in the writer's buffer are not missed) whose raw step count differs from its mark - new,
or rows that arrived late, after the minute was rolled up - is recomputed from its raw rows and
replaces what was there.  ``requests`` counts distinct requests seen in the minute (not additive
across minutes); every other column is a sum.  Rows arriving for a minute whose raw rows were
already pruned are added to its totals.

Pruning deletes a raw row only once its minute is rolled up exactly (its raw step count equals
its mark), never rows of a minute that changed since, nor rows of an (engine, day) in
``keep_partitions`` (the daemon passes partitions not yet exported to Parquet) or at or after
``protect_since``.  Roll-ups and marks older than ``rollup_days`` go.

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
RetentionResult(rollup_rows=1, steps_deleted=1, requests_deleted=1, rollups_deleted=0, chunks=3)
>>> con.execute("SELECT minute, tenant, steps, llmvisor_ms FROM tenant_minutes").fetchall()
[(datetime.datetime(2025, 1, 1, 8, 0), 'acme', 1, 7.5)]
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from typing import Any, TypeVar

import duckdb

T = TypeVar("T")
Run = Callable[[Callable[[duckdb.DuckDBPyConnection], T]], T]  # runs one chunk on a connection
CHUNK_ROWS = 1_000_000  # request rows per transaction (benchmarks/retention_cost.py: seconds each)
_MINUTE = "date_trunc('minute', s.ts)"


@dataclass(frozen=True)
class RetentionResult:
    rollup_rows: int  # tenant_minutes rows (re)written
    steps_deleted: int
    requests_deleted: int
    rollups_deleted: int
    chunks: int = 0  # transactions run


def utcnow() -> dt.datetime:
    """Naive UTC, the convention of every TIMESTAMP column."""
    return dt.datetime.now(dt.UTC).replace(tzinfo=None)


def _count(con: duckdb.DuckDBPyConnection, sql: str, params: list | dict) -> int:
    row = con.execute(sql, params).fetchone()
    return int(row[0]) if row else 0


def _transaction(fn: Callable[[duckdb.DuckDBPyConnection], T]) -> Callable[[duckdb.DuckDBPyConnection], T]:
    def run(con: duckdb.DuckDBPyConnection) -> T:
        con.execute("BEGIN TRANSACTION")
        try:
            out = fn(con)
            con.execute("COMMIT")
        except BaseException:
            con.execute("ROLLBACK")
            raise
        return out

    return run


def _windows(
    minutes: Iterable[tuple[dt.datetime, int]], chunk_rows: int
) -> Iterator[tuple[dt.datetime, dt.datetime]]:
    """[start, end) windows over consecutive ``(minute, request rows)``, each holding at most
    ``chunk_rows`` rows (or one minute, whatever it holds)."""
    start = end = None
    rows = 0
    for minute, n in sorted(minutes):
        if start is not None and rows + n > chunk_rows:
            yield start, end
            start = None
        if start is None:
            start, rows = minute, 0
        end, rows = minute + dt.timedelta(minutes=1), rows + n
    if start is not None:
        yield start, end


# -- roll-up ------------------------------------------------------------------------------------
_STEP_COUNTS = f"""SELECT s.engine_id, {_MINUTE} AS minute, count(*) AS raw,
                          sum(s.num_requests) AS rows FROM steps s
                   WHERE s.ts >= $a AND s.ts < $b GROUP BY ALL"""


def _dirty_minutes(con: duckdb.DuckDBPyConnection, upto: dt.datetime) -> list[tuple[dt.datetime, int]]:
    """Complete minutes (before ``upto``) whose raw step count differs from their mark, with
    their request rows."""
    rows = con.execute(
        f"""SELECT c.minute, sum(c.rows) FROM ({_STEP_COUNTS}) c
            LEFT JOIN rollup_marks m ON m.engine_id = c.engine_id AND m.minute = c.minute
            WHERE m.steps IS NULL OR c.raw <> m.steps - m.pruned_steps
            GROUP BY 1""",
        {"a": dt.datetime.min, "b": upto},
    ).fetchall()
    return [(m, int(n or 0)) for m, n in rows]


def _rollup_window(con: duckdb.DuckDBPyConnection, a: dt.datetime, b: dt.datetime) -> int:
    """Re-derive the changed minutes of [a, b); inside a transaction; returns rows written."""
    con.execute(
        f"""CREATE OR REPLACE TEMP TABLE _dirty AS
        SELECT c.engine_id, c.minute, c.raw, coalesce(m.pruned_steps, 0) AS pruned
        FROM ({_STEP_COUNTS}) c
        LEFT JOIN rollup_marks m ON m.engine_id = c.engine_id AND m.minute = c.minute
        WHERE m.steps IS NULL OR c.raw <> m.steps - m.pruned_steps""",
        {"a": a, "b": b},
    )
    try:
        con.execute(
            f"""CREATE OR REPLACE TEMP TABLE _rollup AS
            SELECT {_MINUTE} AS minute, r.engine_id, r.tenant,
                   count(DISTINCT (r.run_id, r.step_seq)) AS steps,
                   count(DISTINCT (r.run_id, r.req_id)) AS requests,
                   sum(r.new_tokens) AS new_tokens, sum(r.llmvisor_ms) AS llmvisor_ms,
                   sum(r.llmvisor_measured_ms) AS llmvisor_measured_ms,
                   sum(r.vtc_ms) AS vtc_ms, sum(r.vtc_tokens) AS vtc_tokens
            FROM steps s
            JOIN step_requests r ON r.engine_id = s.engine_id AND r.run_id = s.run_id
                                AND r.step_seq = s.step_seq
            SEMI JOIN _dirty d ON d.engine_id = s.engine_id AND d.minute = {_MINUTE}
            WHERE s.ts >= $a AND s.ts < $b
            GROUP BY ALL""",
            {"a": a, "b": b},
        )
        # A minute with raw rows pruned already keeps what it has and gains the newcomers;
        # any other changed minute is replaced by what its raw rows say now.
        con.execute("""CREATE OR REPLACE TEMP TABLE _merged AS
            SELECT minute, engine_id, tenant, sum(steps) AS steps, sum(requests) AS requests,
                   sum(new_tokens) AS new_tokens, sum(llmvisor_ms) AS llmvisor_ms,
                   sum(llmvisor_measured_ms) AS llmvisor_measured_ms, sum(vtc_ms) AS vtc_ms,
                   sum(vtc_tokens) AS vtc_tokens
            FROM (SELECT minute, engine_id, tenant, steps, requests, new_tokens, llmvisor_ms,
                         llmvisor_measured_ms, vtc_ms, vtc_tokens FROM _rollup
                  UNION ALL
                  SELECT t.minute, t.engine_id, t.tenant, t.steps, t.requests, t.new_tokens,
                         t.llmvisor_ms, t.llmvisor_measured_ms, t.vtc_ms, t.vtc_tokens
                  FROM tenant_minutes t SEMI JOIN _dirty d
                    ON d.engine_id = t.engine_id AND d.minute = t.minute AND d.pruned > 0)
            GROUP BY ALL""")
        con.execute("""DELETE FROM tenant_minutes t USING _dirty d
                       WHERE t.engine_id = d.engine_id AND t.minute = d.minute""")
        written = _count(
            con,
            """INSERT INTO tenant_minutes
            (minute, engine_id, tenant, steps, requests, new_tokens,
             llmvisor_ms, llmvisor_measured_ms, vtc_ms, vtc_tokens)
            SELECT minute, engine_id, tenant, steps, requests, new_tokens,
                   llmvisor_ms, llmvisor_measured_ms, vtc_ms, vtc_tokens FROM _merged""",
            [],
        )
        con.execute("""DELETE FROM rollup_marks m USING _dirty d
                       WHERE m.engine_id = d.engine_id AND m.minute = d.minute""")
        con.execute("""INSERT INTO rollup_marks (engine_id, minute, steps, pruned_steps)
                       SELECT engine_id, minute, raw + pruned, pruned FROM _dirty""")
        return written
    finally:
        for t in ("_dirty", "_rollup", "_merged"):
            con.execute(f"DROP TABLE IF EXISTS {t}")


def rollup_chunks(
    run: Run, *, now: dt.datetime | None = None, settle_s: float = 120.0, chunk_rows: int = CHUNK_ROWS
) -> tuple[int, int]:
    """Roll up every changed complete minute, one transaction per chunk of ``chunk_rows``.
    Returns (tenant_minutes rows written, chunks)."""
    upto = ((now or utcnow()) - dt.timedelta(seconds=settle_s)).replace(second=0, microsecond=0)
    minutes = run(lambda con: _dirty_minutes(con, upto))
    written = chunks = 0
    for a, b in _windows(minutes, chunk_rows):
        written += run(_transaction(lambda con, a=a, b=b: _rollup_window(con, a, b)))
        chunks += 1
    return written, chunks


def rollup(con: duckdb.DuckDBPyConnection, *, now: dt.datetime | None = None, settle_s: float = 120.0) -> int:
    """:func:`rollup_chunks` on one connection; returns the rows written."""
    return rollup_chunks(lambda fn: fn(con), now=now, settle_s=settle_s)[0]


# -- pruning ------------------------------------------------------------------------------------
def _prunable_minutes(con: duckdb.DuckDBPyConnection, cutoff: dt.datetime) -> list[tuple[dt.datetime, int]]:
    """Minutes before ``cutoff`` with raw rows rolled up, and their request rows."""
    rows = con.execute(
        f"""SELECT c.minute, sum(c.rows) FROM ({_STEP_COUNTS}) c
            SEMI JOIN rollup_marks m ON m.engine_id = c.engine_id AND m.minute = c.minute
                                     AND m.pruned_steps < m.steps
            GROUP BY 1""",
        {"a": dt.datetime.min, "b": cutoff},
    ).fetchall()
    return [(m, int(n or 0)) for m, n in rows]


def _prune_window(con: duckdb.DuckDBPyConnection, a: dt.datetime, b: dt.datetime) -> tuple[int, int]:
    """Delete raw rows of exactly-rolled-up minutes in [a, b), except kept partitions; inside a
    transaction.  Returns (steps, step_requests) deleted."""
    con.execute(
        f"""CREATE OR REPLACE TEMP TABLE _clean AS
        SELECT c.engine_id, c.minute FROM ({_STEP_COUNTS}) c
        JOIN rollup_marks m ON m.engine_id = c.engine_id AND m.minute = c.minute
        WHERE c.raw = m.steps - m.pruned_steps
          AND NOT EXISTS (SELECT 1 FROM _keep k
                          WHERE k.engine_id = c.engine_id AND k.day = CAST(c.minute AS DATE))""",
        {"a": a, "b": b},
    )
    try:
        con.execute(
            f"""CREATE OR REPLACE TEMP TABLE _prune AS
            SELECT s.engine_id, s.run_id, s.step_seq FROM steps s
            SEMI JOIN _clean c ON c.engine_id = s.engine_id AND c.minute = {_MINUTE}
            WHERE s.ts >= $a AND s.ts < $b""",
            {"a": a, "b": b},
        )
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
        con.execute("""UPDATE rollup_marks m SET pruned_steps = m.steps FROM _clean c
                       WHERE m.engine_id = c.engine_id AND m.minute = c.minute""")
        return steps, requests
    finally:
        con.execute("DROP TABLE IF EXISTS _prune")
        con.execute("DROP TABLE IF EXISTS _clean")


def _with_keep(
    keep: Iterable[tuple[str, dt.date]], fn: Callable[[duckdb.DuckDBPyConnection], T]
) -> Callable[[duckdb.DuckDBPyConnection], T]:
    rows = [[e, d] for e, d in keep]

    def run(con: duckdb.DuckDBPyConnection) -> T:
        con.execute("CREATE OR REPLACE TEMP TABLE _keep (engine_id VARCHAR, day DATE)")
        try:
            if rows:
                con.executemany("INSERT INTO _keep VALUES (?, ?)", rows)
            return fn(con)
        finally:
            con.execute("DROP TABLE IF EXISTS _keep")

    return run


def prune_chunks(
    run: Run,
    *,
    raw_days: int,
    rollup_days: int,
    now: dt.datetime | None = None,
    protect_since: dt.datetime | None = None,
    keep_partitions: Iterable[tuple[str, dt.date]] = (),
    chunk_rows: int = CHUNK_ROWS,
) -> tuple[int, int, int, int]:
    """Delete rolled-up raw rows older than ``raw_days`` (and than ``protect_since``), then
    roll-ups older than ``rollup_days``; one transaction per chunk of ``chunk_rows``.

    Returns (steps, step_requests, tenant_minutes rows deleted, chunks)."""
    now = now or utcnow()
    cutoff = now - dt.timedelta(days=raw_days)
    if protect_since is not None:
        cutoff = min(cutoff, protect_since)
    cutoff = cutoff.replace(second=0, microsecond=0)  # whole minutes: no roll-up sees half a minute
    keep = list(keep_partitions)
    minutes = run(lambda con: _prunable_minutes(con, cutoff))
    steps = requests = chunks = 0
    for a, b in _windows(minutes, chunk_rows):
        s, r = run(_transaction(_with_keep(keep, lambda con, a=a, b=b: _prune_window(con, a, b))))
        steps, requests, chunks = steps + s, requests + r, chunks + 1
    expire = now - dt.timedelta(days=rollup_days)

    def expire_rollups(con: duckdb.DuckDBPyConnection) -> int:
        con.execute("DELETE FROM rollup_marks WHERE minute < ? AND pruned_steps = steps", [expire])
        return _count(con, "DELETE FROM tenant_minutes WHERE minute < ?", [expire])

    rollups = run(_transaction(expire_rollups))
    return steps, requests, rollups, chunks + 1


def prune(
    con: duckdb.DuckDBPyConnection,
    *,
    raw_days: int,
    rollup_days: int,
    now: dt.datetime | None = None,
    protect_since: dt.datetime | None = None,
    keep_partitions: Iterable[tuple[str, dt.date]] = (),
) -> tuple[int, int, int]:
    """:func:`prune_chunks` on one connection; returns (steps, step_requests, tenant_minutes)."""
    out = prune_chunks(
        lambda fn: fn(con),
        raw_days=raw_days,
        rollup_days=rollup_days,
        now=now,
        protect_since=protect_since,
        keep_partitions=keep_partitions,
    )
    return out[:3]


def run_retention(
    run: Run,
    *,
    raw_days: int,
    rollup_days: int,
    now: dt.datetime | None = None,
    settle_s: float = 120.0,
    protect_since: dt.datetime | None = None,
    keep_partitions: Iterable[tuple[str, dt.date]] | Callable[[duckdb.DuckDBPyConnection], Any] = (),
    chunk_rows: int = CHUNK_ROWS,
) -> RetentionResult:
    """Roll up, then prune, each in bounded transactions handed to ``run``; see the module
    docstring.  ``keep_partitions`` may be a function of the connection (read once, before
    pruning: the export's state)."""
    if raw_days < 1 or rollup_days < 1:
        raise ValueError("raw_days and rollup_days must be ≥ 1")
    now = now or utcnow()
    rows, rollup_n = rollup_chunks(run, now=now, settle_s=settle_s, chunk_rows=chunk_rows)
    keep = run(keep_partitions) if callable(keep_partitions) else keep_partitions
    steps, requests, rollups, prune_n = prune_chunks(
        run,
        raw_days=raw_days,
        rollup_days=rollup_days,
        now=now,
        protect_since=protect_since,
        keep_partitions=keep,
        chunk_rows=chunk_rows,
    )
    return RetentionResult(rows, steps, requests, rollups, rollup_n + prune_n)


def apply_retention(
    con: duckdb.DuckDBPyConnection,
    *,
    raw_days: int,
    rollup_days: int,
    now: dt.datetime | None = None,
    settle_s: float = 120.0,
    protect_since: dt.datetime | None = None,
    keep_partitions: Iterable[tuple[str, dt.date]] = (),
    chunk_rows: int = CHUNK_ROWS,
) -> RetentionResult:
    """:func:`run_retention` on one connection."""
    return run_retention(
        lambda fn: fn(con),
        raw_days=raw_days,
        rollup_days=rollup_days,
        now=now,
        settle_s=settle_s,
        protect_since=protect_since,
        keep_partitions=keep_partitions,
        chunk_rows=chunk_rows,
    )
