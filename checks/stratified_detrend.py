"""The detrend baseline kept per batch-size stratum: what a class's detectors see (designs r33, r39).

Design r33 was withdrawn: on held-out 30 its keener detectors paged on two healthy engines,
their detections confirmed by r31's strata.  Design r39 turned it back on behind the confirmation
of r34-r38, which judges a detection's lasting shift within CUDA-graph and quarter-octave strata
(``checks.alarm_confirmation``), and was withdrawn too: a healthy swinging engine paged under it
on its held-out set and on a development run.  It is off by default and stays for comparisons
(``CalibrationSettings.detrend_by_size``; ``DESIGN`` in ``benchmarks/gate_designs.py`` says what
each did, and on which runs).

``checks.detrend`` judges each standardised residual against one slow baseline of the class's
past, so the detectors see sudden changes and not slow wander.  Where the latency model's error
depends on batch size (its piecewise-linear fit against an engine whose kernels step with padded
batch sizes and long-context stragglers), that one baseline is a mix of the sizes recently run:
as the mix moves, the residual the detectors see moves with it, persistently, and the thresholds
that hold the false-alarm target on such a residual are too high to raise the smallest slowdown
the gate must catch in time (design r19's check; held-out 27's decode steps, where the model's
error was a step function of batch size).  Here each step is judged against the baseline of its
own batch-size stratum (``group``), so a move of the mix between sizes moves nothing, while a
slower engine moves every stratum: each stratum's baseline absorbs it only as that stratum is
run again, so the shift stays visible for longer than one baseline allows.

A stratum's baseline is the running mean of its first ``steps`` values, then an exponentially
weighted one (time constant ``steps`` of its own visits).  Until it has been run ``shrink``
times it leans on the class baseline (weights: its visits against ``shrink``), so a stratum
seen once or twice is not its own yardstick; steps without a group, and groups beyond
``MAX_GROUPS``, are judged against the class baseline alone.  The class baseline is
``checks.detrend``'s, kept here too and returned beside each value: the confirmation stage
(``checks.alarm_confirmation``) judges a detection's lasting shift against it, as before r33.

>>> d = StratifiedDetrend(steps=10, shrink=0)
>>> [round(d.update(z, g), 2) for z, g in [(0.0, 1), (2.0, 2), (0.0, 1), (2.0, 2)]]
[0.0, 2.0, 0.0, 0.0]

Two sizes priced two apart: judged against one baseline the alternation is noise of size 1,
against their own baselines it is nothing.  A whole-step shift of 1 then shows in both:

>>> d = StratifiedDetrend(steps=10, shrink=0)
>>> y = d.update_many([0.0, 2.0] * 20 + [1.0, 3.0] * 2, [1, 2] * 22)[0]
>>> [round(float(v), 2) for v in y[-4:]]
[1.0, 1.0, 0.9, 0.9]
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

MAX_GROUPS = 256  # strata kept per class; more is not a batch-size stratum (bounded by construction)
SHRINK_STEPS = 10  # visits at which a stratum's own baseline weighs as much as the class's


class StratifiedDetrend:
    """Per-group detrend baselines over one class's standardised residuals (state: the
    baselines)."""

    def __init__(self, steps: float, shrink: float = SHRINK_STEPS, baseline: float = 0.0) -> None:
        self.steps = float(steps)
        self.shrink = float(shrink)
        self.baseline = float(baseline)  # the class's, as ``checks.detrend.Detrend``
        self._level: dict[int, float] = {}
        self._seen: dict[int, int] = {}

    def reference(self, group: int | None) -> float:
        """What a value of ``group`` is judged against now."""
        n = self._seen.get(group, 0) if group is not None else 0
        if n == 0:
            return self.baseline
        return (n * self._level[group] + self.shrink * self.baseline) / (n + self.shrink)

    def update(self, z: float, group: int | None = None) -> float:
        """``z`` less its group's reference; then both baselines learn it."""
        if self.steps <= 0:
            return z
        y = z - self.reference(group)
        if group is not None and (group in self._seen or len(self._seen) < MAX_GROUPS):
            n = self._seen.get(group, 0)
            level = self._level.get(group, self.baseline)
            self._level[group] = level + (z - level) / min(self.steps, n + 1)
            self._seen[group] = n + 1
        self.baseline += (z - self.baseline) / self.steps
        return y

    def update_many(
        self, z: Sequence[float] | np.ndarray, groups: Sequence[int | None] | np.ndarray | None = None
    ) -> tuple[np.ndarray, np.ndarray]:
        """Each value less its group's reference, and the class baseline each was judged beside
        (as it stood before the value); ``groups`` ``None``: none known."""
        zs = np.asarray(z, dtype=float).tolist()
        gs = [None] * len(zs) if groups is None else list(groups)
        if len(gs) != len(zs):
            raise ValueError(f"{len(gs)} groups for {len(zs)} values")
        y, base = np.empty(len(zs)), np.empty(len(zs))
        for i, (zi, g) in enumerate(zip(zs, gs)):
            base[i] = self.baseline
            y[i] = self.update(zi, None if g is None else int(g))
        return y, base

    def groups_seen(self) -> int:
        """Strata with a baseline of their own (at most ``MAX_GROUPS``)."""
        return len(self._seen)
