"""The running rows the governor expects in the next step, kept from step to step, so a step is
charged without a Python pass over its rows.

A running request past its prompt decodes one token per step, so its context grows by one each
step it is scheduled: stored once as ``base = context - step``, its context in any later step
``k`` is ``base + k`` as long as it keeps coming.  Per tenant the roster keeps the count of such
*decode members* and the sum of their bases, so a tenant's decode sums in step ``k`` are
``count`` rows and ``Σbase + count · k`` context: O(tenants) per step, however many rows.  A
request still in its prompt (a *chunk member*: chunked prefill) is kept with the context it will
have next, and charged from the step's token counts; there are few of them.  Membership changes
only at events the governor sees anyway: a request's first step (``end_step``), a finish
(``leave``), a preemption; a running request that vLLM leaves out of a step (its last token
already in flight under async scheduling, or no budget left) is found by a keys difference in C
and stays a member with its context held.  The governor keeps a roster only while its batches
have enough running rows per arrival and finish (``ROWS_PER_CHANGE`` in
``shadowd.govern.governor``); otherwise the pass is cheaper.

Nothing is taken on trust.  A step is folded from the roster only if its rows are exactly the
members less those left out (count), its tokens are one per decode member plus the chunks'
(count), and its rows' contexts add up to the roster's (``sum`` in C); otherwise the governor
charges the step with its per-row pass and rebuilds the roster from that step's rows.  vLLM only
ever lowers a running request's context against this expectation (rejected draft tokens, a
recomputation), never raises it, so a sum that matches means every row matches; steps carrying
draft tokens or resumed requests are never folded.  The roster answers per tenant (rows, summed
context), so a step of decode rows only is priced without sums objects; the same rows as the
last step's, in the same order, are a steady step (``repeat``) and skip the keys comparison.  ``tests/govern/test_step_paths.py`` checks
the charges are the per-row rule's bit for bit on made-up steps, ``tests/govern/test_queue.py``
on the real scheduler.
Why: the per-row pass was the governor's largest cost at large batches whose rows change every
step (``benchmarks/govern_cost.py``, workloads ``trace`` and ``churn``).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from shadowd.govern.queue import RequestFacts

DECODE, CHUNK = 1, 2  # ``RequestFacts.member``: not a member (0), or which kind
# ``DecodeRoster.fold``'s answer: decode members per tenant (tenants in index order, their rows,
# their summed context) and the chunk rows (tenant, tokens, context).
Folded = tuple[list[int], list[int], list[int], list[tuple[int, int, int]]]


class DecodeRoster:
    """Owns the members, their per-tenant sums and the step count (see the module docstring)."""

    def __init__(self) -> None:
        self.step = 0  # steps charged so far: the ``k`` of ``base + k``
        self.decode: dict[str, RequestFacts] = {}  # rid -> facts (``at``: its base)
        self.chunks: dict[str, RequestFacts] = {}  # rid -> facts (``at``: its context next step)
        self.count: dict[int, int] = {}  # tenant -> decode members (tenants with none absent)
        self.base: dict[int, int] = {}  # tenant -> Σ base of its decode members
        self.valid = False  # False until rebuilt from a step's rows (and after an error)
        # The last folded step's rows, in its order, while the members are exactly those rows
        # (None once a member joins or leaves): the same rows again need no keys comparison,
        # and are a steady decode step (``repeat``).
        self._rows: list[str] | None = None
        # With ``_rows``: its tenants in index order and their member counts (see ``repeat``).
        self._tenants: list[int] = []
        self._counts: list[int] = []
        self.folds = 0  # steps charged from the roster
        self.repeats = 0  # of which steady decode steps, charged from ``repeat``
        self.rebuilds = 0  # steps charged by the per-row pass, the roster rebuilt after

    # -- membership ------------------------------------------------------------------------------
    def _add_decode(self, rid: str, f: RequestFacts, base: int) -> None:
        t = f.tenant
        f.member, f.at = DECODE, base
        self.decode[rid] = f
        self.count[t] = self.count.get(t, 0) + 1
        self.base[t] = self.base.get(t, 0) + base

    def _drop_decode(self, rid: str, f: RequestFacts) -> None:
        t = f.tenant
        del self.decode[rid]
        f.member = 0
        n = self.count[t] - 1
        if n:
            self.count[t] = n
            self.base[t] -= f.at
        else:
            del self.count[t], self.base[t]

    def _place(self, rid: str, f: RequestFacts, context: int, step: int) -> None:
        """``f`` will have ``context`` in step ``step``: a decode member if past its prompt."""
        if context >= f.prompt:
            self._add_decode(rid, f, context - step)
        else:
            f.member, f.at = CHUNK, context
            self.chunks[rid] = f

    def leave(self, rids: Iterable[str], facts: Mapping[str, RequestFacts]) -> None:
        """Finished requests (vLLM's ``finished_req_ids``): no longer expected.

        ``_drop_decode`` is written out: a call less per finish (``benchmarks/govern_cost.py``,
        workload ``churn``)."""
        if not self.valid:
            return
        count, base, decode = self.count, self.base, self.decode
        for rid in rids:
            f = facts.get(rid)
            if f is None or not f.member:
                continue
            self._rows = None
            if f.member == DECODE:
                t = f.tenant
                del decode[rid]
                n = count[t] - 1
                if n:
                    count[t] = n
                    base[t] -= f.at
                else:
                    del count[t], base[t]
            else:
                del self.chunks[rid]
            f.member = 0

    def end_step(self, new_reqs: list, nst: Mapping[str, int], facts: Mapping[str, RequestFacts]) -> None:
        """Close a charged step: its new requests (charged already) are expected from the next
        step on, with the context they will have then.  Once per charged step, after ``fold`` or
        ``rebuild``."""
        if not self.valid:
            return
        step = self.step = self.step + 1
        if not new_reqs:
            return
        self._rows = None
        count, base, decode = self.count, self.base, self.decode
        for new in new_reqs:
            rid = new.req_id
            f = facts[rid]
            if f.member:  # a member again among the new (not folded, see ``fold``): afresh
                self.leave((rid,), facts)
            context = new.num_computed_tokens + nst[rid]
            if context < f.prompt:
                f.member, f.at = CHUNK, context
                self.chunks[rid] = f
                continue
            # ``_add_decode`` written out: a call less per admission (workload ``churn``)
            t = f.tenant
            f.member = DECODE
            b = f.at = context - step
            decode[rid] = f
            if t in count:
                count[t] += 1
                base[t] += b
            else:
                count[t], base[t] = 1, b

    # -- per step ------------------------------------------------------------------------------------
    def fold(
        self, rids: list[str], computed: list[int], nst: Mapping[str, int], tokens: int
    ) -> Folded | None:
        """The step's running rows (``rids`` with their ``computed`` contexts, ``tokens`` in all)
        from the roster, if they are the roster's, else None (the roster must then be rebuilt,
        ``rebuild``): the decode members present, per tenant in index order (tenants, rows,
        summed context), and the chunk members present as (tenant, tokens, context) rows."""
        if not self.valid:
            return None
        k = self.step
        present = chunk_context = chunk_tokens = 0
        chunk_rows: list[tuple[int, int, int]] = []
        for rid, f in self.chunks.items():  # few: requests in their prompts
            q = nst.get(rid)
            if q is None:  # not scheduled this step: expected again next step
                continue
            c = f.at
            present += 1
            chunk_context += c
            chunk_tokens += q
            chunk_rows.append((f.tenant, q, c))
        decode = self.decode
        rows = len(rids) - present
        # Members left out of this step (a keys comparison, in C).  Every other member is
        # scheduled, and none is a new row (the governor does not fold a step re-admitting one),
        # so the rows are exactly the members present if and only if the counts agree.
        if rows == len(decode):
            out_of_step: Iterable[str] = ()
            # The same rows as the last step's, all members then and now (compared by identity,
            # cheaper than by hash), or every member among the step's.
            if rids != self._rows and not decode.keys() <= nst.keys():  # an unknown row
                return None
        else:
            out_of_step = decode.keys() - nst.keys()
            if rows != len(decode) - len(out_of_step):
                return None
        if tokens != chunk_tokens + rows:  # a decode member with more than one token
            return None
        count, base = self.count, self.base
        held: dict[int, tuple[int, int]] = {}  # tenant -> (members, Σ context) left out
        for rid in out_of_step:
            f = decode[rid]
            n, c = held.get(f.tenant, (0, 0))
            held[f.tenant] = (n + 1, c + f.at + k)
        tenants, counts, contexts = [], [], []
        context = chunk_context
        for t in sorted(count):
            n = count[t]
            c = base[t] + n * k
            if held:
                m, hc = held.get(t, (0, 0))
                n, c = n - m, c - hc
            if n:
                tenants.append(t)
                counts.append(n)
                contexts.append(c)
                context += c
        if context != sum(computed):
            return None
        if out_of_step or self.chunks:
            self._advance(out_of_step, nst)
            self._rows = None
        elif self._rows is None:  # steady decode: the members are these rows
            self._rows = rids.copy()  # a copy: the scheduler's list is not ours to keep
            self._tenants, self._counts = tenants, counts
        self.folds += 1
        return tenants, counts, contexts, chunk_rows

    def repeat(
        self, rids: list[str], computed: list[int], tokens: int
    ) -> tuple[list[int], list[int], list[int]] | None:
        """Steady decode: if the step's rows are the last folded step's (the same list, every
        row a decode member then and now, none joined or left since), one token each, their
        tenants in index order, each one's rows and their summed context; else None (``fold``
        then decides).  On success the step is closed (no ``end_step``: a steady step has no
        new rows).  The caller charges the step from these without sums objects: a steady batch
        is the common step, and its fixed cost per step counts most at small batches
        (``benchmarks/govern_cost.py``, workload ``steady``)."""
        if tokens != len(rids) or rids != self._rows:
            return None
        k, base, counts = self.step, self.base, self._counts
        contexts = [base[t] + n * k for t, n in zip(self._tenants, counts)]
        if sum(contexts) != sum(computed):
            return None
        self.step = k + 1
        self.folds += 1
        self.repeats += 1
        return self._tenants, counts, contexts

    def _advance(self, out_of_step: Iterable[str], nst: Mapping[str, int]) -> None:
        """After a folded step: chunks move on (decode members once past their prompt); members
        left out hold their context (their base falls by one) or, preempted, leave."""
        step = self.step + 1
        for rid in out_of_step:
            f = self.decode[rid]
            if f.running:
                f.at -= 1
                self.base[f.tenant] -= 1
            else:  # preempted (back in the waiting queue)
                self._drop_decode(rid, f)
        for rid, f in list(self.chunks.items()):
            q = nst.get(rid)
            if q is None:
                if not f.running:
                    del self.chunks[rid]
                    f.member = 0
                continue
            if f.at + q >= f.prompt:
                del self.chunks[rid]
                self._add_decode(rid, f, f.at + q - step)
            else:
                f.at += q

    def rebuild(
        self, rids: list[str], computed: list[int], nst: Mapping[str, int], facts: Mapping[str, Any]
    ) -> None:
        """After a step charged by the per-row pass: the members are its running rows (every
        one has facts by now), each with the context it will have next step."""
        self.invalidate()
        step = self.step + 1
        for rid, c in zip(rids, computed):
            self._place(rid, facts[rid], c + nst[rid], step)
        self.valid = True
        self.rebuilds += 1

    def invalidate(self) -> None:
        """Expect nothing until the next rebuild: a step went uncharged (an error), or arrivals
        and finishes are too many per running row for the roster to pay (``Governor._charge``)."""
        for f in self.decode.values():
            f.member = 0
        for f in self.chunks.values():
            f.member = 0
        self.decode, self.chunks, self.count, self.base = {}, {}, {}, {}
        self._rows = None
        self.valid = False
