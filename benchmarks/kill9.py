"""Steps lost when the daemon is killed with SIGKILL mid-ingest (repeated; the test's scenario).

``shadowd run`` in its own process receives frames of 32 requests at 400 frames/s; at a
random moment of the writer's 0.5 s flush cycle the sender stops and the daemon gets
``kill -9``.  Lost = frames sent minus steps stored (after the restart the file opens
cleanly; what is stored is a gap-free prefix with all its request rows).  The bound the
fault test asserts is the flush interval + the receiver's 50 ms batching + 150 ms slack.
"""

from __future__ import annotations

import json
import os
import random
import signal
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from statistics import median

RATE, N_REQ, FLUSH_INTERVAL_S = 400, 32, 0.5


def once(seed: int) -> dict:
    import duckdb
    import zmq

    from shadowd.tap.frame import FRAME_VERSION, StepFrame, encode_frame

    d = tempfile.mkdtemp(prefix="shd-kill9-")
    endpoint, db = f"ipc://{d}/tap.sock", os.path.join(d, "k.duckdb")
    log = open(os.path.join(d, "daemon.log"), "w")
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "shadowd.cli",
            "run",
            "--listen",
            endpoint,
            "--db",
            db,
            "--http",
            "127.0.0.1:0",
        ],
        stdout=log,
        stderr=log,
    )
    sock_path = Path(endpoint[len("ipc://") :])
    deadline = time.monotonic() + 60
    while not sock_path.exists() and proc.poll() is None and time.monotonic() < deadline:
        time.sleep(0.05)
    ctx = zmq.Context()
    sock = ctx.socket(zmq.PUSH)
    sock.setsockopt(zmq.LINGER, 0)
    sock.connect(endpoint)
    stop, sent = threading.Event(), [0]

    def frame(seq: int) -> bytes:
        done = 10**9 + seq * 5_000_000
        return encode_frame(
            StepFrame(
                FRAME_VERSION,
                "e0",
                "kill9",
                seq,
                done - 5_010_000,
                done - 5_000_000,
                done,
                done - 5_000_000,
                1_764_000_000 * 10**9 + done,
                0,
                [f"q{i}" for i in range(N_REQ)],
                ["acme"] * N_REQ,
                [1] * N_REQ,
                [100] * N_REQ,
                [50] * N_REQ,
                [0] * N_REQ,
                [False] * N_REQ,
                [0] * N_REQ,
            )
        )

    def sender() -> None:
        t0 = time.monotonic()
        while not stop.is_set():
            sock.send(frame(sent[0] + 1))
            sent[0] += 1
            delay = t0 + sent[0] / RATE - time.monotonic()
            if delay > 0:
                time.sleep(delay)

    time.sleep(0.3)
    thread = threading.Thread(target=sender)
    thread.start()
    time.sleep(2.0 + random.Random(seed).random() * FLUSH_INTERVAL_S)
    stop.set()
    thread.join()
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait(30)
    sock.close()
    ctx.term()
    con = duckdb.connect(db, read_only=True)
    steps = [r[0] for r in con.execute("SELECT step_seq FROM steps ORDER BY step_seq").fetchall()]
    rows = con.execute("SELECT count(*) FROM step_requests").fetchone()[0]
    con.close()
    return {
        "sent": sent[0],
        "stored": len(steps),
        "lost": sent[0] - len(steps),
        "prefix": steps == list(range(1, len(steps) + 1)),
        "rows_complete": rows == len(steps) * N_REQ,
    }


def run(quick: bool = False) -> dict:
    runs = [once(seed) for seed in range(3 if quick else 8)]
    lost_ms = [r["lost"] / RATE * 1000 for r in runs]
    bound_ms = (FLUSH_INTERVAL_S + 0.05 + 0.15) * 1000
    return {
        "kill9": {
            "rate_frames_per_s": RATE,
            "requests_per_frame": N_REQ,
            "runs": runs,
            "lost_frames": [r["lost"] for r in runs],
            "lost_ms": [round(x) for x in lost_ms],
            "lost_ms_median": round(median(lost_ms)),
            "lost_ms_max": round(max(lost_ms)),
            "flush_interval_ms": FLUSH_INTERVAL_S * 1000,
            "bound_ms": bound_ms,
            "met": max(lost_ms) <= bound_ms and all(r["prefix"] and r["rows_complete"] for r in runs),
        }
    }


if __name__ == "__main__":
    print(json.dumps(run("--quick" in sys.argv), indent=1))
