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
The last waiting request popped carries none: nothing is left for it to order (arrivals come
between ``schedule`` calls, never within one).

While a step's charge is *owed* (being made on the governor's charge thread,
:mod:`shadowd.govern.charge_thread`), the counters and this queue are that thread's, which
re-keys the queue after the charge: an arrival waits in an inbox, and any other call first
settles the charge (``settle``, the governor's), which takes it in and then admits the inbox in
arrival order, as the inline charge would have found it.

A step may instead be *deferred* (charged later, with the next hand-over: ``deferred``): then the
queue stays the engine thread's, and needs no counter while at most one tenant waits and no
tenant becomes active (a lift reads every active tenant's counter).  Anything else (a second
tenant waiting, a lift, a removal) first has the deferred steps charged (``catch_up``, the
governor's) and marks the step ``contended``; a tenant whose running requests all finished in a
deferred step counts as becoming active again (``leaving``).  So every choice that reads a
counter reads it as the inline charge would have left it.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable, Iterable, Iterator
from heapq import heapify, heappop, heappush, heapreplace
from typing import Any

from vllm.v1.core.sched.request_queue import RequestQueue

from shadowd.govern.ledger import VTC, Ledger


class RequestFacts:
    """What the governor keeps per live request: tenant, prompt length, arrival order, state, its
    tenant's list of this step's decode contexts (shared by the tenant's requests, so the
    governor's per-row pass appends to it without a lookup by tenant), and its place in the
    running rows the governor expects next (``member``, ``at``: ``shadowd.govern.roster``)."""

    __slots__ = ("tenant", "prompt", "seq", "running", "estimate", "contexts", "member", "at")

    def __init__(self, tenant: int, prompt: int, seq: int, contexts: list[int]) -> None:
        self.tenant = tenant
        self.prompt = prompt
        self.seq = seq
        self.running = False
        self.estimate = 0.0
        self.contexts = contexts
        self.member = 0
        self.at = 0


class FairRequestQueue(RequestQueue):
    def __init__(
        self,
        ledger: Ledger,
        facts: Callable[[Any], RequestFacts],
        kind: int = VTC,
        prefill_price: float = 1.0,
        settle: Callable[[], None] | None = None,
        catch_up: Callable[[], None] | None = None,
    ) -> None:
        self.ledger = ledger
        self.owed = False  # a step's charge is being made off the engine thread: ``settle`` first
        self._settle = settle or (lambda: None)  # takes the charge in, then calls ``admit_inbox``
        self.deferred = False  # steps charged later, not handed over: ``catch_up`` before a counter is read
        self._catch_up = catch_up or (lambda: None)  # charges the deferred steps (clears the two below)
        self.leaving: dict[int, int] = {}  # tenant -> its running requests finished in deferred steps
        self.contended = False  # a counter was read (or a deferred step charged for one) since the last step
        self._inbox: list[Any] = []  # requests that arrived while a charge was owed, in order
        self._facts = facts  # request -> its facts (created on first sight)
        self.kind = kind  # the counter admission follows now (VTC or ATTRIBUTED); set by ``follow``
        self._service = ledger.service[kind]  # that counter, per tenant (the ledger's own list)
        self.price = prefill_price  # estimate per prompt token, in that counter's units
        self._fifo: dict[int, deque] = {}  # tenant -> its waiting (seq, request, facts) (non-empty only)
        self.pending: dict[int, float] = {}  # tenant -> estimates of this step's admissions
        self._popped: list[RequestFacts] = []  # carrying an estimate this step
        self._size = 0
        self._head: int | None = None  # cached choice; None = choose again
        # Backlogged tenants by (normalised service, first seq, tenant): a heap with lazy deletion.
        # ``_entry[t]`` is t's one live entry; any other entry of t in the heap is stale.  Every
        # change of a key (a pop or push of t, a charge, the lift, the estimates dropped) re-keys
        # only the tenants it touched, so choosing costs O(log tenants), never a scan.
        self._heap: list[tuple[float, int, int]] = []
        self._entry: dict[int, tuple[float, int, int]] = {}
        self._held: set[int] = set()  # backlogged but over their cap: out of the heap until drained

    # -- choice ----------------------------------------------------------------------------------
    def _rekey(self, t: int) -> None:
        fifo = self._fifo.get(t)
        if fifo is None:
            self._entry.pop(t, None)
            self._held.discard(t)
            return
        heap = self._heap
        e = ((self._service[t] + self.pending.get(t, 0.0)) / self.ledger.weight[t], fifo[0][0], t)
        old = self._entry.get(t)
        self._entry[t] = e
        if heap and heap[0] is old:  # t was first (just popped from): replace in one sift
            heapreplace(heap, e)
        else:
            heappush(heap, e)
        if len(heap) > 2 * len(self._entry) + 32:  # too many stale entries: compact
            self._heap = list(self._entry.values())
            heapify(self._heap)

    def _rebuild(self) -> None:
        self._heap, self._entry, self._held = [], {}, set()
        for t in list(self._fifo):
            self._rekey(t)

    def _choose(self) -> int | None:
        head = self._head
        if head is not None:
            return head
        ledger, heap, entry = self.ledger, self._heap, self._entry
        if self._held:
            for t in [t for t in self._held if not ledger.held(t)]:
                self._held.discard(t)
                self._rekey(t)
        while heap:
            e = heap[0]
            t = e[2]
            if entry.get(t) is not e:
                heappop(heap)
            elif ledger.cap[t] and ledger.held(t):
                heappop(heap)
                del entry[t]
                self._held.add(t)
            else:
                self._head = t
                return t
        return None

    def follow(self, kind: int, price: float) -> None:
        """The counter admission follows and the estimate's price (from the gate's verdict)."""
        self.price = price
        if kind != self.kind:
            self.kind = kind
            self._service = self.ledger.service[kind]
            self._rebuild()
            self._head = None

    def invalidate(self, charged: Iterable[int] | None = None) -> None:
        """A step was charged: forget the estimates and re-key the tenants whose counters moved
        (``charged``; ``None``: any may have, re-key all)."""
        self._head = None
        touched: set[int] = set()
        if self.pending or self._popped:  # admissions this step
            touched.update(self.pending)
            self.pending.clear()
            for f in self._popped:
                f.estimate = 0.0
            self._popped.clear()
        fifo = self._fifo
        if not fifo:  # nothing waiting: no key to move (steady decode, the common step)
            return
        if charged is None:
            self._rebuild()
            return
        touched.update(charged)
        for t in touched:
            if t in fifo and t not in self._held:
                self._rekey(t)

    def tenants_waiting(self) -> int:
        return len(self._fifo)

    def _contend(self) -> None:
        """A counter is about to be read: the deferred steps charged first."""
        self.contended = True
        if self.deferred:
            self._catch_up()

    def has_eligible(self) -> bool:
        if self.owed:
            self._settle()
        return self._choose() is not None

    # -- RequestQueue ----------------------------------------------------------------------------
    def add_request(self, request: Any) -> None:
        if self.owed:  # its tenant's key may be about to move: placed once the charge is in
            self._inbox.append(request)
            return
        f = self._facts(request)
        t = f.tenant
        fifo = self._fifo.get(t)
        if f.running:  # preempted: back to the front of its tenant's list (``_push``)
            self._push(f, request, left=False)
            return
        if fifo is not None:
            # The tenant already has requests waiting, so it is active, and its key, its first
            # request and the queue's choice all stand.
            self.ledger.active[t] += 1
            fifo.append((f.seq, request, f))
            self._size += 1
            return
        self._arrive(t, f, request)

    def admit_inbox(self) -> None:
        """The requests that arrived while a charge was owed, added now, in arrival order."""
        inbox, self._inbox = self._inbox, []
        for request in inbox:
            self.add_request(request)

    def _arrive(self, t: int, f: RequestFacts, request: Any) -> None:
        """A new request of a tenant with none waiting (most arrivals where admission keeps up):
        ``_push`` and ``_rekey`` written out for it, and the queue's choice kept unless the
        newcomer's key comes first, then made at once as ``pop_request`` makes it (a ``_choose``
        less in the scheduler's next ``peek_request``: ``benchmarks/govern_cost.py``, workload
        ``churn``)."""
        ledger = self.ledger
        active = ledger.active[t]
        if self._fifo or not active or (self.leaving and active <= self.leaving.get(t, 0)):
            self._contend()  # another tenant waits (a choice by counters), or the lift
            active = ledger.active[t]
        if active:
            ledger.active[t] = active + 1
        else:
            ledger.activate(t)  # idle until now: the lift
        self._fifo[t] = deque(((f.seq, request, f),))
        self._size += 1
        # t has no live entry (it had nothing waiting); stale ones are skipped by ``_choose``.
        e = self._entry[t] = ((self._service[t] + self.pending.get(t, 0.0)) / ledger.weight[t], f.seq, t)
        if len(self._fifo) == 1:  # the only tenant waiting: every other entry is stale
            self._heap = [e]
            self._head = t if not ledger.cap[t] else None
            return
        heap = self._heap
        heappush(heap, e)
        if heap[0] is e:  # first now: the choice (unless a cap must be checked on choosing)
            self._head = t if not self._held and not ledger.cap[t] else None
        # else the choice, if made, stands: its entry is still first
        if len(heap) > 2 * len(self._entry) + 32:  # too many stale entries: compact
            self._heap = list(self._entry.values())
            heapify(self._heap)

    def _push(self, f: RequestFacts, request: Any, *, left: bool) -> None:
        t = f.tenant
        if (t not in self._fifo and self._fifo) or (
            not f.running and self.ledger.active[t] <= self.leaving.get(t, 0)
        ):
            self._contend()  # as ``_arrive``: a second tenant waiting, or the lift
        moved = left  # t's key or first request may change: re-key it
        if f.running:  # preempted, or skipped after being popped this step
            f.running = False
            if f.estimate:
                self.pending[t] = self.pending.get(t, 0.0) - f.estimate
                f.estimate = 0.0
                moved = True
        elif self.ledger.active[t]:
            self.ledger.active[t] += 1
        else:
            self.ledger.activate(t)  # idle until now: the lift
        fifo = self._fifo.get(t)
        if fifo is None:
            fifo = self._fifo[t] = deque()
            moved = True
        item = (f.seq, request, f)
        fifo.appendleft(item) if left else fifo.append(item)
        self._size += 1
        if moved:  # otherwise t's key and first request stand, and so does the choice
            self._head = None
            self._rekey(t)

    def pop_request(self) -> Any:
        if self.owed:
            self._settle()
        t = self._head
        if t is not None and self._size == 1 and not self._held:
            # The only waiting request (most admissions where admission keeps up): nothing is
            # left to order, so it carries no estimate and every heap entry is stale
            # (``benchmarks/govern_cost.py``, workload ``every-step``).
            _, request, f = self._fifo.pop(t)[0]
            self._size = 0
            f.running = True
            self._entry.clear()
            self._heap = []
            self._head = None
            return request
        if t is None and (t := self._choose()) is None:
            raise IndexError("pop from an empty (or wholly held) queue")
        fifo = self._fifo[t]
        _, request, f = fifo.popleft()
        self._size -= 1
        f.running = True  # counted active as running until it finishes or comes back
        pending = self.pending
        left = f.prompt - request.num_computed_tokens
        if left > 0 and self._size:  # an estimate orders what still waits; with none, nothing to order
            f.estimate = left * self.price
            pending[t] = pending.get(t, 0.0) + f.estimate
            self._popped.append(f)
        # ``_rekey(t)`` and ``_choose`` inlined: t's entry was first (it was the choice), so it is
        # replaced, or dropped if t has no more waiting, in one sift, and the next choice is kept
        # if made at once: the first entry is live, no tenant held and its tenant without a cap
        # (whose check drains a bucket).  A call less per admission, and none in the scheduler's
        # next ``__bool__`` and ``peek_request`` (``benchmarks/govern_cost.py``, workload ``churn``).
        heap, entry = self._heap, self._entry
        old = entry.pop(t)
        if not fifo:
            del self._fifo[t]
            if heap[0] is old:
                heappop(heap)
            if not heap:
                self._head = None
                return request
        else:
            e = entry[t] = ((self._service[t] + pending.get(t, 0.0)) / self.ledger.weight[t], fifo[0][0], t)
            if heap[0] is old:
                heapreplace(heap, e)
            else:  # not reached while ``_head`` keeps its invariant; safe regardless
                heappush(heap, e)
        first = heap[0]
        h = first[2]
        self._head = h if entry.get(h) is first and not self._held and not self.ledger.cap[h] else None
        return request

    def peek_request(self) -> Any:
        if self.owed:
            self._settle()
        t = self._head
        if t is None and (t := self._choose()) is None:
            raise IndexError("peek from an empty (or wholly held) queue")
        return self._fifo[t][0][1]

    def prepend_request(self, request: Any) -> None:
        if self.owed:
            self._settle()
        self._push(self._facts(request), request, left=True)

    def prepend_requests(self, requests: Iterable[Any]) -> None:
        for request in requests:  # as FCFS's extendleft: the last given ends up first
            self.prepend_request(request)

    def remove_request(self, request: Any) -> None:
        self.remove_requests((request,))

    def remove_requests(self, requests: Iterable[Any]) -> None:
        if self.owed:
            self._settle()
        self._contend()  # a tenant may go idle: where it stood is kept for the next lift
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
            self._rekey(f.tenant)
        self._head = None

    def __bool__(self) -> bool:
        if self.owed:
            self._settle()
        return self._head is not None or (self._size > 0 and self._choose() is not None)

    def __len__(self) -> int:
        return self._size + len(self._inbox)

    def __iter__(self) -> Iterator[Any]:
        if self.owed:
            self._settle()
        for fifo in list(self._fifo.values()):
            yield from [item[1] for item in fifo]
