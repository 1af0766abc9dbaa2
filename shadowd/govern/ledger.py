"""Per-tenant service counters: VTC token units and attributed milliseconds, both always kept.

Fair queuing compares *normalised* service ``S_t / w_t`` (``w_t`` the tenant's weight): the
backlogged tenant with the least goes first, so over a busy period every backlogged tenant's
service approaches its weight's share.  Counters only grow, and a tenant that becomes active
(a request arrives while it has none waiting or running) is **lifted** to the least normalised
counter among the tenants already active (or, with none active, to where the last active ones
stood): idle time is not banked as credit (VTC, Sheng et al., OSDI '24).

Caps (optional, per tenant, attributed ms per second): a token bucket of one second's worth that
fills with every attributed charge and drains at the cap; a tenant whose bucket is over the cap
is *held*: its waiting requests wait, never dropped.  Caps bind only while a model's coefficients
are known (attributed time cannot be measured without one).

Tenants are bounded (:data:`shadowd.govern.config.MAX_TENANTS`); labels beyond that share
:data:`OTHER`.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable, Sequence

from shadowd.govern.config import MAX_TENANTS, TenantPolicy
from shadowd.govern.price import TenantSums

OTHER = "other"
VTC, ATTRIBUTED = 0, 1  # counter kinds


class Ledger:
    def __init__(self, policy: TenantPolicy, clock: Callable[[], float] = time.monotonic) -> None:
        self.policy = policy
        self.clock = clock
        self.names: list[str] = []
        self.index: dict[str, int] = {}
        self.weight: list[float] = []
        self.service: tuple[list[float], list[float]] = ([], [])  # raw, per kind
        self.active: list[int] = []  # waiting + running requests per tenant
        self._floor = [0.0, 0.0]  # normalised service of the last active tenants
        self.cap: list[float] = []  # ms/s, 0 = none
        self.capped = False  # any tenant has a cap
        self.bucket: list[float] = []  # ms
        self._bucket_t: list[float] = []
        self.lifts = 0

    def tenant(self, name: str) -> int:
        i = self.index.get(name)
        if i is not None:
            return i
        if len(self.names) >= MAX_TENANTS:
            name = OTHER
            if name in self.index:
                return self.index[name]
        i = self.index[name] = len(self.names)
        self.names.append(name)
        self.weight.append(self.policy.weight(name))
        for s in self.service:
            s.append(0.0)
        self.active.append(0)
        self.cap.append(self.policy.caps_ms_per_s.get(name, 0.0))
        self.capped = self.capped or bool(self.cap[-1])
        self.bucket.append(0.0)
        self._bucket_t.append(self.clock())
        return i

    def normalised(self, kind: int, t: int) -> float:
        return self.service[kind][t] / self.weight[t]

    # -- activity and the lift -------------------------------------------------------------------
    def activate(self, t: int) -> None:
        """One more waiting/running request of ``t``; lift its counters if it was idle."""
        if self.active[t] == 0:
            for kind in (VTC, ATTRIBUTED):
                others = [self.normalised(kind, u) for u, a in enumerate(self.active) if a > 0]
                floor = min(others) if others else self._floor[kind]
                if self.normalised(kind, t) < floor:
                    self.service[kind][t] = floor * self.weight[t]
                    self.lifts += 1
        self.active[t] += 1

    def deactivate(self, t: int) -> None:
        n = self.active[t]
        if n > 1:
            self.active[t] = n - 1
            return
        if n <= 0:
            return
        self.active[t] = 0  # idle now: remember where it stood, for the next tenant to become active
        for kind in (VTC, ATTRIBUTED):
            self._floor[kind] = max(self._floor[kind], self.normalised(kind, t))

    # -- charging ----------------------------------------------------------------------------------
    def charge(
        self,
        tenants: Iterable[int],
        sums: Sequence[TenantSums],
        w_p: float,
        w_q: float,
        attributed_ms: Sequence[float] | None,
        now: float | None = None,
    ) -> None:
        """One step's charges: ``tenants[j]`` gets the VTC tokens of ``sums[j]``
        (``TenantSums.vtc_tokens``, written out) and, while coefficients are known,
        ``attributed_ms[j]``, added to a capped tenant's bucket as of ``now`` (the step's time on
        ``clock``, read when it was scheduled: a charge made later, on the governor's charge
        thread, drains the bucket as the inline one would).  One call and one pass per step: the
        governor's per-step cost (``benchmarks/govern_cost.py``)."""
        vtc = self.service[VTC]
        if attributed_ms is None:
            for t, s in zip(tenants, sums):
                vtc[t] += w_p * s.pp + w_q * (s.dn + s.dx)
            return
        attributed, cap = self.service[ATTRIBUTED], self.cap
        for t, s, ms in zip(tenants, sums, attributed_ms):
            vtc[t] += w_p * s.pp + w_q * (s.dn + s.dx)
            attributed[t] += ms
            if cap[t]:
                self._drain(t, self.clock() if now is None else now)
                self.bucket[t] += ms

    def charge_decode(
        self,
        tenants: Sequence[int],
        rows: Sequence[int],
        w_q: float,
        attributed_ms: Sequence[float] | None,
        now: float | None = None,
    ) -> None:
        """``charge`` for a step of one-token decode rows only (``rows[j]`` of ``tenants[j]``):
        the same sums, without sums objects (``Governor``'s decode-only steps, the common ones)."""
        vtc = self.service[VTC]
        if attributed_ms is None:
            for t, m in zip(tenants, rows):
                vtc[t] += w_q * m
            return
        attributed, cap = self.service[ATTRIBUTED], self.cap
        for t, m, ms in zip(tenants, rows, attributed_ms):
            vtc[t] += w_q * m
            attributed[t] += ms
            if cap[t]:
                self._drain(t, self.clock() if now is None else now)
                self.bucket[t] += ms

    def _drain(self, t: int, now: float) -> None:
        self.bucket[t] = max(0.0, self.bucket[t] - (now - self._bucket_t[t]) * self.cap[t])
        self._bucket_t[t] = now

    def held(self, t: int) -> bool:
        """Over its cap: its waiting requests are not admitted now."""
        if not self.cap[t] or self.bucket[t] <= self.cap[t]:
            return False
        self._drain(t, self.clock())
        return self.bucket[t] > self.cap[t]

    def snapshot(self) -> dict[str, dict[str, float]]:
        """Per tenant: weight, both counters, active requests (for reports and the daemon)."""
        return {
            n: {
                "weight": self.weight[i],
                "vtc_tokens": self.service[VTC][i],
                "attributed_ms": self.service[ATTRIBUTED][i],
                "active": self.active[i],
            }
            for i, n in enumerate(self.names)
        }
