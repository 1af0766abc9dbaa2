"""The governor's cheaper per-step paths give what the plain per-row rule gives, bit for bit.

Steps are made up (no scheduler): random rows of random tenants, prompt chunks, multi-token rows,
draft tokens, rows left out of a step, preemptions and requests the governor has not seen yet, so
every path is taken on both sides of its condition:

* the roster's fold (:class:`shadowd.govern.roster.DecodeRoster`), used only when the step's rows
  are the ones it expected, against one ``TenantSums.add`` per row;
* the per-row pass that looks rows up by subscript and, meeting an unseen request, starts again;
* the fused ledger charge, against ``TenantSums.vtc_tokens`` and ``StepPricer.shares`` (tenants in
  index order).

``tests/govern/test_queue.py`` checks the same on the real vLLM scheduler.
"""

from __future__ import annotations

import random
from types import SimpleNamespace as NS

import pytest

from shadowd.govern.config import GovernConfig, TenantPolicy
from shadowd.govern.ledger import ATTRIBUTED, VTC
from shadowd.govern.price import StepPricer, TenantSums

pytestmark = pytest.mark.usefixtures("vllm")
COEF = {
    "breakpoint_tokens": 96,
    "segments": [
        {
            "beta_ms": 4.0,
            "prefill": {"p": 0.002, "c": 1e-6, "pc": 1e-7, "request": 0.01},
            "decode": {"c": 4e-5},
        },
        {"beta_ms": 1.0, "prefill": {"p": 0.02, "pc": 1e-7}, "decode": {"c": 4e-5, "request": 0.01}},
    ],
}
TENANTS = ("acme", "beta", "gamma", "delta", "eps")


def _request(i: int, rng: random.Random) -> NS:
    return NS(
        request_id=f"r{i}",
        num_prompt_tokens=rng.choice((1, 8, 32, 300)),
        num_computed_tokens=0,
        sampling_params=NS(extra_args={"tenant": rng.choice(TENANTS)}),
        lora_request=None,
    )


def _governor(requests: dict, rows_per_change: float = 0):
    from shadowd.govern.governor import Governor
    from shadowd.govern.handoff import Verdict

    cfg = GovernConfig(mode="vtc", tenants=TenantPolicy.parse("acme=2,beta=0.5"))
    gov = Governor(cfg, requests)
    gov.verdict = Verdict("go", StepPricer(COEF), "v1", float("inf"))  # attributed charges too
    gov.rows_per_change = rows_per_change
    return gov


def _out(new: list, cached: list, nst: dict, finished=(), drafts=None) -> NS:
    return NS(
        scheduled_new_reqs=[NS(req_id=r, num_computed_tokens=c) for r, c in new],
        scheduled_cached_reqs=NS(
            req_ids=[r for r, _ in cached], num_computed_tokens=[c for _, c in cached], resumed_req_ids=set()
        ),
        num_scheduled_tokens=nst,
        total_num_scheduled_tokens=sum(nst.values()),
        scheduled_spec_decode_tokens=drafts or {},
        finished_req_ids=set(finished),
    )


def _reference(gov, requests: dict, out) -> dict[int, tuple[float, float]]:
    """Per tenant (VTC tokens, attributed ms): one ``TenantSums.add`` per row, in row order."""
    sums: dict[int, TenantSums] = {}
    rows = [(n.req_id, n.num_computed_tokens) for n in out.scheduled_new_reqs]
    rows += zip(out.scheduled_cached_reqs.req_ids, out.scheduled_cached_reqs.num_computed_tokens)
    for rid, c in rows:
        req = requests[rid]
        t = gov.ledger.tenant(gov.resolver.resolve(req))
        p = out.num_scheduled_tokens[rid]
        sums.setdefault(t, TenantSums()).add(p, c, c < req.num_prompt_tokens or p > 1)
    sums = dict(sorted(sums.items()))
    shares = gov.verdict.pricer.shares(list(sums.values()), out.total_num_scheduled_tokens)
    cfg = gov.config
    return {t: (s.vtc_tokens(cfg.w_p, cfg.w_q), shares[j]) for j, (t, s) in enumerate(sums.items())}


