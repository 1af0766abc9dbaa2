"""The gate's decision on ``/metrics``: which step classes it does not vouch for (r17, r28).

On-call sees a class the calibration never identified as its own series, with the way out in
the help text, rather than reading it out of a check's reason.
"""

from __future__ import annotations

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


def _scrape(decision) -> dict:
    reg = CollectorRegistry()
    reg.register(_One(decision))
    fams = {f.name: f for f in text_string_to_metric_families(generate_latest(reg).decode())}
    return {s.labels["step_class"]: s.value for s in fams["shadowd_gate_class_not_vouched"].samples}


def test_a_class_the_calibration_never_identified_is_a_series():
    reason = "segment 1's decode.c was fitted at zero, though the fit part held 368 such rows in 45 steps"
    d = Gate(GatePolicy()).evaluate(with_(good(0.0), "barely_held", {"decode": reason}), 0.0)
    assert _scrape(d.to_dict()) == {"decode": 1.0}
    assert _scrape(Gate(GatePolicy()).evaluate(good(0.0), 0.0).to_dict()) == {}
    assert _scrape(None) == {}
