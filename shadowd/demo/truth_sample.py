"""The steps a demo keeps for its Shapley truth, chosen before the engine runs.

The truth (:func:`shadowd.sim.truth.tenant_truth_errors`) scores about a hundred
steps spread over the scored part of the run.  Recording every step's
schedule to draw them at the end held the whole run in memory: an
800,000-step held-out row was killed by the kernel's out-of-memory killer
(``benchmarks/demo_memory.py`` measures the demo's growth per step).  So the
sample is drawn up front, for each length the run can end at (the engine
loop may run one step past its target), and only those steps are recorded.
For a run that ends where planned the truth scores exactly the steps it
scored when every step was kept.

>>> s = TruthSample(first=400, planned=1000, k=5, seed=0)
>>> len(s.recorded) <= 10 and all(400 <= i <= 1000 for i in s.recorded)
True
>>> [int(i) for i in s.recorded[s.positions(1000)]] == [int(i) for i in s.plans[1000]]
True
"""

from __future__ import annotations

import numpy as np

from shadowd.sim.truth import spread_sample

OVERSHOOT = 1  # steps past its target a run can end at (async scheduling: one more in flight)


class TruthSample:
    """The absolute step indices to record, and which of them a run of a given length scores."""

    def __init__(self, *, first: int, planned: int, k: int, seed: int) -> None:
        """``first``: the first scored step; ``planned``: the steps the run is asked for."""
        self.planned = planned
        self.plans = {
            n: first + spread_sample(max(0, n - first), k, seed)
            for n in range(planned, planned + OVERSHOOT + 1)
        }
        self.recorded = np.unique(np.concatenate(list(self.plans.values())))
        self._wanted = frozenset(int(i) for i in self.recorded)

    def __contains__(self, step_index: int) -> bool:
        """Whether the engine's ``step_index``-th step (from 0) is recorded."""
        return step_index in self._wanted

    def positions(self, steps_run: int) -> np.ndarray:
        """Positions, among the recorded steps, of those the truth scores for a run of
        ``steps_run`` steps.  A run that ran dry before its target scores the planned steps
        that ran (fewer of them; the truth's ``steps`` says how many)."""
        plan = self.plans.get(steps_run)
        if plan is None:
            plan = self.plans[self.planned]
            plan = plan[plan < steps_run]
        return np.searchsorted(self.recorded, plan)
