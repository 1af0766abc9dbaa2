"""The demo waits for its daemon to observe every step it handed over before it evaluates the
gate.  A daemon that is slow but still observing steps (a loaded machine: H46-swing-long, run
beside three other rows on two cores, was stopped by a fixed 120 s bound) is waited for; one
that observes nothing for the bound is stuck, and the run stops with a clear error.

The engine, tap and daemon are stand-ins here (``SimpleNamespace``): what is under test is only
the wait, which reads three counters and hands held frames over.
"""

from __future__ import annotations

import threading
import time
from types import SimpleNamespace

import pytest

from shadowd.demo import scenario


class _Pipeline:
    """Reads the count another thread moves, as the daemon's pipeline's counter does."""

    def __init__(self, observed: list[int]) -> None:
        self._observed = observed

    @property
    def steps_observed(self) -> int:
        return self._observed[0]


def _run(observed: list[int], step_seq: int) -> tuple[scenario.DemoRun, SimpleNamespace, SimpleNamespace]:
    run = scenario.DemoRun.__new__(scenario.DemoRun)
    run.slices = SimpleNamespace(cut=lambda seq: None, flush=lambda: None)
    tap = SimpleNamespace(step_seq=step_seq, dropped_total=0)
    ref = SimpleNamespace(scheduler=SimpleNamespace(shadowd_tap=tap))
    daemon = SimpleNamespace(
        pipeline=_Pipeline(observed), calibrator=None, writer=SimpleNamespace(flush=lambda: None)
    )
    return run, ref, daemon


def test_a_slow_daemon_that_keeps_observing_is_waited_for(monkeypatch):
    monkeypatch.setattr(scenario, "CATCH_UP_TIMEOUT_S", 0.3)
    observed = [0]
    run, ref, daemon = _run(observed, step_seq=10)

    def trickle() -> None:  # one step every 0.1 s: 1 s in all, over three times the bound
        for _ in range(10):
            time.sleep(0.1)
            observed[0] += 1

    t = threading.Thread(target=trickle)
    t.start()
    run._catch_up(ref, daemon)
    t.join()
    assert observed[0] == 10


def test_a_daemon_that_observes_nothing_for_the_bound_stops_the_run(monkeypatch):
    monkeypatch.setattr(scenario, "CATCH_UP_TIMEOUT_S", 0.3)
    run, ref, daemon = _run([4], step_seq=10)
    start = time.monotonic()
    with pytest.raises(RuntimeError, match=r"no step observed for 0 s \(4 of 10\)"):
        run._catch_up(ref, daemon)
    assert 0.3 <= time.monotonic() - start < 5.0
