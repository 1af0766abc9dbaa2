"""vLLM's waiting queue, reordered by weighted fair queuing over the ledger's counters.

It implements vLLM 0.33's ``RequestQueue`` (what ``Scheduler.waiting`` is), so the scheduler's own
admission loop runs unchanged: it peeks, pops, skips (pop then prepend) and breaks exactly as with
the FCFS queue; only *which* request is at the head changes.  Each tenant keeps its own FIFO; the
head is the first request of the backlogged, not-held tenant with the least normalised service
(ties: the earliest request).  Preempted and skipped requests go back to the front of their
tenant's FIFO, as the FCFS queue puts them at its front.

Within one ``schedule`` call the counters do not move (charges come after the step), so a request
popped for admission adds an *estimate* of its cost to its tenant's pending service (its remaining
prompt tokens at the active counter's prefill price) and the next head is chosen with it; a request
put back takes its estimate back; the estimates are dropped when the step's real charge arrives.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable, Iterable, Iterator
from typing import Any

from vllm.v1.core.sched.request_queue import RequestQueue

from shadowd.govern.ledger import VTC, Ledger


class RequestFacts:
    """What the governor keeps per live request: tenant, prompt length, arrival order, state."""

    __slots__ = ("tenant", "prompt", "seq", "running", "estimate")

    def __init__(self, tenant: int, prompt: int, seq: int) -> None:
        self.tenant = tenant
        self.prompt = prompt
        self.seq = seq
        self.running = False
        self.estimate = 0.0


class FairRequestQueue(RequestQueue):
    def __init__(
        self,
        ledger: Ledger,
        facts: Callable[[Any], RequestFacts],
        kind: int = VTC,
        prefill_price: float = 1.0,
    ) -> None:
        self.ledger = ledger
        self._facts = facts  # request -> its facts (created on first sight)
        self.kind = kind  # the counter admission follows now (VTC or ATTRIBUTED); set by the governor
        self.price = prefill_price  # estimate per prompt token, in that counter's units
        self._fifo: dict[int, deque] = {}  # tenant -> its waiting (seq, request, facts) (non-empty only)
        self.pending: dict[int, float] = {}  # tenant -> estimates of this step's admissions
        self._popped: list[RequestFacts] = []  # carrying an estimate this step
        self._size = 0
        self._head: int | None = None  # cached choice; None = choose again

    # -- choice ----------------------------------------------------------------------------------
    def _choose(self) -> int | None:
        head = self._head
        if head is not None:
            return head
        ledger, pending = self.ledger, self.pending
        service, weight, cap = ledger.service[self.kind], ledger.weight, ledger.cap
        best, best_key, best_seq = None, 0.0, 0
        for t, fifo in self._fifo.items():
            if cap[t] and ledger.held(t):
                continue
            key = (service[t] + pending.get(t, 0.0)) / weight[t]
            seq = fifo[0][0]
            if best is None or key < best_key or (key == best_key and seq < best_seq):
                best, best_key, best_seq = t, key, seq
        self._head = best
        return best

    def invalidate(self) -> None:
        """The counters moved (a step was charged): choose afresh, forget estimates."""
        self._head = None
        self.pending.clear()
        for f in self._popped:
            f.estimate = 0.0
        self._popped.clear()

    def has_eligible(self) -> bool:
        return self._choose() is not None

    # -- RequestQueue ----------------------------------------------------------------------------
    def add_request(self, request: Any) -> None:
        f = self._facts(request)
        self._push(f, request, left=False)

    def _push(self, f: RequestFacts, request: Any, *, left: bool) -> None:
        if f.running:  # preempted, or skipped after being popped this step
            f.running = False
            if f.estimate:
                self.pending[f.tenant] = self.pending.get(f.tenant, 0.0) - f.estimate
                f.estimate = 0.0
        elif self.ledger.active[f.tenant]:
            self.ledger.active[f.tenant] += 1
        else:
            self.ledger.activate(f.tenant)  # idle until now: the lift
        fifo = self._fifo.get(f.tenant)
        if fifo is None:
            fifo = self._fifo[f.tenant] = deque()
        item = (f.seq, request, f)
        fifo.appendleft(item) if left else fifo.append(item)
        self._size += 1
        self._head = None

    def pop_request(self) -> Any:
        t = self._choose()
        if t is None:
            raise IndexError("pop from an empty (or wholly held) queue")
        fifo = self._fifo[t]
        _, request, f = fifo.popleft()
        if not fifo:
            del self._fifo[t]
        self._size -= 1
        f.running = True  # counted active as running until it finishes or comes back
        f.estimate = max(0, f.prompt - request.num_computed_tokens) * self.price
        self.pending[t] = self.pending.get(t, 0.0) + f.estimate
        self._popped.append(f)
        self._head = None
        return request

    def peek_request(self) -> Any:
        t = self._choose()
        if t is None:
            raise IndexError("peek from an empty (or wholly held) queue")
        return self._fifo[t][0][1]

    def prepend_request(self, request: Any) -> None:
        self._push(self._facts(request), request, left=True)

    def prepend_requests(self, requests: Iterable[Any]) -> None:
        for request in requests:  # as FCFS's extendleft: the last given ends up first
            self.prepend_request(request)

    def remove_request(self, request: Any) -> None:
        self.remove_requests((request,))

    def remove_requests(self, requests: Iterable[Any]) -> None:
        for request in requests:
            f = self._facts(request)
            fifo = self._fifo.get(f.tenant)
            item = next((x for x in fifo if x[1] is request), None) if fifo is not None else None
            if item is None:
                continue
            fifo.remove(item)
            if not fifo:
                del self._fifo[f.tenant]
            self._size -= 1
            self.ledger.deactivate(f.tenant)
        self._head = None

    def __bool__(self) -> bool:
        return self._size > 0 and self._choose() is not None

    def __len__(self) -> int:
        return self._size

    def __iter__(self) -> Iterator[Any]:
        for fifo in list(self._fifo.values()):
            yield from [item[1] for item in fifo]
