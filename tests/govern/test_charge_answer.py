"""The charge thread's answer, handed back through attributes: each ``result`` is the answer to
the step submitted last, whether the charge was done before the engine thread asked (read with
no lock) or not (the engine thread waits and is woken); a wake-up is never lost.

No scheduler here: the thread's hand-off alone, with charges whose length varies around the
moment the engine thread asks, so both orders of the two threads' flags are met."""

from __future__ import annotations

import random
import threading
import time

import pytest

from shadowd.govern import charge_thread
from shadowd.govern.charge_thread import ChargeThread, ChargeThreadDied


def test_every_result_is_the_answer_to_the_step_submitted_last(monkeypatch):
    # A lost wake-up would wait out WAIT_S and then raise (the thread is alive, but MAX_WAIT_S
    # is one WAIT_S here): never silently late.
    monkeypatch.setattr(charge_thread, "WAIT_S", 5.0)
    monkeypatch.setattr(charge_thread, "MAX_WAIT_S", 5.0)
    rng = random.Random(7)
    pauses = [rng.choice((0.0, 0.0, 1e-5, 1e-4, 5e-4)) for _ in range(2000)]

    def charge(step: int) -> int:
        if pauses[step]:
            time.sleep(pauses[step])
        return step * 3

    t = ChargeThread(charge)
    waited = 0
    try:
        for step in range(len(pauses)):
            t.submit(step)
            if rng.random() < 0.5:
                time.sleep(rng.choice((1e-5, 2e-4)))  # sometimes the charge is done first
            waited += t._answered != t._asked  # the engine thread will have to wait
            assert t.result() == step * 3
            assert t._answered == t._asked == step + 1
    finally:
        t.close()
    assert waited > 100  # both paths were taken, many times
    assert len(pauses) - waited > 100


def test_a_charge_that_never_comes_is_given_up(monkeypatch):
    monkeypatch.setattr(charge_thread, "WAIT_S", 0.02)
    monkeypatch.setattr(charge_thread, "MAX_WAIT_S", 0.1)
    release = threading.Event()
    t = ChargeThread(lambda step: release.wait(2.0))
    t.submit(1)
    with pytest.raises(ChargeThreadDied, match="no charge"):
        t.result()
    assert t.abandoned
    release.set()
    time.sleep(0.05)
    assert t._answered == 0  # the late charge hands nothing back
