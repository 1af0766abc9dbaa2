"""``benchmarks/govern_cost.py`` measures what it says, on a CI-sized run of its trace workload.

The figures themselves are the benchmark's (``docs/admission.md``); here: the trace workload
really carries the Azure traces' lengths and churns, and the net figure compares like with
like (the FCFS queue on the untouched scheduler answers about as many calls as the governor's).
"""

from __future__ import annotations

import pytest

from benchmarks import govern_cost

pytestmark = pytest.mark.usefixtures("vllm")


def test_trace_lengths_are_the_azure_traces():
    pairs = govern_cost._trace_lengths(limit=500)
    prompts = [p for p, _ in pairs]
    outputs = [o for _, o in pairs]
    assert len(pairs) == 1000
    assert max(prompts) == govern_cost.TRACE_MAX_PROMPT  # long prompts: chunked prefills
    assert 20 < sum(outputs) / len(outputs) < govern_cost.TRACE_MAX_OUTPUT


def test_trace_workload_churns_and_nets_like_for_like():
    r = govern_cost.measure(32, "trace", blocks=2, block_steps=30, warmup=20)
    assert r["arrivals_per_step"] > 0 and r["requests_made"] > 32
    gov_queue_calls = r["governor_calls_per_step"] - 1  # less its on_schedule
    assert abs(gov_queue_calls - r["fcfs_calls_per_step"]) <= 0.25 * r["fcfs_calls_per_step"]
    assert r["governor_cpu_us_per_step"] > 0 and r["fcfs_queue_us_per_step"] > 0
