"""Small test helpers shared by several test modules."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

import zmq

if TYPE_CHECKING:
    import socket

    from shadowd.daemon.config import Config
    from shadowd.daemon.service import Daemon
    from shadowd.steps.batch import StepBatch

from shadowd.tap.frame import FRAME_VERSION, StepFrame, encode_frame


def daemon_config(endpoint: str, db_path: str, **overrides: Any) -> Config:
    """A config for a test daemon: loopback HTTP on a free port, files beside the database."""
    import dataclasses

    from shadowd.daemon.config import Config

    base = dict(
        listen=endpoint,
        db=db_path,
        http="127.0.0.1:0",
        state_file=str(Path(db_path).with_suffix(".gate.json")),
    )
    return dataclasses.replace(Config.default(), **{**base, **overrides})


def make_daemon(endpoint: str, db_path: str, **overrides: Any) -> Daemon:
    from shadowd.daemon.service import Daemon

    return Daemon(daemon_config(endpoint, db_path, **overrides))


def page_hinkley_decode(std: float, **fields: Any) -> Any:
    """A decode class watched by Page-Hinkley alone at a small fixed threshold (8, delta 1): for
    tests that drive the confirmation stages with residuals made by hand."""
    import checks

    return checks.DriftCalibration(
        "decode",
        mean=0.0,
        std=std,
        ph_threshold=8.0,
        adwin_delta=0.0,
        ph_delta=1.0,
        detector_names=("page_hinkley",),
        **fields,
    )


def calibrate_synthetic(**settings: Any) -> Any:
    """The daemon's calibration of a synthetic 3,000-step window (seed 21), at settings quick
    enough for a test (``settings`` override ``CalibrationSettings`` fields): for tests that
    compare what a calibration stores with a setting on and off."""
    from shadowd.attribution.synthetic_steps import synthetic_batch
    from shadowd.daemon.calibrator import CalibrationSettings, calibrate

    quick = dict(min_class_steps=150, drift_sim_steps=50_000, target_false_alarm_rate=1e-3)
    batch = synthetic_batch(steps=3000, seed=21, max_seqs=32)
    return calibrate(
        batch, {"gpu": "H100-SXM", "model": "llama-3.1-8b"}, CalibrationSettings(**{**quick, **settings})
    )


def make_frame(
    seq: int,
    n: int = 4,
    *,
    run: str = "run1",
    engine: str = "e0",
    dropped: int = 0,
    t0: int = 10**9,
    step_ns: int = 5_000_000,
) -> StepFrame:
    """A plausible frame: n decodes, step ``seq`` taking ``step_ns``."""
    done = t0 + seq * step_ns
    return StepFrame(
        FRAME_VERSION,
        engine,
        run,
        seq,
        done - step_ns - 10_000,
        done - step_ns,
        done,
        done - step_ns,
        1_764_000_000 * 10**9 + done,
        dropped,
        [f"q{i}" for i in range(n)],
        ["acme" if i % 2 else "beta" for i in range(n)],
        [1] * n,
        [100 + i for i in range(n)],
        [50] * n,
        [0] * n,
        [False] * n,
        [0] * n,
    )


class Pusher:
    """A test-side PUSH socket (what the tap uses), blocking sends with a timeout."""

    def __init__(self, endpoint: str) -> None:
        self.ctx = zmq.Context()
        self.sock = self.ctx.socket(zmq.PUSH)
        self.sock.setsockopt(zmq.LINGER, 2000)
        self.sock.setsockopt(zmq.SNDTIMEO, 5000)
        self.sock.connect(endpoint)

    def send(self, data: bytes | StepFrame) -> None:
        self.sock.send(encode_frame(data) if isinstance(data, StepFrame) else data)

    def close(self) -> None:
        self.sock.close()
        self.ctx.term()

    def close_when(self, done: Callable[[], bool], timeout: float = 20.0) -> bool:
        """Wait until ``done()`` with the connection still open, then close; returns ``done()``.

        A sender's disconnect loses the messages the receiver's zmq had taken off the socket but
        not yet queued for it (its queue full while the daemon was busy): a CI run failed that way,
        and on this machine the tail of 1,400 frames was lost in about one try of three.  A test
        that counts every frame keeps the connection open until they are counted.  (The tap
        never disconnects mid-run; the demo likewise waits for the daemon before it stops.)
        """
        ok = wait_until(done, timeout)
        self.close()
        return ok


def wait_until(cond: Callable[[], bool], timeout: float = 20.0, interval: float = 0.02) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if cond():
            return True
        time.sleep(interval)
    return cond()


def daemon_command(endpoint: str, db_path: str, *extra: str) -> list[str]:
    """The command line of ``shadowd run`` on ``endpoint`` and ``db_path``, HTTP on a free
    loopback port (tests talk only to loopback)."""
    return [
        sys.executable,
        "-m",
        "shadowd.cli",
        "run",
        "--listen",
        endpoint,
        "--db",
        db_path,
        "--http",
        "127.0.0.1:0",
        *extra,
    ]


def start_daemon_process(endpoint: str, db_path: str, *extra: str) -> subprocess.Popen:
    """``shadowd run`` in its own process; returns once its socket exists."""
    proc = subprocess.Popen(
        daemon_command(endpoint, db_path, *extra),
        stderr=subprocess.PIPE,
        text=True,
        env={**os.environ, "PYTHONUNBUFFERED": "1"},
    )
    sock = Path(endpoint[len("ipc://") :])
    if not wait_until(lambda: sock.exists() or proc.poll() is not None, timeout=60):
        proc.kill()
        raise RuntimeError("daemon did not start")
    if proc.poll() is not None:
        raise RuntimeError(f"daemon exited: {proc.stderr.read()}")
    return proc


def stop_daemon_process(proc: subprocess.Popen, settle_s: float = 0.5, timeout: float = 60) -> int:
    """Let in-flight frames arrive, SIGTERM, wait; returns the exit code."""
    time.sleep(settle_s)
    proc.send_signal(signal.SIGTERM)
    try:
        _, err = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        proc.kill()
        raise
    if proc.returncode != 0:
        print(err)
    return proc.returncode


def frames_from_batch(
    batch: StepBatch,
    *,
    start_seq: int = 1,
    latency_scale: float = 1.0,
    run: str = "run1",
    engine: str = "e0",
    t0: int = 10**9,
) -> list[StepFrame]:
    """Frames of back-to-back steps whose measured latency is the batch's (times ``latency_scale``)."""
    import numpy as np

    frames, t = [], t0
    bounds = np.searchsorted(batch.req_step, np.arange(batch.num_steps + 1))
    tenants = batch.tenant if batch.tenant is not None else np.array(["t"] * batch.num_requests)
    for i in range(batch.num_steps):
        rows = slice(bounds[i], bounds[i + 1])
        done = t + int(batch.latency_ms[i] * latency_scale * 1e6)
        n = rows.stop - rows.start
        frames.append(
            StepFrame(
                FRAME_VERSION,
                engine,
                run,
                start_seq + i,
                t - 20_000,
                t,
                done,
                t,
                1_764_000_000 * 10**9 + done,
                0,
                [f"q{start_seq + i}-{j}" for j in range(n)],
                [str(x) for x in tenants[rows]],
                batch.new_tokens[rows].tolist(),
                batch.context_tokens[rows].tolist(),
                batch.prompt_tokens[rows].tolist(),
                [0] * n,
                batch.prefill[rows].tolist(),
                [0] * n,
            )
        )
        t = done
    return frames


def datagrams(sock: socket.socket, wait_s: float) -> list[str]:
    """Every datagram arriving on ``sock`` (with a short timeout set) within ``wait_s``."""

    out, deadline = [], time.monotonic() + wait_s
    while time.monotonic() < deadline:
        try:
            out.append(sock.recv(4096).decode())
        except TimeoutError:
            pass
    return out


def log_of_decode_steps(steps: int, rows_per_step: int = 40) -> Any:
    """An in-memory step log of ``steps`` decode steps of ``rows_per_step`` requests each, 1 ms
    apart (steps only: enough for the windows counted from ``steps.num_requests``)."""
    import duckdb

    from storage.schema import migrate

    con = duckdb.connect()
    migrate(con)
    con.execute(
        """INSERT INTO steps (engine_id, run_id, step_seq, ts, latency_ms, kind, num_requests,
                              prefill_tokens, decode_tokens, dropped_frames_total)
           SELECT 'e', 'r', i, TIMESTAMP '2026-01-01' + to_microseconds(i * 1000), 5.0, 'decode', ?, 0, ?, 0
           FROM range(?) t(i)""",
        [rows_per_step, rows_per_step, steps],
    )
    return con
