"""The daemon's bounded set of tenant labels: what is not admitted is folded into ``other``.

Tenant labels come from outside the daemon (a gateway, a LoRA name, a request-id prefix; see
``shadowd.tap.tenant``), so the daemon never lets them grow its state without bound: with an
allowlist only listed labels are kept, and in any case at most ``max_distinct`` labels are
admitted (first come, seeded at start from the stored roll-ups, largest first).  Every other
label is stored, attributed and reported as ``other``, and each row so folded is counted
(``shadowd_tenant_rows_folded_total`` on /metrics).  Folding works on a batch's tenant name
table (``StepColumns.tenant_index``), so its cost is per distinct label, not per row.

>>> r = TenantRoster(allow=(), max_distinct=2)
>>> [r.label(t) for t in ("a", "b", "c", "a", "unknown")]
['a', 'b', 'other', 'a', 'unknown']
>>> r.folded
{'over_cap': 1, 'not_allowed': 0}
"""

from __future__ import annotations

import threading
from collections.abc import Iterable

import numpy as np

from shadowd.steps.columns import StepColumns
from shadowd.tap.tenant import UNKNOWN

OTHER = "other"
RESERVED = frozenset({OTHER, UNKNOWN})  # always admitted, never counted against the cap


class TenantRoster:
    """Admits tenant labels up to a cap (or from an allowlist); folds the rest into ``other``."""

    def __init__(self, allow: Iterable[str] = (), max_distinct: int = 256, known: Iterable[str] = ()) -> None:
        self.allow = frozenset(allow)
        self.max_distinct = max_distinct
        self._admitted: set[str] = set()
        self.folded = {"over_cap": 0, "not_allowed": 0}  # rows relabelled, by reason
        self._lock = threading.Lock()
        for name in known:
            self.label(name)
        self.folded = {"over_cap": 0, "not_allowed": 0}

    @property
    def distinct(self) -> int:
        """Labels admitted so far (``other`` and ``unknown`` not counted)."""
        return len(self._admitted)

    def label(self, name: str, rows: int = 1) -> str:
        """The label ``name`` is stored under; counts ``rows`` as folded when it is not admitted."""
        if name in RESERVED or name in self._admitted:
            return name
        if self.allow and name not in self.allow:
            self.folded["not_allowed"] += rows
            return OTHER
        if len(self._admitted) >= self.max_distinct:
            self.folded["over_cap"] += rows
            return OTHER
        self._admitted.add(name)
        return name

    def fold(self, cols: StepColumns) -> None:
        """Relabel ``cols``' request rows in place (tenant column, batch, tenant index), and the
        rows of requests that ended, so service and cost are reported under the same labels."""
        if cols.ended is not None:
            with self._lock:
                cols.ended["tenant"] = np.array(
                    [self.label(t) for t in cols.ended["tenant"].tolist()], dtype=object
                )
        names, codes = cols.tenant_index
        with self._lock:
            if self._admitted.issuperset(names.tolist()):
                return
            counts = np.bincount(codes, minlength=len(names))
            mapped = [self.label(n, int(c)) for n, c in zip(names.tolist(), counts.tolist())]
        if mapped == names.tolist():
            return
        order: dict[str, int] = {}
        remap = np.fromiter((order.setdefault(m, len(order)) for m in mapped), np.int32, len(mapped))
        new_names = np.empty(len(order), dtype=object)
        new_names[:] = list(order)
        new_codes = remap[codes]
        tenant = new_names[new_codes]
        cols.requests["tenant"] = tenant
        cols.batch.tenant = tenant
        cols._tenant_index = (new_names, new_codes)
