"""The governor's charge thread: the charges and admissions of the inline charge, off the engine
thread, on a real vLLM scheduler; and a charge thread that stops leaves the charge inline.

The same arrivals run through two governed schedulers, one charging inline and one on its charge
thread (``charge="thread"``), with weights, a cap that holds a tenant (on the simulated clock, so
both runs see the same times) and a small KV cache, so vLLM preempts.  Every step's batch, every
admission and the counters after every charge must be the same, bit for bit."""

from __future__ import annotations

import threading

import pytest

from shadowd.daemon.gatekeeper import published_model, write_state_file
from shadowd.govern.config import GovernConfig, TenantPolicy
from tests.govern.test_vllm import COEF, KEY, _engine, _governed
from tests.workloads import Req, mixed_trace_requests

pytestmark = pytest.mark.usefixtures("vllm")
POLICY = "longdoc=2,coder=1:40"
NO_GO_AT = 400


def _go_state(directory):
    """A gate state file saying GO for the engine's platform, for as long as the test runs."""
    directory.mkdir(exist_ok=True)
    state = directory / "gate.json"
    write_state_file(
        state,
        {"verdict": "GO", "valid_until": 4e9, "model": published_model("m1", KEY, COEF, "equal", 1e9, 3e9)},
    )
    return state


def _threaded(llama_dir, tmp_path):
    """A governed scheduler charging on its charge thread, and its driver."""
    cfg = GovernConfig(mode="on", state_file=str(_go_state(tmp_path)), platform_key=KEY, charge="thread")
    sched, driver = _engine(llama_dir, _governed(cfg))
    return sched.shadowd_governor, driver


def _run(
    llama_dir,
    tmp_path,
    charge: str,
    preempt: str = "vllm",
    policy: str = POLICY,
    every: int = 8,
    requests=None,
    seqs: int = 16,
    blocks: int = 1000,
):
    """The identity test's run: GO, then NO_GO from step ``NO_GO_AT`` (a switch to VTC)."""
    state = _go_state(tmp_path / f"{charge}-{preempt}-{every}")
    cfg = GovernConfig(
        mode="on",
        state_file=str(state),
        platform_key=KEY,
        tenants=TenantPolicy.parse(policy),
        charge=charge,
        preempt=preempt,
        poll_interval_s=0.0,  # every charge reads the file: the switch comes at a step, not a second
        hand_over_every=every,
    )
    sched, driver = _engine(llama_dir, _governed(cfg), max_num_seqs=seqs, num_blocks=blocks)
    gov, queue = sched.shadowd_governor, sched.shadowd_governor.queue
    gov.ledger.clock = lambda: driver.clock() / 1e9
    seen = {"charges": [], "threads": set(), "admitted": [], "inboxed": 0}
    charge_step, pop, admit_inbox = gov._charge_step, queue.pop_request, queue.admit_inbox

    def recorded_charge(out):  # runs where the charge runs: the engine thread, or the charge thread
        charged = charge_step(out)
        seen["threads"].add(threading.current_thread().name)
        seen["charges"].append([list(s) for s in gov.ledger.service])
        return charged

    def recorded_pop():
        # Steps deferred only while the choice reads no counter: one tenant waiting at most.
        assert not queue.deferred or len(queue._fifo) <= 1
        request = pop()
        seen["admitted"].append(request.request_id)
        return request

    def recorded_admit_inbox():
        seen["inboxed"] += len(queue._inbox)
        admit_inbox()

    gov._charge_step = recorded_charge  # the charge thread looks it up per step, as inline does
    queue.pop_request, queue.admit_inbox = recorded_pop, recorded_admit_inbox

    def switch(step: int) -> None:
        if step == NO_GO_AT:
            gov.catch_up()  # the steps in hand charged first, in both runs, under GO
            model = published_model("m1", KEY, COEF, "equal", 1e9, 3e9)
            write_state_file(state, {"verdict": "NO_GO", "valid_until": 4e9, "model": model})

    driver.run(requests or mixed_trace_requests(40, seed=9), max_steps=100000, on_step=switch)
    seen["charge_cpu_ns"] = gov.charger.cpu_ns if gov.charger is not None else 0
    gov.close()
    return driver, gov, seen


