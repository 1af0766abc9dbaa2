"""A residual detection becomes an alarm only if the shift it saw lasts (design r8).

The residual detectors judge each class's standardised residual against a slow baseline of its
own past (``checks.detrend``), so they fire on any shift of the mean, beyond the calibration's
``allowance``, that lasts tens of steps.  The faults the gate must catch (a throttled GPU, a
driver or kernel change, a co-located job) make every later step slower: the shift stays.  A
healthy engine's residual also moves that fast now and then (a burst of an unusual batch
composition, for a few tens of steps), and then comes back.  So a detection is held *pending*
for ``steps`` more judged steps of its class; it is confirmed, and becomes a drift event, only
if the mean standardised residual over those steps still sits at least ``allowance`` (in the
detection's direction) from the reference: the baseline as it stood ``lag`` judged steps before
the detection, before the shift began to pull it.  Otherwise it is dismissed and counted.

The price is delay: an event comes ``steps`` judged steps after the detection.  Why the
defaults and on which runs they were chosen: ``DESIGN`` in ``benchmarks/gate_matrix.py``.

Design r26: where the detectors watch the residual less a fitted composition bias
(``checks.residual_bias``), a second stream may be given: the residual as measured, before the
bias is taken out, with its own baseline and allowance.  A detection is then confirmed only if
the shift lasts on both.  A slowdown of the engine moves every step's residual alike, so it shows
on both; a bias fitted on a narrow window and carried to compositions it barely held moves only
the unbiased stream, and wander the bias explains moves only the raw one.

>>> c = AlarmConfirmation(steps=50, allowance_z=1.0, lag=20)
>>> quiet = [c.observe(0.0, 0.0) for _ in range(100)]   # steps before: nothing pending
>>> c.open("page_hinkley", "up", {"step_seq": 100})
>>> done = [c.observe(2.0, 0.0) for _ in range(50)]   # the shift lasts: confirmed on the 50th
>>> [len(d) for d in done[-2:]], done[-1][0].confirmed, round(done[-1][0].shift_z, 2)
([0, 1], True, 2.0)
>>> c.open("page_hinkley", "up", {"step_seq": 200})
>>> done = [c.observe(0.0, 0.0) for _ in range(50)]   # back at once: dismissed
>>> done[-1][0].confirmed, c.dismissed
(False, 1)
>>> c = AlarmConfirmation(steps=50, allowance_z=1.0, lag=20, raw_allowance_z=1.0)
>>> quiet = [c.observe(0.0, 0.0, 0.0, 0.0) for _ in range(100)]
>>> c.open("page_hinkley", "up", {"step_seq": 100})
>>> done = [c.observe(2.0, 0.0, 0.2, 0.0) for _ in range(50)]   # unbiased moved, raw did not
>>> done[-1][0].confirmed, c.dismissed_raw
(False, 1)
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass, field
from typing import Any


@dataclass
class PendingAlarm:
    """One detection waiting for its confirmation window to fill."""

    detector: str
    direction: str  # "up" (steps slower than predicted) or "down"
    reference: float  # standardised baseline ``lag`` steps before the detection
    info: dict[str, Any] = field(default_factory=dict)  # what the detector reported
    total: float = 0.0  # sum of the standardised residuals seen since
    n: int = 0
    confirmed: bool = False
    shift_z: float = 0.0  # mean since the detection minus the reference, in the direction's sign
    raw_reference: float = 0.0  # design r26: the same for the raw stream (when one is watched)
    raw_total: float = 0.0
    raw_shift_z: float | None = None  # None: no raw stream


class AlarmConfirmation:
    """Pending detections of one step class, confirmed or dismissed by the shift that follows.

    ``observe`` is fed, for every judged step of the class and before its detectors run, the
    standardised residual ``z`` and the detrend baseline ``b`` the detectors compare it with.
    ``steps == 0`` confirms every detection at once (designs before r8).  With
    ``raw_allowance_z`` (design r26) ``observe`` also takes the raw stream's standardised residual
    and baseline, and a confirmation needs the shift on it too.
    """

    def __init__(
        self, steps: int, allowance_z: float, lag: int = 100, raw_allowance_z: float | None = None
    ) -> None:
        if steps < 0 or lag < 1 or not allowance_z >= 0:
            raise ValueError("confirmation needs steps >= 0, lag >= 1 and allowance_z >= 0")
        if raw_allowance_z is not None and not raw_allowance_z >= 0:
            raise ValueError("raw_allowance_z must be >= 0 (or None: no raw stream)")
        self.steps = int(steps)
        self.allowance_z = float(allowance_z)
        self.raw_allowance_z = None if raw_allowance_z is None else float(raw_allowance_z)
        self._baselines: deque[float] = deque(maxlen=int(lag))
        self._raw_baselines: deque[float] = deque(maxlen=int(lag))
        self.pending: list[PendingAlarm] = []
        self.confirmed = 0
        self.dismissed = 0
        self.dismissed_raw = 0  # of those: the unbiased shift lasted, the raw one did not (r26)
        self.absorbed = 0  # detections while the same detector had one pending the same way

    @property
    def watches_raw(self) -> bool:
        return self.raw_allowance_z is not None

    def observe(
        self, z: float, baseline: float, raw_z: float = 0.0, raw_baseline: float = 0.0
    ) -> list[PendingAlarm]:
        """One judged step; the pending alarms it completed (confirmed or not).  ``raw_z`` and
        ``raw_baseline`` are read only with a raw stream."""
        self._baselines.append(baseline)
        self._raw_baselines.append(raw_baseline)
        done: list[PendingAlarm] = []
        for p in self.pending:
            p.total += z
            p.raw_total += raw_z
            p.n += 1
            if p.n >= self.steps:
                done.append(self._judge(p))
        if done:
            self.pending = [p for p in self.pending if p.n < self.steps]
        return done

    def open(self, detector: str, direction: str, info: dict[str, Any]) -> PendingAlarm | None:
        """A detection: held pending (returned ``None``), or, with ``steps == 0``, confirmed now."""
        if any(p.detector == detector and p.direction == direction for p in self.pending):
            self.absorbed += 1  # one shift, one alarm
            return None
        ref = self._baselines[0] if self._baselines else 0.0
        p = PendingAlarm(detector, direction, ref, dict(info))
        if self.watches_raw:
            p.raw_reference = self._raw_baselines[0] if self._raw_baselines else 0.0
        if self.steps == 0:
            p.confirmed = True
            self.confirmed += 1
            return p
        self.pending.append(p)
        return None

    def _judge(self, p: PendingAlarm) -> PendingAlarm:
        sign = -1.0 if p.direction == "down" else 1.0
        p.shift_z = sign * (p.total / p.n - p.reference)
        p.confirmed = p.shift_z >= self.allowance_z
        if p.confirmed and self.raw_allowance_z is not None:
            p.raw_shift_z = sign * (p.raw_total / p.n - p.raw_reference)
            if p.raw_shift_z < self.raw_allowance_z:
                p.confirmed = False
                self.dismissed_raw += 1
        if p.confirmed:
            self.confirmed += 1
        else:
            self.dismissed += 1
        return p

    def state(self) -> dict[str, int]:
        return {
            "pending": len(self.pending),
            "confirmed": self.confirmed,
            "dismissed": self.dismissed,
            "dismissed_raw": self.dismissed_raw,
            "absorbed": self.absorbed,
        }
