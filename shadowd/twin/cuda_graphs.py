"""vLLM's CUDA-graph batch sizes, and the padding they impose on a step.

vLLM 0.33 captures graphs at ``[1, 2, 4] + range(8, 256, 8) + range(256, max + 1, 16)``
tokens with ``max = 512`` by default (``vllm/config/compilation.py``).  Its dispatcher
(``vllm/v1/cudagraph_dispatcher.py``) pads every step of at most ``max`` tokens up to the
next captured size: uniform-decode steps replay a FULL graph (attention included, so the
decode batch itself is padded), other steps a PIECEWISE graph (the GEMMs and
element-wise ops run on the padded token count; attention runs eagerly on the real
batch).  Steps above ``max`` tokens run without graphs, unpadded.

>>> capture_sizes()[:6], capture_sizes()[-2:]
([1, 2, 4, 8, 16, 24], [496, 512])
>>> padding_table(600)[[3, 9, 250, 257, 512, 600]].tolist()
[4, 16, 256, 272, 512, 600]
"""

from __future__ import annotations

import numpy as np

MAX_CAPTURE_SIZE = 512


def capture_sizes(max_size: int = MAX_CAPTURE_SIZE) -> list[int]:
    """The default captured batch sizes up to ``max_size``."""
    sizes = [1, 2, 4] + list(range(8, 256, 8)) + list(range(256, max_size + 1, 16))
    return [s for s in sizes if s <= max_size]


def padding_table(limit: int, max_size: int = MAX_CAPTURE_SIZE) -> np.ndarray:
    """``table[n]`` = the size a step of ``n`` is run at, for ``n`` in ``0..limit``."""
    n = np.arange(limit + 1)
    sizes = np.asarray(capture_sizes(max_size))
    idx = np.searchsorted(sizes, np.minimum(n, max_size), side="left")
    padded = np.where(n <= max_size, sizes[np.minimum(idx, len(sizes) - 1)], n)
    padded[0] = 0
    return padded.astype(np.int64)