def test_the_charge_thread_makes_the_inline_charges_and_admissions(llama_dir, tmp_path):
    (d_in, g_in, inline), (d_th, g_th, threaded) = (
        _run(llama_dir, tmp_path, c) for c in ("inline", "thread")
    )
    assert inline["threads"] == {threading.current_thread().name}
    assert threaded["threads"] == {"shadowd-govern-charge"}
    assert threaded["charge_cpu_ns"] > 0  # the thread's own count of its CPU in charges
    assert threaded["inboxed"] > 0, "no arrival came while a charge was owed: the inbox went untested"
    assert g_in.errors == g_th.errors == 0
    a, b = d_in.steps, d_th.steps
    assert len(a) == len(b) > 500
    for x, y in zip(a, b):
        assert x.req_ids == y.req_ids
        assert x.new_tokens.tolist() == y.new_tokens.tolist()
    assert sum(s.preemptions for s in d_in.service.values()) > 0
    assert inline["admitted"] == threaded["admitted"] and len(inline["admitted"]) >= 40
    assert len(inline["charges"]) == len(threaded["charges"]) >= len(a)
    assert inline["charges"] == threaded["charges"]  # bit for bit, after every step
    assert g_in.ledger.snapshot() == g_th.ledger.snapshot()
    assert g_in.steps_charged == g_th.steps_charged
    assert min(g_th.steps_charged.values()) >= 100  # charged both ways: the switch, at the same step
    assert g_in.switches == g_th.switches == {"go": 1, "not_go:NO_GO": 1}
    assert not g_th.verdict.go and g_th.queue.kind == g_in.queue.kind  # admission followed it


def _deferral_workload() -> list[Req]:
    """Long documents decoding steadily (quiet stretches: steps deferred), chat bursts that wait
    for a slot, and a coder stream whose next request comes a few steps after the last finished
    (in a deferred step, so only ``leaving`` says the coder is becoming active again: the lift)."""
    reqs = [Req(0.1 * i, "longdoc", 512, 600) for i in range(5)]
    reqs += [Req(1.0 + 2.5 * i, "coder", 64, 12) for i in range(8)]
    reqs += [Req(3.0 + 0.2 * i, "coder", 32, 40) for i in range(40)]
    reqs += [Req(b + 0.01 * j, "chat", 256, 40) for b in (4.0, 9.0, 14.0) for j in range(10)]
    return sorted(reqs, key=lambda r: r.arrival_s)


def _padded(charges: list) -> list:
    """Counters after each charge, every tenant's list as long as the longest: a deferred step is
    charged after later arrivals made their tenants known, with nothing charged to them yet."""
    n = max(len(s) for c in charges for s in c)
    return [[s + [0.0] * (n - len(s)) for s in c] for c in charges]


def test_deferred_hand_overs_make_the_inline_charges_and_admissions(llama_dir, tmp_path):
    """Without a cap (a cap's bucket is read at every choice), steps after which nothing reads a
    counter are deferred and handed over together: the same batches, admissions and charges,
    bit for bit, as the inline charge; and both ways out of a deferral were taken (a hand-over
    every ``hand_over_every`` steps, and a catch-up when a counter was to be read).  Without the
    ``leaving`` rule this run's charges differ from the inline ones."""
    (d_in, g_in, inline), (d_df, g_df, deferred) = (
        _run(
            llama_dir,
            tmp_path,
            c,
            policy="longdoc=2,coder=1",
            requests=_deferral_workload(),
            seqs=8,
            blocks=250,
        )
        for c in ("inline", "thread")
    )
    assert g_in.errors == g_df.errors == 0 and g_in.steps_deferred == 0
    assert g_df.steps_deferred > 500 and g_df.catch_ups > 20
    assert deferred["inboxed"] > 0  # arrivals also came while a hand-over was being charged
    assert sum(s.preemptions for s in d_in.service.values()) > 0
    assert len(d_df.steps) == len(d_in.steps) > 2000
    for x, y in zip(d_in.steps, d_df.steps):
        assert x.req_ids == y.req_ids
        assert x.new_tokens.tolist() == y.new_tokens.tolist()
    assert deferred["admitted"] == inline["admitted"] and len(inline["admitted"]) >= 83  # and re-admissions
    assert _padded(deferred["charges"]) == _padded(inline["charges"])  # bit for bit, after every step
    assert g_df.ledger.snapshot() == g_in.ledger.snapshot()
    assert g_df.steps_charged == g_in.steps_charged and min(g_df.steps_charged.values()) >= 100
    assert g_df.switches == g_in.switches == {"go": 1, "not_go:NO_GO": 1}


