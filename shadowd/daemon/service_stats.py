"""Per-tenant service received, for ``/metrics``: queue time, TTFT and TPOT over recent requests.

vLLM's own metrics have these per engine only; here they are per tenant, beside the attributed
GPU time (``shadowd_tenant_attributed_seconds``), so a dashboard can put *cost caused* and
*service received* side by side.  The window is the last ``window`` ended requests of each
tenant; labels are bounded like every tenant label the daemon exports: the daemon's roster caps
distinct tenants, and beyond ``max_tenants`` (most requests first) the rest are merged into
``other`` here.

>>> import numpy as np
>>> s = ServiceStats(max_tenants=1)
>>> s.observe_ended({"tenant": np.array(["a", "a", "b"], dtype=object), "ttft_ms": np.array([10.0, 30.0, 5.0]),
...                  "tpot_ms": np.array([2.0, 2.0, np.nan]), "queue_ms": np.array([1.0, 1.0, 1.0]),
...                  "finish_reason": np.array(["stop", "length", "abort"], dtype=object)})
>>> sorted(s.quantiles("ttft_ms")), s.quantiles("ttft_ms")["a"][0]
(['a', 'other'], 20.0)
>>> s.outcomes()
{('a', 'stop'): 1, ('a', 'length'): 1, ('other', 'abort'): 1}
"""

from __future__ import annotations

import threading
from collections import deque

import numpy as np

from shadowd.steps.columns import StepColumns

METRICS = ("queue_ms", "ttft_ms", "tpot_ms")
QUANTILES = (0.5, 0.9, 0.99)
OTHER = "other"


class ServiceStats:
    """Observer of ended requests; read at scrape time."""

    def __init__(self, window: int = 2048, max_tenants: int = 20) -> None:
        self.window = window
        self.max_tenants = max_tenants
        self._values: dict[str, dict[str, deque]] = {}
        self._ended: dict[tuple[str, str], int] = {}
        self._lock = threading.Lock()

    def observe(self, cols: StepColumns) -> None:
        if cols.ended is not None:
            self.observe_ended(cols.ended)

    def observe_ended(self, ended: dict[str, np.ndarray]) -> None:
        tenants = ended["tenant"].tolist()
        with self._lock:
            for i, tenant in enumerate(tenants):
                per = self._values.setdefault(tenant, {m: deque(maxlen=self.window) for m in METRICS})
                for m in METRICS:
                    v = float(ended[m][i])
                    if v == v:  # not NaN: the stage happened
                        per[m].append(v)
                key = (tenant, str(ended["finish_reason"][i]))
                self._ended[key] = self._ended.get(key, 0) + 1

    def _keep(self) -> set[str]:
        counts: dict[str, int] = {}
        for (tenant, _), n in self._ended.items():
            counts[tenant] = counts.get(tenant, 0) + n
        return set(sorted(counts, key=lambda t: -counts[t])[: self.max_tenants])

    def quantiles(self, metric: str) -> dict[str, list[float]]:
        """Per (bounded) tenant label: the ``QUANTILES`` of ``metric`` over its recent requests."""
        with self._lock:
            keep = self._keep()
            merged: dict[str, list[float]] = {}
            for tenant, per in self._values.items():
                merged.setdefault(tenant if tenant in keep else OTHER, []).extend(per[metric])
        return {t: np.quantile(np.asarray(v), QUANTILES).tolist() for t, v in merged.items() if v}

    def outcomes(self) -> dict[tuple[str, str], int]:
        """Ended requests per (bounded) tenant label and finish reason, since start."""
        with self._lock:
            keep = self._keep()
            out: dict[tuple[str, str], int] = {}
            for (tenant, reason), n in self._ended.items():
                key = (tenant if tenant in keep else OTHER, reason)
                out[key] = out.get(key, 0) + n
        return out
