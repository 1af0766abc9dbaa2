"""The fair queue's choice, and the governor's charges, against the plain rule on a real scheduler.

The queue keeps backlogged tenants in a heap re-keyed only where something changed, and the
governor sums most steps from the rows it expected (``shadowd.govern.roster``) rather than row by
row; both are checked here against the rule
written out the slow way, at every admission and every step of a real vLLM run with arrivals,
chunked prefills, preemptions, weights and a cap that holds a tenant:

* each admitted request is the first waiting request of the backlogged, not-held tenant with the
  least ``(service + pending estimates) / weight`` (ties: the earliest request);
* each step charges every tenant exactly (bit for bit) what ``TenantSums.add`` per row and
  ``StepPricer.shares`` (tenants in index order) give.
"""

from __future__ import annotations

import dataclasses

import pytest

from shadowd.daemon.gatekeeper import published_model, write_state_file
from shadowd.govern.config import GovernConfig, TenantPolicy
from shadowd.govern.ledger import ATTRIBUTED, VTC
from shadowd.govern.price import TenantSums
from tests.govern.test_vllm import COEF, KEY, _engine, _governed
from tests.workloads import Req, mixed_trace_requests

pytestmark = pytest.mark.usefixtures("vllm")
POLICY = "longdoc=2,coder=1:40"  # coder capped at 40 attributed ms per second: it is held at times


def _held(ledger, t: int) -> bool:
    """``Ledger.held`` without its drain (the check must not move what it checks)."""
    cap, b = ledger.cap[t], ledger.bucket[t]
    if not cap or b <= cap:
        return False
    return max(0.0, b - (ledger.clock() - ledger._bucket_t[t]) * cap) > cap


def _rule(queue) -> int | None:
    """The tenant the plain scan picks: least normalised service + estimates, earliest request."""
    ledger, best = queue.ledger, None
    for t, fifo in queue._fifo.items():
        if _held(ledger, t):
            continue
        key = ((ledger.service[queue.kind][t] + queue.pending.get(t, 0.0)) / ledger.weight[t], fifo[0][0])
        best = min(best, (key, t)) if best is not None else (key, t)
    return None if best is None else best[1]


def _reference_charges(gov, sched, out) -> dict[int, tuple[float, float | None]]:
    """Per tenant (VTC tokens, attributed ms) of one step, one ``TenantSums.add`` per row."""
    sums: dict[int, TenantSums] = {}
    rows = [(n.req_id, n.num_computed_tokens) for n in out.scheduled_new_reqs]
    rows += zip(out.scheduled_cached_reqs.req_ids, out.scheduled_cached_reqs.num_computed_tokens)
    for rid, c in rows:
        req = sched.requests[rid]
        t = gov.ledger.index[gov.resolver.resolve(req)]
        p = out.num_scheduled_tokens[rid]
        sums.setdefault(t, TenantSums()).add(p, c, c < req.num_prompt_tokens or p > 1)
    sums = dict(sorted(sums.items()))
    pricer = gov.verdict.pricer or gov.reader.pricer
    shares = pricer.shares(list(sums.values()), out.total_num_scheduled_tokens) if pricer else None
    cfg = gov.config
    return {
        t: (s.vtc_tokens(cfg.w_p, cfg.w_q), None if shares is None else shares[j])
        for j, (t, s) in enumerate(sums.items())
    }


