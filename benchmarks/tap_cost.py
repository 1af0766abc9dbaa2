"""Tap cost on the real vLLM ``AsyncScheduler``: tapped vs untapped per-step time.

Two real schedulers are built side by side, vLLM's plain ``AsyncScheduler``
(untapped) and ``TapAsyncScheduler`` (tapped, ``SHADOWD_TAP`` set, sending to a
discarding PULL socket in another process).  Each is filled with ``n`` long-output
requests (short prompts, so after the first steps every step is a steady decode
batch of ``n``), then driven in the engine's pipelined order (schedule N+1, then
update N).  Timed per step: ``schedule()`` + ``update_from_output()``; not timed:
building the fake ``ModelRunnerOutput`` (the GPU's part).  The two schedulers run
in alternating blocks of steps so drift of the machine (other processes, turbo,
caches) hits both alike; the figure is the median over blocks of the per-block
median step time.  The tap hooks (``on_schedule`` + ``on_output``) are also timed
directly, on a third run, by wrapping them.
"""
from __future__ import annotations

import gc
import os
import subprocess
import sys
import tempfile
import time
from collections import deque
from dataclasses import dataclass
from statistics import median
from typing import Any

PROMPT_TOKENS = 32


@dataclass(frozen=True)
class _Req:
    arrival_s: float
    tenant: str
    prompt_tokens: int
    output_tokens: int
    prefix_blocks: tuple[int, ...] | None = None


