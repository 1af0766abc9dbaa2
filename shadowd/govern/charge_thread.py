"""One step's charge at a time, off the engine thread, handed back before a counter is read.

The engine thread hands the step over (``submit``: one put on a C-level queue) and goes on to
wait on the GPU, as the tap hands its frames to its encoder thread.  This thread charges the
step in that wait.  Before the engine thread next reads a counter (the next ``schedule``, or a
call into the fair queue that orders by them) it takes the result (``result``), waiting only if
the charge is not done yet.  So at any moment the governor's state has one owner, the engine
thread or this one, and the charges, and every admission made from them, are the ones the inline
charge makes (``tests/govern/test_charge_thread.py``).  Cost on the engine thread:
``benchmarks/govern_cost.py`` (``docs/admission.md``).

>>> t = ChargeThread(lambda step: [step * 2])
>>> t.submit(21); t.result()
[42]
>>> t.close()
"""

from __future__ import annotations

import queue
import threading
import time
from collections.abc import Callable
from typing import Any

WAIT_S = 1.0  # how often a wait for a result checks that the thread still runs
MAX_WAIT_S = 5.0  # a charge takes microseconds: no answer in this long, and the thread is given up
_STOP = object()


class ChargeThreadDied(RuntimeError):
    """The thread ended with a step still owed (it can only end on ``close``, or a crash), or gave
    no answer in ``MAX_WAIT_S``: the governor charges inline from then on."""


class ChargeThread:
    def __init__(self, charge: Callable[[Any], Any], name: str = "shadowd-govern-charge") -> None:
        self._charge = charge  # step -> its result; catches its own errors (see ``Governor``)
        self._jobs: queue.SimpleQueue = queue.SimpleQueue()
        self._results: queue.SimpleQueue = queue.SimpleQueue()
        self.abandoned = False  # given up on: it takes no further step, nor hands one back
        self.cpu_ns = 0  # this thread's CPU time in charges so far (``benchmarks/govern_cost.py``)
        self._thread = threading.Thread(target=self._run, name=name, daemon=True)
        self._thread.start()

    def submit(self, step: Any) -> None:
        """Engine thread: hand ``step`` over; never blocks."""
        self._jobs.put(step)

    def result(self) -> Any:
        """Engine thread: the result of the step submitted last, waiting for it if need be (at
        most ``MAX_WAIT_S``; then the thread is abandoned: it charges nothing more)."""
        waited = 0.0
        while True:
            try:
                return self._results.get(timeout=WAIT_S)
            except queue.Empty:
                waited += WAIT_S
                if not self._thread.is_alive():
                    raise ChargeThreadDied("the governor's charge thread has stopped") from None
                if waited >= MAX_WAIT_S:
                    self.abandoned = True
                    self.close()
                    raise ChargeThreadDied(f"no charge from the charge thread in {waited:g} s") from None

    def close(self) -> None:
        self._jobs.put(_STOP)
        if self._thread is not threading.current_thread() and not self.abandoned:
            self._thread.join(timeout=MAX_WAIT_S)

    def _run(self) -> None:
        jobs, results, charge, cpu = self._jobs, self._results, self._charge, time.thread_time_ns
        while (step := jobs.get()) is not _STOP and not self.abandoned:
            c = cpu()
            result = charge(step)
            self.cpu_ns += cpu() - c
            if not self.abandoned:
                results.put(result)
