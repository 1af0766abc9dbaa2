"""Governor cost on the real vLLM ``AsyncScheduler``: its own CPU time per scheduled step.

A real scheduler with the governor on (mode ``on``, a GO state file for its platform, so the
attributed path runs: both counters charged every step) is kept at ``n`` running requests of four
tenants and driven in the engine's pipelined order (schedule N+1, then update N).

* **steady**: long outputs, so every step is the same decode batch of ``n``;
* **churn**: outputs drawn geometric with mean ``CHURN_MEAN_OUTPUT`` tokens and as many new
  requests added before each step as finished, so requests arrive, are admitted through the
  fair queue (a short prompt prefill) and finish every step: a stress case, with shorter
  outputs than either Azure trace (about ``n / 16`` admissions per step);
* **every-step**: exactly one arrival and one completion every step (outputs of ``n - 1`` tokens,
  so each request is scheduled in ``n`` steps; the first ``n`` requests' staggered 1..n): the
  case "arrivals and completions every step" read literally; churn is the stress case beside it;
* **trace**: as churn, with prompt and output lengths from the Azure 2023 code and conversation
  traces (alternately, capped at ``TRACE_MAX_PROMPT`` and ``TRACE_MAX_OUTPUT``): real lengths,
  chunked prefills, fewer admissions per step;
* **pressure**: geometric outputs of mean ``PRESSURE_MEAN_OUTPUT`` and about half the KV blocks
  the requests grow to, so vLLM preempts under KV pressure, with the governor's over-served-first
  victim order on (``preempt="over-served"``): its sort of the running list is timed too.

Timed directly, in CPU time of the engine thread (``time.thread_time_ns``): the governor's
``on_schedule`` and every call into its waiting queue (``FairRequestQueue``) during ``schedule``
and ``add_request``; the timers' own cost per call is measured and subtracted.  The governor's
queue stands in for vLLM's FCFS queue, whose calls the untouched scheduler makes anyway, so the
same calls into the FCFS queue are timed the same way on the scheduler with the governor off and
the *net* figure (gross minus those) is the governor's own cost, judged against the target; both
are reported.  That is the cost *beyond the tap* (the tap is off here; its own cost is
``benchmarks/tap_cost.py``).  The scheduler's own CPU time per step (governor off, same
workload) is reported beside it as the yardstick.  Median over blocks of the per-block mean.

The governor runs as the engine runs it (``SHADOWD_GOVERN_CHARGE`` unset: ``thread``): each step
is charged on its charge thread while the engine waits on the GPU, emulated here, as in
``benchmarks/tap_cost.py``, by ``GPU_WAIT_S`` of sleep between scheduling a step and taking the
previous one's output in, for every scheduler alike.  The engine thread's side is the figure
judged (its ``on_schedule`` hand-over, taking the charge in, the arrivals that waited meanwhile
and the queue's calls; the charge thread re-keys the queue after the charge); the charge thread's
CPU per step, and the wall time the engine thread spent waiting for a charge not yet done, are
reported beside it.

    .venv/bin/python -m benchmarks.govern_cost              # writes its section of docs/admission.json
    .venv/bin/python -m benchmarks.govern_cost --breakdown  # where the time goes, part by part
    .venv/bin/python -m benchmarks.govern_cost --engine-side  # the engine thread's side, by part
    .venv/bin/python -m benchmarks.govern_cost --wake  # the hand-over against the time between steps
    .venv/bin/python -m benchmarks.govern_cost --hand-over  # steps per hand-over, side by side
"""

from __future__ import annotations

import gc
import os
import sys
import tempfile
import time
from collections import deque
from statistics import median
from typing import Any

import numpy as np

from shadowd.twin.request_spec import RequestSpec

PROMPT_TOKENS = 32
CHURN_MEAN_OUTPUT = 16
TRACE_MAX_PROMPT = 4096
TRACE_MAX_OUTPUT = 512
TRACES = ("azure-2023/AzureLLMInferenceTrace_code.csv", "azure-2023/AzureLLMInferenceTrace_conv.csv")
PRESSURE_MEAN_OUTPUT = 256
# The GPU's part of a step, as a sleep: the engine thread waits on the GPU for the step in flight
# (the interpreter is free), which is when the charge thread charges the step just scheduled.
# Half ``benchmarks/tap_cost.py``'s, itself far shorter than a real step of an 8B model at these
# batch sizes: the charge thread has less time to hide in than in a real engine.
GPU_WAIT_S = 0.001
WORKLOADS = ("steady", "every-step", "churn", "trace", "pressure")
TENANTS = ("acme", "beta", "gamma", "delta")
KEY = "bench/h100/llama-3.1-8b"
QUEUE_METHODS = (
    "add_request",
    "pop_request",
    "peek_request",
    "prepend_request",
    "prepend_requests",
    "__bool__",
)


