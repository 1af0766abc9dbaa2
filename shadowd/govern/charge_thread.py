"""One step's charge at a time, off the engine thread, handed back before a counter is read.

The engine thread hands the step over (``submit``: one put on a C-level queue) and goes on to
wait on the GPU, as the tap hands its frames to its encoder thread.  This thread charges the
step in that wait.  A step may also be *deferred* (``defer``): kept in order, with no wake-up,
and handed over with the next step submitted (or by ``flush``), so one wake-up serves several
steps; the thread charges them in order, each as if alone.  Before the engine thread next reads
a counter (the next ``schedule``, or a call into the fair queue that orders by them) it takes
the result (``result``: with the charge done, as it mostly is, two counters compared and no
lock), waiting only if it is not done yet.
So at any moment the governor's state has one owner, the engine thread or this one, and the
charges, and every admission made from them, are the ones the inline charge makes
(``tests/govern/test_charge_thread.py``; the hand-off itself: ``tests/govern/test_charge_answer.py``).
Cost on the engine thread: ``benchmarks/govern_cost.py`` (``docs/admission.md``).

Where this thread runs (``follow``, on by default): on the CPU the engine thread last ran on,
looked up at most once a ``FOLLOW_EVERY_S`` and the thread moved when it changed.  Waking a
thread on another CPU costs the waker more the longer that CPU has idled, and a step's hand-over
comes after the engine thread has computed for the whole step (``benchmarks/govern_cost.py
--wake``); woken on its own CPU it costs far less, and the charge reads the state the engine
thread just wrote from the same caches.  Little is lost in parallel: the two threads take turns
on the interpreter anyway, and the charge runs while the engine thread waits on the GPU; only
work the engine thread does with the interpreter released (in C) would share its CPU with the
charge, where ``SHADOWD_GOVERN_CHARGE_CPU=any`` gives the charge a CPU of the kernel's choosing.
Following is Linux's (the engine thread's CPU is read from ``/proc``); where it cannot be read
or set, the thread stays where the kernel puts it (``following`` turns false).

>>> t = ChargeThread(lambda step: [step * 2])
>>> t.submit(21); t.result()
[42]
>>> t.defer(1); t.deferred
1
>>> t.submit(2); t.result(), t.deferred  # both charged, in order: the answer is the last step's
([4], 0)
>>> t.close()
"""

from __future__ import annotations

import logging
import os
import queue
import threading
import time
from collections import deque
from collections.abc import Callable
from typing import Any

WAIT_S = 1.0  # how often a wait for a result checks that the thread still runs
MAX_WAIT_S = 5.0  # a charge takes microseconds: no answer in this long, and the thread is given up
FOLLOW_EVERY_S = 1.0  # how often the thread looks up which CPU the engine thread runs on
_STOP = object()
log = logging.getLogger("shadowd.govern")


def cpu_of(tid: int) -> int:
    """The CPU thread ``tid`` of this process last ran on (Linux's ``/proc``).

    >>> import sys, threading
    >>> sys.platform != "linux" or cpu_of(threading.get_native_id()) in os.sched_getaffinity(0)
    True
    """
    with open(f"/proc/self/task/{tid}/stat", "rb") as f:
        return cpu_in_stat(f.read())


def cpu_in_stat(stat: bytes) -> int:
    """Field 39 (``processor``) of a ``stat`` line, counted after the command name, which is in
    parentheses and may itself hold spaces and parentheses.

    >>> cpu_in_stat(b"7 (a (b) c) S" + b" 0" * 35 + b" 3 0 0")
    3
    """
    return int(stat[stat.rindex(b")") + 2 :].split()[36])


class ChargeThreadDied(RuntimeError):
    """The thread ended with a step still owed (it can only end on ``close``, or a crash), or gave
    no answer in ``MAX_WAIT_S``: the governor charges inline from then on."""


class ChargeThread:
    def __init__(
        self,
        charge: Callable[[Any], Any],
        name: str = "shadowd-govern-charge",
        *,
        follow: bool = True,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self._charge = charge  # step -> its result; catches its own errors (see ``Governor``)
        self.following = follow and hasattr(os, "sched_setaffinity")  # see the module docstring
        self.cpu: int | None = None  # the CPU this thread is held to (the engine thread's), if any
        self.moves = 0  # times it moved after the engine thread
        self._engine_tid: int | None = None  # the submitting thread's native id, from its first step
        self._clock = clock
        self._home: set[int] | None = None  # this thread's CPUs before it first followed
        self._jobs: queue.SimpleQueue = queue.SimpleQueue()  # wake-up tokens (and ``_STOP``)
        # Steps submitted, in order.  Only steps handed over (a token sent for them) are this
        # thread's; the engine thread appends only when every step handed over is answered, so
        # the thread drains exactly the steps handed over.
        self._steps: deque = deque()
        self._handed = 0  # steps handed over (engine thread)
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
        """Engine thread: hand ``step`` over (and every step deferred before it); never blocks."""
        self._asked += 1
        if self._engine_tid is None:
            self._engine_tid = threading.get_native_id()
        self._steps.append(step)
        self.flush()

    def defer(self, step: Any) -> None:
        """Engine thread: keep ``step`` for the next hand-over, with no wake-up (the caller owns
        the charge's state until then)."""
        self._asked += 1
        self._steps.append(step)

    @property
    def deferred(self) -> int:
        """Steps submitted and not handed over yet."""
        return self._asked - self._handed

    def flush(self) -> None:
        """Engine thread: hand the deferred steps over (one wake-up), if there are any."""
        if self._handed != self._asked:
            self._handed = self._asked
            self._jobs.put(None)

    def result(self) -> Any:
        """Engine thread: the result of the step submitted last (deferred steps handed over
        first), waiting for it if need be (at most ``MAX_WAIT_S``; then the thread is abandoned:
        it charges nothing more)."""
        if self._answered == self._asked:  # done already: no lock, no system call
            return self._answer
        self.flush()
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

    def _follow(self) -> None:
        """Hold this thread to the CPU the engine thread last ran on; where that cannot be read or
        set, stop following (the kernel places the thread, as without following)."""
        try:
            if self._home is None:
                self._home = os.sched_getaffinity(0)  # where the kernel may put it, as created
            cpu = cpu_of(self._engine_tid)  # type: ignore[arg-type]
            if cpu != self.cpu:
                os.sched_setaffinity(0, {cpu})  # 0: this thread
                self.cpu, self.moves = cpu, self.moves + 1
        except (OSError, ValueError, IndexError, TypeError) as exc:
            self.following, self.cpu = False, None
            log.warning("shadowd governor: the charge thread cannot follow the engine thread's CPU: %r", exc)
            if self._home is not None:  # back to where it was created to run
                try:
                    os.sched_setaffinity(0, self._home)
                except OSError:
                    pass

    def _run(self) -> None:
        jobs, steps, wake, charge, cpu = (
            self._jobs,
            self._steps,
            self._wake,
            self._charge,
            time.thread_time_ns,
        )
        look = 0.0  # the clock's time of the next look at the engine thread's CPU
        while jobs.get() is not _STOP and not self.abandoned:
            if self.following and self._clock() >= look:
                look = self._clock() + FOLLOW_EVERY_S
                self._follow()
            while steps and not self.abandoned:  # the steps handed over, in order
                step = steps.popleft()
                c = cpu()
                result = charge(step)
                self.cpu_ns += cpu() - c
                if not self.abandoned:
                    self._answer = result
                    self._answered += 1
            if self._waiting and not self.abandoned:
                wake.put(None)
