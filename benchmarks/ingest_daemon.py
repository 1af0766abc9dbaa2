"""The real shadowd ``Daemon`` in its own process, reporting its progress as JSON lines.

Used by the ingest and overload benchmarks: ``python -m benchmarks.ingest_daemon
--listen EP --db PATH [--cpu N] [--attribute]``.  Every ``--report-every``
seconds it prints one JSON object (rows/steps written, frames received, faults,
writer drops and errors, queue depth, RSS and peak RSS); on SIGTERM it stops the
daemon (draining and flushing) and prints a final object with ``"final": true``.

``--attribute`` configures a platform and a short warm-up, so the daemon
calibrates on the first frames (LLMVisor + token model + drift thresholds) and
attributes every later step, as in production; ``calibrated`` in the reports
says from when.  ``--cpu`` pins the whole process (every thread) to one CPU.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import sys
import tempfile
import threading
import time


def rss_mib() -> tuple[float, float]:
    """(current, peak) resident set size of this process in MiB."""
    cur = peak = 0.0
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                cur = int(line.split()[1]) / 1024
            elif line.startswith("VmHWM:"):
                peak = int(line.split()[1]) / 1024
    return cur, peak


def build_config(listen: str, db: str, *, attribute: bool, warmup_steps: int) -> object:
    from shadowd.daemon.config import parse_config

    state = os.path.join(tempfile.mkdtemp(prefix="shd-bench-state-"), "gate.json")
    doc: dict = {
        "listen": listen,
        "db": db,
        "state_file": state,
        "http": "127.0.0.1:19477",
    }  # not started (http=False)
    if attribute:
        doc["calibration"] = {
            "warmup_steps": warmup_steps,
            "platform": {
                "gpu": "bench",
                "model": "bench",
                "dtype": "bf16",
                "tp": 1,
                "vllm": "0.33",
                "attention_backend": "bench",
            },
        }
        doc["drift"] = {"sim_steps": 20_000, "adwin_sim_steps": 20_000}
    return parse_config(doc)


def duckdb_mib(daemon) -> float | None:
    try:
        cur = daemon.writer.cursor()
        try:
            return round(
                cur.execute("SELECT sum(memory_usage_bytes) FROM duckdb_memory()").fetchone()[0] / 2**20, 1
            )
        finally:
            cur.close()
    except Exception:
        return None


def snapshot(daemon, t0: float) -> dict:
    rx, w = daemon.receiver, daemon.writer.stats
    cur, peak = rss_mib()
    return {
        "t": round(time.monotonic() - t0, 3),
        "rows_written": w.rows_written.get("step_requests", 0),
        "steps_written": w.rows_written.get("steps", 0),
        "frames_received": rx.frames_received if rx else 0,
        "rows_received": rx.rows_received if rx else 0,
        "faults": dict(rx.faults) if rx else {},
        "writer_rows_dropped": w.rows_dropped,
        "writer_errors": w.errors,
        "writer_last_error": w.last_error,
        "writer_queue": daemon.writer.queue_depth,
        "rows_ingested": daemon.pipeline.rows_ingested,
        "calibrated": daemon.calibration is not None,
        "rss_mib": round(cur, 1),
        "peak_rss_mib": round(peak, 1),
        "duckdb_mib": duckdb_mib(daemon),
        "writer_buffered_rows": sum(getattr(daemon.writer, "_buffered_rows", {}).values()),
    }


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--listen", required=True)
    ap.add_argument("--db", required=True)
    ap.add_argument("--cpu", type=int, default=None)
    ap.add_argument("--attribute", action="store_true")
    ap.add_argument("--warmup-steps", type=int, default=1000)
    ap.add_argument("--report-every", type=float, default=0.5)
    ap.add_argument(
        "--duckdb-memory-limit",
        default=None,
        help="SET memory_limit on the writer's DuckDB (e.g. 256MB; 'reset': DuckDB's own "
        "default); default: the daemon's [storage] memory_limit",
    )
    ap.add_argument("--duckdb-threads", type=int, default=None, help="SET threads on the writer's DuckDB")
    a = ap.parse_args(argv)
    if a.cpu is not None:
        os.sched_setaffinity(0, {a.cpu})
    from shadowd.daemon.service import Daemon

    daemon = Daemon(build_config(a.listen, a.db, attribute=a.attribute, warmup_steps=a.warmup_steps))
    stop = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stop.set())
    signal.signal(signal.SIGINT, lambda *_: stop.set())
    daemon.start(http=False, jobs=True)
    settings = [("memory_limit", a.duckdb_memory_limit), ("threads", a.duckdb_threads)]
    for name, value in settings:
        if value == "reset":
            daemon.writer.submit(lambda con, n=name: con.execute(f"RESET {n}")).result()
        elif value is not None:
            daemon.writer.submit(lambda con, n=name, v=value: con.execute(f"SET {n} = ?", [v])).result()
    t0 = time.monotonic()
    print(json.dumps({"ready": True}), flush=True)
    while not stop.wait(a.report_every):
        print(json.dumps(snapshot(daemon, t0)), flush=True)
    t_stop = time.monotonic()
    daemon.stop()
    final = snapshot(daemon, t0)
    final.update(final=True, stop_s=round(time.monotonic() - t_stop, 3))
    print(json.dumps(final), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
