"""A residual detection becomes an alarm only if the shift it saw lasts (design r8).

The residual detectors judge each class's standardised residual against a slow baseline of its
own past (``checks.detrend``), so they fire on any shift of the mean, beyond the calibration's
``allowance``, that lasts tens of steps.  The faults the gate must catch (a throttled GPU, a
driver or kernel change, a co-located job) make every later step slower: the shift stays.  A
healthy engine's residual also moves that fast now and then (a burst of an unusual batch
composition, for a few tens of steps), and then comes back.  So a detection is held *pending*
for ``steps`` more judged steps of its class; it is confirmed, and becomes a drift event, only
if the mean standardised residual over those steps still sits at least ``allowance`` (in the
detection's direction) from the reference: the baseline as it stood ``lag`` judged steps before
the detection, before the shift began to pull it.  Otherwise it is dismissed and counted.

The price is delay: an event comes ``steps`` judged steps after the detection.  Why the
defaults and on which runs they were chosen: ``DESIGN`` in ``benchmarks/gate_designs.py``.

Design r31 (r30 withdrawn): with ``stratify``, a detection is judged *within composition
strata* where it can be (``stratum``: the step's batch size, exact up to 8 then in quarter
octaves, and its KV tokens in half octaves): per stratum seen before, the mean over the
confirmation window less the mean over the stratum's own last ``steps`` judged steps before the
reference point (however long ago), weighted by the window's steps; confirmed iff that reaches
the allowance.  A slower engine moves every stratum; a move of the mix between strata the model
prices slightly differently (the piecewise-linear model is smooth, the engine's kernels are
not) moves none and is dismissed.  A stratum's memory also reaches back before a fault, where
the detrend baseline has followed it within ``lag`` steps, so a detection made once the
baseline has caught up is still confirmed.  Strata count with ``MIN_STRATUM`` steps on both
sides, and judge once they hold ``MIN_COVERAGE`` of the window (a slower engine grows its
batches into rarer compositions, so most of its window may lie in strata never seen: r30 asked
for half and missed such a slowdown).  Below that, a shift that lasts (judged as without strata)
is an alarm, unless most of the window lies in strata never seen at all before the reference
point (design r32; r31 counted thinly seen strata too, and traffic spread over many
compositions hid a slowdown that way: ``tests/daemon/test_alertmanager_round_trip.py``): it is
then not an alarm but *unsupported*, since drift and the model's own error there cannot be told
apart (the daemon holds the class's drift evidence missing until the next re-fit or
calibration: INCONCLUSIVE, never a page).

Design r26: where the detectors watch the residual less a fitted composition bias
(``checks.residual_bias``), a second stream may be given: the residual as measured, before the
bias is taken out, with its own baseline and allowance.  A detection is then confirmed only if
the shift lasts on both.  A slowdown of the engine moves every step's residual alike, so it shows
on both; a bias fitted on a narrow window and carried to compositions it barely held moves only
the unbiased stream, and wander the bias explains moves only the raw one.

>>> c = AlarmConfirmation(steps=50, allowance_z=1.0, lag=20)
>>> quiet = [c.observe(0.0, 0.0) for _ in range(100)]   # steps before: nothing pending
>>> c.open("page_hinkley", "up", {"step_seq": 100})
>>> done = [c.observe(2.0, 0.0) for _ in range(50)]   # the shift lasts: confirmed on the 50th
>>> [len(d) for d in done[-2:]], done[-1][0].confirmed, round(done[-1][0].shift_z, 2)
([0, 1], True, 2.0)
>>> c.open("page_hinkley", "up", {"step_seq": 200})
>>> done = [c.observe(0.0, 0.0) for _ in range(50)]   # back at once: dismissed
>>> done[-1][0].confirmed, c.dismissed
(False, 1)
>>> c = AlarmConfirmation(steps=50, allowance_z=1.0, lag=20, raw_allowance_z=1.0)
>>> quiet = [c.observe(0.0, 0.0, 0.0, 0.0) for _ in range(100)]
>>> c.open("page_hinkley", "up", {"step_seq": 100})
>>> done = [c.observe(2.0, 0.0, 0.2, 0.0) for _ in range(50)]   # unbiased moved, raw did not
>>> done[-1][0].confirmed, c.dismissed_raw
(False, 1)

Design r31: with ``stratify``, the shift must show *within* composition strata where they cover
the window.  Batches of 3 run 2 z below batches of 1 on this engine; the mix moves from 1s to
3s, and neither batch size changed:

>>> c = AlarmConfirmation(steps=50, allowance_z=1.0, lag=20, stratify=True)
>>> quiet = [c.observe(-2.0 * (i % 2), 0.0, key=1 + 2 * (i % 2)) for i in range(100)]
>>> c.open("page_hinkley", "down", {"step_seq": 100})
>>> done = [c.observe(-2.0, -1.0, key=3) if i % 4 else c.observe(0.0, -1.0, key=1) for i in range(50)]
>>> p = done[-1][0]
>>> round(p.shift_z, 2), abs(p.strata_shift_z), p.confirmed, c.dismissed_strata
(1.48, 0.0, False, 1)

The same shift with the mix moving to a composition never seen before (key 5): no stratum can
judge it, and it lasts as judged without strata: unsupported, not an alarm.

>>> c.open("page_hinkley", "down", {"step_seq": 150})
>>> done = [c.observe(-2.0, -1.0, key=5) for i in range(50)]
>>> done[-1][0].unsupported, done[-1][0].confirmed, c.unsupported
(True, False, 1)

Design r38: with ``coarser`` (a map of each stratum to a coarser one holding it: in the daemon,
r37's strata to r34's, ``graph_stratum``), where the strata are too thin to judge a window the
coarser strata judge it if they cover it, and a lasting shift is unsupported only where most of
the window lies in coarser strata never seen.  Finer strata leave more windows thin, and each
unsupported window blinds its class until a re-fit (H35-swing-long under r37 re-fitted on one
and paged under the re-fit).  Keys 12 and 13 here are finer strata of one coarser stratum 1
that key 11 also belongs to; the mix moves from 11 and 21 to the unseen 12 and 13, where the
model errs as at 11:

>>> def moved(coarser):
...     c = AlarmConfirmation(steps=50, allowance_z=0.5, lag=20, stratify=True, coarser=coarser)
...     quiet = [c.observe(-2.0 * (i % 2), -1.0, key=11 + 10 * (i % 2)) for i in range(100)]
...     c.open("page_hinkley", "up", {"step_seq": 100})
...     return [c.observe(0.0, -1.0, key=12 + i % 2) for i in range(50)][-1][0]
>>> p = moved(None)   # r37: a lasting shift in strata never seen
>>> p.unsupported, p.confirmed, p.strata_level, round(p.shift_z, 2)
(True, False, None, 1.0)
>>> p = moved(lambda k: k // 10)   # r38: within the coarser stratum 1, nothing moved
>>> p.unsupported, p.confirmed, p.strata_level, round(p.strata_shift_z, 2)
(False, False, 'coarse', 0.0)

Design r40 (withdrawn): with ``coarsest`` too (r31's quarter octaves: ``octave_stratum``),
where the coarser strata are too thin as well the coarsest judge the window if they cover it;
before r40 such a window was judged without strata.  Right after a re-fit the strata hold only
its calibration's held-out steps, often too few in r37's and r34's strata (H38-steady-12k under
r38 paged on a mix that moved across a CUDA-graph edge, judged without strata:
``docs/steady_drift.md``).  Here the window moves to 112, in coarser stratum 11, seen five
times (too few to judge), and in the coarsest stratum 1 with 101, where the model errs alike:

>>> def thin(coarsest):
...     c = AlarmConfirmation(steps=50, allowance_z=0.5, lag=20, stratify=True,
...                           coarser=lambda k: k // 10, coarsest=coarsest)
...     rare = [c.observe(0.0, -1.0, key=112) for _ in range(5)]
...     quiet = [c.observe(-2.0 * (i % 2), -1.0, key=101 + 100 * (i % 2)) for i in range(100)]
...     c.open("page_hinkley", "up", {"step_seq": 105})
...     return [c.observe(0.0, -1.0, key=112) for i in range(50)][-1][0], c
>>> p, _ = thin(None)   # r38: judged without strata, a lasting shift: an alarm
>>> p.unsupported, p.confirmed, p.strata_level
(False, True, None)
>>> p, c = thin(lambda k: k // 100)   # r40: within the coarsest stratum 1, nothing moved
>>> p.unsupported, p.confirmed, p.strata_level, round(p.strata_shift_z, 2), c.judged_octave
(False, False, 'octave', 0.0, 1)

Where no level covers the window and most of it lies in compositions rare even in the coarsest
strata, r40 holds a lasting shift of less than ``RARE_SHIFT`` allowances unsupported (the gate:
INCONCLUSIVE, no page); a larger one is an alarm.  r40 was withdrawn: its coarsest strata,
judging, confirmed a mix moving across a CUDA-graph edge inside one quarter octave (r31's flaw,
on H38-swing-30k).  Design r41 keeps only the rule: with ``rare`` (a map to the strata rarity is
read in; in the daemon ``octave_stratum``) and no ``coarsest``, nothing judges in those strata.
Shifts of 1.6 and 2.4 allowances:

>>> def rare(shift):
...     c = AlarmConfirmation(steps=50, allowance_z=0.5, lag=20, stratify=True,
...                           coarser=lambda k: k // 10, rare=lambda k: k // 100)
...     seldom = [c.observe(0.0, 0.0, key=212) for _ in range(5)]
...     quiet = [c.observe(0.0, 0.0, key=101) for _ in range(100)]
...     c.open("page_hinkley", "up", {"step_seq": 105})
...     return [c.observe(shift, 0.0, key=212) for _ in range(50)][-1][0]
>>> [(p.confirmed, p.unsupported) for p in (rare(0.8), rare(1.2))]
[(False, True), (True, False)]

Design r45: with ``support``, ``observe`` is also told whether each step lies beyond the
compositions the calibration window held (``DriftCalibration.support``: the window's range of
the features that set the step's GEMM shapes, ``SUPPORT_FEATURES``, before the domain's
margin).  The detectors judge steps up to that margin beyond it, where the model extrapolates
and its error grows with the distance: a load burst that leaves the mix there for a few hundred
steps moves the residual as lastingly as a slower engine (H45-swing-long paged so, under r43
and r44).  A shift that lasts, but mostly (more than half of its window) on such steps, is
unsupported, however strata judged it.  Shares of 0.4 and 0.8 of the window beyond:

>>> def edge(share):
...     c = AlarmConfirmation(steps=50, allowance_z=0.5, lag=20, support=True)
...     quiet = [c.observe(0.0, 0.0) for _ in range(100)]
...     c.open("page_hinkley", "up", {"step_seq": 100})
...     return [c.observe(1.0, 0.0, beyond=i < share * 50) for i in range(50)][-1][0]
>>> [(p.confirmed, p.unsupported, p.beyond) for p in (edge(0.4), edge(0.8))]
[(True, False, 20), (False, True, 40)]
"""