@pytest.mark.parametrize("charge", ["inline", "thread"])
def test_admissions_and_charges_follow_the_plain_rule(llama_dir, tmp_path, charge):
    state = tmp_path / "gate.json"
    now = 1e9  # the ledger runs on the driver's simulated clock; the gate on wall time
    write_state_file(
        state,
        {"verdict": "GO", "valid_until": 4e9, "model": published_model("m1", KEY, COEF, "equal", now, 3e9)},
    )
    cfg = GovernConfig(
        mode="on", state_file=str(state), platform_key=KEY, tenants=TenantPolicy.parse(POLICY), charge=charge
    )
    sched, driver = _engine(llama_dir, _governed(cfg), max_num_seqs=16, num_blocks=1000)
    gov, queue = sched.shadowd_governor, sched.shadowd_governor.queue
    assert (gov.charger is not None) == (charge == "thread")
    gov.rows_per_change = 0  # the roster whatever the arrivals per row: it is what is checked
    admitted, held_seen, charged_steps, idle = [0], [0], [0], [0]
    # On simulated time, as in the replay: while only a held tenant waits nothing runs, and the
    # driver's idle turns (IDLE_TICK_NS each) are what let its hold drain.
    gov.ledger.clock = lambda: driver.clock() / 1e9

    pop = queue.pop_request

    def checked_pop():
        gov.collect()  # the owed charge taken in (on the charge thread): what ``pop`` sees
        want = _rule(queue)
        held_seen[0] += any(_held(queue.ledger, t) for t in queue._fifo)
        request = pop()
        assert queue._facts(request).tenant == want
        admitted[0] += 1
        return request

    queue.pop_request = checked_pop
    on_schedule = gov.on_schedule

    def checked_on_schedule(out):
        idle[0] += not out.total_num_scheduled_tokens
        gov.collect()
        if out.total_num_scheduled_tokens:
            gov._refresh()
            want = _reference_charges(gov, sched, out)
            before = [list(s) for s in gov.ledger.service]
        on_schedule(out)
        gov.collect()
        if out.total_num_scheduled_tokens:
            for t, (vtc, ms) in want.items():
                assert gov.ledger.service[VTC][t] == before[VTC][t] + vtc
                assert gov.ledger.service[ATTRIBUTED][t] == before[ATTRIBUTED][t] + ms
            charged_steps[0] += 1

    gov.on_schedule = checked_on_schedule
    # First, prompts whose last token is scheduled alone, beside another request's decode (a
    # one-token row that is still prefill): 1025 tokens into a budget of 1024 on an idle engine,
    # and 1024 tokens beside one decode.  Then the traces.
    odd = [Req(float(i), "chat", 1025, 60) for i in range(4)] + [
        Req(i + 0.05, "coder", 1024, 4) for i in range(4)
    ]
    late = [dataclasses.replace(r, arrival_s=r.arrival_s + 5.0) for r in mixed_trace_requests(40, seed=9)]
    driver.run(odd + late, max_steps=100000)
    assert gov.errors == 0 and gov.verdict.go
    assert admitted[0] >= 128 and charged_steps[0] > 500 and held_seen[0] > 0
    assert idle[0] > 0, "no turn where only a held tenant waited: the idle path went untested"
    assert sum(s.preemptions for s in driver.service.values()) > 0
    assert all(s.done for s in driver.service.values())
    # The charges above came mostly from the roster (no pass over the rows), the rest row by row.
    assert gov.roster.rebuilds >= 1 and gov.roster.folds >= 0.9 * charged_steps[0]


def test_an_arrival_takes_the_choice_only_when_its_key_comes_first():
    """``_arrive`` (a tenant with none waiting) keeps a choice already made unless the newcomer's
    key is first; then the newcomer is the choice at once, or, capped, the choice is left to
    ``_choose``.  After every arrival and pop the queue's answer is the plain rule's."""
    from types import SimpleNamespace as NS

    from shadowd.govern.governor import Governor

    cfg = GovernConfig(mode="vtc", tenant_key="tenant", tenants=TenantPolicy.parse("a=1,b=1,c=1:5"))
    gov = Governor(cfg, {})
    queue, ledger = gov.queue, gov.ledger
    for name in ("a", "b", "c", "d"):
        ledger.tenant(name)
    ledger.active[:] = [1, 1, 1, 1]  # all active: no lift moves the counters set below
    ledger.service[VTC][:] = [10.0, 5.0, 0.0, 20.0]  # c (capped, not held) least served
    arrivals = ("a", "d", "b", "a", "c", "d")
    kept = took = 0
    for i, name in enumerate(arrivals):
        before = queue._head
        request = NS(
            request_id=f"r{i}",
            num_prompt_tokens=8,
            num_computed_tokens=0,
            sampling_params=NS(extra_args={"tenant": name}),
            lora_request=None,
        )
        queue.add_request(request)
        t, want = ledger.index[name], _rule(queue)
        if want == t and queue._fifo[t][0][1] is request:  # the newcomer's key is first
            assert queue._head == (None if ledger.cap[t] else t)
            took += 1
        elif before is not None:
            assert queue._head == before
            kept += 1
        assert queue._facts(queue.peek_request()).tenant == want
    assert kept >= 2 and took >= 3
    popped = []
    while queue:
        want = _rule(queue)
        popped.append(queue._facts(queue.pop_request()).tenant)
        assert popped[-1] == want
    assert sorted(popped) == sorted(ledger.index[n] for n in arrivals)


