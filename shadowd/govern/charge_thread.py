"""One step's charge at a time, off the engine thread, handed back before a counter is read.

The engine thread hands the step over (``submit``: one put on a C-level queue) and goes on to
wait on the GPU, as the tap hands its frames to its encoder thread.  This thread charges the
step in that wait.  Before the engine thread next reads a counter (the next ``schedule``, or a
call into the fair queue that orders by them) it takes the result (``result``: with the charge
done, as it mostly is, two counters compared and no lock), waiting only if it is not done yet.
So at any moment the governor's state has one owner, the engine thread or this one, and the
charges, and every admission made from them, are the ones the inline charge makes
(``tests/govern/test_charge_thread.py``; the hand-off itself: ``tests/govern/test_charge_answer.py``).
Cost on the engine thread: ``benchmarks/govern_cost.py`` (``docs/admission.md``).

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
        # The answer is handed back through attributes, not a queue: the engine thread reads a
        # charge already done (the common case: it was made in the GPU wait) with no lock taken.
        # Only an engine thread that must wait asks to be woken (``_waiting``), by a token on
        # ``_wake``.  Each thread writes its flag and then reads the other's (under the GIL, in
        # that order), so a wake-up is never lost; a spare token only costs one more check.
        self._asked = 0  # steps submitted (engine thread)
        self._answered = 0  # steps charged (this thread); ``_answer`` is written first
        self._answer: Any = None
        self._waiting = False
        self._wake: queue.SimpleQueue = queue.SimpleQueue()
        self.abandoned = False  # given up on: it takes no further step, nor hands one back
        self.cpu_ns = 0  # this thread's CPU time in charges so far (``benchmarks/govern_cost.py``)
        self._thread = threading.Thread(target=self._run, name=name, daemon=True)
        self._thread.start()

    def submit(self, step: Any) -> None:
        """Engine thread: hand ``step`` over; never blocks."""
        self._asked += 1
        self._jobs.put(step)

    def result(self) -> Any:
        """Engine thread: the result of the step submitted last, waiting for it if need be (at
        most ``MAX_WAIT_S``; then the thread is abandoned: it charges nothing more)."""
        if self._answered == self._asked:  # done already: no lock, no system call
            return self._answer
        self._waiting = True
        try:
            waited = 0.0
            while self._answered != self._asked:
                try:
                    self._wake.get(timeout=WAIT_S)
                except queue.Empty:
                    waited += WAIT_S
                    if not self._thread.is_alive():
                        raise ChargeThreadDied("the governor's charge thread has stopped") from None
                    if waited >= MAX_WAIT_S:
                        self.abandoned = True
                        self.close()
                        raise ChargeThreadDied(f"no charge from the charge thread in {waited:g} s") from None
        finally:
            self._waiting = False
        return self._answer

    def close(self) -> None:
        self._jobs.put(_STOP)
        if self._thread is not threading.current_thread() and not self.abandoned:
            self._thread.join(timeout=MAX_WAIT_S)

    def _run(self) -> None:
        jobs, wake, charge, cpu = self._jobs, self._wake, self._charge, time.thread_time_ns
        while (step := jobs.get()) is not _STOP and not self.abandoned:
            c = cpu()
            result = charge(step)
            self.cpu_ns += cpu() - c
            if not self.abandoned:
                self._answer = result
                self._answered += 1
                if self._waiting:
                    wake.put(None)
