"""Peak RSS of the daemon under sustained overload, and what was dropped, where, and counted.

The daemon (``benchmarks.ingest_daemon``, pinned to one CPU, attributing after
calibration) is fed by a generator that sends as fast as it can with the tap's
non-blocking semantics (``--noblock``: ``IMMEDIATE`` + ``SNDHWM``, a refused
frame is dropped and counted at the sender), far faster than the daemon can
store.  Reported: the daemon's peak RSS (``VmHWM``), frames sent and dropped by
the sender, frames received by the daemon and dropped after it (the writer's
``rows_dropped`` when its queue is full), rows stored, and the frames still in
flight when the generator stopped (queued in zmq; drained on SIGTERM).
"""

from __future__ import annotations

import json
import os
import sys
import tempfile
import time
from typing import Any

from benchmarks.ingest import DaemonProc, run_generator

TARGET_MIB = 500.0


def measure(seconds: float = 30.0, requests: int = 256, memory_limit: str | None = None) -> dict[str, Any]:
    d = tempfile.mkdtemp(prefix="shd-overload-")
    endpoint, db = f"ipc://{d}/tap.sock", os.path.join(d, "overload.duckdb")
    extra = ["--duckdb-memory-limit", memory_limit] if memory_limit else []
    daemon = DaemonProc(endpoint, db, "--cpu", "0", "--attribute", "--warmup-steps", "1000", *extra)
    try:
        gen = run_generator(
            endpoint,
            "--frames",
            "3000",
            "--requests",
            str(requests),
            "--seconds",
            str(seconds),
            "--noblock",
            "--hwm",
            "1000",
            "--cpu",
            "1",
        )
        at_gen_end = dict(daemon.last)
        time.sleep(2.0)
    finally:
        t0 = time.monotonic()
        final = daemon.stop(timeout=600)
        drain_s = time.monotonic() - t0
    peak = max([r["peak_rss_mib"] for r in daemon.reports] + [final.get("peak_rss_mib", 0)])
    frame_rows = requests
    return {
        "duckdb_memory_limit": {
            None: f"daemon default ([storage] memory_limit = {_default_limit()})",
            "reset": "DuckDB's own default (80% of RAM)",
        }.get(memory_limit, memory_limit),
        "seconds": seconds,
        "requests_per_frame": requests,
        "frames_sent": gen["sent"],
        "frames_dropped_by_sender": gen["dropped"],
        "send_rate_frames_per_s": round(gen["sent"] / gen["seconds"]),
        "frames_received": final.get("frames_received"),
        "frames_received_at_generator_stop": at_gen_end.get("frames_received"),
        "rows_stored": final.get("rows_written"),
        "rows_dropped_by_writer": final.get("writer_rows_dropped"),
        "frames_in_flight_at_stop": gen["sent"] - (at_gen_end.get("frames_received") or 0),
        "unaccounted_frames": gen["sent"] - (final.get("frames_received") or 0),
        "stored_plus_dropped_rows": (final.get("rows_written") or 0)
        + (final.get("writer_rows_dropped") or 0),
        "rows_received": (final.get("frames_received") or 0) * frame_rows,
        "faults": final.get("faults"),
        "writer_errors": final.get("writer_errors"),
        "peak_rss_mib": peak,
        "drain_on_sigterm_s": round(drain_s, 1),
        "timeline": [
            {
                k: r[k]
                for k in (
                    "t",
                    "rss_mib",
                    "duckdb_mib",
                    "frames_received",
                    "rows_written",
                    "writer_queue",
                    "writer_buffered_rows",
                )
            }
            for r in daemon.reports[::2]
        ],
        "target_mib": TARGET_MIB,
        "met": peak <= TARGET_MIB,
    }


def _default_limit() -> str:
    from shadowd.daemon.config import StorageConfig

    return StorageConfig().memory_limit


def run(quick: bool = False) -> dict:
    seconds = 12.0 if quick else 30.0
    return {"overload": [measure(seconds=seconds), measure(seconds=seconds, memory_limit="reset")]}


if __name__ == "__main__":
    print(json.dumps(run("--quick" in sys.argv), indent=1))
