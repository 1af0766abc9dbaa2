"""Read the stored step log back as a ``StepBatch``.

Works from the raw contract columns alone (``steps`` and ``step_requests``),
so a log written by another tool, or imported, can be calibrated and
reported on.  Also reads Parquet exports (``steps``/``step_requests`` files
under a glob) through DuckDB.
"""

from __future__ import annotations

from dataclasses import dataclass

import duckdb
import numpy as np

from shadowd.steps.batch import KIND_NAMES, StepBatch


@dataclass(frozen=True)
class Window:
    """Which steps to read: a time range and/or the last N steps, optionally one engine."""

    since: str | None = None
    until: str | None = None
    last_steps: int | None = None
    engine_id: str | None = None

    def where(self) -> tuple[str, list]:
        clauses, params = ["latency_ms IS NOT NULL", "latency_ms > 0"], []
        if self.since:
            clauses.append("ts >= CAST(? AS TIMESTAMP)")
            params.append(self.since)
        if self.until:
            clauses.append("ts < CAST(? AS TIMESTAMP)")
            params.append(self.until)
        if self.engine_id:
            clauses.append("engine_id = ?")
            params.append(self.engine_id)
        return " AND ".join(clauses), params


def load_batch(
    con: duckdb.DuckDBPyConnection,
    window: Window = Window(),
    *,
    steps_table: str = "steps",
    requests_table: str = "step_requests",
    with_attribution: bool = False,
    request_ids: bool = True,
) -> StepBatch:
    """Steps in ``window`` with their request rows, ordered by (engine, run, step_seq) and,
    within a step, as the tap recorded them.

    That order is explicit because a fit sums each step's rows in it: left to DuckDB's plan it
    changed with the columns read and, on several threads, from one read to the next.
    ``request_ids=False`` leaves ``req_id`` out (``None``): a fit, a re-fit or a stability
    baseline never reads it, and the strings were more than half of a loaded window's memory
    (``benchmarks/window_memory.py``)."""
    where, params = window.where()
    limit = f"ORDER BY ts DESC LIMIT {int(window.last_steps)}" if window.last_steps else ""
    extra = ", s.predicted_ms, s.baseline_ms" if with_attribution else ""
    con.execute(
        f"""
        CREATE OR REPLACE TEMP TABLE _sel AS
        SELECT row_number() OVER (ORDER BY engine_id, run_id, step_seq) - 1 AS idx, *
        FROM (SELECT * FROM {steps_table} WHERE {where} {limit})""",
        params,
    )
    s = con.execute(
        f"SELECT s.latency_ms, s.kind, s.step_seq, s.engine_id, s.run_id, s.ts{extra} "
        "FROM _sel s ORDER BY idx"
    ).fetchnumpy()
    r = con.execute(f"""
        SELECT s.idx, r.new_tokens, r.context_tokens, r.prompt_tokens, r.spec_tokens,
               r.phase = 'prefill' AS prefill, r.tenant{", r.req_id" if request_ids else ""}
        FROM {requests_table} r JOIN _sel s USING (engine_id, run_id, step_seq)
        ORDER BY s.idx, {_within_step(con, requests_table)}""").fetchnumpy()
    con.execute("DROP TABLE _sel")
    kind_code = {k: i for i, k in enumerate(KIND_NAMES)}
    batch = StepBatch(
        latency_ms=np.asarray(s["latency_ms"], dtype=np.float64),
        req_step=np.asarray(r["idx"], dtype=np.int64),
        new_tokens=r["new_tokens"],
        context_tokens=r["context_tokens"],
        prompt_tokens=r["prompt_tokens"],
        prefill=np.asarray(r["prefill"], dtype=bool),
        spec_tokens=r["spec_tokens"],
        tenant=np.asarray(r["tenant"], dtype=object),
        req_id=np.asarray(r["req_id"], dtype=object) if request_ids else None,
        step_seq=np.asarray(s["step_seq"]),
        engine_id=np.asarray(s["engine_id"], dtype=object),
        run_id=np.asarray(s["run_id"], dtype=object),
        ts=np.asarray(s["ts"]),
        kind=np.array([kind_code[k] for k in s["kind"]], dtype=np.int8),
    )
    if with_attribution:
        batch.predicted_ms = np.asarray(s["predicted_ms"], dtype=np.float64)  # type: ignore[attr-defined]
        batch.baseline_ms = np.asarray(s["baseline_ms"], dtype=np.float64)  # type: ignore[attr-defined]
    return batch


def last_steps_within(con: duckdb.DuckDBPyConnection, window: Window, rows: int | None) -> int | None:
    """How many of ``window``'s most recent steps hold at most ``rows`` request rows together
    (``window.last_steps`` with no limit): a re-fit's window bounded in memory, which grows with
    its rows (``benchmarks/window_memory.py``).  Counted from the steps' ``num_requests``."""
    if rows is None:
        return window.last_steps
    where, params = window.where()
    limit = f"LIMIT {int(window.last_steps)}" if window.last_steps else ""
    (n,) = con.execute(
        f"""
        SELECT count(*) FROM (
            SELECT sum(num_requests) OVER (ORDER BY ts DESC ROWS UNBOUNDED PRECEDING) AS held
            FROM (SELECT ts, num_requests FROM steps WHERE {where} ORDER BY ts DESC {limit}))
        WHERE held <= ?""",
        [*params, int(rows)],
    ).fetchone()
    return int(n)


def _within_step(con: duckdb.DuckDBPyConnection, table: str) -> str:
    """The order of a step's rows: as written (``rowid``) in a table; by request id in a view
    (a Parquet export, ``storage.export.attach_exports``), which has no write order to keep."""
    stored = con.execute("SELECT count(*) FROM duckdb_tables() WHERE table_name = ?", [table]).fetchone()
    return "r.rowid" if stored and stored[0] else "r.req_id"


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
