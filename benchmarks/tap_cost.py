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

Wall and CPU time: on a shared machine (the one these figures come from has
2 vCPUs shared with other jobs) wall time includes time the engine thread is
preempted, e.g. by zmq's I/O thread that a send wakes, or by other tenants;
CPU time (``time.thread_time_ns``) is what the engine thread itself spends.
Both are reported.  The A/B ratio's spread across blocks shows the noise
floor; a 3% effect is below it on a loaded 2-vCPU host, so the targets are
judged on the hooks' own CPU time, measured directly, as a share of the
untapped scheduler's CPU time per step.
"""

from __future__ import annotations

import gc
import os
import subprocess
import sys
import tempfile
import time
from collections import deque
from statistics import median
from typing import Any

from shadowd.twin.request_spec import RequestSpec

PROMPT_TOKENS = 32


class _Engine:
    """A real scheduler with ``n`` running requests, stepped in the pipelined order."""

    def __init__(self, n: int, cls: type, model_dir: str, total_steps: int) -> None:
        from shadowd.sim.driver import EngineDriver, RealClock
        from shadowd.sim.vllm_scheduler import SchedulerSpec, build_scheduler

        blocks = n * ((PROMPT_TOKENS + total_steps + 64) // 16 + 2) + 64
        spec = SchedulerSpec(
            model_dir=model_dir,
            max_num_seqs=n,
            max_num_batched_tokens=max(2048, n * PROMPT_TOKENS),
            max_model_len=32768,
            num_blocks=blocks,
        )
        self.sched = build_scheduler(spec, cls)
        # RealClock: the driver leaves the tap's clock alone (a SimClock would replace it).
        driver = EngineDriver(self.sched, lambda st: 1.0, vocab_size=128256, clock=RealClock())
        tenants = ("acme", "beta", "gamma", "delta")
        for i in range(n):
            self.sched.add_request(
                driver.make_request(RequestSpec(0.0, tenants[i % 4], PROMPT_TOKENS, total_steps + 1000))
            )
        self.queue: deque = deque([self.sched.schedule()])

    @staticmethod
    def _runner_output(out: Any) -> Any:
        from vllm.v1.outputs import ModelRunnerOutput

        ids = [r.req_id for r in out.scheduled_new_reqs] + list(out.scheduled_cached_reqs.req_ids)
        return ModelRunnerOutput(
            req_ids=ids, req_id_to_index={r: i for i, r in enumerate(ids)}, sampled_token_ids=[[7]] * len(ids)
        )

    def steps(self, k: int) -> tuple[list[int], list[int]]:
        """Run ``k`` steps; per step ns spent in the scheduler (schedule + update), wall and CPU."""
        clock, cpu = time.perf_counter_ns, time.thread_time_ns
        sched, q = self.sched, self.queue
        wall, cpu_ns = [], []
        for _ in range(k):
            c0 = cpu()
            t0 = clock()
            nxt = sched.schedule()
            t1 = clock()
            c1 = cpu()
            prev = q.popleft()
            mro = self._runner_output(prev)
            c2 = cpu()
            t2 = clock()
            sched.update_from_output(prev, mro)
            t3 = clock()
            c3 = cpu()
            q.append(nxt)
            wall.append(t1 - t0 + t3 - t2)
            cpu_ns.append(c1 - c0 + c3 - c2)
        return wall, cpu_ns

    def batch_size(self) -> int:
        out = self.queue[-1]
        return len(out.scheduled_new_reqs) + len(out.scheduled_cached_reqs.req_ids)


def _start_sink(endpoint: str) -> subprocess.Popen:
    proc = subprocess.Popen(
        [sys.executable, "-m", "benchmarks.sink", endpoint], stdout=subprocess.PIPE, text=True
    )
    assert proc.stdout.readline().strip() == "ready"
    return proc


def measure(
    n: int,
    *,
    blocks: int = 12,
    block_steps: int = 150,
    warmup: int = 60,
    hook_steps: int = 1200,
    model_dir: str | None = None,
) -> dict:
    """Tap cost at ``n`` running requests per step."""
    from vllm.v1.core.sched.async_scheduler import AsyncScheduler

    from shadowd.paths import models_dir
    from shadowd.tap.vllm import TapAsyncScheduler

    model_dir = model_dir or str(models_dir() / "llama-3.1-8b")
    endpoint = f"ipc://{tempfile.mkdtemp(prefix='shd-bench-')}/tap.sock"
    sink = _start_sink(endpoint)
    old = {
        k: os.environ.get(k)
        for k in ("SHADOWD_TAP", "SHADOWD_ENGINE_ID", "SHADOWD_TAP_HWM", "SHADOWD_TENANT_KEY")
    }
    try:
        total = warmup + blocks * block_steps + hook_steps
        untapped = _Engine(n, AsyncScheduler, model_dir, total)
        os.environ.update(
            SHADOWD_TAP=endpoint,
            SHADOWD_ENGINE_ID="bench-engine-0",
            SHADOWD_TAP_HWM="100000",
            SHADOWD_TENANT_KEY="tenant",
        )
        tapped = _Engine(n, TapAsyncScheduler, model_dir, total)
        tap = tapped.sched.shadowd_tap
        assert tap is not None, "tap did not turn on"
        time.sleep(0.3)  # let the PUSH socket connect
        for eng in (untapped, tapped):
            eng.steps(warmup)
            assert eng.batch_size() == n, f"batch is {eng.batch_size()}, wanted {n}"
        wall = {"untapped": [], "tapped": []}
        cpu = {"untapped": [], "tapped": []}
        gc.collect()
        for b in range(blocks):
            order = (("untapped", untapped), ("tapped", tapped))
            for name, eng in order if b % 2 == 0 else order[::-1]:
                w, c = eng.steps(block_steps)
                wall[name].append(median(w))
                cpu[name].append(median(c))
        hooks, hooks_cpu, hooks_cpu_best = _time_hooks(tapped, tap, hook_steps)
        general = _time_general_columns(tapped, tap)
        tap.flush()
        sender_dropped = tap.dropped_total
        frames = tap.step_seq
        time.sleep(0.5)  # let the sink take the last frames
    finally:
        for k, v in old.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v
        sink.terminate()
        received = int(sink.communicate(timeout=30)[0].split()[-1])

    def summary(per_block: dict[str, list[float]]) -> dict:
        base = median(per_block["untapped"]) / 1e3
        with_tap = median(per_block["tapped"]) / 1e3
        ratios = [t / u for t, u in zip(per_block["tapped"], per_block["untapped"])]
        return {
            "untapped_us_per_step": round(base, 1),
            "tapped_us_per_step": round(with_tap, 1),
            "ratio": round(median(ratios), 4),
            "overhead_us_per_step": round(with_tap - base, 1),
            "block_ratios": [round(r, 4) for r in ratios],
        }

    w, c = summary(wall), summary(cpu)
    return {
        "requests_per_step": n,
        **w,
        "cpu": c,
        "hooks_us_per_step": round(hooks, 2),
        "hooks_cpu_us_per_step": round(hooks_cpu, 2),
        "hooks_cpu_best_block_us_per_step": round(hooks_cpu_best, 2),
        "hooks_pct_of_step": round(100 * hooks / w["untapped_us_per_step"], 2),
        "hooks_cpu_pct_of_step": round(100 * hooks_cpu / c["untapped_us_per_step"], 2),
        "general_columns_us": round(general, 2),
        "blocks": blocks,
        "block_steps": block_steps,
        "frames_sent": frames,
        "frames_received": received,
        "frames_dropped": sender_dropped,
    }


def _time_hooks(eng: _Engine, tap: Any, steps: int, blocks: int = 6) -> tuple[float, float, float]:
    """µs per step in ``on_schedule`` + ``on_output`` themselves: (wall, CPU, best block's CPU).

    Per block of ``steps // blocks`` steps the mean, not the median (sends are batched, so most
    steps pay nothing for sending and a few pay for a whole batch); then the median over blocks,
    and the best block (the least disturbed by other processes on this shared host).  The
    timers' own cost (two clock pairs per hook call, ~2 µs a step) is measured and subtracted."""
    clock, cpu = time.perf_counter_ns, time.thread_time_ns
    acc = [0, 0]
    on_schedule, on_output = tap.on_schedule, tap.on_output

    def timed(hook: Any) -> Any:
        def call(*a: Any) -> None:
            c, t = cpu(), clock()
            hook(*a)
            acc[0] += clock() - t
            acc[1] += cpu() - c

        return call

    per = max(1, steps // blocks)
    wall, cpu_us = [], []
    noop = timed(lambda *a: None)  # the timers' own cost, subtracted (two hooks per step)
    acc[0] = acc[1] = 0
    for _ in range(2000):
        noop()
    overhead_wall, overhead_cpu = 2 * acc[0] / 2000, 2 * acc[1] / 2000
    tap.on_schedule, tap.on_output = timed(on_schedule), timed(on_output)
    try:
        for _ in range(blocks):
            acc[0] = acc[1] = 0
            eng.steps(per)
            wall.append((acc[0] / per - overhead_wall) / 1e3)
            cpu_us.append((acc[1] / per - overhead_cpu) / 1e3)
    finally:
        del tap.on_schedule, tap.on_output
    return median(wall), median(cpu_us), min(cpu_us)


def _time_general_columns(eng: _Engine, tap: Any, repeats: int = 300) -> float:
    """µs for ``on_schedule``'s column extraction when the batch changed (no reuse)."""
    out = eng.queue[-1]
    best = []
    for _ in range(repeats):
        tap._steady = None
        t = time.perf_counter_ns()
        tap._columns(out, 0, 1)
        best.append(time.perf_counter_ns() - t)
    tap._steady = None
    return median(best) / 1e3


def run(quick: bool = False) -> dict:
    """Both batch sizes; ``met`` is judged on the hooks' own CPU time (see the module doc)."""
    kw = dict(blocks=6, block_steps=80, hook_steps=200) if quick else {}
    results = []
    for n, target_us in ((32, 20.0), (256, 60.0)):
        r = measure(n, **kw)
        r["target_us"], r["target_pct"] = target_us, 3.0
        r["met"] = r["hooks_cpu_us_per_step"] <= target_us and r["hooks_cpu_pct_of_step"] <= 3.0
        results.append(r)
    return {"tap_cost": results}


if __name__ == "__main__":
    import json

    print(json.dumps(run(quick="--quick" in sys.argv), indent=2))
