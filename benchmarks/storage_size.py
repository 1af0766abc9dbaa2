"""DuckDB bytes per stored request row, and which columns they go to.

Realistic frames (``benchmarks.framegen``: 256 requests per step, 50-character
request ids that churn as requests finish, 8 tenants, mixed steps) go through
the production pipeline (``Daemon``: columns, attribution after calibration on
the first 1000 steps, the single writer) into a DuckDB file; after
``CHECKPOINT`` the file size divided by the ``step_requests`` rows is the
figure (the ``steps`` table and the catalog included: that is what a host
pays).  Each ``step_requests`` column is then copied alone into a fresh file to
show where the bytes go.
"""

from __future__ import annotations

import json
import os
import sys
import tempfile
from typing import Any

TARGET_BYTES = 16.0


def _fill(db: str, frames: int, attribute: bool) -> dict[str, Any]:
    from benchmarks.framegen import make_frames
    from benchmarks.ingest_daemon import build_config
    from shadowd.daemon.service import Daemon
    from shadowd.tap.frame import decode_frame

    d = os.path.dirname(db)
    daemon = Daemon(
        build_config(f"ipc://{d}/tap.sock", db, attribute=attribute, warmup_steps=1000),
        run_job=lambda fn: fn(),
    )
    daemon.start(http=False, jobs=False)
    marks = []
    try:
        encoded = make_frames(frames)
        for i in range(0, frames, 1000):
            daemon.pipeline([decode_frame(f) for f in encoded[i : i + 1000]])
            if i + 1000 == frames // 2:  # mid-run: checkpointed size, for the marginal growth
                marks.append(daemon.writer.submit(_checkpointed_size(db)).result())
        daemon.writer.flush()
        marks.append(daemon.writer.submit(_checkpointed_size(db)).result())
        calibrated = daemon.calibration is not None
    finally:
        daemon.stop()
    return {"calibrated": calibrated, "marks": marks}


def _checkpointed_size(db: str) -> Any:
    def job(con: Any) -> tuple[int, int]:
        con.execute("CHECKPOINT")
        return con.execute("SELECT count(*) FROM step_requests").fetchone()[0], os.path.getsize(db)

    return job


def _column_bytes(db: str, table: str) -> dict[str, int]:
    import duckdb

    con = duckdb.connect()
    con.execute(f"ATTACH '{db}' AS src (READ_ONLY)")
    cols = [
        r[0]
        for r in con.execute(
            f"SELECT column_name FROM duckdb_columns() WHERE database_name = 'src' "
            f"AND table_name = '{table}' ORDER BY column_index"
        ).fetchall()
    ]
    out = {}
    tmp = tempfile.mkdtemp(prefix="shd-col-")
    for i, c in enumerate(cols):
        path = os.path.join(tmp, f"c{i}.duckdb")
        con.execute(f"ATTACH '{path}' AS c{i}")
        con.execute(f"CREATE TABLE c{i}.t AS SELECT {c} FROM src.{table}")
        con.execute(f"DETACH c{i}")
        empty = os.path.join(tmp, f"e{i}.duckdb")
        con.execute(f"ATTACH '{empty}' AS e{i}")
        con.execute(f"CREATE TABLE e{i}.t AS SELECT {c} FROM src.{table} LIMIT 0")
        con.execute(f"DETACH e{i}")
        out[c] = os.path.getsize(path) - os.path.getsize(empty)
        os.remove(path)
        os.remove(empty)
    con.close()
    return out