def test_over_served_victims_are_the_inline_charges_with_the_charge_thread(llama_dir, tmp_path):
    """With over-served victims, the charge thread sets each tenant's standing when it takes a
    charge in (``Governor._stand``) and the engine thread's victim order only sorts: the same
    batches, step by step, and the same orderings as the inline charge, where the victim order
    sets the standings itself."""
    (d_in, g_in, _), (d_th, g_th, _) = (
        _run(llama_dir, tmp_path, c, "over-served") for c in ("inline", "thread")
    )
    assert g_in.errors == g_th.errors == 0
    assert sum(s.preemptions for s in d_in.service.values()) > 0
    assert g_in.victim_orderings == g_th.victim_orderings > 0
    assert len(d_in.steps) == len(d_th.steps) > 500
    for x, y in zip(d_in.steps, d_th.steps):
        assert x.req_ids == y.req_ids  # the same victims: a different one changes the next batch
    assert [s.preemptions for s in d_in.service.values()] == [s.preemptions for s in d_th.service.values()]
    assert g_in.ledger.snapshot() == g_th.ledger.snapshot()


def test_a_charge_thread_that_stops_leaves_the_charge_inline(llama_dir, tmp_path, monkeypatch):
    from shadowd.govern import charge_thread

    monkeypatch.setattr(charge_thread, "WAIT_S", 0.05)
    gov, driver = _threaded(llama_dir, tmp_path)
    driver.run(mixed_trace_requests(30, seed=12), max_steps=40)
    before = sum(gov.steps_charged.values())
    assert gov.errors == 0 and before >= 35
    gov.charger._jobs.put(charge_thread._STOP)  # the thread ends; the next step's charge is owed
    driver.run(max_steps=120)
    assert gov.charger is None and gov.errors == 1  # the one step it never answered: uncharged
    assert sum(gov.steps_charged.values()) >= before + 75  # every later step charged inline
    assert gov.verdict.go


def test_a_charge_thread_that_stalls_is_given_up_and_the_charge_goes_inline(llama_dir, tmp_path, monkeypatch):
    import time

    from shadowd.govern import charge_thread

    monkeypatch.setattr(charge_thread, "WAIT_S", 0.02)
    monkeypatch.setattr(charge_thread, "MAX_WAIT_S", 0.1)
    gov, driver = _threaded(llama_dir, tmp_path)
    calls, charge, take_in = [0], gov._charge_step, gov._take_in
    late = []

    def stalling_charge(out):  # on the charge thread, the tenth step's charge comes back too late
        if threading.current_thread().name == "shadowd-govern-charge":
            calls[0] += 1
            if calls[0] == 10:
                time.sleep(1.0)
                return None  # (it charges nothing: the engine thread charges inline by then)
        return charge(out)

    def recorded_take_in(charged):
        late.append(threading.current_thread().name)
        take_in(charged)

    gov._charge_step, gov._take_in = stalling_charge, recorded_take_in
    stalled = gov.charger
    t0 = time.monotonic()
    driver.run(mixed_trace_requests(30, seed=13), max_steps=120)
    assert time.monotonic() - t0 < 30
    assert stalled.abandoned and gov.charger is None and gov.errors == 1
    assert calls[0] == 10  # the thread took no step after the one it stalled on
    assert sum(gov.steps_charged.values()) >= 110  # the rest charged inline
    on_thread = late.count("shadowd-govern-charge")
    time.sleep(1.0)  # the stalled charge ends: it hands nothing back, and leaves the queue alone
    assert late.count("shadowd-govern-charge") == on_thread == 9  # the nine steps it answered
    assert stalled._answered == 9 and stalled._asked == 10  # the tenth never handed back


def test_a_re_keying_that_fails_on_the_charge_thread_is_counted_and_the_thread_goes_on(llama_dir, tmp_path):
    """The charge thread re-keys the queue after each charge; an error there is counted like a
    charge's, never ends the thread (a dead thread would cost the engine a wait) and the next
    re-keying finds the queue usable: every request is still admitted."""
    gov, driver = _threaded(llama_dir, tmp_path)
    invalidate, failed = gov.queue.invalidate, []

    def failing_once(charged=None):
        if not failed and threading.current_thread().name == "shadowd-govern-charge":
            failed.append(True)
            raise RuntimeError("re-keying failed")
        invalidate(charged)

    gov.queue.invalidate = failing_once
    requests = mixed_trace_requests(30, seed=14)
    driver.run(requests, max_steps=100000)
    charger = gov.charger
    assert failed and gov.errors == 1
    assert charger is not None and not charger.abandoned and charger._thread.is_alive()
    gov.catch_up()  # the steps still deferred at the end charged, as at shutdown
    assert sum(gov.steps_charged.values()) == len(driver.steps)  # every step charged, on the thread
    assert len(driver.service) >= 30 and all(s.finish_ns is not None for s in driver.service.values())
