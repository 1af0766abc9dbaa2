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


def test_deferred_steps_wait_for_a_hand_over_and_are_charged_in_order():
    """A deferred step is the engine thread's until a hand-over: the thread charges nothing on
    its own, then every step handed over, in the order submitted, the answer being the last's;
    ``result`` hands deferred steps over itself rather than wait for them forever."""
    seen: list[int] = []
    t = ChargeThread(lambda step: seen.append(step) or step)
    try:
        for step in range(5):
            t.defer(step)
        time.sleep(0.05)
        assert seen == [] and t.deferred == 5 and t._answered == 0
        t.submit(5)  # wakes the thread: all six, in order
        assert t.result() == 5 and seen == list(range(6)) and t.deferred == 0
        t.defer(6)
        t.defer(7)
        assert t.result() == 7 and seen == list(range(8))  # handed over by ``result``
        t.flush()  # nothing deferred: no spare wake-up for the thread
        t.defer(8)
        time.sleep(0.05)
        assert seen == list(range(8)) and t.deferred == 1
        t.flush()
        assert t.result() == 8 and seen == list(range(9))
    finally:
        t.close()
