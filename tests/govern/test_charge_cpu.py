"""Where the charge thread runs: on the CPU the engine thread last ran on (``follow``), moved
when the engine thread moves, and where the kernel puts it when that cannot be done.

The engine thread here is the test's own thread (it submits the steps); each charge reports
the CPUs its thread may run on, read inside the charge thread itself."""

from __future__ import annotations

import os
import sys
import threading

import pytest

from shadowd.govern import charge_thread
from shadowd.govern.charge_thread import ChargeThread, cpu_in_stat, cpu_of
from shadowd.govern.config import GovernConfig

pytestmark = pytest.mark.skipif(sys.platform != "linux", reason="CPU affinity is Linux's")
ALLOWED = sorted(os.sched_getaffinity(0))


def _affinity(step: object) -> set[int]:
    return os.sched_getaffinity(0)  # the charge thread's own


def test_a_thread_s_cpu_is_read_past_a_name_with_spaces_and_parentheses():
    assert cpu_of(threading.get_native_id()) in ALLOWED
    fields = [str(i) for i in range(3, 53)]  # fields 3.. after the name; field 39 is "39"
    assert cpu_in_stat(b"7 (x) (y z) " + " ".join(fields).encode()) == 39


def test_the_charge_thread_runs_on_the_engine_thread_s_cpu():
    t = ChargeThread(_affinity)
    try:
        t.submit(1)
        held = t.result()
    finally:
        t.close()
    assert t.following and t.cpu is not None and held == {t.cpu} and t.moves == 1


def test_it_follows_the_engine_thread_to_another_cpu(monkeypatch):
    if len(ALLOWED) < 2:
        pytest.skip("one CPU: nowhere to move")  # CI's machine has two
    now = [0.0]
    where = [ALLOWED[0]]
    monkeypatch.setattr(charge_thread, "cpu_of", lambda tid: where[0])
    t = ChargeThread(_affinity, clock=lambda: now[0])
    try:
        t.submit(1)
        first = t.result()
        where[0] = ALLOWED[-1]  # the engine thread moved ...
        t.submit(2)
        unchanged = t.result()  # ... but the next look is FOLLOW_EVERY_S away
        now[0] += charge_thread.FOLLOW_EVERY_S
        t.submit(3)
        moved = t.result()
    finally:
        t.close()
    assert first == unchanged == {ALLOWED[0]} and moved == {ALLOWED[-1]} and t.moves == 2


def test_a_cpu_it_cannot_read_leaves_the_thread_where_it_was_created_to_run(monkeypatch):
    def unreadable(tid: int) -> int:
        raise OSError("no /proc here")

    monkeypatch.setattr(charge_thread, "cpu_of", unreadable)
    t = ChargeThread(_affinity)
    try:
        t.submit(1)
        held = t.result()
        t.submit(2)
        assert t.result() == held  # the charge goes on
    finally:
        t.close()
    assert not t.following and t.cpu is None and held == set(ALLOWED)


def test_follow_off_leaves_the_thread_where_the_kernel_puts_it():
    t = ChargeThread(_affinity, follow=False)
    try:
        t.submit(1)
        held = t.result()
    finally:
        t.close()
    assert not t.following and t.cpu is None and held == set(ALLOWED)


def test_the_setting_comes_from_the_environment_with_a_clear_error():
    assert GovernConfig.from_env({}).charge_cpu == "engine"
    assert GovernConfig.from_env({"SHADOWD_GOVERN_CHARGE_CPU": " ANY "}).charge_cpu == "any"
    with pytest.raises(ValueError, match="SHADOWD_GOVERN_CHARGE_CPU='core0'"):
        GovernConfig.from_env({"SHADOWD_GOVERN_CHARGE_CPU": "core0"})
