"""DuckDB's own floor for the daemon's append: µs per ``step_requests`` row, by how it is fed.

The ingest target is 1 µs per request row for everything on one core, so what DuckDB alone costs
per row decides how much is left for decoding and attribution.  One million rows shaped like the
daemon's (5,000 distinct 48-character request ids, 8 tenants, 5 % prefill rows, four REAL shares),
inserted with ``INSERT … SELECT`` from registered numpy columns as ``storage.writer.Writer`` does,
one DuckDB thread, best of ``repeats``:

- as the daemon feeds it (object arrays for the six VARCHAR columns), into a file and in memory;
- step-level strings as SQL constants and ``phase`` from a boolean (what a slimmer pipeline could do);
- strings as int codes into per-batch name lists (``list_extract``);
- the ten numeric columns alone, and single VARCHAR columns alone;
- free blocks left in the file after ``CHECKPOINT``, and the CPU cost per row, when the same
  rows arrive in appends of different sizes (DuckDB's row groups hold 122,880 rows; the writer
  cuts its appends where they end, ``storage.row_groups``).

    .venv/bin/python -m benchmarks.run --only duckdb_append
"""

from __future__ import annotations

import os
import tempfile
import time
from typing import Any

import numpy as np

COLUMNS = """engine_id VARCHAR, run_id VARCHAR, step_seq BIGINT, req_id VARCHAR, tenant VARCHAR,
phase VARCHAR, new_tokens INTEGER, context_tokens INTEGER, prompt_tokens INTEGER, spec_tokens INTEGER,
preemptions SMALLINT, llmvisor_ms REAL, llmvisor_measured_ms REAL, vtc_ms REAL, vtc_tokens REAL,
model_version VARCHAR"""
NUMERIC = (
    "step_seq",
    "new_tokens",
    "context_tokens",
    "prompt_tokens",
    "spec_tokens",
    "preemptions",
    "llmvisor_ms",
    "llmvisor_measured_ms",
    "vtc_ms",
    "vtc_tokens",
)


def _data(n: int) -> dict[str, Any]:
    rng = np.random.default_rng(0)
    ids = np.array([f"request-{i:040d}" for i in range(5000)], dtype=object)
    tenants = np.array([f"tenant-{i}" for i in range(8)], dtype=object)
    rc, tc = rng.integers(0, len(ids), n).astype(np.int32), rng.integers(0, 8, n).astype(np.int32)
    pre = rng.random(n) < 0.05
    cols: dict[str, np.ndarray] = {
        "engine_id": np.full(n, "engine-0", dtype=object),
        "run_id": np.full(n, "run-abc", dtype=object),
        "step_seq": np.arange(n, dtype=np.int64) // 256,
        "req_id": ids[rc],
        "tenant": tenants[tc],
        "phase": np.array(["decode", "prefill"], dtype=object)[pre.astype(np.int8)],
    }
    for k in ("new_tokens", "context_tokens", "prompt_tokens", "spec_tokens"):
        cols[k] = rng.integers(0, 5000, n).astype(np.int32)
    cols["preemptions"] = np.zeros(n, np.int16)
    for k in ("llmvisor_ms", "llmvisor_measured_ms", "vtc_ms", "vtc_tokens"):
        cols[k] = rng.random(n).astype(np.float32)
    cols["model_version"] = np.full(n, "v-123456", dtype=object)
    return {"cols": cols, "ids": ids, "tenants": tenants, "rc": rc, "tc": tc, "pre": pre}


def _insert(
    con: Any, table: str, columns: dict[str, np.ndarray], select: str, params: list | None = None
) -> float:
    con.register("buf", columns)
    try:
        t = time.perf_counter()
        con.execute("BEGIN")
        con.execute(f"INSERT INTO {table} SELECT {select} FROM buf", params or [])
        con.execute("COMMIT")
        return time.perf_counter() - t
    finally:
        con.unregister("buf")


