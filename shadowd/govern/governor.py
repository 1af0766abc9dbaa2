"""The governor's per-step work: read the gate's verdict, charge the step, keep the queue's order.

``on_schedule`` runs after vLLM's ``schedule`` returns and has the step charged: on the
governor's charge thread (``charge="thread"``, :mod:`shadowd.govern.charge_thread`), taken in by
``collect`` before the engine thread next reads a counter, or inline.  With the charge thread, a
step after which nothing reads a counter is deferred (``_defer``) and handed over with a later
one, so one wake-up of that thread serves several steps: while the queue holds at most one
tenant and no lift is due (``FairRequestQueue``'s ``deferred``), after ``QUIET_STEPS`` steps in
which nothing read a counter, and at least every ``hand_over_every`` steps (the status file, if
due, is written at the next hand-over); whatever reads a counter meanwhile has them charged first
(``catch_up``).  A deferred step reads the verdict when it is charged, so a change of verdict
takes effect up to ``hand_over_every`` steps later than it would at every step.  The charge reads the
verdict, then sums each tenant's rows of the step
(new requests row by row; running rows from the rows it expected, :mod:`shadowd.govern.roster`,
or, where a step is not what it expected, row by row), then charges every tenant in the step
once: VTC token units always, and its LLMVisor share of the step's predicted latency whenever
coefficients for this engine's platform are known.  Admission follows the attributed counter
while the gate says GO and fresh, the VTC counter otherwise; a change of that choice is logged
with its reason and counted (``switches``); the counters reach the daemon through a status file,
written at most once a second by a thread of its own (:mod:`shadowd.govern.status_file`).  Any
exception is counted in ``errors`` and swallowed: the engine never sees one.
"""

from __future__ import annotations

import itertools
import logging
import time
from collections.abc import Callable, Iterable, Mapping
from operator import attrgetter
from typing import Any

from shadowd.govern.charge_thread import ChargeThread, ChargeThreadDied
from shadowd.govern.config import GovernConfig
from shadowd.govern.handoff import StateReader, Verdict
from shadowd.govern.ledger import ATTRIBUTED, VTC, Ledger
from shadowd.govern.price import TenantSums
from shadowd.govern.queue import FairRequestQueue, RequestFacts
from shadowd.govern.roster import DecodeRoster, Folded
from shadowd.govern.status_file import StatusFile
from shadowd.tap.tenant import TenantResolver

log = logging.getLogger("shadowd.govern")
# The roster's bookkeeping per arrival or finish costs about what the per-row pass pays for this
# many rows, so a step with no more running rows than this many per arrival or finish (smoothed
# over steps) is charged by the pass, and the roster dropped (``benchmarks/govern_cost.py``,
# workload ``churn``: many finishes per row; ``steady`` and ``trace``: few).
ROWS_PER_CHANGE = 16
CHURN_SMOOTHING = 0.1  # weight of the last step in the smoothed arrivals and finishes per step
VTC_ONLY = Verdict("mode_vtc")
# Steps in which nothing read a counter before steps are deferred again: a counter read while
# steps are deferred costs the engine thread a wait for their charges, so deferral is kept to
# stretches where counters are not read (``benchmarks/govern_cost.py``: workload ``churn`` reads
# them nearly every step, ``every-step`` and ``steady`` never).
QUIET_STEPS = 32


class Standing:
    """A tenant's normalised service on the counter admission follows, as the victim order reads
    it: one object per tenant, which each of its vLLM requests points at (``STANDING_ATTR``), so
    the sort of the running list reads its key in C (``BY_STANDING``) and the governor sets one
    value per tenant, not one per request (``benchmarks/govern_cost.py``, workload ``pressure``)."""

    __slots__ = ("served",)

    def __init__(self) -> None:
        self.served = 0.0


STANDING_ATTR = "shadowd_standing"  # set on a vLLM request at first sight, with over-served victims
BY_STANDING = attrgetter(STANDING_ATTR + ".served")


