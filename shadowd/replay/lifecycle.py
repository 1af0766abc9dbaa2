"""Per-request service on simulated time: arrival, first token, finish, preemptions.

``ServiceDriver`` is the simulation's ``EngineDriver`` that also remembers, per request, when it
arrived (its trace arrival, not when the loop noticed it), when each step that produced one of its
tokens finished, and how often vLLM preempted it.  From those: TTFT (first token − arrival) and
TPOT ((finish − first token) / (tokens − 1)).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from shadowd.sim.driver import EngineDriver, RequestLike


@dataclass
class RequestService:
    tenant: str
    arrival_ns: int
    prompt_tokens: int
    output_tokens: int
    request: Any  # the vLLM Request (preemption count), never its tokens
    first_token_ns: int | None = None
    finish_ns: int | None = None
    tokens: int = 0

    @property
    def done(self) -> bool:
        return self.tokens >= self.output_tokens

    @property
    def ttft_s(self) -> float | None:
        return None if self.first_token_ns is None else (self.first_token_ns - self.arrival_ns) / 1e9

    @property
    def tpot_s(self) -> float | None:
        if self.first_token_ns is None or self.finish_ns is None or self.tokens < 2:
            return None
        return (self.finish_ns - self.first_token_ns) / 1e9 / (self.tokens - 1)

    @property
    def preemptions(self) -> int:
        return int(getattr(self.request, "num_preemptions", 0))


class ServiceDriver(EngineDriver):
    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.service: dict[str, RequestService] = {}
        self.step_end_ns: list[int] = []  # per recorded step, when the GPU finished it

    def make_request(self, spec: RequestLike) -> Any:
        request = super().make_request(spec)
        self.service[request.request_id] = RequestService(
            spec.tenant,
            self._origin_ns + int(round(float(spec.arrival_s) * 1e9)),
            int(spec.prompt_tokens),
            max(1, int(spec.output_tokens)),
            request,
        )
        return request

    def _finish_oldest(self) -> None:
        out, step, done_ns = self._queue[-1]
        super()._finish_oldest()
        if step is None:
            return
        if self.record_steps:
            self.step_end_ns.append(int(done_ns))
        for rid, final in zip(step.req_ids, step.final):
            if final:
                s = self.service[rid]
                if s.first_token_ns is None:
                    s.first_token_ns = int(done_ns)
                s.tokens += 1
                s.finish_ns = int(done_ns)
