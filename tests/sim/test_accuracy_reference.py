"""Issue 8's accuracy targets on the reference engine, CI-sized (one platform and model, ~45 s).

The real vLLM scheduler drives the H100 kernel-table engine (llama-3.1-8b) with three tenants from
real traces (Azure code, Azure conversation, Mooncake conversation: long context, shared prefixes)
in the two regimes of ``benchmarks/accuracy_study.py``, fitted on the first half of each run and scored on
the second:

* ``saturated`` (the paper's regime): the KV cache full (median ≥ 80% over the scored window), 40–80
  requests per step, prompts from tens to 31.7k tokens.  To get there within 4000 steps the
  scheduler is given 35% of the vLLM-sized KV capacity (as with a lower
  ``gpu_memory_utilization``) and the Azure code tenant runs at 6 req/s, so that its bursty trace
  (gaps of minutes) has requests in the scored window;
* ``light``: idle gaps, prefill-only steps, small batches.

The full study (two platforms, two models, the whole KV capacity, longer runs) is
``python -m benchmarks.accuracy_study``; its figures are in ``docs/accuracy.md``.
"""

from __future__ import annotations

import pytest

from benchmarks.accuracy_study import quick_cases, run_case

pytestmark = pytest.mark.usefixtures("vllm")

CLASSES = ("prefill", "decode", "mixed", "all")
ENOUGH = 100  # scored steps a class needs before its p99 is held to the target

CASES = {case.regime: case for case in quick_cases()}  # also `python -m benchmarks.accuracy_study --quick`


@pytest.fixture(scope="module")
def runs():
    return {name: run_case(case, log=lambda s: None) for name, case in CASES.items()}


def test_saturated_run_is_the_papers_regime(runs):
    """High concurrency and the KV cache near its capacity, with long and short prompts mixed."""
    g = runs["saturated"]["regime"]
    assert g["kv_usage"]["peak"] >= 0.9 and g["kv_usage"]["scored_median"] >= 0.8
    assert g["batch_size"]["p90"] >= 48
    assert g["prompt_tokens"]["cv"] >= 1.0 and g["prompt_tokens"]["max"] >= 16000
    acc = runs["saturated"]["accuracy"]
    assert acc["decode"]["steps"] >= ENOUGH and acc["mixed"]["steps"] >= ENOUGH
    assert runs["light"]["accuracy"]["prefill"]["steps"] >= 20  # the light run forms prefill-only steps


@pytest.mark.parametrize("regime", CASES)
def test_llmvisor_accuracy_out_of_sample(runs, regime):
    acc = runs[regime]["accuracy"]
    assert acc["all"]["llmvisor"]["r2"] >= 0.99
    held = [c for c in CLASSES if acc[c]["steps"] >= ENOUGH]
    assert {"decode", "mixed", "all"} <= set(held)
    for c in held:
        assert acc[c]["llmvisor"]["p99"] <= 0.10, (c, acc[c]["llmvisor"])


@pytest.mark.parametrize("regime", CASES)
def test_token_baseline_is_at_least_twice_as_wrong(runs, regime):
    acc = runs[regime]["accuracy"]
    for c in ("all", "mixed"):
        for q in ("p90", "p99"):
            assert acc[c]["token_baseline"][q] >= 2 * acc[c]["llmvisor"][q], (c, q, acc[c])
    for c in CLASSES:
        if acc[c]["steps"] < 30:
            continue
        for q in ("p50", "p90", "p99"):
            assert acc[c]["token_baseline"][q] >= acc[c]["llmvisor"][q], (c, q, acc[c])


@pytest.mark.parametrize("regime", CASES)
def test_tenant_totals_match_shapley(runs, regime):
    truth = runs[regime]["truth"]
    assert truth["steps"] == 100 and len(truth["llmvisor"]["per_tenant"]) == 3
    assert truth["llmvisor"]["tenant_error_max"] <= 0.03, truth["llmvisor"]["per_tenant"]
    assert truth["token_baseline"]["tenant_error_max"] > truth["llmvisor"]["tenant_error_max"]