class Governor:
    def __init__(
        self,
        config: GovernConfig,
        requests: Mapping[str, Any],
        *,
        clock: Callable[[], float] = time.monotonic,
        wall_clock: Callable[[], float] = time.time,
    ) -> None:
        self.config = config
        self.requests = requests
        self.ledger = Ledger(config.tenants, clock)
        self.resolver = TenantResolver(config.tenant_key, config.tenant_prefix_sep)
        self.reader = (
            StateReader(
                config.state_file, config.platform_key, interval_s=config.poll_interval_s, clock=wall_clock
            )
            if config.mode == "on"
            else None
        )
        self.facts: dict[str, RequestFacts] = {}  # live requests: from first sight to finish
        self._contexts: list[list[int]] = []  # per tenant: this step's decode contexts (see _tally)
        self.standings: list[Standing] = []  # per tenant, with over-served victims (order_victims)
        self._mark = config.preempt == "over-served"  # point each request at its tenant's standing
        self._sums: dict[int, TenantSums] = {}  # per tenant: this step's sums (see _sums_of)
        self.roster = DecodeRoster()  # the running rows expected next step
        self.rows_per_change = ROWS_PER_CHANGE  # see ROWS_PER_CHANGE
        self.churn = 0.0  # arrivals and finishes per charged step, smoothed
        self.step_time = 0.0  # the ledger's clock when the step being charged was scheduled (caps)
        self._seq = itertools.count()
        self.verdict = VTC_ONLY if self.reader is None else Verdict("missing")
        self._followed = self.verdict  # the verdict the queue's counter and price follow
        self.queue = FairRequestQueue(
            self.ledger,
            self.facts_of,
            self.kind(),
            self.prefill_price(),
            settle=self.collect,
            catch_up=self.catch_up,
        )
        self.hand_over_every = config.hand_over_every  # the most steps one hand-over carries
        self.defer_left = 0  # steps that may still be deferred before a hand-over (``_defer_room``)
        self.quiet = 0  # steps in a row in which nothing read a counter
        self.steps_deferred = 0  # steps handed over after a later one was scheduled
        self.catch_ups = 0  # times deferred steps were charged because a counter was to be read
        self.switches: dict[str, int] = {}  # reason -> times the governor switched to it
        self.steps_charged = {"attributed": 0, "vtc": 0}
        self.errors = 0
        self.victim_orderings = 0  # steps whose running list was put in over-served order
        path = config.status_path
        self.status_file = StatusFile(path) if path else None
        self.charger = (
            ChargeThread(self._charge_off_thread, follow=config.charge_cpu == "engine")
            if config.charge == "thread"
            else None
        )

    # -- per request -----------------------------------------------------------------------------
    def facts_of(self, request: Any) -> RequestFacts:
        rid = request.request_id
        f = self.facts.get(rid)
        if f is None:
            name = self.resolver.resolve(request)
            t = self.ledger.index.get(name)
            if t is None:
                t = self.ledger.tenant(name)
            contexts = self._contexts
            while len(contexts) <= t:
                contexts.append([])
                self.standings.append(Standing())
            if self._mark:
                setattr(request, STANDING_ATTR, self.standings[t])
            f = self.facts[rid] = RequestFacts(t, request.num_prompt_tokens, next(self._seq), contexts[t])
        return f

    def kind(self) -> int:
        return ATTRIBUTED if self.verdict.go else VTC

    def prefill_price(self) -> float:
        """Estimated cost of one prompt token in the active counter's units (admission ordering only)."""
        p = self.verdict.pricer
        if p is None:
            return self.config.w_p
        return max(p.prefill[0][0], p.prefill[1][0])

    # -- per step ----------------------------------------------------------------------------------
    def on_schedule(self, out: Any) -> None:
        queue = self.queue
        if queue.owed:  # the last step's charge, if nothing took it in yet
            self.collect()
        if queue.contended:  # a counter was read in this step: hand each step over for a while
            queue.contended = False
            self.quiet = 0
        else:
            self.quiet += 1
        charger = self.charger
        if (
            charger is not None
            and self.defer_left
            and self.quiet >= QUIET_STEPS
            and queue.tenants_waiting() <= 1
        ):
            self._defer(out)  # (the status file, if due, waits for the next hand-over)
            return
        ledger = self.ledger
        if ledger.capped:  # the step's time, for the buckets (see ``Ledger.charge``)
            self.step_time = ledger.clock()
        if charger is None:
            self._take_in(self._charge_step(out))
        else:
            charger.submit(out)  # with the steps deferred before it: one wake-up
            queue.owed = True
            self.defer_left = self._defer_room()
            if queue.deferred:
                queue.deferred = False
                queue.leaving.clear()
        sf = self.status_file
        if sf is not None and sf.due():  # at most once a second: the daemon's view of the counters
            sf.publish(self.published())  # handed to the status file's writer thread

    def _defer_room(self) -> int:
        """Steps that may be deferred before the next hand-over: none while a tenant has a cap
        (its bucket is read at every choice)."""
        return 0 if self.ledger.capped else self.hand_over_every - 1

    def _defer(self, out: Any) -> None:
        """Engine thread: keep the step for a later hand-over.  Its finished requests are retired
        when it is charged; until then a tenant whose running requests they all were must count as
        becoming active again (``FairRequestQueue.leaving``), as the inline charge would leave it."""
        queue, facts = self.queue, self.facts
        for rid in out.finished_req_ids:
            f = facts.get(rid)
            if f is not None and f.running:
                queue.leaving[f.tenant] = queue.leaving.get(f.tenant, 0) + 1
        self.charger.defer(out)  # type: ignore[union-attr]
        queue.deferred = True
        self.defer_left -= 1
        self.steps_deferred += 1

    def catch_up(self) -> None:
        """Engine thread: every step charged and taken in, the deferred ones handed over first
        (something is about to read a counter)."""
        queue, charger = self.queue, self.charger
        if charger is not None and charger.deferred:
            charger.flush()
            queue.owed = True
            self.catch_ups += 1
        self.defer_left = self._defer_room()
        queue.deferred = False
        queue.leaving.clear()
        self.collect()

    def collect(self) -> None:
        """Engine thread: take the owed step's charge in (waiting for the charge thread if it is
        not done: that thread has re-keyed the queue too) and admit the requests that arrived
        meanwhile.  Called before anything reads a counter: the next ``schedule`` and the fair
        queue's calls."""
        queue = self.queue
        if not queue.owed:
            return
        try:
            self.charger.result()  # type: ignore[union-attr]
        except ChargeThreadDied as exc:  # charge inline from now on
            self.charger = None
            self._forget_step()
            self._fault(exc)
            self._take_in(None)  # the step went uncharged: every tenant re-keyed
        queue.owed = False
        queue.admit_inbox()

    def _charge_off_thread(self, out: Any) -> None:
        """The charge thread's job: the step's charge, then the queue re-keyed from it.  While a
        charge is owed the queue is this thread's (every engine-thread call into it settles
        first, arrivals wait in its inbox), so the re-keying costs the engine thread nothing
        (``benchmarks/govern_cost.py``, workload ``pressure``: tenants wait every step).  A thread
        given up on (``ChargeThread.abandoned``) leaves the queue alone: it is the engine's again."""
        try:
            charged = self._charge_step(out)
            charger = self.charger
            if charger is not None and not charger.abandoned:
                self._take_in(charged)
        except Exception as exc:  # never out of the thread: a dead thread costs the engine a wait
            self._fault(exc)

    def _take_in(self, charged: Iterable[int] | None) -> None:
        """The queue's owner (the charge thread while a charge is owed, else the engine thread)
        re-keys the tenants charged and, where the charge read a new verdict, follows its counter
        and price."""
        self.queue.invalidate(charged)
        if self.verdict is not self._followed:
            self._followed = self.verdict
            self.queue.follow(self.kind(), self.prefill_price())
        if self._mark and self.charger is not None:  # the victim order's keys, off the engine thread
            self._stand()

    def _stand(self) -> None:
        """Each tenant's standing (its normalised service on the counter admission follows), as
        the victim order sorts by it.  Only a charge moves a counter of a tenant with running
        requests (a lift moves an idle tenant's), so standings set when a charge is taken in hold
        until the next charge.  With the charge thread that thread sets them, and the engine
        thread's victim order only sorts (``benchmarks/govern_cost.py --engine-side``, workload
        ``pressure``); charged inline, the victim order sets them on the steps it runs."""
        service, weight = self.ledger.service[self.kind()], self.ledger.weight
        for t, standing in enumerate(self.standings):  # once per tenant
            standing.served = service[t] / weight[t]

    def _charge_step(self, out: Any) -> Iterable[int] | None:
        """The step's charge (the charge thread's, or inline): the verdict polled (a stat of the
        state file at most once a poll interval, a read when it changed: off the engine thread
        with the charge thread), the step charged, its finished requests retired.  The tenants
        charged, or ``None`` where the step could not be charged (the queue then re-keys every
        tenant)."""
        try:
            self._refresh()
            charged = self._charge(out)
            if out.finished_req_ids:
                self._retire(out.finished_req_ids)
            return charged
        except Exception as exc:
            self._forget_step()
            self._fault(exc)
            return None

    def _forget_step(self) -> None:
        for cs in self._contexts:  # a pass cut short leaves contexts behind: not next step's
            cs.clear()
        self.roster.invalidate()

    def _fault(self, exc: BaseException) -> None:
        self.errors += 1
        if self.errors == 1 or self.errors % 10000 == 0:
            log.warning("shadowd governor: step not charged (%d so far): %r", self.errors, exc)

    def _refresh(self) -> None:
        if self.reader is None:
            return
        verdict = self.reader.poll()
        if verdict is self.verdict:  # most steps: nothing changed
            return
        if verdict.reason != self.verdict.reason or verdict.model_version != self.verdict.model_version:
            self.switches[verdict.reason] = self.switches.get(verdict.reason, 0) + 1
            log.warning(
                "shadowd governor: charging %s (%s%s)",
                "attributed GPU time" if verdict.go else "VTC tokens",
                verdict.reason,
                f", model {verdict.model_version}" if verdict.model_version else "",
            )
        self.verdict = verdict  # admission follows it when the charge is taken in (``_take_in``)

    def _charge(self, out: Any) -> Iterable[int]:
        """Charge the step; the tenants charged."""
        roster, facts = self.roster, self.facts
        if roster.valid and out.finished_req_ids:  # finished before this step: not among its rows
            roster.leave(out.finished_req_ids, facts)
        total = out.total_num_scheduled_tokens
        if not total:
            return ()
        nst = out.num_scheduled_tokens
        new_reqs, cached = out.scheduled_new_reqs, out.scheduled_cached_reqs
        rids, computed = cached.req_ids, cached.num_computed_tokens
        churn = self.churn = self.churn + CHURN_SMOOTHING * (
            len(new_reqs) + len(out.finished_req_ids) - self.churn
        )
        if (
            not new_reqs  # steady decode: the same rows as the last step, one token each
            and roster.valid
            and len(rids) > self.rows_per_change * churn
            and not cached.resumed_req_ids
            and not out.scheduled_spec_decode_tokens
        ):
            steady = roster.repeat(rids, computed, total)
            if steady is not None:
                return self._charge_decode(*steady, total)
        sums: dict[int, TenantSums] = {}
        new_tokens, rejoined = self._charge_new(new_reqs, nst, sums)
        # Tokens beyond one per cached row: prompt chunks (found by the tally, whose rows are
        # behind their prompt) or, rarely, speculative or recomputed output tokens.
        extra = total - new_tokens - len(rids)
        if len(rids) <= self.rows_per_change * churn:  # the pass costs less than the bookkeeping
            if roster.valid:
                roster.invalidate()
            sums = self._charge_by_pass(new_reqs, rids, computed, nst, extra, sums)
        else:
            # Not folded: a member among the new rows (the roster's count would not prove the
            # rows), preempted requests back (not members), draft tokens (contexts move by
            # acceptance).
            folded = None
            if not (rejoined or cached.resumed_req_ids or out.scheduled_spec_decode_tokens):
                folded = roster.fold(rids, computed, nst, total - new_tokens)
            if folded is None:
                sums = self._charge_by_pass(new_reqs, rids, computed, nst, extra, sums)
                roster.rebuild(rids, computed, nst, facts)
            elif new_reqs or folded[3]:
                self._add_folded(folded, sums)
            else:  # decode rows only: priced without sums objects
                roster.end_step(new_reqs, nst, facts)
                return self._charge_decode(*folded[:3], total)
        if roster.valid:
            roster.end_step(new_reqs, nst, facts)
        self._charge_sums(sums, total)
        return sums

    def _add_folded(self, folded: Folded, sums: dict[int, TenantSums]) -> None:
        """The roster's answer for the step's running rows, added to ``sums`` (its new rows)."""
        tenants, counts, contexts, chunk_rows = folded
        for t, n, c in zip(tenants, counts, contexts):
            s = sums.get(t)
            if s is None:
                s = sums[t] = self._sums_of(t)
            s.n += n
            s.dn += n
            s.dc += c
        # Every field of a ``TenantSums`` is a sum of integers, exact in any order.
        for t, q, c in chunk_rows:  # behind their prompt: prefill-like, as the per-row rule has it
            s = sums.get(t)
            if s is None:
                s = sums[t] = self._sums_of(t)
            s.add(q, c, True)

    def _charge_by_pass(
        self, new_reqs: list, rids: list[str], computed: list[int], nst: dict, extra: int, sums: dict
    ) -> dict[int, TenantSums]:
        """The step's running rows added to ``sums`` (which holds its new rows) by the per-row
        pass; the step's sums.  ``extra``: the step's tokens beyond one per running row."""
        if self._charge_cached(rids, computed, nst, sums) != extra:
            sums = {}  # a multi-token row past its prompt: charge the step row by row instead
            self._charge_new(new_reqs, nst, sums)
            self._charge_each(rids, computed, nst, sums)
        return sums

    def _charge_new(self, new_reqs: list, nst: dict, sums: dict[int, TenantSums]) -> tuple[int, bool]:
        """The step's new requests (each a prompt chunk), row by row; their tokens, and whether
        one of them is still a member of the roster (re-admitted before its finish was told).

        ``TenantSums.add`` of a prefill-like row is written out here, the same operations in the
        same order: a call per admission less (``benchmarks/govern_cost.py``, workload ``churn``)."""
        facts = self.facts
        new_tokens = 0
        rejoined = False
        for new in new_reqs:
            rid = new.req_id
            f = facts.get(rid) or self._lookup(rid)
            rejoined = rejoined or f.member != 0
            s = sums.get(f.tenant)
            if s is None:
                s = sums[f.tenant] = self._sums_of(f.tenant)
            p, c = nst[rid], new.num_computed_tokens
            new_tokens += p
            if c < f.prompt or p > 1:
                s.n += 1
                s.pn += 1
                s.pp += p
                s.pc += c
                s.pp2 += p * p
                s.ppc += p * c
            else:
                s.add(p, c, False)
        return new_tokens, rejoined

    def _charge_each(
        self, rids: list[str], computed: list[int], nst: dict, sums: dict[int, TenantSums]
    ) -> None:
        facts = self.facts
        for rid, c in zip(rids, computed):
            f = facts.get(rid) or self._lookup(rid)
            s = sums.get(f.tenant)
            if s is None:
                s = sums[f.tenant] = self._sums_of(f.tenant)
            p = nst[rid]
            s.add(p, c, c < f.prompt or p > 1)

    def _charge_cached(
        self, rids: list[str], computed: list[int], nst: dict, sums: dict[int, TenantSums]
    ) -> int:
        """Rows of running requests, row by row (small batches, or a step the roster could not
        vouch for): a row behind its prompt is a chunk, added as it is; every other row is taken
        as one token (decode, the common case) and folded into its tenant's sums once per step.
        Returns the chunks' tokens beyond one per row, which the caller checks against the step's."""
        order, chunks = self._tally(rids, computed)
        contexts = self._contexts
        for t in order:
            s = sums.get(t)
            if s is None:
                s = sums[t] = self._sums_of(t)
            cs = contexts[t]
            if cs:
                k = len(cs)
                s.n += k
                s.dn += k
                s.dc += sum(cs)
                cs.clear()
        extra = 0
        # After the fold, which changes no sum a chunk adds to but ``n``: every field of a
        # ``TenantSums`` is a sum of integers, exact in any order, so the charge is the same.
        for f, rid, c in chunks:
            p = nst[rid]
            extra += p - 1
            sums[f.tenant].add(p, c, True)
        return extra

    def _tally(
        self, rids: list[str], computed: list[int]
    ) -> tuple[list[int], list[tuple[RequestFacts, str, int]]]:
        """The tenants of the rows (each once); the contexts of each one-token row, appended to
        its tenant's list (``self._contexts``, emptied by the caller); and the rows behind their
        prompt, as (facts, request id, computed tokens).

        The per-row pass is the governor's largest cost at large batches whose rows change
        (``benchmarks/govern_cost.py --breakdown``, 256 requests): one lookup, one comparison and
        one append to a list the request's facts hold per row, then ``len`` and ``sum`` per tenant
        in C, is cheaper than integer additions into per-tenant tallies, or a lookup by tenant,
        and cheaper than ``map`` over attribute getters (tried: slower on this interpreter).
        Rows are looked up by subscript, cheaper than a call; a request first seen here (rare)
        gets its facts and the pass starts again."""
        try:
            return self._tally_known(rids, computed)
        except KeyError:
            for cs in self._contexts:
                cs.clear()
            for rid in rids:
                self._lookup(rid)
            return self._tally_known(rids, computed)

    def _tally_known(
        self, rids: list[str], computed: list[int]
    ) -> tuple[list[int], list[tuple[RequestFacts, str, int]]]:
        facts, contexts = self.facts, self._contexts
        chunks: list[tuple[RequestFacts, str, int]] = []
        for rid, c in zip(rids, computed):
            f = facts[rid]
            if c < f.prompt:  # a prompt chunk (or a prompt's last token): prefill-like
                chunks.append((f, rid, c))
                continue
            f.contexts.append(c)
        # The step's tenants: those whose list is no longer empty (no test per row for it), found
        # among all tenants, or, where tenants outnumber the rows, among the rows' own; then those
        # with chunks only (rare).
        if len(contexts) <= len(rids):
            order = [t for t, cs in enumerate(contexts) if cs]
        else:
            order = [t for t in dict.fromkeys(facts[rid].tenant for rid in rids) if contexts[t]]
        for f, _, _ in chunks:
            if f.tenant not in order:
                order.append(f.tenant)
        return order, chunks

    def _sums_of(self, t: int) -> TenantSums:
        """Tenant ``t``'s sums, zeroed for this step: one object per tenant, reused, so a step
        allocates none (allocation was a visible part of the per-step cost,
        ``benchmarks/govern_cost.py``)."""
        s = self._sums.get(t)
        if s is None:
            s = self._sums[t] = TenantSums()
        else:
            s.reset()
        return s

    def _lookup(self, rid: str) -> RequestFacts:
        return self.facts.get(rid) or self.facts_of(self.requests[rid])

    def _charge_sums(self, sums: dict[int, TenantSums], total_tokens: int) -> None:
        verdict = self.verdict
        pricer = verdict.pricer or (self.reader.pricer if self.reader is not None else None)
        # Tenants in index order, whichever path summed them: the pricer's float sums are then
        # the same, bit for bit (``tests/govern/test_step_paths.py``).
        tenants = sorted(sums)
        rows = [sums[t] for t in tenants]
        shares = pricer.shares(rows, total_tokens) if pricer is not None else None
        self.ledger.charge(tenants, rows, self.config.w_p, self.config.w_q, shares, self.step_time)
        self.steps_charged["vtc" if verdict.pricer is None else "attributed"] += 1

    def _charge_decode(
        self, tenants: list[int], counts: list[int], contexts: list[int], total_tokens: int
    ) -> list[int]:
        """``_charge_sums`` for a step of one-token decode rows only (``counts[j]`` rows of
        ``tenants[j]``, in index order, ``contexts[j]`` their summed context); the tenants."""
        verdict = self.verdict
        pricer = verdict.pricer or (self.reader.pricer if self.reader is not None else None)
        shares = pricer.decode_shares(counts, contexts, total_tokens) if pricer is not None else None
        self.ledger.charge_decode(tenants, counts, self.config.w_q, shares, self.step_time)
        self.steps_charged["vtc" if verdict.pricer is None else "attributed"] += 1
        return tenants

    def _retire(self, finished: Any) -> None:
        """Forget finished requests.  ``Ledger.deactivate``'s common case (the tenant still has
        others) is written out: a call per finished request less (``benchmarks/govern_cost.py``,
        workload ``churn``)."""
        pop, ledger = self.facts.pop, self.ledger
        active = ledger.active
        for rid in finished:
            f = pop(rid, None)
            if f is not None and f.running:
                t = f.tenant
                if active[t] > 1:
                    active[t] -= 1
                else:
                    ledger.deactivate(t)

    # -- preemption ------------------------------------------------------------------------------
    def order_victims(self, running: list[Any], free_blocks: int, blocks_per_step: int) -> bool:
        """Put the most over-served tenant's running requests last, where vLLM takes its victim.

        vLLM (FCFS) preempts ``running[-1]`` when a running request cannot get a block.  Only done
        when that can happen: with ``free_blocks >= blocks_per_step`` (the most a step's running
        requests can take: :class:`shadowd.govern.vllm.GovernMixin`) no step preempts, and most
        steps pay one comparison.  The sort is stable: within a tenant vLLM's order stays (its
        latest admitted request goes first), and tenants go by normalised service on the counter
        admission follows, least first.  True when reordered."""
        if free_blocks >= blocks_per_step or len(running) < 2:
            return False
        self.queue.contended = True
        self.catch_up()
        if self.charger is None:  # else set when the charge was taken in (``_stand``)
            self._stand()
        try:  # under deep KV pressure the running list is sorted in nearly every step: keys in C
            running.sort(key=BY_STANDING)
        except AttributeError:  # a request not marked (the list is left as it was): the slow key
            facts_of, service, weight = self.facts_of, self.ledger.service[self.kind()], self.ledger.weight

            def key(request: Any) -> float:
                t = facts_of(request).tenant
                return service[t] / weight[t]

            running.sort(key=key)
        self.victim_orderings += 1
        return True

    def close(self) -> None:
        """Engine shutdown: take the last charge in, stop the charge thread, write the last
        counters and stop the status file's writer."""
        self.catch_up()
        if self.charger is not None:
            self.charger.close()
            self.charger = None
        if self.status_file is not None:
            self.status_file.publish(self.published())
            self.status_file.close()

    # -- reporting ---------------------------------------------------------------------------------
    def published(self) -> dict[str, Any]:
        """What the status file carries: the counters, no tenant names (see ``status_file``).
        The verdict is read once: the charge thread may replace it meanwhile."""
        verdict = self.verdict
        return {
            "mode": self.config.mode,
            "platform_key": self.config.platform_key,
            "charging": "attributed" if verdict.go else "vtc",
            "charged_on": "thread" if self.charger is not None else "inline",
            "charge_cpu": self._charge_cpu(),
            "reason": verdict.reason,
            "model_version": verdict.model_version,
            "switches": dict(self.switches),
            "steps_charged": dict(self.steps_charged),
            "errors": self.errors,
        }

    def _charge_cpu(self) -> str | None:
        """Where the charge thread runs: ``engine`` (held to the engine thread's CPU), ``any``
        (where the kernel puts it: asked for, or following failed); ``None`` charged inline."""
        charger = self.charger
        if charger is None:
            return None
        return "engine" if charger.following else "any"

    def status(self) -> dict[str, Any]:
        """Counters for logs, tests and the replay: what the status file carries, and per-tenant
        service (every step's charge taken in first)."""
        self.catch_up()
        return {
            **self.published(),
            "preempt": self.config.preempt,
            "victim_orderings": self.victim_orderings,
            "steps_deferred": self.steps_deferred,
            "catch_ups": self.catch_ups,
            "tenants": self.ledger.snapshot(),
        }
