"""One request of a workload: when it arrives, whose it is, how long it is.

No prompt text exists anywhere in the project; ``prefix_blocks`` is what stands in
for it.  Block ``j`` names the 512 prompt tokens ``[512 j, 512 (j + 1))`` (the last
block may be partial): two requests whose lists start with the same ids share that
much prompt, so a driver that derives token ids from block ids makes vLLM's prefix
cache hit exactly where the trace says it would.  Ids are 63-bit integers keyed on
(source, tenant, trace id), so two sources never collide by accident.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, replace
from functools import lru_cache

BLOCK_TOKENS = 512


@dataclass(frozen=True, slots=True)
class RequestSpec:
    """A request to replay: arrival time (s from the stream start), tenant, token counts."""

    arrival_s: float
    tenant: str
    prompt_tokens: int
    output_tokens: int
    prefix_blocks: tuple[int, ...] | None = None

    def capped(self, max_context: int | None) -> RequestSpec:
        """The request shortened to fit ``max_context`` (prompt first keeps >= 1 output token).

        >>> RequestSpec(0.0, "t", 9000, 500, (1, 2, 3)).capped(4096).prompt_tokens
        4095
        >>> RequestSpec(0.0, "t", 3000, 5000).capped(4096).output_tokens
        1096
        """
        if max_context is None or self.prompt_tokens + self.output_tokens <= max_context:
            return self
        prompt = min(self.prompt_tokens, max_context - 1)
        output = max(1, min(self.output_tokens, max_context - prompt))
        blocks = self.prefix_blocks
        if blocks is not None:
            blocks = blocks[: -(-prompt // BLOCK_TOKENS)]
        return replace(self, prompt_tokens=prompt, output_tokens=output, prefix_blocks=blocks)


_MASK63 = (1 << 63) - 1
_ODD = 0x9E3779B97F4A7C15 & _MASK63  # odd: multiplying by it permutes the 63-bit ints


@lru_cache(maxsize=1024)
def _salt(source: str, tenant: str) -> int:
    digest = hashlib.blake2b(f"{source}\0{tenant}".encode(), digest_size=8).digest()
    return int.from_bytes(digest, "big") & _MASK63


def block_key(source: str, tenant: str, block: int) -> int:
    """A stable 63-bit id for trace block ``block`` of ``source`` replayed by ``tenant``.

    Within one (source, tenant) distinct blocks get distinct ids (a bijection);
    across them, collisions are as unlikely as for a 63-bit hash.

    >>> block_key("mooncake", "a", 7) == block_key("mooncake", "a", 7) != block_key("mooncake", "b", 7)
    True
    """
    return ((block * _ODD) & _MASK63) ^ _salt(source, tenant)