def test_steps_are_charged_before_a_deferred_queue_reads_a_counter():
    """While steps are deferred (``deferred``), the queue reads no counter: at most one tenant
    waits and no tenant becomes active.  A second tenant coming to wait, a lift (a tenant with
    nothing active, or whose running requests all finished in a deferred step: ``leaving``), a
    preempted request of another tenant and a removal each have the deferred steps charged
    first (``catch_up``) and mark the step contended; anything else does not."""
    from types import SimpleNamespace as NS

    from shadowd.govern.governor import Governor

    gov = Governor(GovernConfig(mode="vtc", tenant_key="tenant"), {})
    queue, ledger = gov.queue, gov.ledger
    calls = []

    def catch_up():
        calls.append(len(queue._fifo))
        queue.deferred = False
        queue.leaving.clear()

    queue._catch_up = catch_up

    def req(i: int, name: str):
        return NS(
            request_id=f"r{i}",
            num_prompt_tokens=8,
            num_computed_tokens=0,
            sampling_params=NS(extra_args={"tenant": name}),
            lora_request=None,
        )

    def deferred(leaving=None):
        queue.deferred, queue.contended = True, False
        queue.leaving.update(leaving or {})

    for name in ("a", "b", "c"):
        ledger.tenant(name)
    ledger.active[:] = [2, 2, 0]  # a and b run two requests each; c is idle
    deferred({0: 1})  # one of a's running requests finished in a deferred step: a stays active
    queue.add_request(req(1, "a"))
    queue.add_request(req(2, "a"))  # the same tenant again
    assert calls == [] and not queue.contended and queue.peek_request().request_id == "r1"
    queue.add_request(req(3, "b"))  # a second tenant would wait: its order reads the counters
    assert calls == [1] and queue.contended and not queue.deferred
    while queue:
        queue.pop_request()
    deferred()
    queue.add_request(req(4, "c"))  # c was idle: the lift reads every active tenant's counter
    assert calls == [1, 0] and queue.contended
    queue.pop_request()
    b_running = ledger.active[1]
    deferred({1: b_running})  # every one of b's running requests finished in deferred steps
    queue.add_request(req(5, "b"))
    assert calls == [1, 0, 0] and ledger.active[1] == b_running + 1  # charged first (a spy here)
    queue.pop_request()
    deferred()
    queue.add_request(req(6, "a"))
    popped = req(7, "b")
    queue.add_request(popped)  # (a catch-up: a second tenant)
    calls.clear()
    while queue:
        queue.pop_request()
    deferred()
    queue.add_request(req(8, "a"))
    queue.prepend_request(popped)  # b's request back (preempted) while a waits
    assert calls == [1]
    deferred()
    queue.remove_requests([popped])  # a removal may leave a tenant idle: where it stood is kept
    assert calls == [1, 2]


def test_the_last_waiting_request_leaves_no_entry_behind():
    """Popping the only waiting request (``pop_request``'s short way) leaves an empty queue with no
    heap entry, no choice and the other tenants' estimates as they were; later arrivals are then
    ordered by the plain rule as before.  A lone request of a held tenant is not taken that way
    (it is not the choice)."""
    from types import SimpleNamespace as NS

    from shadowd.govern.governor import Governor

    cfg = GovernConfig(mode="vtc", tenant_key="tenant", tenants=TenantPolicy.parse("a=1,b=2,c=1:5"))
    gov = Governor(cfg, {})
    queue, ledger = gov.queue, gov.ledger
    for name in ("a", "b", "c"):
        ledger.tenant(name)
    ledger.active[:] = [1, 1, 1]
    ledger.service[VTC][:] = [4.0, 6.0, 1.0]

    def req(i: int, name: str, prompt: int = 8):
        return NS(
            request_id=f"r{i}",
            num_prompt_tokens=prompt,
            num_computed_tokens=0,
            sampling_params=NS(extra_args={"tenant": name}),
            lora_request=None,
        )

    for i, name in enumerate(("a", "b", "a", "b")):
        queue.add_request(req(i, name))
    order = []
    while len(queue) > 1:  # estimates move the keys: stale entries pile up in the heap
        order.append(queue._facts(queue.pop_request()).tenant)
    assert len(queue._heap) >= 1 and queue.pending
    pending = dict(queue.pending)
    last = queue.peek_request()
    assert queue.pop_request() is last and queue._facts(last).running
    assert (len(queue), queue._heap, queue._entry, queue._head, bool(queue)) == (0, [], {}, None, False)
    assert queue.pending == pending  # the last request carries no estimate; the others' stand
    for i, name in enumerate(("b", "a", "b"), start=10):
        queue.add_request(req(i, name))
        assert queue._facts(queue.peek_request()).tenant == _rule(queue)
    while queue:
        want = _rule(queue)
        assert queue._facts(queue.pop_request()).tenant == want
    # A held tenant's lone request: no choice, so the short way is not taken.
    ledger.bucket[2], ledger._bucket_t[2] = 1e9, ledger.clock()
    queue.add_request(req(20, "c"))
    assert len(queue) == 1 and not queue
    with pytest.raises(IndexError):
        queue.pop_request()