from __future__ import annotations

import math
from collections import deque
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np

MIN_STRATUM = 10  # steps of a stratum on each side of the reference for it to count (r31)
MIN_COVERAGE = 0.2  # of the confirmation window's steps in counted strata for them to judge (r31)
RARE_SHIFT = 2.0  # allowances under which a lasting shift in rare compositions is unsupported (r41)
GRAPH_MAX = 512  # vLLM's largest captured CUDA graph by default: larger steps run unpadded (r34)
GRAPH_SIZES = 56  # size strata 1-8 and the 47 graphs above 8 up to GRAPH_MAX (r34)


def stratum(batch_size: float, kv_tokens: float = 0.0, graph: bool = False, octaves: bool = False) -> int:
    """A step's composition stratum (design r31): its batch size (itself up to 8, then quarter
    octaves) and its KV tokens (half octaves), as one key.

    >>> [stratum(b) // 100 for b in (1, 3, 8, 9, 12, 16, 250, 256)]
    [1, 3, 8, 9, 10, 12, 28, 28]
    >>> stratum(3, 6000) == stratum(3, 6500) != stratum(3, 9000)
    True

    With ``graph`` (design r34) the batch size above 8 goes by the CUDA graph vLLM runs it at
    by default (its capture sizes: every 8 up to 256, every 16 up to 512; above, unpadded, in
    quarter octaves).  A quarter octave such as 14-19 holds steps run at graphs of 16 and of 24,
    whose cost the model, smooth in the batch, cannot tell apart; a move of the mix across that
    edge moved the model's error inside one r31 stratum (``docs/swing_drift.md``).

    >>> [stratum(b, graph=True) // 100 for b in (8, 9, 16, 17, 24, 256, 257, 512, 1024)]
    [8, 9, 9, 10, 10, 39, 40, 55, 60]

    With ``octaves`` too (design r37) a graph's sizes are also cut where r31's quarter octaves
    are, so no stratum spans more than a quarter octave or crosses a graph edge (without
    ``graph`` it changes nothing: r31's strata are quarter octaves already).  Inside one graph
    the engine's GEMMs cost the same while the model's price grows with the batch, so the
    model's error moves with the batch there, as across an edge it jumps (``docs/graph_strata.md``).

    >>> [stratum(b, graph=True, octaves=True) // 100 for b in (8, 9, 10, 11, 14, 15, 16, 17)]
    [8, 36, 36, 37, 38, 39, 39, 40]
    """
    b = max(1.0, float(batch_size))
    if b <= 8:
        size = int(b)
    elif graph and b <= GRAPH_MAX:
        size = _graph_index(math.ceil(b))
        if octaves:  # r37: 4 slots per graph; no graph spans more than 4 quarter octaves
            # (clamped: a fractional batch between 8 and 9, never a real step's, joins 9's slot)
            size = 4 * size + max(0, _quarter_octave(b) - _quarter_octave(_graph_first(math.ceil(b))))
    elif graph:
        size = GRAPH_SIZES + int(round(4 * math.log2(b / GRAPH_MAX)))  # unpadded: quarter octaves
        size = 4 * size if octaves else size
    else:
        size = _quarter_octave(b)
    return 100 * size + int(round(2 * math.log2(max(1.0, float(kv_tokens)))))


