"""Drive a real vLLM scheduler the way vLLM's engine core does, on simulated time.

``EngineDriver`` reproduces ``EngineCore.step_with_batch_queue`` (async
scheduling: schedule N+1 before N's output is consumed; a batch queue of two)
or the plain sync loop, with a step-duration function standing in for the
GPU.  Time is simulated: a ``SimClock`` is installed as the tap's clock, so
the frames carry exactly the timestamps a GPU with those step durations would
have produced, and a run of thousands of steps takes seconds.

Token ids exist only inside this module, to give vLLM's prefix cache real
content to hash (shared prefix blocks map to equal ids); they never reach a
frame, a table or a log.
"""

from __future__ import annotations

import heapq
import math
import time
from collections import deque
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

import numpy as np

PREFIX_BLOCK_TOKENS = 512


class RequestLike(Protocol):
    arrival_s: float
    tenant: str
    prompt_tokens: int
    output_tokens: int
    prefix_blocks: tuple[int, ...] | None


IDLE_TICK_NS = 10_000_000  # simulated time an idle engine-loop turn stands for (nothing could run)


@dataclass
class SimClock:
    """Monotonic nanoseconds of simulated time."""

    now_ns: int = 1_000_000_000

    def __call__(self) -> int:
        return self.now_ns

    def advance_to(self, t_ns: int) -> None:
        self.now_ns = max(self.now_ns, int(t_ns))


class RealClock:
    """Wall-time variant: ``advance_to`` sleeps, so the engine runs at real speed (timing tests)."""

    def __call__(self) -> int:
        return time.monotonic_ns()

    @property
    def now_ns(self) -> int:
        return time.monotonic_ns()

    def advance_to(self, t_ns: int) -> None:
        delay = (int(t_ns) - time.monotonic_ns()) / 1e9
        if delay > 0.002:
            time.sleep(delay - 0.001)  # sleep, then spin the last millisecond:
        while time.monotonic_ns() < t_ns:  # a GPU finishes on time, not when the OS wakes us
            pass


@dataclass
class ScheduledStep:
    """One step as the scheduler formed it (the test oracle and the latency model's input)."""

    req_ids: list[str]
    new_tokens: np.ndarray
    context_tokens: np.ndarray
    prompt_tokens: np.ndarray
    prefill: np.ndarray
    tenants: list[str]
    final: list[bool] = field(default_factory=list)  # the step completes the request's known tokens
    duration_ms: float = 0.0  # the emulated GPU time of the step
    # How late the engine loop saw the step finish (0 on simulated time; on a real clock, the OS
    # waking the loop late): no host-side timestamp can see the finish earlier than that.
    observed_late_ms: float = 0.0


StepTime = Callable[[ScheduledStep], float]  # -> milliseconds