def measure(n: int = 1_000_000, repeats: int = 3) -> dict[str, Any]:
    import duckdb

    d = _data(n)
    cols = d["cols"]
    num = {k: cols[k] for k in NUMERIC}
    coded = {**num, "rc": d["rc"], "tc": d["tc"], "pre": d["pre"]}
    slim = {k: v for k, v in cols.items() if k not in ("engine_id", "run_id", "model_version", "phase")}
    slim["pre"] = d["pre"]
    tail = (
        "new_tokens, context_tokens, prompt_tokens, spec_tokens, preemptions, "
        "llmvisor_ms, llmvisor_measured_ms, vtc_ms, vtc_tokens"
    )
    phase = "CASE WHEN pre THEN 'prefill' ELSE 'decode' END"
    cases = {
        "object columns, as the daemon feeds them (file)": ("file", cols, ", ".join(cols), None),
        "object columns (in-memory database)": ("memory", cols, ", ".join(cols), None),
        "step-level strings as SQL constants, phase from a boolean (file)": (
            "file",
            slim,
            f"'engine-0', 'run-abc', step_seq, req_id, tenant, {phase}, {tail}, 'v-123456'",
            None,
        ),
        "strings as codes into per-batch name lists (file)": (
            "file",
            coded,
            f"'engine-0', 'run-abc', step_seq, list_extract($1::VARCHAR[], rc + 1), "
            f"list_extract($2::VARCHAR[], tc + 1), {phase}, {tail}, 'v-123456'",
            [d["ids"].tolist(), d["tenants"].tolist()],
        ),
    }
    out: dict[str, float] = {}
    with tempfile.TemporaryDirectory(prefix="shd-append-") as tmp:
        cons = {"file": duckdb.connect(os.path.join(tmp, "a.duckdb")), "memory": duckdb.connect()}
        for con in cons.values():
            con.execute("SET threads = 1")
            con.execute(f"CREATE TABLE t ({COLUMNS})")
            con.execute(f"CREATE TABLE num AS SELECT {', '.join(NUMERIC)} FROM t LIMIT 0")
            for k in ("req_id", "tenant", "engine_id"):
                con.execute(f"CREATE TABLE s_{k} ({k} VARCHAR)")
        for name, (where, columns, select, params) in cases.items():
            out[name] = min(_insert(cons[where], "t", columns, select, params) for _ in range(repeats))
        out["the ten numeric columns alone (file)"] = min(
            _insert(cons["file"], "num", num, ", ".join(NUMERIC)) for _ in range(repeats)
        )
        for k in ("req_id", "tenant", "engine_id"):
            out[f"{k} alone (file)"] = min(
                _insert(cons["file"], f"s_{k}", {k: cols[k]}, k) for _ in range(repeats)
            )
        for con in cons.values():
            con.close()
    return {"rows": n, "repeats": repeats, "us_per_row": {k: round(v / n * 1e6, 3) for k, v in out.items()}}


def free_blocks_by_append_size(
    n: int = 2_000_000,
    sizes: tuple[tuple[int, ...], ...] = (
        (131_072,),
        (122_880,),
        (245_760,),
        (65_536,),
        (65_536, 57_344),
        (122_680, 123_080),
        (20_000,),
    ),
) -> list[dict]:
    """Free and total blocks after appending ``n`` rows in transactions of the given sizes (cycled),
    and the appends' CPU time per row (the final ``CHECKPOINT`` not included)."""
    import duckdb

    cols = _data(n)["cols"]
    out = []
    for pattern in sizes:
        with tempfile.TemporaryDirectory(prefix="shd-blocks-") as tmp:
            path = os.path.join(tmp, "b.duckdb")
            con = duckdb.connect(path)
            con.execute("SET threads = 1")
            con.execute(f"CREATE TABLE t ({COLUMNS})")
            i = j = 0
            cpu = time.process_time()
            while i < n:
                size = pattern[j % len(pattern)]
                _insert(con, "t", {k: v[i : i + size] for k, v in cols.items()}, "*")
                i, j = i + size, j + 1
            cpu = time.process_time() - cpu
            con.execute("CHECKPOINT")
            bs, total, used, free = con.execute(
                "SELECT block_size, total_blocks, used_blocks, free_blocks FROM pragma_database_size()"
            ).fetchone()
            con.close()
            out.append(
                {
                    "append_rows": list(pattern),
                    "free_blocks": free,
                    "total_blocks": total,
                    "file_over_used": round(os.path.getsize(path) / (used * bs), 2),
                    "cpu_us_per_row": round(cpu / n * 1e6, 3),
                }
            )
    return out


def run(quick: bool = False) -> dict:
    res = measure(n=300_000 if quick else 1_000_000)
    res["free_blocks_by_append_size"] = free_blocks_by_append_size(n=1_000_000 if quick else 2_000_000)
    return {"duckdb_append": res}


if __name__ == "__main__":
    import json
    import sys

    print(json.dumps(run("--quick" in sys.argv), indent=1))
