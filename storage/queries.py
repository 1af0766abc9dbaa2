"""Read-side SQL shared by the daemon and the CLI (plain functions over a connection)."""

from __future__ import annotations

import duckdb


def known_runs(con: duckdb.DuckDBPyConnection, limit: int = 1024) -> dict[tuple[str, str], tuple[int, int]]:
    """(engine, run) -> (last step_seq, dropped frames at that step), to resume gap counting;
    the ``limit`` most recent runs, oldest first."""
    rows = con.execute(
        """
        SELECT engine_id, run_id, last_seq, last_dropped FROM (
          SELECT engine_id, run_id, arg_max(step_seq, step_seq) AS last_seq,
                 arg_max(dropped_frames_total, step_seq) AS last_dropped, max(ts) AS last_ts
          FROM steps GROUP BY ALL ORDER BY last_ts DESC LIMIT ?)
        ORDER BY last_ts""",
        [limit],
    ).fetchall()
    return {(e, r): (int(s), int(d)) for e, r, s, d in rows}


def known_tenants(con: duckdb.DuckDBPyConnection, limit: int) -> list[str]:
    """Tenants of the stored per-minute roll-ups, most attributed time first (at most ``limit``)."""
    return [
        r[0]
        for r in con.execute(
            """SELECT tenant FROM tenant_minutes GROUP BY tenant
               ORDER BY sum(coalesce(llmvisor_measured_ms, vtc_ms, 0)) DESC, tenant LIMIT ?""",
            [limit],
        ).fetchall()
    ]