class PromptBuilder:
    """Deterministic token ids: shared prefix blocks give equal ids, the rest is unique."""

    def __init__(self, vocab_size: int) -> None:
        self.vocab = max(1000, int(vocab_size)) - 1
        self._unique = 0

    def _block(self, block_id: int, length: int) -> list[int]:
        a = 1 + block_id % self.vocab
        b = 1 + (block_id // self.vocab) % self.vocab
        return [a] * (length - 1) + [b]

    def build(self, prompt_tokens: int, prefix_blocks: Sequence[int] | None) -> list[int]:
        ids: list[int] = []
        for block in prefix_blocks or ():
            take = min(PREFIX_BLOCK_TOKENS, prompt_tokens - len(ids))
            if take <= 0:
                break
            ids += self._block(int(block), take)
        self._unique += 1
        while len(ids) < prompt_tokens:  # request-unique tail
            take = min(PREFIX_BLOCK_TOKENS, prompt_tokens - len(ids))
            ids += self._block(10**9 + self._unique * 1000 + len(ids) // PREFIX_BLOCK_TOKENS, take)
        return ids


class EngineDriver:
    """Runs a (tapped) vLLM scheduler over a request stream with simulated GPU time."""

    def __init__(
        self,
        scheduler: Any,
        step_time: StepTime,
        *,
        async_scheduling: bool = True,
        vocab_size: int = 32000,
        block_size: int = 16,
        tenant_key: str = "tenant",
        clock: SimClock | RealClock | None = None,
    ) -> None:
        from vllm.sampling_params import SamplingParams  # noqa: F401  (fail early without vLLM)
        from vllm.utils.hashing import sha256
        from vllm.v1.core.kv_cache_utils import get_request_block_hasher, init_none_hash

        init_none_hash(sha256)
        self.scheduler = scheduler
        self.step_time = step_time
        self.async_scheduling = async_scheduling
        self.tenant_key = tenant_key
        self.clock = clock if clock is not None else SimClock()
        self.prompts = PromptBuilder(vocab_size)
        self._hasher = get_request_block_hasher(block_size, sha256)
        self._queue: deque = deque()
        self._gpu_free_ns = self.clock()
        self.steps: list[ScheduledStep] = []  # filled when record_steps
        self.record_steps = False
        # Which steps (by index from 0) to record; None: every one.  A long run keeps a sample.
        self.keep_step: Callable[[int], bool] | None = None
        self.steps_formed = 0
        self.steps_run = 0
        self.requests_added = 0
        self._made = 0
        self._origin_ns = self.clock()
        self._arrivals = _ArrivalQueue(self.make_request)
        # Wall clock = this epoch + the driver's clock: on simulated time the tap's wall stamps and
        # each request's ``arrival_time`` both run on it, so queue time and TTFT are simulated too.
        self._wall_epoch_ns = time.time_ns() - self.clock()
        tap = getattr(scheduler, "shadowd_tap", None)
        if tap is not None and isinstance(self.clock, SimClock):
            tap.clock = self.clock
            tap.wall_clock = lambda: self._wall_epoch_ns + self.clock.now_ns

    # -- requests ------------------------------------------------------------
    def make_request(self, spec: RequestLike) -> Any:
        """Build the vLLM ``Request`` (token ids, block hashes) off the engine's critical path,
        as vLLM's input thread does."""
        from vllm.sampling_params import SamplingParams
        from vllm.v1.request import Request

        params = SamplingParams(
            max_tokens=max(1, int(spec.output_tokens)),
            ignore_eos=True,
            extra_args={self.tenant_key: spec.tenant},
        )
        self._made += 1
        return Request(
            request_id=f"r{self._made}",
            prompt_token_ids=self.prompts.build(int(spec.prompt_tokens), spec.prefix_blocks),
            sampling_params=params,
            pooling_params=None,
            block_hasher=self._hasher,
        )

    def add_request(self, request: Any) -> None:
        self.scheduler.add_request(request)
        self.requests_added += 1

    # -- the loop --------------------------------------------------------------
    def submit(self, requests: Iterable[RequestLike], at_s: float | None = None) -> None:
        """Queue a stream (sorted by ``arrival_s``), shifted to start at ``at_s`` (default: now)."""
        now_s = (self.clock() - self._origin_ns) / 1e9
        self._arrivals.submit(requests, offset_s=now_s if at_s is None else at_s)

    def backlog(self) -> tuple[int, int]:
        """Requests waiting for the engine and their prompt tokens: offered load not yet served
        (what a backlog holds in memory grows with the tokens: benchmarks/demo_memory.py)."""
        waiting = list(self.scheduler.waiting)
        return len(waiting), sum(r.num_prompt_tokens for r in waiting)

    @property
    def elapsed_s(self) -> float:
        return (self.clock() - self._origin_ns) / 1e9

    def run(
        self,
        requests: Iterable[RequestLike] | None = None,
        max_steps: int = 1000,
        on_step: Callable[[int], None] | None = None,
    ) -> int:
        """Run until ``max_steps`` non-empty steps in all, or the streams and engine run dry.

        ``requests`` (if given) are submitted first, relative to the driver's start."""
        if requests is not None:
            self._arrivals.submit(requests, offset_s=0.0)
        pending = self._arrivals
        while self.steps_run < max_steps:
            for arrival_s, request in pending.due(self.clock() - self._origin_ns):
                # its trace arrival, not when the loop noticed it nor when it was built ahead
                request.arrival_time = (self._wall_epoch_ns + self._origin_ns + arrival_s * 1e9) / 1e9
                self.add_request(request)
            if not self._step():
                nxt = pending.next_arrival_ns()
                if nxt is None and not self._queue:
                    break
                if nxt is not None:
                    self.clock.advance_to(self._origin_ns + nxt)
            elif on_step is not None:
                on_step(self.steps_run)
        while self._queue:
            self._finish_oldest()
        tap = getattr(self.scheduler, "shadowd_tap", None)
        if tap is not None:  # the engine went idle: every frame of the run is passed on now
            tap.flush()
        return self.steps_run

    def _step(self) -> bool:
        """One engine-core iteration; False when nothing could be scheduled or finished."""
        depth = 2 if self.async_scheduling else 1
        sched = self.scheduler
        if sched.has_requests() and len(self._queue) < depth:
            out = sched.schedule()
            scheduled_ns = self.clock()  # the GPU may start now, not after our bookkeeping
            if out.total_num_scheduled_tokens > 0:
                step = self._describe(out)
                start = max(self._gpu_free_ns, scheduled_ns)
                step.duration_ms = float(self.step_time(step))
                self._gpu_free_ns = start + int(step.duration_ms * 1e6)
                self._queue.appendleft((out, step, self._gpu_free_ns))
                if self.record_steps and (self.keep_step is None or self.keep_step(self.steps_formed)):
                    self.steps.append(step)
                self.steps_formed += 1
                if len(self._queue) < depth:
                    return True
            else:
                # Requests wait but none could run (e.g. every waiting tenant held at its cap)
                # and no work is in flight: a real engine loop comes round again a little later,
                # so simulated time moves on, or what waits on time (a cap draining) never comes.
                busy = any(step is not None for _, step, _ in self._queue)
                self._queue.appendleft((out, None, self.clock() + (0 if busy else IDLE_TICK_NS)))
        if not self._queue:
            return False
        self._finish_oldest()
        return True

    def _finish_oldest(self) -> None:
        from vllm.v1.outputs import ModelRunnerOutput

        out, step, done_ns = self._queue.pop()
        self.clock.advance_to(done_ns)
        if step is None:
            mro = ModelRunnerOutput(req_ids=[], req_id_to_index={}, sampled_token_ids=[])
        else:
            step.observed_late_ms = (self.clock() - done_ns) / 1e6
            mro = ModelRunnerOutput(
                req_ids=step.req_ids,
                req_id_to_index={r: i for i, r in enumerate(step.req_ids)},
                sampled_token_ids=[[7] if f else [] for f in step.final],
            )
            self.steps_run += 1
        self.scheduler.update_from_output(out, mro)

    def _describe(self, out: Any) -> ScheduledStep:
        reqs = self.scheduler.requests
        ids = [r.req_id for r in out.scheduled_new_reqs] + list(out.scheduled_cached_reqs.req_ids)
        ctx = [r.num_computed_tokens for r in out.scheduled_new_reqs] + list(
            out.scheduled_cached_reqs.num_computed_tokens
        )
        new = [out.num_scheduled_tokens[r] for r in ids]
        prompt = [reqs[r].num_prompt_tokens for r in ids]
        known = [reqs[r].num_tokens for r in ids]
        return ScheduledStep(
            req_ids=ids,
            new_tokens=np.array(new),
            context_tokens=np.array(ctx),
            prompt_tokens=np.array(prompt),
            prefill=np.array([c < p or n > 1 for c, p, n in zip(ctx, prompt, new)], dtype=bool),
            tenants=[reqs[r].sampling_params.extra_args[self.tenant_key] for r in ids],
            final=[c + n >= k for c, n, k in zip(ctx, new, known)],
        )


class _ArrivalQueue:
    """Requests from several sorted streams, released by arrival time.

    The next few requests are built ahead (vLLM builds requests on its input
    thread, off the scheduling loop); a stream submitted later merges in.
    """

    AHEAD = 32

    def __init__(self, make: Callable[[RequestLike], Any]) -> None:
        self._make = make
        self._built: list = []  # (arrival_s, n, Request)
        self._heads: list = []  # (arrival_s, n, spec, iterator): next of each stream
        self._n = 0

    def submit(self, requests: Iterable[RequestLike], offset_s: float = 0.0) -> None:
        self._push_head(iter(requests), offset_s)
        self._refill()

    def _push_head(self, it: Iterator[RequestLike], offset_s: float) -> None:
        spec = next(it, None)
        if spec is not None:
            self._n += 1
            heapq.heappush(self._heads, (float(spec.arrival_s) + offset_s, self._n, spec, it, offset_s))

    def _refill(self) -> None:
        while len(self._built) < self.AHEAD and self._heads:
            arrival, n, spec, it, offset = heapq.heappop(self._heads)
            heapq.heappush(self._built, (arrival, n, self._make(spec)))
            self._push_head(it, offset)

    def _earliest(self) -> float | None:
        times = [q[0][0] for q in (self._built, self._heads) if q]
        return min(times) if times else None

    def due(self, elapsed_ns: int) -> list[tuple[float, Any]]:
        """(arrival s, request) of every request arrived by ``elapsed_ns``, in arrival order."""
        out = []
        while (t := self._earliest()) is not None and t * 1e9 <= elapsed_ns:
            if self._built and self._built[0][0] == t:
                out.append((t, heapq.heappop(self._built)[2]))
            else:
                arrival, n, spec, it, offset = heapq.heappop(self._heads)
                out.append((arrival, self._make(spec)))
                self._push_head(it, offset)
        self._refill()
        return out

    def next_arrival_ns(self) -> int | None:
        t = self._earliest()
        return None if t is None else math.ceil(t * 1e9)