def _charged_as_the_rule(gov, requests: dict, out) -> None:
    want = _reference(gov, requests, out)
    before = [list(s) for s in gov.ledger.service]
    gov.on_schedule(out)
    assert gov.errors == 0
    for t, (vtc, ms) in want.items():
        assert gov.ledger.service[VTC][t] == before[VTC][t] + vtc
        assert gov.ledger.service[ATTRIBUTED][t] == before[ATTRIBUTED][t] + ms
    for t in set(range(len(before[VTC]))) - set(want):
        assert gov.ledger.service[VTC][t] == before[VTC][t]


@pytest.mark.parametrize("seed", range(6))
def test_random_steps_charge_as_the_per_row_rule_on_every_path(seed):
    rng = random.Random(seed)
    requests = {f"r{i}": _request(i, rng) for i in range(600)}
    gov = _governor(requests)  # the roster however many arrivals per row (``test_a_batch_...``: not)
    ids = list(requests)
    running = rng.sample(ids, rng.choice((3, 40, 200)))
    for r in running[: len(running) // 2]:  # the rest are first seen in a step (lookup path)
        gov.facts_of(requests[r])
    computed = {r: requests[r].num_prompt_tokens + rng.randrange(0, 50) for r in running}
    assert any(r not in gov.facts for r in running)
    preempted: list[str] = []  # left out while back in the waiting queue; come back as new rows
    folded_with_gaps = 0
    for _ in range(80):
        kind = rng.random()
        scheduled = list(running)
        drafts = None
        new = []
        if kind < 0.15 and len(running) > 2:  # left out of this step (budget, last token in flight)
            for r in rng.sample(running, rng.choice((1, 2))):
                scheduled.remove(r)
        elif kind < 0.2 and len(running) > 2:  # preempted: left out, back in the waiting queue
            r = rng.choice(running)
            running.remove(r)
            scheduled.remove(r)
            if r in gov.facts:
                gov.facts[r].running = False
            preempted.append(r)
        nst = {r: 1 for r in scheduled}
        cached = [(r, computed[r]) for r in scheduled]
        if 0.2 <= kind < 0.3:  # a chunk: a running row behind its prompt (recomputed from 0)
            r = rng.choice(scheduled)
            cached = [(x, 0 if x == r else c) for x, c in cached]
            nst[r] = rng.choice((1, 5))
        elif 0.3 <= kind < 0.35:  # a multi-token row past its prompt
            nst[rng.choice(scheduled)] = 3
        elif 0.35 <= kind < 0.4:  # draft tokens
            r = rng.choice(scheduled)
            nst[r], drafts = 3, {r: [1, 2]}
        elif 0.4 <= kind < 0.5:  # arrivals (and a preempted request back) and a finish: the rows change
            fresh = rng.sample([i for i in ids if i not in computed], 2)
            new = [(r, 0) for r in fresh]
            nst.update({r: requests[r].num_prompt_tokens for r in fresh})
            if preempted:
                r = preempted.pop()
                new.append((r, 0))
                nst[r] = computed[r]
        elif 0.5 <= kind < 0.55:  # same rows, another order
            rng.shuffle(cached)
        folds = gov.roster.folds
        out = _out(new, cached, nst, drafts=drafts)
        _charged_as_the_rule(gov, requests, out)
        folded_with_gaps += len(scheduled) < len(running) and gov.roster.folds > folds
        assert all(r in gov.facts for r, _ in cached)  # first seen in the pass: facts made
        for r, c in cached:  # as vLLM: a context moves by what was scheduled, from where it was
            computed[r] = c + nst[r]
        for r, _ in new:
            computed[r] = max(computed.get(r, 0), requests[r].num_prompt_tokens)
            running.append(r)
        for r in running:  # what the queue's pop did for them (once the governor has seen them)
            if r in gov.facts:
                gov.facts[r].running = True
        if len(new) > 1:
            done = running.pop(0)
            gov.on_schedule(_out([], [], {}, finished=[done]))
            computed.pop(done)
    roster = gov.roster
    assert roster.folds > 10 and roster.rebuilds > 5 and folded_with_gaps > 0, (roster.folds, roster.rebuilds)
    assert 0 < roster.repeats < roster.folds  # steady steps by ``repeat``, the others by ``fold``


def _facts(n: int):
    from shadowd.govern.queue import RequestFacts

    return {f"r{i}": RequestFacts(i % 3, 10 * (i + 1), i, []) for i in range(n)}


def _fold(roster, rows: dict, nst: dict | None = None) -> tuple[bool, dict]:
    """``roster.fold`` of a step with ``rows`` (rid -> context), one token each unless ``nst``."""
    nst = nst or dict.fromkeys(rows, 1)
    folded = roster.fold(list(rows), list(rows.values()), nst, sum(nst.values()))
    sums: dict[int, TenantSums] = {}
    if folded is not None:
        tenants, counts, contexts, chunk_rows = folded
        assert tenants == sorted(tenants)  # index order, as the pricer's sums need
        for t, n, c in zip(tenants, counts, contexts):
            s = sums.setdefault(t, TenantSums())
            s.n, s.dn, s.dc = s.n + n, s.dn + n, s.dc + c
        for t, q, c in chunk_rows:
            sums.setdefault(t, TenantSums()).add(q, c, True)
    return folded is not None, sums


def test_the_roster_folds_only_the_rows_it_expects():
    from shadowd.govern.roster import DecodeRoster

    facts = _facts(5)  # prompts 10, 20, ..., 50; tenants 0, 1, 2, 0, 1
    roster = DecodeRoster()
    ctx = {rid: f.prompt + 3 for rid, f in facts.items()}
    roster.rebuild(list(ctx), list(ctx.values()), dict.fromkeys(ctx, 1), facts)
    roster.end_step([], {}, facts)
    for f in facts.values():
        f.running = True
    ctx = {rid: c + 1 for rid, c in ctx.items()}  # the next step: every context one more
    assert not _fold(roster, {**ctx, "r0": ctx["r0"] - 1})[0]  # a context lowered (and another raised)
    assert not _fold(roster, {**ctx, "r1": ctx["r1"] - 1})[0]  # a context lowered
    assert not _fold(roster, ctx, {**dict.fromkeys(ctx, 1), "r2": 2})[0]  # two tokens past its prompt
    assert not _fold(roster, {**ctx, "x": 9})[0]  # a row it does not know
    swapped = {k: v for k, v in ctx.items() if k != "r4"}
    assert not _fold(roster, {**swapped, "x": ctx["r4"]})[0]  # one left out, an unknown in its place
    ok, sums = _fold(roster, ctx)
    assert ok
    assert {t: (s.n, s.dn, s.dc) for t, s in sums.items()} == {
        0: (2, 2, ctx["r0"] + ctx["r3"]),
        1: (2, 2, ctx["r1"] + ctx["r4"]),
        2: (1, 1, ctx["r2"]),
    }
    roster.end_step([], {}, facts)
    # r1 left out of the next step: its context holds; r4 preempted: it leaves the roster
    facts["r4"].running = False
    nxt = {rid: c + 1 for rid, c in ctx.items() if rid not in ("r1", "r4")}
    ok, sums = _fold(roster, nxt)
    assert ok and 1 not in sums and "r4" not in roster.decode and "r1" in roster.decode
    roster.end_step([], {}, facts)
    held = ctx["r1"] + 1  # what it would have had in the step it was left out of
    back = {rid: c + 1 for rid, c in nxt.items()} | {"r1": held}
    assert not _fold(roster, {**back, "r1": held + 1})[0]  # as if it had been scheduled
    ok, sums = _fold(roster, back)
    assert ok and (sums[1].n, sums[1].dc) == (1, held)


def test_a_prompt_in_chunks_is_charged_as_prefill_and_then_decodes():
    from shadowd.govern.roster import DecodeRoster

    facts = _facts(2)  # r1's prompt: 20 tokens
    roster = DecodeRoster()
    roster.rebuild([], [], {}, facts)
    roster.end_step([NS(req_id="r1", num_computed_tokens=0)], {"r1": 8}, facts)  # chunk 0-8
    assert "r1" in roster.chunks
    ok, sums = _fold(roster, {"r1": 8}, {"r1": 8})  # chunk 8-16
    assert ok and (sums[1].pn, sums[1].pp, sums[1].pc, sums[1].dn) == (1, 8, 8, 0)
    roster.end_step([], {}, facts)
    ok, sums = _fold(roster, {"r1": 16}, {"r1": 4})  # the last chunk: 16-20
    assert ok and (sums[1].pn, sums[1].pp) == (1, 4)
    roster.end_step([], {}, facts)
    assert "r1" in roster.decode
    ok, sums = _fold(roster, {"r1": 20})
    assert ok and (sums[1].dn, sums[1].dc, sums[1].pn) == (1, 20, 0)


def test_a_batch_with_many_arrivals_per_row_is_charged_by_the_pass_and_a_steady_one_by_the_roster():
    """Where arrivals and finishes come at more than one per ``ROWS_PER_CHANGE`` running rows, the
    roster is dropped (no bookkeeping per arrival and finish) and the per-row pass charges; once
    the batch runs steady it is rebuilt and folds."""
    from shadowd.govern.governor import ROWS_PER_CHANGE
    from shadowd.govern.roster import DECODE

    rng = random.Random(7)
    requests = {f"r{i}": _request(i, rng) for i in range(400)}
    gov = _governor(requests, rows_per_change=ROWS_PER_CHANGE)
    rows = list(requests)[:ROWS_PER_CHANGE]
    waiting = list(requests)[ROWS_PER_CHANGE:]
    computed = {r: requests[r].num_prompt_tokens for r in rows}
    for _ in range(40):  # two arrivals and two finishes a step among 16 rows: churn
        fresh = [waiting.pop(), waiting.pop()]
        nst = {**dict.fromkeys(rows, 1), **{r: requests[r].num_prompt_tokens for r in fresh}}
        out = _out([(r, 0) for r in fresh], [(r, computed[r]) for r in rows], nst, finished=rows[:2])
        _charged_as_the_rule(gov, requests, out)
        for r in rows:
            computed[r] += 1
        rows = rows[2:] + fresh
        computed.update({r: requests[r].num_prompt_tokens for r in fresh})
    # (its first steps, while the smoothed churn was still low, went through the roster)
    assert not gov.roster.valid and gov.churn > 1
    assert not any(f.member for f in gov.facts.values())  # no member flags left behind
    rebuilds, folds = gov.roster.rebuilds, gov.roster.folds
    for _ in range(60):  # the same rows, step after step: the smoothed churn falls
        out = _out([], [(r, computed[r]) for r in rows], dict.fromkeys(rows, 1))
        _charged_as_the_rule(gov, requests, out)
        for r in rows:
            computed[r] += 1
    assert gov.roster.valid and gov.roster.folds - folds > 40 and gov.roster.rebuilds == rebuilds + 1
    assert gov.roster.repeats > 40  # the same rows each step: steady decode
    assert all(gov.facts[r].member == DECODE for r in rows)


def _five_rows_rebuilt():
    """Six requests' facts and a roster rebuilt from a step of r0-r4 (r5 not among them); the
    rows and their contexts in that step."""
    from shadowd.govern.roster import DecodeRoster

    facts = _facts(6)
    roster = DecodeRoster()
    rows = [f"r{i}" for i in range(5)]
    ctx = {r: facts[r].prompt + 3 for r in rows}
    roster.rebuild(rows, [ctx[r] for r in rows], dict.fromkeys(rows, 1), facts)
    roster.end_step([], {}, facts)
    return facts, roster, rows, ctx


def test_the_same_rows_again_are_trusted_only_while_no_member_joined_or_left():
    """A steady step's rows are compared by identity with the last folded step's (no keys
    comparison) only while the members are still exactly those rows: a finish and an arrival
    between (the count unchanged) must not let last step's rows through."""
    facts, roster, rows, ctx = _five_rows_rebuilt()
    for _ in range(2):
        ctx = {r: c + 1 for r, c in ctx.items()}
        assert _fold(roster, ctx)[0]
        roster.end_step([], {}, facts)
    assert roster._rows == rows  # steady: kept
    ctx = {r: c + 1 for r, c in ctx.items()}  # a step with r5 new beside them; then r0 finishes
    assert _fold(roster, ctx)[0]
    roster.end_step([NS(req_id="r5", num_computed_tokens=0)], {"r5": facts["r5"].prompt}, facts)
    roster.leave(["r0"], facts)  # five members again
    assert roster._rows is None
    ctx = {r: c + 1 for r, c in ctx.items()}
    assert not _fold(roster, ctx)[0]  # last step's rows, r0 among them: refused
    ok, _ = _fold(roster, {**{r: c for r, c in ctx.items() if r != "r0"}, "r5": facts["r5"].prompt})
    assert ok and roster._rows is not None


def test_the_steady_decode_step_is_repeated_only_as_it_was():
    """``repeat`` (steady decode, no sums objects) takes a step only if its rows are the last
    folded step's list, one token each, with the contexts one more each; anything else goes to
    ``fold``.  Its charges are the rule's bit for bit (``test_random_steps_...``)."""
    facts, roster, rows, ctx = _five_rows_rebuilt()
    ctx = {r: c + 1 for r, c in ctx.items()}
    assert roster.repeat(rows, list(ctx.values()), 5) is None  # not folded yet: no rows to repeat
    assert _fold(roster, ctx)[0]
    roster.end_step([], {}, facts)
    ctx = {r: c + 1 for r, c in ctx.items()}
    step = list(ctx.values())
    assert roster.repeat(rows, [*step[:-1], step[-1] - 1], 5) is None  # a context lowered
    assert roster.repeat(rows, step, 6) is None  # a row with two tokens
    assert roster.repeat(rows[::-1], step[::-1], 5) is None  # another order: ``fold`` decides
    sums = [ctx["r0"] + ctx["r3"], ctx["r1"] + ctx["r4"], ctx["r2"]]  # tenants 0, 1, 2
    assert roster.repeat(rows, step, 5) == ([0, 1, 2], [2, 2, 1], sums)
    ctx = {r: c + 1 for r, c in ctx.items()}  # the step closed by ``repeat``: the next one repeats
    got = roster.repeat(rows, list(ctx.values()), 5)
    assert got is not None and got[2] == [s + m for s, m in zip(sums, [2, 2, 1])]
    roster.leave(["r0"], facts)  # a member left: the rows are not the members any more
    ctx = {r: c + 1 for r, c in ctx.items() if r != "r0"}
    assert roster.repeat(rows[1:], list(ctx.values()), 4) is None


@pytest.mark.parametrize("tokens", [40, 500])  # both segments of ``COEF``
def test_decode_shares_and_charges_are_the_sums_objects_ones(tokens):
    """``StepPricer.decode_shares`` and ``Ledger.charge_decode`` give ``shares`` and ``charge``
    of the same one-token decode rows bit for bit, caps included."""
    from shadowd.govern.ledger import Ledger

    rng = random.Random(tokens)
    pricer = StepPricer(COEF)
    counts = [rng.randrange(1, 60) for _ in range(4)]
    contexts = [m * rng.randrange(10, 30000) + rng.randrange(m) for m in counts]
    sums = []
    for m, c in zip(counts, contexts):
        s = TenantSums()
        for j in range(m):  # rows whose contexts add up to ``c``
            s.add(1, c // m + (j < c % m), False)
        sums.append(s)
    shares = pricer.decode_shares(counts, contexts, tokens)
    assert shares == pricer.shares(sums, tokens)
    policy = TenantPolicy.parse("a=2,b=1:5,c=1,d=3:1")
    ledgers = [Ledger(policy, clock=lambda: 7.0) for _ in range(2)]
    for ledger in ledgers:
        for name in "abcd":
            ledger.tenant(name)
    ledgers[0].charge(range(4), sums, 1.0, 2.0, shares)
    ledgers[1].charge_decode(range(4), counts, 2.0, shares)
    assert ledgers[0].service == ledgers[1].service and ledgers[0].bucket == ledgers[1].bucket
    ledgers[0].charge(range(4), sums, 1.0, 2.0, None)
    ledgers[1].charge_decode(range(4), counts, 2.0, None)
    assert ledgers[0].service == ledgers[1].service