def _trace_lengths(limit: int = 4000) -> list[tuple[int, int]]:
    """(prompt, output) pairs, alternately from the two Azure 2023 traces, capped."""
    from shadowd.paths import data_dir
    from shadowd.twin.traces import load_azure

    code, conv = (load_azure(data_dir() / "traces" / t, "x", limit=limit) for t in TRACES)
    pairs = [r for pair in zip(code, conv) for r in pair]
    return [(min(r.prompt_tokens, TRACE_MAX_PROMPT), min(r.output_tokens, TRACE_MAX_OUTPUT)) for r in pairs]


class _Engine:
    def __init__(self, n: int, cls: type, workload: str, model_dir: str, steps: int, seed: int = 0) -> None:
        from shadowd.sim.driver import EngineDriver, RealClock
        from shadowd.sim.vllm_scheduler import SchedulerSpec, build_scheduler

        self.n, self.churn = n, workload != "steady"
        self.stagger = workload == "every-step"  # each request lives n steps: one finishes a step
        self.rng = np.random.default_rng(seed)
        self.lengths = _trace_lengths() if workload == "trace" else None
        prompt_max = TRACE_MAX_PROMPT if self.lengths else PROMPT_TOKENS
        self.mean_output = PRESSURE_MEAN_OUTPUT if workload == "pressure" else CHURN_MEAN_OUTPUT
        out_max = {"steady": steps + 1000, "trace": TRACE_MAX_OUTPUT}.get(workload, self.mean_output * 12)
        blocks = 2 * n * ((prompt_max + out_max + 64) // 16 + 2) + 64
        if workload == "pressure":  # about half of what the requests grow to on average
            blocks = n * ((PROMPT_TOKENS + PRESSURE_MEAN_OUTPUT // 2) // 16 + 1) + 64
        spec = SchedulerSpec(
            model_dir=model_dir,
            max_num_seqs=n,
            max_num_batched_tokens=max(2048, n * PROMPT_TOKENS),
            max_model_len=32768,
            num_blocks=blocks,
        )
        self.sched = build_scheduler(spec, cls)
        self.driver = EngineDriver(self.sched, lambda st: 1.0, vocab_size=128256, clock=RealClock())
        self.made = 0
        for i in range(n):  # geometric outputs are memoryless, staggered ones finish one a step
            self._add(i + 1 if self.stagger else None if self.churn else steps + 1000)
        self.queue: deque = deque([self.sched.schedule()])

    def _add(self, output: int | None = None) -> None:
        prompt = PROMPT_TOKENS
        if output is None and self.stagger:  # its prefill step and n - 1 more: n steps in all
            output = self.n - 1
        elif output is None and self.lengths:
            prompt, output = self.lengths[self.made % len(self.lengths)]
        elif output is None:
            output = int(min(self.rng.geometric(1.0 / self.mean_output), self.mean_output * 12))
        self.made += 1
        spec = RequestSpec(0.0, TENANTS[self.made % 4], prompt, output)
        self.sched.add_request(self.driver.make_request(spec))

    @staticmethod
    def _runner_output(out: Any) -> Any:
        from vllm.v1.outputs import ModelRunnerOutput

        ids = [r.req_id for r in out.scheduled_new_reqs] + list(out.scheduled_cached_reqs.req_ids)
        return ModelRunnerOutput(
            req_ids=ids, req_id_to_index={r: i for i, r in enumerate(ids)}, sampled_token_ids=[[7]] * len(ids)
        )

    def steps(self, k: int) -> list[int]:
        """Run ``k`` steps; the scheduler's CPU ns per step (schedule + update + arrivals)."""
        cpu = time.thread_time_ns
        sched, q = self.sched, self.queue
        out_ns = []
        for _ in range(k):
            c0 = cpu()
            if self.churn:
                for _ in range(self.n - len(sched.running) - len(sched.waiting)):
                    self._add()
            nxt = sched.schedule()
            c1 = cpu()
            time.sleep(GPU_WAIT_S)  # the GPU runs the step in flight: the charge thread's turn
            prev = q.popleft()
            mro = self._runner_output(prev)
            c2 = cpu()
            sched.update_from_output(prev, mro)
            c3 = cpu()
            q.append(nxt)
            out_ns.append(c1 - c0 + c3 - c2)
        return out_ns


class _Timer:
    """CPU ns and wall ns spent inside wrapped callables, and the number of calls.  CPU is the
    figure judged; wall is the engine thread's time in the calls as the engine lives it, which
    also holds what no CPU clock of the thread counts (it descheduled, a host that makes a
    cross-CPU wake-up cost time the guest does not see), as ``benchmarks/tap_cost.py`` reports
    both."""

    def __init__(self) -> None:
        self.ns = 0
        self.wall_ns = 0
        self.calls = 0
        self.depth = 0

    def wrap(self, fn: Any) -> Any:
        """``fn`` timed; a call made inside another timed call (FCFS's ``peek_request`` asks its
        own ``__bool__``) is counted in the outer one only."""
        cpu, wall = time.thread_time_ns, time.perf_counter_ns

        def call(*a: Any, **k: Any) -> Any:
            if self.depth:
                return fn(*a, **k)
            self.depth = 1
            w = wall()
            c = cpu()
            try:
                return fn(*a, **k)
            finally:
                self.ns += cpu() - c
                self.wall_ns += wall() - w
                self.calls += 1
                self.depth = 0

        return call

    def overhead_ns(self, calls: int = 20000) -> float:
        """The timer's own CPU ns per call (a wrapped no-op), subtracted from the figures."""
        return self.overhead(calls)[0]

    def overhead(self, calls: int = 20000) -> tuple[float, float]:
        """The timer's own (CPU, wall) ns per call (a wrapped no-op), subtracted from the figures."""
        probe = _Timer()
        f = probe.wrap(lambda *a: None)
        for _ in range(calls):
            f()
        return probe.ns / calls, probe.wall_ns / calls


class _ChargeThreadClock:
    """The charge thread's CPU ns (it keeps its own count) and the engine thread's wall ns waiting
    for a result, over the steps since ``reset``."""

    def __init__(self, gov: Any) -> None:
        self.charger, self.wait_ns, self._cpu0 = gov.charger, 0, gov.charger.cpu_ns
        result = self.charger.result

        def timed_result() -> Any:
            w = time.perf_counter_ns()
            try:
                return result()
            finally:
                self.wait_ns += time.perf_counter_ns() - w

        self.charger.result = timed_result

    @property
    def cpu_ns(self) -> int:
        return self.charger.cpu_ns - self._cpu0

    def reset(self) -> None:
        self.wait_ns, self._cpu0 = 0, self.charger.cpu_ns


def _instrument(sched: Any, timer: _Timer) -> _ChargeThreadClock | None:
    """Time the governor's ``on_schedule`` (if any) and every call into ``sched.waiting``; the
    charge thread's clock (if it has one)."""
    gov = sched.shadowd_governor
    clock = None
    if gov is not None:
        gov.on_schedule = timer.wrap(gov.on_schedule)
        if gov.charger is not None:
            clock = _ChargeThreadClock(gov)
        if gov.config.preempt == "over-served":
            sched._order_victims = timer.wrap(sched._order_victims)
    q = sched.waiting
    cls = type(
        "Timed" + type(q).__name__, (type(q),), {m: timer.wrap(getattr(type(q), m)) for m in QUEUE_METHODS}
    )
    q.__class__ = cls
    return clock


def _governed_config(workload: str, charge: str = "thread") -> Any:
    """The governor's configuration for ``workload``: mode ``on`` with a GO state file for the
    engine's platform (so both counters are charged every step), charged on its charge thread."""
    from shadowd.daemon.gatekeeper import published_model, write_state_file
    from shadowd.govern.config import GovernConfig

    state = os.path.join(tempfile.mkdtemp(prefix="shd-gov-"), "gate.json")
    coef = {
        "breakpoint_tokens": 512,
        "segments": [
            {
                "beta_ms": 6.0,
                "prefill": {"p": 0.002, "c": 1e-6, "pc": 1e-7, "request": 0.01},
                "decode": {"c": 4e-5},
            },
            {"beta_ms": 2.0, "prefill": {"p": 0.02, "pc": 1e-7, "request": 0.01}, "decode": {"c": 4e-5}},
        ],
    }
    now = time.time()
    write_state_file(
        state,
        {
            "verdict": "GO",
            "valid_until": now + 3600,
            "model": published_model("bench", KEY, coef, "equal", now, 3600),
        },
    )
    preempt = "over-served" if workload == "pressure" else "vllm"
    return GovernConfig(mode="on", state_file=state, platform_key=KEY, preempt=preempt, charge=charge)


def _engine(n: int, workload: str, cfg: Any, steps: int) -> _Engine:
    from shadowd.govern.vllm import GovernedAsyncScheduler
    from shadowd.paths import models_dir

    cls = type("BenchScheduler", (GovernedAsyncScheduler,), {"governor_config": cfg})
    return _Engine(n, cls, workload, str(models_dir() / "llama-3.1-8b"), steps)


def measure(
    n: int, workload: str, *, blocks: int = 12, block_steps: int = 120, warmup: int = 60
) -> dict[str, Any]:
    from shadowd.govern.config import GovernConfig

    on = _governed_config(workload)
    preempt = on.preempt
    total = warmup + blocks * block_steps
    engines = {
        name: _engine(n, workload, cfg, total)
        for name, cfg in (("governed", on), ("fcfs", GovernConfig()), ("plain", GovernConfig()))
    }
    governed, plain = engines["governed"], engines["plain"]
    assert governed.sched.shadowd_governor is not None and plain.sched.shadowd_governor is None
    for eng in engines.values():
        eng.steps(warmup)
    timers = {"governed": _Timer(), "fcfs": _Timer()}
    clock = _instrument(governed.sched, timers["governed"])
    assert clock is not None
    _instrument(engines["fcfs"].sched, timers["fcfs"])
    per_call, per_call_wall = _Timer().overhead()
    us: dict[str, list[float]] = {"governed": [], "fcfs": [], "plain": []}
    wall_us: dict[str, list[float]] = {"governed": [], "fcfs": []}
    calls, fcfs_calls, arrivals, orderings, thread_us, wait_us = [], [], [], [], [], []
    g = governed.sched.shadowd_governor
    deferred0, catch_ups0 = g.steps_deferred, g.catch_ups
    gc.collect()
    for _ in range(blocks):
        made, ordered = governed.made, governed.sched.shadowd_governor.victim_orderings
        clock.reset()
        for name, timer in timers.items():
            timer.ns = timer.wall_ns = timer.calls = 0
            engines[name].steps(block_steps)
            us[name].append((timer.ns - timer.calls * per_call) / block_steps / 1e3)
            wall_us[name].append((timer.wall_ns - timer.calls * per_call_wall) / block_steps / 1e3)
        thread_us.append(clock.cpu_ns / block_steps / 1e3)
        wait_us.append(clock.wait_ns / block_steps / 1e3)
        calls.append(timers["governed"].calls / block_steps)
        fcfs_calls.append(timers["fcfs"].calls / block_steps)
        arrivals.append((governed.made - made) / block_steps)
        orderings.append((governed.sched.shadowd_governor.victim_orderings - ordered) / block_steps)
        us["plain"].append(median(plain.steps(block_steps)) / 1e3)
    assert g.verdict.go and g.errors == 0, g.status()
    measured = blocks * block_steps
    net = [a - b for a, b in zip(us["governed"], us["fcfs"])]
    net_wall = [a - b for a, b in zip(wall_us["governed"], wall_us["fcfs"])]
    return {
        "requests_per_step": n,
        "workload": workload,
        "governor_net_us_per_step": round(median(net), 2),
        "governor_net_wall_us_per_step": round(median(net_wall), 2),
        "governor_cpu_us_per_step": round(median(us["governed"]), 2),
        "fcfs_queue_us_per_step": round(median(us["fcfs"]), 2),
        "governor_net_best_block": round(min(net), 2),
        "scheduler_cpu_us_per_step": round(median(us["plain"]), 1),
        "governor_pct_of_step": round(100 * median(net) / median(us["plain"]), 2),
        "charge": "thread",
        "queue_rekeyed_on": "thread",  # the charge thread re-keys the queue after the charge
        # "engine": the charge thread held to the engine thread's CPU (it followed it throughout)
        "charge_cpu": "engine" if g.charger is not None and g.charger.following else "any",
        "charge_thread_moves": g.charger.moves if g.charger is not None else 0,
        # Steps handed over with a later one (``Governor._defer``), and catch-ups (deferred steps
        # charged at once because a counter was to be read), over the measured steps.
        "hand_over_every": g.hand_over_every,
        "steps_deferred_pct": round(100 * (g.steps_deferred - deferred0) / measured, 1),
        "catch_ups_per_1000_steps": round(1000 * (g.catch_ups - catch_ups0) / measured, 1),
        "charge_thread_us_per_step": round(median(thread_us), 2),
        "engine_wait_us_per_step": round(median(wait_us), 2),
        "gpu_wait_s": GPU_WAIT_S,
        "governor_calls_per_step": round(median(calls), 1),
        "fcfs_calls_per_step": round(median(fcfs_calls), 1),
        "arrivals_per_step": round(median(arrivals), 2),
        "victim_orderings_per_step": round(median(orderings), 2),
        "preempt": preempt,
        "timer_overhead_ns_per_call": round(per_call, 1),
        "timer_overhead_wall_ns_per_call": round(per_call_wall, 1),
        "requests_made": governed.made,
        "workload_params": _params(workload),
        "blocks": blocks,
        "block_steps": block_steps,
    }


# The governor's parts, each timed alone over its own stretch of steps (one wrapper at a time, so
# no part's figure carries another part's timer): (owner, method, the part it sits in).
PARTS = (
    ("queue", "add_request", "vLLM"),
    ("queue", "_facts", "queue.add_request"),
    ("queue", "pop_request", "vLLM"),
    ("queue", "peek_request", "vLLM"),
    ("queue", "__bool__", "vLLM"),
    ("governor", "on_schedule", "vLLM"),
    ("governor", "_refresh", "governor.on_schedule"),
    ("governor", "_charge_new", "governor.on_schedule"),
    ("governor", "_charge_by_pass", "governor.on_schedule"),
    ("roster", "fold", "governor.on_schedule"),
    ("roster", "repeat", "governor.on_schedule"),
    ("roster", "leave", "governor.on_schedule"),
    ("roster", "end_step", "governor.on_schedule"),
    ("governor", "_charge_sums", "governor.on_schedule"),
    ("pricer", "shares", "governor._charge_sums"),
    ("ledger", "charge", "governor._charge_sums"),
    ("governor", "_charge_decode", "governor.on_schedule"),
    ("governor", "_retire", "governor.on_schedule"),
    ("queue", "invalidate", "governor.on_schedule"),
    ("governor", "order_victims", "vLLM"),
)
FCFS_PARTS = ("add_request", "pop_request", "peek_request", "__bool__")
# The engine thread's side with the charge made on the charge thread (``--engine-side``): what
# the engine thread still runs, part by part.  ``queue._settle`` is how the queue's calls take an
# owed charge in (the governor's ``collect``: wait for the answer, then admit the arrivals that
# waited in the inbox); ``charger.submit`` hands the step over with those deferred before it
# (``charger.defer``: kept, no wake-up), waking the charge thread.
ENGINE_PARTS = (
    ("queue", "add_request", "vLLM, queue._settle"),
    ("queue", "_facts", "queue.add_request"),
    ("queue", "_arrive", "queue.add_request"),
    ("queue", "pop_request", "vLLM"),
    ("queue", "peek_request", "vLLM"),
    ("queue", "__bool__", "vLLM"),
    ("queue", "_settle", "the queue's calls"),
    ("queue", "admit_inbox", "queue._settle"),
    ("charger", "result", "queue._settle"),
    ("governor", "on_schedule", "vLLM"),
    ("charger", "submit", "governor.on_schedule"),
    ("charger", "defer", "governor.on_schedule"),
    ("governor", "order_victims", "vLLM"),
)
BREAKDOWN = (
    (32, "every-step"),
    (32, "churn"),
    (32, "trace"),
    (32, "pressure"),
    (256, "every-step"),
    (256, "churn"),
    (256, "trace"),
    (256, "pressure"),
)


def _time_part(eng: _Engine, obj: Any, name: str, steps: int, per_call: float) -> dict[str, Any]:
    """``obj.name`` timed over ``steps`` steps of ``eng`` (then unwrapped): µs and calls per step."""
    t = _Timer()
    if name == "__bool__":  # looked up on the type: a subclass for the stretch
        cls = type(obj)
        obj.__class__ = type("Timed" + cls.__name__, (cls,), {"__bool__": t.wrap(cls.__bool__)})
        try:
            eng.steps(steps)
        finally:
            obj.__class__ = cls
    else:
        own = name in vars(obj)  # an instance attribute (the queue's ``_facts``) or a method
        orig = getattr(obj, name)
        setattr(obj, name, t.wrap(orig))
        try:
            eng.steps(steps)
        finally:
            if own:
                setattr(obj, name, orig)
            else:
                delattr(obj, name)
    us = max(0.0, (t.ns - t.calls * per_call) / steps / 1e3)
    calls = t.calls / steps
    return {
        "us_per_step": round(us, 2),
        "calls_per_step": round(calls, 2),
        "us_per_call": round(us / calls, 2) if calls else None,
    }


def breakdown(
    n: int, workload: str, *, steps: int = 300, warmup: int = 60, charge: str = "inline"
) -> dict[str, Any]:
    """Where the governor's time goes on ``workload``: each part of it timed alone, and vLLM's
    FCFS queue's answers to the same calls on the untouched scheduler beside them.

    ``charge="inline"``: every part of the charge on the engine thread, where one timer at a time
    reads it (the charge thread runs the same parts, the same number of times): ``PARTS``.
    ``charge="thread"``: as the engine runs it, the engine thread's side only: ``ENGINE_PARTS``
    (a timer reads its own thread's CPU, so the charge thread's parts are not in it)."""
    from shadowd.govern.config import GovernConfig

    table = PARTS if charge == "inline" else ENGINE_PARTS
    total = warmup + steps * (len(table) + 1)
    governed = _engine(n, workload, _governed_config(workload, charge=charge), total)
    fcfs = _engine(n, workload, GovernConfig(), warmup + steps * len(FCFS_PARTS))
    governed.steps(warmup)
    fcfs.steps(warmup)
    per_call = _Timer().overhead_ns()
    gov = governed.sched.shadowd_governor
    owners = {
        "queue": gov.queue,
        "governor": gov,
        "roster": gov.roster,
        "ledger": gov.ledger,
        "charger": gov.charger,
    }
    gc.collect()
    made, deferred0 = governed.made, gov.steps_deferred
    parts = []
    for owner, name, inside in table:
        obj = gov.verdict.pricer if owner == "pricer" else owners[owner]
        parts.append(
            {"part": f"{owner}.{name}", "inside": inside, **_time_part(governed, obj, name, steps, per_call)}
        )
    arrivals = (governed.made - made) / (steps * len(table))
    deferred = (gov.steps_deferred - deferred0) / (steps * len(table))
    fcfs_parts = [
        {"part": f"fcfs.{name}", **_time_part(fcfs, fcfs.sched.waiting, name, steps, per_call)}
        for name in FCFS_PARTS
    ]
    assert gov.verdict.go and gov.errors == 0, gov.status()
    return {
        "requests_per_step": n,
        "workload": workload,
        "charge": charge,
        "arrivals_per_step": round(arrivals, 2),
        "hand_over_every": gov.hand_over_every if gov.charger is not None else None,
        "steps_deferred_pct": round(100 * deferred, 1),
        "steps_per_part": steps,
        "timer_overhead_ns_per_call": round(per_call, 1),
        "parts": parts,
        "fcfs": fcfs_parts,
    }


# Engine-thread CPU time between hand-overs for ``--wake``, in ms: from a step of a light batch to
# one of a large batch on the reference scheduler (its own CPU per step, ``measure``).
WAKE_GAPS_MS = (0.2, 1.0, 2.0, 6.0, 20.0)


def wake(gap_ms: float, wakes: int = 300, follow: bool = False) -> dict[str, Any]:
    """The hand-over alone (``ChargeThread.submit``, a charge that does nothing): the engine
    thread's CPU and wall time per hand-over when it has computed for ``gap_ms`` since the last
    one, as the engine thread schedules a step, then ``GPU_WAIT_S`` of waiting (the charge thread
    answers then).  The charge thread's CPU idles for about that long between wake-ups; what
    waking it costs the waker may grow with that idle time (on a virtual machine, perhaps the
    host halting an idle virtual CPU), which is why the hand-over's cost differs between
    workloads and machines.  ``follow``: the charge thread held to the engine thread's CPU, as
    the governor runs it by default (``SHADOWD_GOVERN_CHARGE_CPU=engine``), so the wake-up stays
    on one CPU.  The same put on a queue no thread waits on is timed beside it."""
    import queue

    from shadowd.govern.charge_thread import ChargeThread

    charger = ChargeThread(lambda step: None, name="shadowd-bench-wake", follow=follow)
    cpu, wall, now = time.thread_time_ns, time.perf_counter_ns, time.perf_counter
    cpu_ns = wall_ns = 0
    try:
        for i in range(wakes):
            end = now() + gap_ms / 1e3
            while now() < end:  # the engine thread's own work (the interpreter held)
                pass
            w, c = wall(), cpu()
            charger.submit(i)
            cpu_ns += cpu() - c
            wall_ns += wall() - w
            time.sleep(GPU_WAIT_S)  # the GPU's part: the charge thread's turn
            charger.result()
    finally:
        charger.close()
    idle, alone_ns = queue.SimpleQueue(), 0  # the put itself: nobody to wake
    for i in range(wakes):
        c = cpu()
        idle.put(i)
        alone_ns += cpu() - c
    return {
        "busy_ms": gap_ms,
        "charge_cpu": "engine" if charger.following else "any",
        "wakes": wakes,
        "submit_cpu_us": round(cpu_ns / wakes / 1e3, 2),
        "submit_wall_us": round(wall_ns / wakes / 1e3, 2),
        "put_unwaited_cpu_us": round(alone_ns / wakes / 1e3, 2),
        "gpu_wait_s": GPU_WAIT_S,
    }


# ``--hand-over``: the most steps one hand-over carries (``SHADOWD_GOVERN_HAND_OVER_EVERY``), each
# on its own governed engine, run side by side.  The default is chosen on the first cell, by a rule
# set before the run: the least engine-thread time per step (CPU net plus the wall time spent
# waiting for the charge thread, which a catch-up of more kept steps makes longer), a value within
# ``HAND_OVER_TIE_US`` of it counting as a tie won by the fewer steps kept.  The other cells played
# no part in the choice: they confirm it or not.
HAND_OVER_VALUES = (1, 4, 8, 16, 32)
HAND_OVER_CELLS = ((32, "every-step"), (256, "every-step"), (32, "trace"), (256, "trace"))
HAND_OVER_TIE_US = 0.5


def hand_over_choice(values: list[dict[str, Any]]) -> int:
    """The value the rule above picks from one cell's rows.

    >>> hand_over_choice([{"hand_over_every": 8, "engine_us_per_step": 20.0},
    ...                   {"hand_over_every": 16, "engine_us_per_step": 18.0},
    ...                   {"hand_over_every": 32, "engine_us_per_step": 17.6}])
    16
    """
    least = min(v["engine_us_per_step"] for v in values)
    return min(v["hand_over_every"] for v in values if v["engine_us_per_step"] <= least + HAND_OVER_TIE_US)


def hand_over(
    n: int,
    workload: str,
    values: tuple[int, ...] = HAND_OVER_VALUES,
    *,
    blocks: int = 24,
    block_steps: int = 120,
    warmup: int = 60,
) -> dict[str, Any]:
    """The engine thread's time per step for each ``hand_over_every`` in ``values``: one governed
    engine per value and the FCFS engine, on the same arrivals, timed block by block as
    ``measure`` times them, the order of the engines rotated every block so that none is always
    first.  Each value's figure is the median over blocks of its CPU net (its calls less the FCFS
    queue's in the same block) plus its wall time waiting for the charge thread; the wait alone
    and the charge thread's CPU per step are reported beside it, and the rule's choice per cell."""
    import dataclasses

    from shadowd.govern.config import GovernConfig

    total = warmup + blocks * block_steps
    on = _governed_config(workload)
    engines = {v: _engine(n, workload, dataclasses.replace(on, hand_over_every=v), total) for v in values}
    fcfs = _engine(n, workload, GovernConfig(), total)
    for eng in (*engines.values(), fcfs):
        eng.steps(warmup)
    timers = {v: _Timer() for v in values}
    clocks = {v: _instrument(eng.sched, timers[v]) for v, eng in engines.items()}
    fcfs_timer = _Timer()
    _instrument(fcfs.sched, fcfs_timer)
    per_call, _ = _Timer().overhead()
    net: dict[int, list[float]] = {v: [] for v in values}
    thread_us: dict[int, list[float]] = {v: [] for v in values}
    wait_us: dict[int, list[float]] = {v: [] for v in values}
    deferred0 = {v: eng.sched.shadowd_governor.steps_deferred for v, eng in engines.items()}
    order = list(values)
    gc.collect()
    for b in range(blocks):
        us = {}
        for v in order[b % len(order) :] + order[: b % len(order)]:
            t, clock = timers[v], clocks[v]
            t.ns = t.wall_ns = t.calls = 0
            clock.reset()  # type: ignore[union-attr]
            engines[v].steps(block_steps)
            us[v] = (t.ns - t.calls * per_call) / block_steps / 1e3
            thread_us[v].append(clock.cpu_ns / block_steps / 1e3)  # type: ignore[union-attr]
            wait_us[v].append(clock.wait_ns / block_steps / 1e3)  # type: ignore[union-attr]
        fcfs_timer.ns = fcfs_timer.wall_ns = fcfs_timer.calls = 0
        fcfs.steps(block_steps)
        base = (fcfs_timer.ns - fcfs_timer.calls * per_call) / block_steps / 1e3
        for v in values:
            net[v].append(us[v] - base + wait_us[v][-1])
    rows = []
    for v, eng in engines.items():
        g = eng.sched.shadowd_governor
        assert g.verdict.go and g.errors == 0, g.status()
        rows.append(
            {
                "hand_over_every": v,
                "engine_us_per_step": round(median(net[v]), 2),
                "engine_wait_us_per_step": round(median(wait_us[v]), 2),
                "charge_thread_us_per_step": round(median(thread_us[v]), 2),
                "steps_deferred_pct": round(
                    100 * (g.steps_deferred - deferred0[v]) / (blocks * block_steps), 1
                ),
            }
        )
    return {
        "requests_per_step": n,
        "workload": workload,
        "blocks": blocks,
        "block_steps": block_steps,
        "values": rows,
        "choice": hand_over_choice(rows),
    }


def _params(workload: str) -> dict[str, Any]:
    if workload == "trace":
        return {"traces": list(TRACES), "max_prompt": TRACE_MAX_PROMPT, "max_output": TRACE_MAX_OUTPUT}
    if workload == "every-step":
        return {"prompt": PROMPT_TOKENS, "output": "requests per step, less one"}
    if workload in ("churn", "pressure"):
        mean = PRESSURE_MEAN_OUTPUT if workload == "pressure" else CHURN_MEAN_OUTPUT
        return {"prompt": PROMPT_TOKENS, "mean_output": mean}
    return {"prompt": PROMPT_TOKENS}


def run(quick: bool = False) -> dict[str, Any]:
    kw = dict(blocks=4, block_steps=80, warmup=30) if quick else {}
    results = []
    for n, target in ((32, 20.0), (256, 60.0)):
        for workload in WORKLOADS:
            r = measure(n, workload, **kw)
            r["target_us"] = target
            r["met"] = r["governor_net_us_per_step"] <= target
            results.append(r)
    return {"govern_cost": results}


def main(argv: list[str] | None = None) -> None:
    """Parse the flags first: an unknown flag (or ``--help``) must not run the benchmark and
    overwrite its stored section of ``docs/admission.json``."""
    import argparse

    from benchmarks.admission import store_section

    ap = argparse.ArgumentParser(
        prog="python -m benchmarks.govern_cost", description=__doc__.split("\n\n")[0]
    )
    what = ap.add_mutually_exclusive_group()
    what.add_argument("--breakdown", action="store_true", help="where the time goes, part by part")
    what.add_argument("--quick", action="store_true", help="fewer, shorter blocks (a smoke run)")
    what.add_argument(
        "--wake",
        action="store_true",
        help="the hand-over's cost against the engine thread's busy time between hand-overs",
    )
    what.add_argument(
        "--hand-over",
        action="store_true",
        help="the engine thread's cost for each number of steps one hand-over carries, side by side",
    )
    what.add_argument(
        "--engine-side",
        action="store_true",
        help="where the engine thread's time goes with the charge on the charge thread, part by part",
    )
    a = ap.parse_args(argv)
    args = [sys.argv[0], *(argv if argv is not None else sys.argv[1:])]
    if a.breakdown:
        store_section("govern_cost_breakdown", [breakdown(n, w) for n, w in BREAKDOWN], args)
    elif a.wake:
        rows = [wake(ms, follow=follow) for ms in WAKE_GAPS_MS for follow in (False, True)]
        store_section("govern_cost_wake", rows, args)
    elif a.hand_over:
        store_section("govern_cost_hand_over", [hand_over(n, w) for n, w in HAND_OVER_CELLS], args)
    elif a.engine_side:
        cells = [breakdown(n, w, charge="thread") for n, w in BREAKDOWN]
        store_section("govern_cost_engine_side", cells, args)
    else:
        store_section("govern_cost", run(quick=a.quick)["govern_cost"], args, keep_history=True)


if __name__ == "__main__":
    main()
