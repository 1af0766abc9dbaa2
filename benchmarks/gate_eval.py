"""Gate evaluation time over 24 h of stored data.

The gate job runs every 30 s over the last 24 h of steps (``GateConfig``, ``GateKeeper``), so its
cost grows with what a day of traffic leaves in DuckDB.  This benchmark builds a file holding
24 h of one engine at ``RATE`` steps/s with ``REQUESTS`` requests per step (2.6 M steps and
1.7·10⁸ request rows by default), directly with ``INSERT … SELECT`` from ``range()`` (through the
socket it would take hours here), with the daemon's schema and realistic shapes: mostly decode
steps, requests that live ~300 steps, 8 tenants, contexts that grow, predicted and baseline
latencies a few percent off the measured.  Then the production ``GateKeeper`` on the daemon's
``Writer`` (``[storage]`` defaults: 256 MB, one DuckDB thread) evaluates it several times: the
first evaluation after opening the file (cold) and the median of the rest (warm), with the time
of each evidence query.

    .venv/bin/python -m benchmarks.run --only gate_eval
"""

from __future__ import annotations

import os
import statistics
import tempfile
import time
from typing import Any

RATE = 30  # steps per second
REQUESTS = 64  # requests per step
HOURS = 24.0
TARGET_S = 5.0  # an evaluation must leave the 30 s interval mostly idle

_STEPS_SQL = """
INSERT INTO steps
SELECT 'engine-0', 'run-0', i, TIMESTAMP '2026-11-29 00:00:00' + to_microseconds((i * 1e6 / {rate})::BIGINT),
       lat, kind, {req}, CASE WHEN kind = 'decode' THEN 0 ELSE 512 END, {req},
       NULL, NULL, NULL, NULL, 0,
       lat * (1 + 0.02 * (hash(i, 1) % 1000 / 500.0 - 1)),
       lat * (1 + 0.15 * (hash(i, 2) % 1000 / 500.0 - 1)), 'v-bench'
FROM (SELECT i, CASE WHEN i % 20 = 0 THEN 'mixed' WHEN i % 97 = 0 THEN 'prefill' ELSE 'decode' END AS kind,
             15.0 + (i % 300) * 0.01 + (hash(i) % 100) / 100.0 AS lat
      FROM range({lo}, {hi}) t(i))
"""

_REQUESTS_SQL = """
INSERT INTO step_requests
SELECT 'engine-0', 'run-0', s, 'req-' || (s // 300) || '-' || k, 'tenant-' || (k % 8),
       CASE WHEN s % 20 = 0 AND k = 0 THEN 'prefill' ELSE 'decode' END,
       CASE WHEN s % 20 = 0 AND k = 0 THEN 512 ELSE 1 END,
       500 + (s % 300) + 37 * k, 400 + 37 * k, 0, 0,
       0.2 + (k % 7) * 0.01, 0.2 + (k % 7) * 0.01, 0.23, 1.0, 'v-bench'
FROM (SELECT i // {req} AS s, i % {req} AS k FROM range({lo} * {req}, {hi} * {req}) t(i))
"""


def build(path: str, hours: float, rate: int = RATE, requests: int = REQUESTS) -> dict[str, Any]:
    """Write ``hours`` of synthetic traffic into a fresh daemon database at ``path``."""
    import duckdb

    from storage.schema import migrate

    t0 = time.perf_counter()
    con = duckdb.connect(path)
    migrate(con)
    n = int(hours * 3600 * rate)
    chunk = 200_000  # steps per INSERT: bounded memory
    for lo in range(0, n, chunk):
        hi = min(n, lo + chunk)
        con.execute(_STEPS_SQL.format(rate=rate, req=requests, lo=lo, hi=hi))
        con.execute(_REQUESTS_SQL.format(req=requests, lo=lo, hi=hi))
    con.execute("INSERT INTO model_versions VALUES ('v-bench', 'gpu=bench', now(), 1000, NULL, NULL, '{}')")
    con.execute("CHECKPOINT")
    rows = con.execute("SELECT count(*) FROM step_requests").fetchone()[0]
    con.close()
    return {
        "steps": n,
        "request_rows": int(rows),
        "hours": hours,
        "rate_steps_per_s": rate,
        "requests_per_step": requests,
        "build_s": round(time.perf_counter() - t0, 1),
        "file_bytes": os.path.getsize(path),
    }


def _timed(fn: Any) -> tuple[Any, float]:
    t0 = time.perf_counter()
    out = fn()
    return out, time.perf_counter() - t0


def evaluate(path: str, repeats: int = 5) -> dict[str, Any]:
    """Time ``GateKeeper.evaluate`` (and each evidence query) on the file at ``path``."""
    import checks
    from shadowd.daemon.config import StorageConfig
    from shadowd.daemon.gate_evidence import DaemonFacts, class_accuracy, drop_rate, gather
    from shadowd.daemon.gatekeeper import GateKeeper
    from storage.writer import Writer

    st = StorageConfig()
    writer = Writer(path, memory_limit=st.memory_limit, threads=st.threads)
    writer.start()
    facts = DaemonFacts(
        model_version="v-bench",
        calibrated_platform_key="gpu=bench",
        running_platform_key="gpu=bench",
        watched_classes=("decode", "mixed"),
        envelope={"extrapolated_fraction": 0.0, "new_tenants": []},
        stability={},
    )
    keeper = GateKeeper(checks.GatePolicy(), writer, lambda: facts, window_s=86400.0)
    try:
        totals = []
        for _ in range(repeats):
            decision, dt = _timed(keeper.evaluate)
            totals.append(dt)
        con = writer.cursor()
        parts = {
            "accuracy_by_class": _timed(lambda: class_accuracy(con, "v-bench", 86400.0))[1],
            "drop_rate": _timed(lambda: drop_rate(con, 86400.0))[1],
            "gather_all": _timed(lambda: gather(con, facts, window_s=86400.0, required_classes=("decode",)))[
                1
            ],
        }
        writer.flush()
    finally:
        writer.close()
    return {
        "cold_s": round(totals[0], 3),
        "warm_median_s": round(statistics.median(totals[1:]), 3),
        "warm_max_s": round(max(totals[1:]), 3),
        "repeats": repeats,
        "query_s": {k: round(v, 3) for k, v in parts.items()},
        "verdict": decision["verdict"],
        "evidence_steps": decision["evidence"].get("accuracy"),
        "memory_limit": st.memory_limit,
        "duckdb_threads": st.threads,
    }


def run(quick: bool) -> dict[str, Any]:
    hours = 4.0 if quick else HOURS
    with tempfile.TemporaryDirectory(prefix="shd-gate-") as d:
        path = os.path.join(d, "day.duckdb")
        built = build(path, hours)
        timing = evaluate(path)
    res = {**built, **timing, "target_s": TARGET_S, "met": timing["warm_max_s"] <= TARGET_S}
    res["evidence_steps"] = {k: v["steps"] for k, v in (res.get("evidence_steps") or {}).items()}
    return {"gate_eval": res}


if __name__ == "__main__":
    import json
    import sys

    print(json.dumps(run("--quick" in sys.argv), indent=1))
