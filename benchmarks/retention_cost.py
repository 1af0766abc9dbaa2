"""Retention over 14 days of a busy host: does any one transaction grow with the database?

Builds a DuckDB file holding ``days`` of raw rows (``steps_per_s`` steps a second, each with
``requests_per_step`` request rows, several tenants) with SQL ``range()``, then runs
``storage.retention.run_retention`` as the daemon does (one writer job per chunk) and records
every chunk's duration: the watchdog sees progress after each chunk, so the longest chunk, not
the whole run, is what must stay below ``WRITER_STALL_S``.  The same run with one chunk covering
everything (a transaction per phase, as before chunking) is timed for comparison.  A busy host's full rate (~30 steps/s x 128 requests) is ~330 M request
rows a day; the default here is a CI-machine scale, and the chunk duration is reported per
chunk is bounded in request rows (``CHUNK_ROWS``), not time, so its duration does not grow with
the host's rate or the database's age.

    .venv/bin/python -m benchmarks.run --only retention      # 7 and 14 days, into docs/benchmarks.md
    .venv/bin/python -m benchmarks.retention [--days 14] [--steps-per-s 1] [--requests-per-step 8]
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import tempfile
import time
from pathlib import Path
from typing import Any

import duckdb

from storage.retention import CHUNK_ROWS, run_retention
from storage.schema import migrate

NOW = dt.datetime(2025, 3, 15, 0, 0)
BUSY_STEPS_PER_S, BUSY_REQUESTS_PER_STEP = 30, 128  # the busy host, for scale in the docs


def busy_database(
    path: str, *, days: int, steps_per_s: float, requests_per_step: int, end: dt.datetime = NOW
) -> dict[str, int]:
    """``days`` of raw rows ending at ``end``, generated inside DuckDB; returns row counts."""
    con = duckdb.connect(path)
    migrate(con)
    steps = int(days * 86400 * steps_per_s)
    start = end - dt.timedelta(days=days)
    every_us = int(1e6 / steps_per_s)
    con.execute(
        """INSERT INTO steps (engine_id, run_id, step_seq, ts, latency_ms, kind, num_requests,
                              prefill_tokens, decode_tokens, dropped_frames_total, predicted_ms)
           SELECT 'e0', 'run1', range, $start + to_microseconds(range * $every), 20.0, 'decode',
                  $k, 0, $k, 0, 19.0
           FROM range($n)""",
        {"start": start, "every": every_us, "k": requests_per_step, "n": steps},
    )
    con.execute(
        """INSERT INTO step_requests (engine_id, run_id, step_seq, req_id, tenant, phase,
                   new_tokens, context_tokens, prompt_tokens, spec_tokens, llmvisor_ms,
                   llmvisor_measured_ms, vtc_ms, vtc_tokens)
           SELECT 'e0', 'run1', s, 'q' || ((s // 64) * $k + j), 't' || (j % 8), 'decode',
                  1, 1000 + j, 500, 0, 1.0, 1.1, 1.2, 1.0
           FROM range($n) a(s), range($k) b(j)
           ORDER BY s, j""",
        {"k": requests_per_step, "n": steps},
    )
    con.execute("CHECKPOINT")
    counts = {t: con.execute(f"SELECT count(*) FROM {t}").fetchone()[0] for t in ("steps", "step_requests")}
    con.close()
    return counts


def timed_chunks(con: duckdb.DuckDBPyConnection, durations: list[float]):
    def run(fn):
        t0 = time.perf_counter()
        try:
            return fn(con)
        finally:
            durations.append(time.perf_counter() - t0)

    return run


def measure(days: int, steps_per_s: float, requests_per_step: int) -> dict[str, Any]:
    """Chunked and unchunked retention over one freshly built database of ``days``."""
    raw_days = max(1, days // 2)  # half the rows are pruned
    out: dict[str, Any] = {"days": days, "raw_days": raw_days, "chunk_rows": CHUNK_ROWS}
    with tempfile.TemporaryDirectory(prefix="shadowd-retention-") as tmp:
        path = os.path.join(tmp, "busy.duckdb")
        t0 = time.perf_counter()
        out["rows"] = busy_database(
            path, days=days, steps_per_s=steps_per_s, requests_per_step=requests_per_step
        )
        out["build_s"] = time.perf_counter() - t0
        out["file_bytes"] = os.path.getsize(path)
        single = os.path.join(tmp, "single.duckdb")
        Path(single).write_bytes(Path(path).read_bytes())
        whole = 1 << 62  # one transaction per phase, as before chunking
        for mode, file, chunk in (("chunked", path, CHUNK_ROWS), ("unchunked", single, whole)):
            con = duckdb.connect(file)
            con.execute("SET threads = 1")  # the daemon's [storage] defaults
            con.execute("SET memory_limit = '192MB'")
            durations: list[float] = []
            t0 = time.perf_counter()
            res = run_retention(
                timed_chunks(con, durations), raw_days=raw_days, rollup_days=400, now=NOW, chunk_rows=chunk
            )
            total = time.perf_counter() - t0
            con.close()
            out[mode] = {
                "total_s": total,
                "transactions": len(durations),
                "longest_s": max(durations),
                "median_s": sorted(durations)[len(durations) // 2],
                "requests_deleted": res.requests_deleted,
                "rollup_rows": res.rollup_rows,
            }
    return out


def run(quick: bool) -> dict[str, Any]:
    """``benchmarks.run`` entry: the same host rate over 7 and 14 days, so the table shows what
    grows with the database (the unchunked transaction) and what does not (each chunk)."""
    rate, per_step = (0.5, 8) if quick else (1.0, 8)
    sizes = [measure(days, rate, per_step) for days in (7, 14)]
    return {
        "retention": {
            "steps_per_s": rate,
            "requests_per_step": per_step,
            "stall_bound_s": 30.0,  # shadowd.daemon.status.WRITER_STALL_S
            "busy_steps_per_s": BUSY_STEPS_PER_S,
            "busy_requests_per_step": BUSY_REQUESTS_PER_STEP,
            "sizes": sizes,
        }
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--days", type=int, default=14)
    ap.add_argument("--steps-per-s", type=float, default=1.0)
    ap.add_argument("--requests-per-step", type=int, default=8)
    a = ap.parse_args()
    print(json.dumps(measure(a.days, a.steps_per_s, a.requests_per_step), indent=2, default=str))


if __name__ == "__main__":
    main()