def _quarter_octave(b: float) -> int:
    """r31's size stratum of a batch above 8: 8 plus its quarter octaves above 8."""
    return 8 + int(round(4 * math.log2(b / 8)))


def _graph_index(n: int) -> int:
    """r34's size stratum of a batch of ``n`` (9 to ``GRAPH_MAX``): its CUDA graph's index."""
    return 7 + math.ceil(min(n, 256) / 8) + (math.ceil((n - 256) / 16) if n > 256 else 0)


def _graph_first(n: int) -> int:
    """The smallest batch that runs at the same CUDA graph as a batch of ``n`` (9 to ``GRAPH_MAX``)."""
    step = 8 if n <= 256 else 16
    base = 0 if n <= 256 else 256
    return max(9, base + step * (math.ceil((n - base) / step) - 1) + 1)


def graph_stratum(key: int) -> int:
    """The r34 stratum (CUDA graphs alone) holding an r37 ``stratum`` key (graphs cut at quarter
    octaves): design r38's coarser strata, where r37's are too thin to judge.

    >>> all(graph_stratum(stratum(b, t, True, True)) == stratum(b, t, True)
    ...     for b in range(1, 2048) for t in (0, 700, 90000))
    True
    """
    size, kv = divmod(int(key), 100)
    return 100 * (size if size <= 8 else size // 4) + kv


def octave_stratum(key: int) -> int:
    """The r31 stratum (quarter octaves, no graphs) holding an r37 ``stratum`` key: design r40's
    coarsest strata, where r37's and r34's are both too thin to judge.  An r37 stratum lies
    inside one quarter octave (its slot counts quarter octaves from its graph's first batch), so
    the map is exact.

    >>> all(octave_stratum(stratum(b, t, True, True)) == stratum(b, t)
    ...     for b in range(1, 2048) for t in (0, 700, 90000))
    True
    """
    size, kv = divmod(int(key), 100)
    if size <= 8:
        return 100 * size + kv
    graph, slot = divmod(size, 4)
    if graph > GRAPH_SIZES:  # unpadded (above GRAPH_MAX): quarter octaves from GRAPH_MAX up
        return 100 * (_quarter_octave(GRAPH_MAX) + graph - GRAPH_SIZES) + kv
    return 100 * (_quarter_octave(_graph_first_of(graph)) + slot) + kv


def _graph_first_of(index: int) -> int:
    """The smallest batch run at the CUDA graph of r34 size stratum ``index`` (9 to ``GRAPH_SIZES``)."""
    if index <= 7 + 32:  # graphs every 8 up to 256
        return max(9, 8 * (index - 8) + 1)
    return 256 + 16 * (index - 40) + 1


def size_stratum(key: int) -> int:
    """The batch-size part of a ``stratum`` key: design r33's detrend groups.

    >>> size_stratum(stratum(3, 6000)) == size_stratum(stratum(3, 90000)) == 3
    True
    """
    return int(key) // 100


def graph_size(batch_size: np.ndarray) -> np.ndarray:
    """Per step, the batch-size part of its r34 ``stratum`` (the CUDA graph it ran at; a batch of
    up to 8 is its own): design r42's strata for a re-fit's time-shift check.

    >>> graph_size(np.array([1, 8, 9, 16, 17, 24, 256, 257, 600])).tolist()
    [1, 8, 9, 9, 10, 10, 39, 40, 57]
    """
    return np.array(
        [stratum(b, 0.0, graph=True) // 100 for b in np.asarray(batch_size).tolist()], dtype=np.int64
    )


def strata(
    features: Mapping[str, Any] | None, graph: bool = False, octaves: bool = False
) -> list[int] | None:
    """Each step's ``stratum`` from its composition features (``batch_size``, ``kv_tokens``,
    arrays of equal length); ``None`` where either is missing."""
    if not features or "batch_size" not in features or "kv_tokens" not in features:
        return None
    sizes, kv = (np.asarray(features[k], dtype=float).tolist() for k in ("batch_size", "kv_tokens"))
    return [stratum(b, t, graph, octaves) for b, t in zip(sizes, kv)]


@dataclass
class PendingAlarm:
    """One detection waiting for its confirmation window to fill."""

    detector: str
    direction: str  # "up" (steps slower than predicted) or "down"
    reference: float  # standardised baseline ``lag`` steps before the detection
    info: dict[str, Any] = field(default_factory=dict)  # what the detector reported
    total: float = 0.0  # sum of the standardised residuals seen since
    n: int = 0
    confirmed: bool = False
    shift_z: float = 0.0  # mean since the detection minus the reference, in the direction's sign
    raw_reference: float = 0.0  # design r26: the same for the raw stream (when one is watched)
    raw_total: float = 0.0
    raw_shift_z: float | None = None  # None: no raw stream
    # Design r31: per stratum, [sum, count] of z before the reference point and since.
    before: dict[int, list[float]] | None = None
    after: dict[int, list[float]] = field(default_factory=dict)
    strata_shift_z: float | None = None  # None: not stratified, or too few steps in strata
    unsupported: bool = False  # r31: it lasted, in compositions too rarely seen to judge it
    # Design r38: the same ``before`` in the coarser strata, and which strata judged it.
    coarse_before: dict[int, list[float]] | None = None
    # Design r40: the same in the coarsest strata; r41: in the strata rarity is read in.
    coarsest_before: dict[int, list[float]] | None = None
    rare_before: dict[int, list[float]] | None = None
    strata_level: str | None = None  # "fine" | "coarse" (r38) | "octave" (r40) | None: none judged it
    # Design r45: the window's steps beyond the compositions calibration held, and whether that
    # made a lasting shift unsupported.
    beyond: int = 0
    beyond_support: bool = False


class AlarmConfirmation:
    """Pending detections of one step class, confirmed or dismissed by the shift that follows.

    ``observe`` is fed, for every judged step of the class and before its detectors run, the
    standardised residual ``z`` and the detrend baseline ``b`` the detectors compare it with.
    ``steps == 0`` confirms every detection at once (designs before r8).  With
    ``raw_allowance_z`` (design r26) ``observe`` also takes the raw stream's standardised residual
    and baseline, and a confirmation needs the shift on it too.  With ``stratify`` (design r31)
    it takes each step's stratum (``key``; ``None``: unknown, not counted): where strata cover
    the window they decide, and where they do not a lasting shift is ``unsupported``.  With
    ``coarser`` (design r38; a map of each key to a coarser stratum holding it, e.g.
    ``graph_stratum``), where the strata do not cover the window the coarser ones judge it if
    they do, and only a window mostly in coarser strata never seen is ``unsupported``.  With
    ``coarsest`` too (design r40, withdrawn; e.g. ``octave_stratum``), where the coarser strata do
    not cover it either, the coarsest judge it if they do.  With ``rare`` (design r41; r40: the
    same map as ``coarsest``), a window no strata judge is unsupported where most of it lies in
    strata of that map seen fewer than ``MIN_STRATUM`` times and its shift is under ``RARE_SHIFT``
    allowances; without, where most of it lies in (coarser) strata never seen (r32, r38).  With
    ``support`` (design r45), a lasting shift whose window lies mostly on steps ``observe`` was
    told are ``beyond`` the compositions calibration held is unsupported too.
    """

    def __init__(
        self,
        steps: int,
        allowance_z: float,
        lag: int = 100,
        raw_allowance_z: float | None = None,
        stratify: bool = False,
        coarser: Callable[[int], int] | None = None,
        coarsest: Callable[[int], int] | None = None,
        rare: Callable[[int], int] | None = None,
        support: bool = False,
    ) -> None:
        if steps < 0 or lag < 1 or not allowance_z >= 0:
            raise ValueError("confirmation needs steps >= 0, lag >= 1 and allowance_z >= 0")
        if raw_allowance_z is not None and not raw_allowance_z >= 0:
            raise ValueError("raw_allowance_z must be >= 0 (or None: no raw stream)")
        self.steps = int(steps)
        self.allowance_z = float(allowance_z)
        self.raw_allowance_z = None if raw_allowance_z is None else float(raw_allowance_z)
        self._baselines: deque[float] = deque(maxlen=int(lag))
        self._raw_baselines: deque[float] = deque(maxlen=int(lag))
        self.lag = int(lag)
        self.stratify = bool(stratify)
        self.coarser = coarser if stratify else None
        self.coarsest = coarsest if stratify else None
        self.rare = rare if stratify else None
        self.support = bool(support)
        # Design r31: per stratum, (judged step index, z) of its last lag + steps steps: at least
        # ``steps`` of them lie before the reference point, ``lag`` judged steps back.
        self._strata: dict[int, deque[tuple[int, float]]] = {}
        self._seen = 0
        self.pending: list[PendingAlarm] = []
        self.confirmed = 0
        self.dismissed = 0
        self.dismissed_raw = 0  # of those: the unbiased shift lasted, the raw one did not (r26)
        self.dismissed_strata = 0  # of those: it lasted, but within no composition stratum (r31)
        self.unsupported = 0  # it lasted, in compositions too rarely seen to judge it (r31)
        self.judged_coarse = 0  # judged within the coarser strata, the finer too thin (r38)
        self.judged_octave = 0  # judged within the coarsest strata, the coarser too thin (r40)
        self.absorbed = 0  # detections while the same detector had one pending the same way
        self.unsupported_beyond = 0  # of the unsupported: mostly beyond calibration's compositions (r45)

    @property
    def watches_raw(self) -> bool:
        return self.raw_allowance_z is not None

    def observe(
        self,
        z: float,
        baseline: float,
        raw_z: float = 0.0,
        raw_baseline: float = 0.0,
        key: int | None = None,
        beyond: bool = False,
    ) -> list[PendingAlarm]:
        """One judged step; the pending alarms it completed (confirmed or not).  ``raw_z`` and
        ``raw_baseline`` are read only with a raw stream, ``key`` (the step's ``stratum``) only
        with ``stratify``, ``beyond`` (the step lies beyond the compositions calibration held)
        only with ``support``."""
        self._baselines.append(baseline)
        self._raw_baselines.append(raw_baseline)
        self._seen += 1
        keyed = self.stratify and key is not None
        if keyed:
            mine = self._strata.get(key)
            if mine is None:
                mine = self._strata[key] = deque(maxlen=self.lag + self.steps)
            mine.append((self._seen, z))
        done: list[PendingAlarm] = []
        for p in self.pending:
            p.total += z
            p.raw_total += raw_z
            p.n += 1
            p.beyond += bool(beyond)
            if keyed:
                acc = p.after.setdefault(key, [0.0, 0])
                acc[0] += z
                acc[1] += 1
            if p.n >= self.steps:
                done.append(self._judge(p))
        if done:
            self.pending = [p for p in self.pending if p.n < self.steps]
        return done

    def open(self, detector: str, direction: str, info: dict[str, Any]) -> PendingAlarm | None:
        """A detection: held pending (returned ``None``), or, with ``steps == 0``, confirmed now."""
        if any(p.detector == detector and p.direction == direction for p in self.pending):
            self.absorbed += 1  # one shift, one alarm
            return None
        ref = self._baselines[0] if self._baselines else 0.0
        p = PendingAlarm(detector, direction, ref, dict(info))
        if self.watches_raw:
            p.raw_reference = self._raw_baselines[0] if self._raw_baselines else 0.0
        if self.stratify:
            p.before = self._before()
            if self.coarser is not None:
                p.coarse_before = self._coarse_before(self.coarser)
            if self.coarsest is not None:
                p.coarsest_before = self._coarse_before(self.coarsest)
            if self.rare is not None:
                p.rare_before = (
                    p.coarsest_before if self.rare is self.coarsest else self._coarse_before(self.rare)
                )
        if self.steps == 0:
            p.confirmed = True
            self.confirmed += 1
            return p
        self.pending.append(p)
        return None

    def _before(self) -> dict[int, list[float]]:
        """Per stratum, [sum, count] of z over its last ``steps`` judged steps that came ``lag``
        or more judged steps before now: the reference point, as the detrend baseline's."""
        point = self._seen - self.lag
        out: dict[int, list[float]] = {}
        for key, mine in self._strata.items():
            old = [z for i, z in mine if i <= point][-self.steps :]
            if old:
                out[key] = [float(sum(old)), len(old)]
        return out

    def _coarse_before(self, coarser: Callable[[int], int]) -> dict[int, list[float]]:
        """``_before`` in the strata ``coarser`` maps to (design r38): per coarser stratum, its last
        ``steps`` judged steps before the reference point, whichever finer strata they fell in.
        Exact: each finer stratum keeps its last ``steps`` steps before the point, so it holds
        every one of its steps among its coarser stratum's last ``steps``."""
        point = self._seen - self.lag
        merged: dict[int, list[tuple[int, float]]] = {}
        for key, mine in self._strata.items():
            merged.setdefault(coarser(key), []).extend((i, z) for i, z in mine if i <= point)
        out: dict[int, list[float]] = {}
        for key, steps in merged.items():
            old = [z for _, z in sorted(steps)[-self.steps :]]
            out[key] = [float(sum(old)), len(old)]
        return out

    @staticmethod
    def _coarsen(after: dict[int, list[float]], coarser: Callable[[int], int]) -> dict[int, list[float]]:
        """A window's per-stratum [sum, count] summed into the strata ``coarser`` maps to (r38)."""
        out: dict[int, list[float]] = {}
        for key, (total, n) in after.items():
            acc = out.setdefault(coarser(key), [0.0, 0])
            acc[0] += total
            acc[1] += n
        return out

    @staticmethod
    def _within_strata(
        before: dict[int, list[float]], after: dict[int, list[float]], n_window: int
    ) -> float | None:
        """The shift within strata (z; not signed), or ``None`` where too few of the window's
        ``n_window`` steps are in strata seen on both sides."""
        both = [
            (a, before[k])
            for k, a in after.items()
            if a[1] >= MIN_STRATUM and k in before and before[k][1] >= MIN_STRATUM
        ]
        n = sum(a[1] for a, _ in both)
        if not n_window or n < MIN_COVERAGE * n_window:
            return None
        return sum(a[1] * (a[0] / a[1] - b[0] / b[1]) for a, b in both) / n

    def _strata_judgment(self, p: PendingAlarm) -> float | None:
        """The shift within the finest strata that cover the window (r31's; r38: else the
        coarser ones; r40: else the coarsest), recording which judged it; ``None`` where none do."""
        if p.before is None:
            return None
        within = self._within_strata(p.before, p.after, p.n)
        if within is not None:
            p.strata_level = "fine"
            return within
        for level, before, coarser in (
            ("coarse", p.coarse_before, self.coarser),
            ("octave", p.coarsest_before, self.coarsest),
        ):
            if before is None or coarser is None:
                continue
            within = self._within_strata(before, self._coarsen(p.after, coarser), p.n)
            if within is not None:
                p.strata_level = level
                if level == "coarse":
                    self.judged_coarse += 1
                else:
                    self.judged_octave += 1
                return within
        return None

    def _judge(self, p: PendingAlarm) -> PendingAlarm:
        self._judge_shift(p)
        if p.confirmed and self.support and 2 * p.beyond > p.n:
            # Design r45: it lasted, but mostly on steps beyond the compositions calibration
            # held, where the model extrapolates and its error grows with the distance:
            # drift and that error cannot be told apart there (why: DESIGN in
            # benchmarks/gate_designs.py).
            p.confirmed, p.unsupported, p.beyond_support = False, True, True
            self.unsupported_beyond += 1
        if p.unsupported:
            self.unsupported += 1
            return p
        return self._count(p)

    def _judge_shift(self, p: PendingAlarm) -> None:
        """Whether the shift lasted (``p.confirmed``), within strata where they judge (r31), or
        in strata none can judge it in (``p.unsupported``: r31, r32, r38, r41)."""
        sign = -1.0 if p.direction == "down" else 1.0
        p.shift_z = sign * (p.total / p.n - p.reference)
        within = self._strata_judgment(p)
        if within is not None:  # design r31: the strata decide (the bias is constant within one)
            p.strata_shift_z = sign * within
            p.confirmed = p.strata_shift_z >= self.allowance_z
            if not p.confirmed and p.shift_z >= self.allowance_z:
                self.dismissed_strata += 1
            return
        p.confirmed = p.shift_z >= self.allowance_z
        if p.confirmed and self.raw_allowance_z is not None:
            p.raw_shift_z = sign * (p.raw_total / p.n - p.raw_reference)
            if p.raw_shift_z < self.raw_allowance_z:
                p.confirmed = False
                self.dismissed_raw += 1
        if p.confirmed and self._in_unseen_strata(p):  # r31: it lasted where none can judge it
            p.confirmed, p.unsupported = False, True

    def _in_unseen_strata(self, p: PendingAlarm) -> bool:
        """Whether most of the window's steps lie in strata never seen before the reference point
        (design r32; r38: coarser strata never seen; r41: ``rare``'s rule instead).  Steps
        without a stratum (a monitor fed no features) and strata seen, if only a few times
        (traffic spread over many compositions), count as seen: judged as before, a lasting
        shift there is an alarm."""
        if p.before is None:
            return False
        if p.rare_before is not None and self.rare is not None:
            # Design r40 (r41: the rule alone, in place of r38's below): no level of strata
            # covered the window, and most of it lies where even the coarsest strata were seen
            # fewer than ``MIN_STRATUM`` times before the reference point.  There a shift of
            # less than ``RARE_SHIFT`` allowances may be the move to a composition where the
            # model errs differently (across a CUDA-graph edge its error jumps by about that
            # much): unsupported.  Larger is drift (a slowdown in traffic spread over many
            # compositions, which r31's rule hid, is far larger), even in strata never seen.
            before, after = p.rare_before, self._coarsen(p.after, self.rare)
            rare = sum(a[1] for k, a in after.items() if before.get(k, (0.0, 0))[1] < MIN_STRATUM)
            return 2 * rare >= p.n and p.shift_z < RARE_SHIFT * self.allowance_z
        before, after = p.before, p.after
        if p.coarse_before is not None and self.coarser is not None:
            before, after = p.coarse_before, self._coarsen(p.after, self.coarser)
        unseen = sum(a[1] for k, a in after.items() if k not in before)
        return 2 * unseen >= p.n

    def _count(self, p: PendingAlarm) -> PendingAlarm:
        if p.confirmed:
            self.confirmed += 1
        else:
            self.dismissed += 1
        return p

    def state(self) -> dict[str, int]:
        return {
            "pending": len(self.pending),
            "confirmed": self.confirmed,
            "dismissed": self.dismissed,
            "dismissed_raw": self.dismissed_raw,
            "dismissed_strata": self.dismissed_strata,
            "unsupported": self.unsupported,
            "judged_coarse": self.judged_coarse,
            "judged_octave": self.judged_octave,
            "absorbed": self.absorbed,
            "unsupported_beyond": self.unsupported_beyond,
        }
