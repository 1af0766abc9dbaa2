"""Realistic tap frames, pre-encoded, and a process that pushes them to a daemon.

``make_frames`` simulates a busy engine: ``requests`` running requests per
step, most decoding one token, a few prefill chunks filling a token budget
(mixed steps), requests finishing and being replaced (so request ids churn as
in serving), context growing by one token per decode step, several tenants
with a skewed mix, request ids shaped like vLLM's OpenAI server's
(``chatcmpl-<32 hex>-<8 hex>``, 50 characters).  Frames are encoded once; a
pass over them is re-labelled with a new ``run_id`` (patched in the encoded
bytes, fixed width) so a long run never repeats a (run, step) key.

Run as a process (``python -m benchmarks.framegen ENDPOINT ...``) it pushes
frames over the real socket as fast as the daemon takes them (blocking sends:
zmq's high-water marks give back-pressure) or, with ``--noblock``, as fast as
it can, dropping and counting what the socket refuses, like the tap.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
import uuid

import numpy as np

from shadowd.tap.frame import FRAME_VERSION, StepFrame, encode_frame

ENGINE_ID = "bench-host-dp0"
RUN_ID_TEMPLATE = "0" * 16
TENANTS = ("acme", "globex", "initech", "umbrella", "hooli", "stark", "wayne", "tyrell")
TENANT_MIX = (0.35, 0.2, 0.12, 0.1, 0.08, 0.07, 0.05, 0.03)


def _request_id(rng: np.random.Generator) -> str:
    return (
        f"chatcmpl-{uuid.UUID(int=int(rng.integers(2**63)) << 64 | int(rng.integers(2**63))).hex}-"
        f"{int(rng.integers(2**32)):08x}"
    )


def make_frames(
    n_frames: int, requests: int = 256, seed: int = 0, *, budget: int = 2048, step_ms: float = 12.0
) -> list[bytes]:
    """``n_frames`` encoded frames of ``requests`` rows each (see the module doc)."""
    rng = np.random.default_rng(seed)
    tenant_idx = rng.choice(len(TENANTS), size=requests, p=TENANT_MIX)
    state = {
        "id": [_request_id(rng) for _ in range(requests)],
        "tenant": [TENANTS[i] for i in tenant_idx],
        "prompt": rng.integers(64, 6000, size=requests).tolist(),
        "ctx": [],
        "left": rng.integers(50, 800, size=requests).tolist(),  # output tokens still to make
        "prefilled": [True] * requests,
    }
    state["ctx"] = [p + int(rng.integers(0, 400)) for p in state["prompt"]]
    frames = []
    t = 10**12
    wall = 1_764_000_000 * 10**9
    for seq in range(1, n_frames + 1):
        new, pre = [], []
        used = 0
        for i in range(requests):
            if not state["prefilled"][i]:
                chunk = min(state["prompt"][i] - state["ctx"][i], max(budget - used, 0))
                if chunk <= 0:
                    chunk = 1
                new.append(chunk)
                pre.append(True)
                used += chunk
            else:
                new.append(1)
                pre.append(False)
                used += 1
        # Roughly an 8B model on one GPU: weights (fixed), tokens, and KV reads growing with context,
        # so that fitted models price context and shares differ row by row, as on real traffic.
        kv_ms = 1.5e-5 * sum(state["ctx"])
        dur = int((step_ms + 0.004 * used + kv_ms) * 1e6 * rng.lognormal(0, 0.05))
        frame = StepFrame(
            FRAME_VERSION,
            ENGINE_ID,
            RUN_ID_TEMPLATE,
            seq,
            t + 20_000,
            t + 300_000,
            t + dur,
            t,
            wall + t + dur,
            0,
            list(state["id"]),
            list(state["tenant"]),
            new,
            list(state["ctx"]),
            list(state["prompt"]),
            [0] * requests,
            pre,
            [0] * requests,
        )
        frames.append(encode_frame(frame))
        t += dur
        for i in range(requests):  # advance: finish and replace requests
            state["ctx"][i] += new[i]
            if state["prefilled"][i] or state["ctx"][i] >= state["prompt"][i]:
                state["prefilled"][i] = True
            if not pre[i]:
                state["left"][i] -= 1
            if state["left"][i] <= 0:
                prompt = int(rng.integers(64, 6000))
                hit = int(rng.integers(0, prompt // 2)) if rng.random() < 0.3 else 0
                state["id"][i] = _request_id(rng)
                state["tenant"][i] = TENANTS[int(rng.choice(len(TENANTS), p=TENANT_MIX))]
                state["prompt"][i], state["ctx"][i] = prompt, hit
                state["left"][i] = int(rng.integers(50, 800))
                state["prefilled"][i] = False
    return frames


def relabel(frame: bytes, run_id: str) -> bytes:
    """``frame`` with its run id replaced (same width, so the encoding stays valid)."""
    tag = b"\xb0" + RUN_ID_TEMPLATE.encode()
    i = frame.index(tag, 0, 64)
    return frame[: i + 1] + run_id.encode() + frame[i + 17 :]


def push(
    endpoint: str,
    frames: list[bytes],
    *,
    seconds: float,
    noblock: bool = False,
    hwm: int = 1000,
    rate: float = 0.0,
) -> dict:
    """Send ``frames`` (re-labelled per pass) for ``seconds``; counts sent and dropped frames."""
    import zmq

    ctx = zmq.Context()
    sock = ctx.socket(zmq.PUSH)
    sock.setsockopt(zmq.SNDHWM, hwm)
    sock.setsockopt(zmq.LINGER, 10_000)  # deliver what zmq accepted, so sent = received + counted
    if noblock:
        sock.setsockopt(zmq.IMMEDIATE, 1)
    sock.connect(endpoint)
    time.sleep(0.3)
    sent = dropped = passes = 0
    t0 = time.monotonic()
    end = t0 + seconds
    interval = 1.0 / rate if rate > 0 else 0.0
    next_t = t0
    while time.monotonic() < end:
        run_id = f"{passes:016x}"
        passes += 1
        batch = [relabel(f, run_id) for f in frames]
        for data in batch:
            if interval:
                next_t += interval
                while time.monotonic() < next_t:
                    pass
            try:
                sock.send(data, zmq.NOBLOCK if noblock else 0)
                sent += 1
            except zmq.Again:
                dropped += 1
            if sent % 256 == 0 and time.monotonic() >= end:
                break
    elapsed = time.monotonic() - t0
    sock.close()
    ctx.term()
    return {"sent": sent, "dropped": dropped, "passes": passes, "seconds": elapsed}


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("endpoint")
    ap.add_argument("--frames", type=int, default=4000)
    ap.add_argument("--requests", type=int, default=256)
    ap.add_argument("--seconds", type=float, default=10.0)
    ap.add_argument("--noblock", action="store_true")
    ap.add_argument("--hwm", type=int, default=1000)
    ap.add_argument("--rate", type=float, default=0.0, help="frames per second (0: as fast as possible)")
    ap.add_argument("--cpu", type=int, default=None, help="pin to this CPU")
    a = ap.parse_args(argv)
    if a.cpu is not None:
        os.sched_setaffinity(0, {a.cpu})
    frames = make_frames(a.frames, a.requests)
    print(json.dumps({"ready": True, "frame_bytes": sum(map(len, frames)) / len(frames)}), flush=True)
    out = push(a.endpoint, frames, seconds=a.seconds, noblock=a.noblock, hwm=a.hwm, rate=a.rate)
    out["rows_per_frame"] = a.requests
    print(json.dumps(out), flush=True)


if __name__ == "__main__":
    main(sys.argv[1:])
