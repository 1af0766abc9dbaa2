"""The governor's cheaper per-step paths give what the plain per-row rule gives, bit for bit.

Steps are made up (no scheduler): random rows of random tenants, prompt chunks, multi-token rows
and requests the governor has not seen yet, so every path is taken on both sides of its condition:

* the fold of repeated running rows (:class:`shadowd.govern.governor.RowLayout`), used only while
  the same rows come again all past their prompts, against one ``TenantSums.add`` per row;
* the per-row pass that looks rows up by subscript and, meeting an unseen request, starts again;
* the fused ledger charge, against ``TenantSums.vtc_tokens`` and ``StepPricer.shares``.

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


def _governor(requests: dict):
    from shadowd.govern.governor import Governor
    from shadowd.govern.handoff import Verdict

    cfg = GovernConfig(mode="vtc", tenants=TenantPolicy.parse("acme=2,beta=0.5"))
    gov = Governor(cfg, requests)
    gov.verdict = Verdict("go", StepPricer(COEF), "v1", float("inf"))  # attributed charges too
    return gov


def _out(new: list, cached: list, nst: dict, finished=()) -> NS:
    return NS(
        scheduled_new_reqs=[NS(req_id=r, num_computed_tokens=c) for r, c in new],
        scheduled_cached_reqs=NS(req_ids=[r for r, _ in cached], num_computed_tokens=[c for _, c in cached]),
        num_scheduled_tokens=nst,
        total_num_scheduled_tokens=sum(nst.values()),
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
    requests = {f"r{i}": _request(i, rng) for i in range(400)}
    gov = _governor(requests)
    ids = list(requests)
    running = rng.sample(ids, rng.choice((3, 40, 200)))
    for r in running[: len(running) // 2]:  # the rest are first seen in a step (lookup path)
        gov.facts_of(requests[r])
    computed = {r: requests[r].num_prompt_tokens + rng.randrange(0, 50) for r in running}
    assert any(r not in gov.facts for r in running)
    folded = passes = 0
    for _ in range(60):
        kind = rng.random()
        nst = {r: 1 for r in running}
        cached = [(r, computed[r]) for r in running]
        new = []
        if kind < 0.15:  # a chunk: a running row behind its prompt
            r = rng.choice(running)
            cached = [(x, 0 if x == r else c) for x, c in cached]
            nst[r] = rng.choice((1, 5))
        elif kind < 0.25:  # a multi-token row past its prompt (speculative tokens)
            nst[rng.choice(running)] = 3
        elif kind < 0.35:  # arrivals and a finish: the rows change
            fresh = rng.sample([i for i in ids if i not in computed], 2)
            new = [(r, 0) for r in fresh]
            nst.update({r: requests[r].num_prompt_tokens for r in fresh})
        elif kind < 0.4:  # same rows, another order
            rng.shuffle(running)
            cached = [(r, computed[r]) for r in running]
        layout = gov._layout
        used = layout is not None and [r for r, _ in cached] == layout.rids
        out = _out(new, cached, nst)
        _charged_as_the_rule(gov, requests, out)
        assert all(r in gov.facts for r, _ in cached)  # first seen in the pass: facts made
        folded += used and all(c >= requests[r].num_prompt_tokens for r, c in cached)
        passes += not used
        for r, c in cached:
            computed[r] = max(c, computed[r]) + nst[r]
        for r, _ in new:
            computed[r] = requests[r].num_prompt_tokens
            running.append(r)
        if new:
            done = running.pop(0)
            gov.on_schedule(_out([], [], {}, finished=[done]))
            computed.pop(done)
    assert folded > 5 and passes > 5, (folded, passes)


def test_the_layout_fold_refuses_other_rows_and_rows_behind_their_prompts():
    from shadowd.govern.governor import RowLayout
    from shadowd.govern.queue import RequestFacts

    facts = {f"r{i}": RequestFacts(i % 3, 10 * (i + 1), i, []) for i in range(5)}
    rids = list(facts)
    layout = RowLayout(rids, facts)
    assert layout.prompt_max == 50 and [t for t, _, _ in layout.groups] == [0, 1, 2]
    sums: dict[int, TenantSums] = {}
    assert not layout.fold(rids[::-1], [60] * 5, sums, lambda t: TenantSums())
    assert not layout.fold(rids, [60, 60, 60, 60, 49], sums, lambda t: TenantSums())
    assert not layout.fold(rids, [10, 20, 29, 40, 50], sums, lambda t: TenantSums())
    assert not layout.fold(rids[:4], [60] * 4, sums, lambda t: TenantSums())
    assert sums == {}
    for computed in ([50, 51, 52, 53, 54], [10, 20, 30, 40, 50]):  # past the longest; each its own
        sums = {}
        assert layout.fold(rids, computed, sums, lambda t: TenantSums())
        want: dict[int, TenantSums] = {}
        for rid, c in zip(rids, computed):
            want.setdefault(facts[rid].tenant, TenantSums()).add(1, c, False)
        assert list(sums) == list(want)
        for t in want:
            assert [getattr(sums[t], k) for k in TenantSums.__slots__] == [
                getattr(want[t], k) for k in TenantSums.__slots__
            ]
