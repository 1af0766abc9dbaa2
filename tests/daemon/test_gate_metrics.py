"""The gate's decision on ``/metrics``: which step classes it does not vouch for (r17, r28), and
how long each evidence minimum not yet met still needs.

On-call sees a class the calibration never identified, or the wait before GO can come, as its
own series, with the way out in the help text, rather than reading it out of a check's reason.
"""

from __future__ import annotations

import json

from prometheus_client import CollectorRegistry, generate_latest
from prometheus_client.parser import text_string_to_metric_families
from prometheus_client.registry import Collector

from checks.gate import Gate
from checks.policy import GatePolicy
from shadowd.daemon.metrics import _gate_metrics
from tests.checks.test_gate import good, with_


class _One(Collector):
    def __init__(self, decision):
        self.decision = decision

    def collect(self):
        yield from _gate_metrics(self.decision)


def _families(decision) -> dict:
    reg = CollectorRegistry()
    reg.register(_One(decision))
    return {f.name: f for f in text_string_to_metric_families(generate_latest(reg).decode())}


def _scrape(decision) -> dict:
    fams = _families(decision)
    return {s.labels["step_class"]: s.value for s in fams["shadowd_gate_class_not_vouched"].samples}


def _no_constant(name: str):
    raise AssertionError(f"{name} in the decision's JSON: not JSON other programs can read")


def _waits(decision) -> dict:
    fams = _families(decision)
    return {s.labels["check"]: s.value for s in fams["shadowd_gate_evidence_wait_seconds"].samples}


def test_a_class_the_calibration_never_identified_is_a_series():
    reason = "segment 1's decode.c was fitted at zero, though the fit part held 368 such rows in 45 steps"
    d = Gate(GatePolicy()).evaluate(with_(good(0.0), "barely_held", {"decode": reason}), 0.0)
    assert _scrape(d.to_dict()) == {"decode": 1.0}
    assert _scrape(Gate(GatePolicy()).evaluate(good(0.0), 0.0).to_dict()) == {}
    assert _scrape(None) == {}


def test_the_wait_for_each_unmet_evidence_minimum_is_a_series():
    """Half the decode minimum in the first 300 s of shadow traffic: 300 s more at that rate, and
    the shadow duration's own minimum; a window that never holds the minimum is +Inf; once met,
    no series."""
    pol = GatePolicy(consecutive_passes=1)
    need = pol.min_steps["decode"]
    ev = with_(with_(good(0.0), "accuracy.decode.steps", need // 2), "shadow_duration_s", 300.0)
    d = Gate(pol).evaluate(ev, 0.0).to_dict()
    assert d["details"]["evidence_wait_s"]["evidence.steps.decode"] == 300.0
    waits = _waits(d)
    assert waits["evidence.steps.decode"] == 300.0
    assert waits["evidence.duration"] == pol.min_duration_s - 300.0
    short = with_(with_(ev, "evidence_window_s", 400.0), "shadow_duration_s", 500.0)
    never = Gate(pol).evaluate(short, 0.0).to_dict()
    assert never["details"]["evidence_wait_s"]["evidence.steps.decode"] is None  # JSON: null
    json.loads(json.dumps(never, default=str), parse_constant=_no_constant)  # plain JSON, no Infinity
    assert _waits(never)["evidence.steps.decode"] == float("inf")
    assert _waits(Gate(pol).evaluate(good(0.0), 0.0).to_dict()) == {}
    assert _waits(None) == {}
