"""Read-side SQL shared by the daemon and the CLI (plain functions over a connection)."""

from __future__ import annotations

import duckdb


def known_runs(con: duckdb.DuckDBPyConnection) -> dict[tuple[str, str], tuple[int, int]]:
    """(engine, run) -> (last step_seq, dropped frames at that step), to resume gap counting."""
    rows = con.execute("""
        SELECT engine_id, run_id, arg_max(step_seq, step_seq), arg_max(dropped_frames_total, step_seq)
        FROM steps GROUP BY ALL""").fetchall()
    return {(e, r): (int(s), int(d)) for e, r, s, d in rows}
