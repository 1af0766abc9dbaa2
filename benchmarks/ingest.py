"""Daemon end-to-end ingest: request rows per second, decoded, attributed and stored, on one core.

The real daemon (``benchmarks.ingest_daemon``, the production ``Daemon`` with
its receiver, pipeline, observers, jobs and DuckDB writer) runs in its own
process pinned to one CPU; a frame generator (``benchmarks.framegen``: frames
of 256 requests with realistic values, pre-encoded) runs in another process
pinned to the other CPU and pushes over the real zmq ipc socket with blocking
sends, so zmq's high-water marks throttle it to what the daemon takes.  The
figure is the rate at which ``step_requests`` rows reach DuckDB (the writer's
own count) over the steady part of the run: after the warm-up (and, with
attribution, after the daemon's calibration is in force) until the generator
stops.  Rows the daemon dropped (writer queue full) are reported beside it.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import tempfile
import threading
import time
from typing import Any

PY = sys.executable


class DaemonProc:
    """``benchmarks.ingest_daemon`` as a child process; collects its JSON reports."""

    def __init__(self, listen: str, db: str, *args: str) -> None:
        self.proc = subprocess.Popen(
            [PY, "-m", "benchmarks.ingest_daemon", "--listen", listen, "--db", db, *args],
            stdout=subprocess.PIPE,
            text=True,
            env={**os.environ, "PYTHONUNBUFFERED": "1", "MALLOC_ARENA_MAX": "2"},
        )  # as systemd/shadowd.service
        first = json.loads(self.proc.stdout.readline() or "{}")
        if not first.get("ready"):
            raise RuntimeError("benchmark daemon did not start")
        self.reports: list[dict] = []
        self.final: dict | None = None
        self._thread = threading.Thread(target=self._read, daemon=True)
        self._thread.start()

    def _read(self) -> None:
        for line in self.proc.stdout:
            try:
                rec = json.loads(line)
            except ValueError:
                continue
            if rec.get("final"):
                self.final = rec
            else:
                self.reports.append(rec)

    @property
    def last(self) -> dict:
        return self.reports[-1] if self.reports else {}

    def wait_for(self, cond, timeout: float) -> bool:
        end = time.monotonic() + timeout
        while time.monotonic() < end:
            if self.reports and cond(self.last):
                return True
            time.sleep(0.1)
        return False

    def stop(self, timeout: float = 120) -> dict:
        self.proc.send_signal(signal.SIGTERM)
        self.proc.wait(timeout)
        self._thread.join(5)
        return self.final or {}


def run_generator(endpoint: str, *extra: str) -> dict:
    out = subprocess.run(
        [PY, "-m", "benchmarks.framegen", endpoint, *extra], capture_output=True, text=True, check=True
    )
    lines = [json.loads(x) for x in out.stdout.splitlines() if x.startswith("{")]
    return {**lines[0], **lines[-1]}


def _rate(reports: list[dict], t_from: float, t_to: float, key: str = "rows_written") -> float | None:
    """Rows per second between the first report at/after ``t_from`` and the last at/before ``t_to``."""
    window = [r for r in reports if t_from <= r["t"] <= t_to]
    if len(window) < 2 or window[-1]["t"] <= window[0]["t"]:
        return None
    return (window[-1][key] - window[0][key]) / (window[-1]["t"] - window[0]["t"])


def measure(
    *,
    seconds: float = 20.0,
    attribute: bool = False,
    frames: int = 4000,
    requests: int = 256,
    warmup_s: float = 3.0,
) -> dict[str, Any]:
    d = tempfile.mkdtemp(prefix="shd-ingest-")
    endpoint, db = f"ipc://{d}/tap.sock", os.path.join(d, "ingest.duckdb")
    args = ["--cpu", "0"] + (["--attribute", "--warmup-steps", "1000"] if attribute else [])
    daemon = DaemonProc(endpoint, db, *args)
    try:
        t_gen0 = daemon.last.get("t", 0.0)
        gen = run_generator(
            endpoint,
            "--frames",
            str(frames),
            "--requests",
            str(requests),
            "--seconds",
            str(seconds),
            "--cpu",
            "1",
        )
        t_gen1 = daemon.last.get("t", 0.0)
        daemon.wait_for(lambda r: r["frames_received"] >= gen["sent"] and r["writer_queue"] == 0, timeout=120)
        time.sleep(1.0)
    finally:
        final = daemon.stop()
    reports = daemon.reports
    start = next((r["t"] for r in reports if r["rows_written"] > 0), t_gen0)
    if attribute:
        start = next((r["t"] for r in reports if r["calibrated"]), start)
    rate = _rate(reports, start + warmup_s, t_gen1)
    rx_rate = _rate(reports, start + warmup_s, t_gen1, "rows_received")
    stored = final.get("rows_written", 0)
    return {
        "attribute": attribute,
        "requests_per_frame": requests,
        "seconds": seconds,
        "rows_per_s": round(rate) if rate else None,
        "rows_received_per_s": round(rx_rate) if rx_rate else None,
        "steps_per_s": round(rate / requests) if rate else None,
        "frames_sent": gen["sent"],
        "frame_bytes_mean": round(gen["frame_bytes"]),
        "rows_sent": gen["sent"] * requests,
        "rows_stored": stored,
        "rows_dropped_by_writer": final.get("writer_rows_dropped"),
        "faults": final.get("faults"),
        "writer_errors": final.get("writer_errors"),
        "calibrated": final.get("calibrated"),
        "peak_rss_mib": final.get("peak_rss_mib"),
        "stop_s": final.get("stop_s"),
    }


def _observer_name(fn: Any) -> str:
    owner = getattr(fn, "__self__", None)
    return f"{type(owner).__name__}.{fn.__name__}" if owner is not None else getattr(fn, "__name__", repr(fn))


def stage_costs(
    *, frames: int = 3840, batch_frames: int = 960, requests: int = 256, cpu: int | None = 0
) -> dict[str, Any]:
    """µs per request row of each stage of the daemon's path, in-process, on one CPU.

    The production ``Daemon`` (calibrated on the first 1000 steps, synchronously) is
    driven stage by stage on batches of ``batch_frames`` frames: decode, columns,
    attribution, each pipeline observer, and the DuckDB append (``Writer.flush``).  960 frames
    of 256 requests are two DuckDB row groups, so each flush is a whole-row-group append, as
    the daemon's writer makes them (``storage.row_groups``).
    """
    from benchmarks.framegen import make_frames
    from benchmarks.ingest_daemon import build_config
    from shadowd.daemon.service import Daemon
    from shadowd.steps.columns import frames_to_columns
    from shadowd.tap.frame import decode_frame

    old_affinity = os.sched_getaffinity(0)
    if cpu is not None:
        os.sched_setaffinity(0, {cpu})
    d = tempfile.mkdtemp(prefix="shd-stages-")
    daemon = Daemon(
        build_config(f"ipc://{d}/tap.sock", os.path.join(d, "s.duckdb"), attribute=True, warmup_steps=1000),
        run_job=lambda fn: fn(),
    )
    try:
        daemon.start(http=False, jobs=False)
        daemon.writer.submit(lambda con: con.execute("SET threads = 1")).result()  # one core
        encoded = make_frames(1000 + frames, requests)
        daemon.pipeline([decode_frame(f) for f in encoded[:1000]])
        daemon.writer.flush()
        cost: dict[str, float] = {}

        def timed(name: str, fn: Any, *a: Any) -> Any:
            t = time.perf_counter()
            out = fn(*a)
            cost[name] = cost.get(name, 0.0) + time.perf_counter() - t
            return out

        pipe = daemon.pipeline
        for i in range(1000, 1000 + frames, batch_frames):
            dec = timed(
                "decode (msgspec, FrameReceiver._decode)",
                lambda b: [decode_frame(x) for x in b],
                encoded[i : i + batch_frames],
            )
            cols = timed("frames_to_columns", frames_to_columns, dec)
            timed("attribution (pipeline._attribute)", pipe._attribute, cols)
            pipe.writer.append_many({"steps": cols.steps, "step_requests": cols.requests})
            for obs in pipe.observers:
                timed(f"observer {_observer_name(obs)}", obs, cols)
            timed("DuckDB append (Writer.flush)", pipe.writer.flush)
        rows = frames * requests
        per_row = {k: round(v / rows * 1e6, 3) for k, v in cost.items()}
        total = sum(per_row.values())
        return {
            "us_per_row": per_row,
            "total_us_per_row": round(total, 3),
            "implied_rows_per_s": round(1e6 / total) if total else None,
            "calibrated": daemon.calibration is not None,
            "rows": rows,
            "batch_frames": batch_frames,
        }
    finally:
        daemon.stop()
        os.sched_setaffinity(0, old_affinity)


def run(quick: bool = False) -> dict:
    seconds = 8.0 if quick else 20.0
    results = [measure(seconds=seconds, attribute=False), measure(seconds=seconds, attribute=True)]
    for r in results:
        r["target_rows_per_s"] = 1_000_000
        r["met"] = bool(r["rows_per_s"] and r["rows_per_s"] >= 1_000_000 and not r["rows_dropped_by_writer"])
    return {"ingest": results, "ingest_stages": stage_costs(frames=1920 if quick else 3840)}


if __name__ == "__main__":
    quick = "--quick" in sys.argv
    if "--stages" in sys.argv:
        print(json.dumps(stage_costs(), indent=1))
    elif "--no-attribute" in sys.argv:
        print(json.dumps(measure(seconds=8.0 if quick else 20.0), indent=1))
    elif "--attribute" in sys.argv:
        print(json.dumps(measure(seconds=8.0 if quick else 20.0, attribute=True), indent=1))
    else:
        print(json.dumps(run(quick), indent=1))