class _Engine:
    """A real scheduler with ``n`` running requests, stepped in the pipelined order."""

    def __init__(self, n: int, cls: type, model_dir: str, total_steps: int) -> None:
        from shadowd.sim.driver import EngineDriver
        from shadowd.sim.vllm_scheduler import SchedulerSpec, build_scheduler

        blocks = n * ((PROMPT_TOKENS + total_steps + 64) // 16 + 2) + 64
        spec = SchedulerSpec(model_dir=model_dir, max_num_seqs=n,
                             max_num_batched_tokens=max(2048, n * PROMPT_TOKENS),
                             max_model_len=32768, num_blocks=blocks)
        self.sched = build_scheduler(spec, cls)
        driver = EngineDriver(self.sched, lambda st: 1.0, vocab_size=128256)
        tenants = ("acme", "beta", "gamma", "delta")
        for i in range(n):
            self.sched.add_request(driver.make_request(
                _Req(0.0, tenants[i % 4], PROMPT_TOKENS, total_steps + 1000)))
        self.queue: deque = deque([self.sched.schedule()])

    @staticmethod
    def _runner_output(out: Any) -> Any:
        from vllm.v1.outputs import ModelRunnerOutput

        ids = [r.req_id for r in out.scheduled_new_reqs] + list(out.scheduled_cached_reqs.req_ids)
        return ModelRunnerOutput(req_ids=ids, req_id_to_index={r: i for i, r in enumerate(ids)},
                                 sampled_token_ids=[[7]] * len(ids))

    def steps(self, k: int) -> list[int]:
        """Run ``k`` steps; per step ns spent in the scheduler (schedule + update)."""
        clock = time.perf_counter_ns
        sched, q = self.sched, self.queue
        times = []
        for _ in range(k):
            t0 = clock()
            nxt = sched.schedule()
            t1 = clock()
            prev = q.popleft()
            mro = self._runner_output(prev)
            t2 = clock()
            sched.update_from_output(prev, mro)
            t3 = clock()
            q.append(nxt)
            times.append(t1 - t0 + t3 - t2)
        return times

    def batch_size(self) -> int:
        out = self.queue[-1]
        return len(out.scheduled_new_reqs) + len(out.scheduled_cached_reqs.req_ids)


def _start_sink(endpoint: str) -> subprocess.Popen:
    proc = subprocess.Popen([sys.executable, "-m", "benchmarks.sink", endpoint],
                            stdout=subprocess.PIPE, text=True)
    assert proc.stdout.readline().strip() == "ready"
    return proc


def measure(n: int, *, blocks: int = 12, block_steps: int = 150, warmup: int = 60,
            hook_steps: int = 600, model_dir: str | None = None) -> dict:
    """Tap cost at ``n`` running requests per step."""
    from vllm.v1.core.sched.async_scheduler import AsyncScheduler

    from shadowd.paths import models_dir
    from shadowd.tap.vllm import TapAsyncScheduler

    model_dir = model_dir or str(models_dir() / "llama-3.1-8b")
    endpoint = f"ipc://{tempfile.mkdtemp(prefix='shd-bench-')}/tap.sock"
    sink = _start_sink(endpoint)
    old = {k: os.environ.get(k) for k in ("SHADOWD_TAP", "SHADOWD_ENGINE_ID", "SHADOWD_TAP_HWM")}
    try:
        total = warmup + blocks * block_steps + hook_steps
        untapped = _Engine(n, AsyncScheduler, model_dir, total)
        os.environ.update(SHADOWD_TAP=endpoint, SHADOWD_ENGINE_ID="bench-engine-0",
                          SHADOWD_TAP_HWM="100000")
        tapped = _Engine(n, TapAsyncScheduler, model_dir, total)
        tap = tapped.sched.shadowd_tap
        assert tap is not None, "tap did not turn on"
        time.sleep(0.3)                          # let the PUSH socket connect
        for eng in (untapped, tapped):
            eng.steps(warmup)
            assert eng.batch_size() == n, f"batch is {eng.batch_size()}, wanted {n}"
        per_block = {"untapped": [], "tapped": []}
        gc.collect()
        for b in range(blocks):
            order = (("untapped", untapped), ("tapped", tapped))
            for name, eng in (order if b % 2 == 0 else order[::-1]):
                per_block[name].append(median(eng.steps(block_steps)))
        hooks = _time_hooks(tapped, tap, hook_steps)
        sender_dropped = tap.dropped_total
        frames = tap.step_seq
    finally:
        for k, v in old.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v
        sink.terminate()
        received = int(sink.communicate(timeout=30)[0].split()[-1])
    base = median(per_block["untapped"]) / 1e3
    with_tap = median(per_block["tapped"]) / 1e3
    ratios = [t / u for t, u in zip(per_block["tapped"], per_block["untapped"])]
    return {
        "requests_per_step": n,
        "untapped_us_per_step": round(base, 1),
        "tapped_us_per_step": round(with_tap, 1),
        "ratio": round(median(ratios), 4),
        "overhead_us_per_step": round(with_tap - base, 1),
        "hooks_us_per_step": round(hooks, 2),
        "hooks_pct_of_step": round(100 * hooks / base, 2),
        "blocks": blocks, "block_steps": block_steps,
        "block_ratios": [round(r, 4) for r in ratios],
        "frames_sent": frames, "frames_received": received, "frames_dropped": sender_dropped,
    }


def _time_hooks(eng: _Engine, tap: Any, steps: int) -> float:
    """Median µs per step in ``on_schedule`` + ``on_output`` themselves."""
    clock = time.perf_counter_ns
    acc = [0]
    on_schedule, on_output = tap.on_schedule, tap.on_output

    def timed_schedule(*a: Any) -> None:
        t = clock()
        on_schedule(*a)
        acc[0] += clock() - t

    def timed_output(*a: Any) -> None:
        t = clock()
        on_output(*a)
        acc[0] += clock() - t

    tap.on_schedule, tap.on_output = timed_schedule, timed_output
    per_step = []
    try:
        for _ in range(steps):
            acc[0] = 0
            eng.steps(1)
            per_step.append(acc[0])
    finally:
        del tap.on_schedule, tap.on_output
    return median(per_step) / 1e3


def run(quick: bool = False) -> dict:
    sizes = (32, 256)
    kw = dict(blocks=6, block_steps=80, hook_steps=200) if quick else {}
    results = [measure(n, **kw) for n in sizes]
    targets = {32: 20.0, 256: 60.0}
    for r in results:
        r["target_us"] = targets[r["requests_per_step"]]
        r["target_pct"] = 3.0
        r["met"] = (r["overhead_us_per_step"] <= r["target_us"] and r["ratio"] <= 1.03
                    and r["hooks_us_per_step"] <= r["target_us"])
    return {"tap_cost": results}


if __name__ == "__main__":
    import json
    print(json.dumps(run(quick="--quick" in sys.argv), indent=2))
