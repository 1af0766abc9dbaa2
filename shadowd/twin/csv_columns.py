"""Read a measured CSV into numpy columns, without pandas.

The kernel tables are small CSV files; parsing them once with the csv module
and caching the columns is fast enough and keeps the dependency list short.
"""

from __future__ import annotations

import csv
from functools import lru_cache
from pathlib import Path

import numpy as np


@lru_cache(maxsize=64)
def read_columns(path: str | Path) -> dict[str, np.ndarray]:
    """Columns of ``path`` by header name: float64 where every value parses, else str.

    Empty cells in a numeric column become NaN.  The result is cached per path;
    callers must not modify the arrays.
    """
    with open(path, newline="") as f:
        reader = csv.reader(f)
        header = [h.strip() for h in next(reader)]
        rows = [r for r in reader if r]
    cols: dict[str, np.ndarray] = {}
    for j, name in enumerate(header):
        raw = [r[j].strip() if j < len(r) else "" for r in rows]
        try:
            cols[name or f"col{j}"] = np.array([float(v) if v else np.nan for v in raw])
        except ValueError:
            cols[name or f"col{j}"] = np.array(raw, dtype=object)
    return cols