def measure(frames: int = 8000, attribute: bool = True) -> dict[str, Any]:
    import duckdb

    d = tempfile.mkdtemp(prefix="shd-size-")
    db = os.path.join(d, "size.duckdb")
    info = _fill(db, frames, attribute)
    con = duckdb.connect(db)
    con.execute("CHECKPOINT")
    rows = con.execute("SELECT count(*) FROM step_requests").fetchone()[0]
    steps = con.execute("SELECT count(*) FROM steps").fetchone()[0]
    attributed = con.execute("SELECT count(*) FROM step_requests WHERE llmvisor_ms IS NOT NULL").fetchone()[0]
    distinct_ids = con.execute("SELECT count(DISTINCT req_id) FROM step_requests").fetchone()[0]
    block_size, total_blocks, used_blocks, free_blocks = con.execute(
        "SELECT block_size, total_blocks, used_blocks, free_blocks FROM pragma_database_size()"
    ).fetchone()
    con.close()
    size = os.path.getsize(db)
    per_col = _column_bytes(db, "step_requests")
    steps_cols = _column_bytes(db, "steps")
    per_row = {k: round(v / rows, 2) for k, v in sorted(per_col.items(), key=lambda kv: -kv[1])}
    (rows_mid, size_mid), (rows_end, size_end) = info["marks"]
    marginal = (size_end - size_mid) / (rows_end - rows_mid)
    return {
        "attribute": attribute,
        "calibrated": info["calibrated"],
        "rows": rows,
        "steps": steps,
        "attributed_rows": attributed,
        "distinct_req_ids": distinct_ids,
        "file_bytes": size,
        "bytes_per_row": round(size / rows, 2),
        "used_bytes_per_row": round(used_blocks * block_size / rows, 2),
        "free_blocks": free_blocks,
        "total_blocks": total_blocks,
        "block_size": block_size,
        "step_requests_column_bytes_per_row": per_row,
        "step_requests_bytes_per_row": round(sum(per_col.values()) / rows, 2),
        "steps_bytes_per_request_row": round(sum(steps_cols.values()) / rows, 2),
        "marginal_bytes_per_row": round(marginal, 2),
        "marginal_rows": rows_end - rows_mid,
        "bytes_per_row_at_mid": round(size_mid / rows_mid, 2),
        "rows_at_mid": rows_mid,
        "target_bytes": TARGET_BYTES,
        "met": size / rows <= TARGET_BYTES,
    }


def free_blocks_over_time(batches: int = 40, batch_frames: int = 1000) -> list[dict[str, Any]]:
    """Free blocks after a ``CHECKPOINT`` every 4 batches of a longer attributed run: whether
    what the checkpoints free stays bounded or grows with the file."""
    from benchmarks.framegen import make_frames
    from benchmarks.ingest_daemon import build_config
    from shadowd.daemon.service import Daemon
    from shadowd.tap.frame import decode_frame

    d = tempfile.mkdtemp(prefix="shd-free-")
    db = os.path.join(d, "free.duckdb")
    daemon = Daemon(
        build_config(f"ipc://{d}/tap.sock", db, attribute=True, warmup_steps=1000), run_job=lambda fn: fn()
    )
    daemon.start(http=False, jobs=False)

    def mark(con: Any) -> dict[str, Any]:
        con.execute("CHECKPOINT")
        rows = con.execute("SELECT count(*) FROM step_requests").fetchone()[0]
        total, free = con.execute("SELECT total_blocks, free_blocks FROM pragma_database_size()").fetchone()
        return {
            "rows": rows,
            "total_blocks": total,
            "free_blocks": free,
            "bytes_per_row": round(os.path.getsize(db) / rows, 2),
        }

    out = []
    try:
        encoded = make_frames(4 * batch_frames)
        for b in range(batches):
            part = encoded[(b % 4) * batch_frames : (b % 4 + 1) * batch_frames]
            daemon.pipeline([decode_frame(f) for f in part])
            if b % 4 == 3:
                out.append(daemon.writer.submit(mark).result())
    finally:
        daemon.stop()
    return out


def run(quick: bool = False) -> dict:
    frames = 4000 if quick else 16000
    out = [measure(frames, attribute=False), measure(frames, attribute=True)]
    out[1]["free_blocks_over_time"] = free_blocks_over_time(batches=16 if quick else 40)
    return {"storage": out}


if __name__ == "__main__":
    print(json.dumps(run("--quick" in sys.argv), indent=1))
