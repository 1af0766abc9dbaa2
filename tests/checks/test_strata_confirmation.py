"""Design r31: a residual detection is judged within batch-composition strata where they cover it.

The piecewise-linear latency model is smooth; the engine's kernels are not, so the model's error
differs a little from one batch composition to the next.  When the mix moves between such
compositions for a few hundred steps the residual's mean moves with it and the detectors fire
on a healthy engine (seen on held-out 27's fault runs before their faults).  Within one stratum
(batch size and KV tokens) that error is constant, and a slower engine moves every stratum.  So
where strata seen before hold a fifth of a detection's confirmation window or more, they decide
(a slower engine grows its batches into rarer compositions: held-out 21's 5 % slowdown, which
design r30 missed by asking for half); where they hold less, a shift that lasts is
*unsupported*: the class's drift evidence is missing until the next re-fit (INCONCLUSIVE, never
a page).
"""

from __future__ import annotations

import dataclasses

import numpy as np

import checks
from checks.alarm_confirmation import AlarmConfirmation, stratum
from tests.helpers import page_hinkley_decode

STD = 0.01
# Two compositions the model prices 3 % apart: single requests with short contexts, and four
# requests with long ones.
SHORT, LONG = (1.0, 500.0), (4.0, 9000.0)
OFFSET = {SHORT: 0.0, LONG: -0.03}


def _calibration(stratify: bool) -> checks.DriftCalibration:
    return page_hinkley_decode(STD, detrend_steps=100, confirm_steps=200, allowance=0.02, stratify=stratify)


def _traffic(phases: list[tuple[tuple[float, float], int, float]], seed: int = 0) -> tuple:
    """Consecutive phases of (composition, steps, engine slowdown): batch sizes, KV tokens and
    residuals (the composition's offset, the slowdown and noise)."""
    rng = np.random.default_rng(seed)
    size, kv, resid = [], [], []
    for comp, n, slower in phases:
        size += [comp[0]] * n
        kv += [comp[1]] * n
        resid += list(OFFSET.get(comp, 0.0) + slower + rng.normal(0, STD / 2, n))
    return np.array(size), np.array(kv), np.array(resid)


def _monitor(
    stratify: bool,
    size: np.ndarray,
    kv: np.ndarray,
    resid: np.ndarray,
    *,
    window: tuple | None = None,
    graph: bool = False,
    octaves: bool = False,
    fallback: bool = False,
    rare: bool = False,
) -> tuple:
    """A monitor primed as a calibration window holding both compositions primes it (``window``:
    batch sizes, KV tokens and residuals; ``graph``: design r34's strata; ``octaves``: r37's;
    ``fallback``: r38's, r34's behind r37's; ``rare``: r41's rule for rare compositions), then fed."""
    cal = dataclasses.replace(
        _calibration(stratify),
        graph_strata=graph,
        octave_strata=octaves,
        strata_fallback=fallback,
        rare_unsupported=rare,
    )
    mon = checks.DriftMonitor({"decode": cal})
    cs, ck, cr = window or _traffic([(SHORT, 200, 0.0), (LONG, 200, 0.0)], seed=9)
    keys = np.array([stratum(b, k, graph, octaves) for b, k in zip(cs, ck)])
    mon.prime({"decode": cr}, keys={"decode": keys})
    n = len(resid)
    events = mon.update_many(
        np.arange(n),
        np.full(n, "decode"),
        resid,
        np.arange(n, dtype=float),
        {"batch_size": size, "kv_tokens": kv},
    )
    return mon, events


# The mix alternates between the two compositions, each held a few hundred steps at a time.
MIX = [(SHORT, 400, 0.0), (LONG, 400, 0.0)] * 4


def test_a_mix_moving_between_seen_compositions_is_dismissed_within_strata():
    size, kv, resid = _traffic(MIX)
    _, plain = _monitor(False, size, kv, resid)
    assert plain, "without strata the mix's moves are alarms (the case r30 answers)"
    mon, events = _monitor(True, size, kv, resid)
    conf = mon.state()["classes"]["decode"]["confirmation"]
    assert events == [] and conf["dismissed_strata"] >= 1 and conf["unsupported"] == 0, str(conf)
    assert mon.unsupported() == {}


def test_a_slower_engine_is_confirmed_within_strata():
    """A 5 % slowdown from step 2,400 on, the mix still moving: an alarm, with the shift it saw
    within strata in its details."""
    size, kv, resid = _traffic(MIX[:6] + [(SHORT, 400, 0.05), (LONG, 400, 0.05)] * 2)
    mon, events = _monitor(True, size, kv, resid)
    assert events, mon.state()["classes"]["decode"]["confirmation"]
    first = min(events, key=lambda e: e.step_seq)
    assert 2400 <= first.details["detected_step_seq"] and first.step_seq < 2400 + 800, first
    assert abs(first.details["strata_lasting_shift"] - 0.05) < 0.015, first.details


def test_a_shift_into_unseen_compositions_is_unsupported_not_an_alarm():
    """The mix moves to a composition never seen (eight requests, very long contexts) where the
    model is 4 % off: no alarm, and the class stays marked unsupported (to the monitor's end)."""
    new = (8.0, 60000.0)
    OFFSET[new] = -0.04
    try:
        size, kv, resid = _traffic([(SHORT, 1200, 0.0), (new, 1600, 0.0)])
    finally:
        del OFFSET[new]
    mon, events = _monitor(True, size, kv, resid)
    assert events == []
    u = mon.unsupported()["decode"]
    assert 1200 <= u["detected_step_seq"] < 1400 and u["shift"] < -0.02, u
    assert mon.state()["classes"]["decode"]["unsupported"] == u
    # and without strata, as before r31: an alarm, which pages
    assert _monitor(False, size, kv, resid)[1]


def test_a_slowdown_that_grows_the_batches_is_still_an_alarm():
    """Held-out 21's case in small: with the slowdown most of the window's steps move to a
    composition never seen, a fifth stay where they were: the strata judge it on those."""
    new = (8.0, 60000.0)
    size, kv, resid = _traffic(
        [(SHORT, 400, 0.0), (LONG, 400, 0.0)] * 2 + [(new, 3, 0.05), (LONG, 1, 0.05)] * 150, seed=4
    )
    mon, events = _monitor(True, size, kv, resid)
    assert events and 1600 <= events[0].details["detected_step_seq"], events
    assert abs(events[0].details["strata_lasting_shift"] - 0.05) < 0.02, events[0].details
    assert mon.unsupported() == {}


def test_strata_need_steps_on_both_sides_or_the_stage_judges_as_before():
    c = AlarmConfirmation(steps=50, allowance_z=1.0, lag=20, stratify=True)
    for _ in range(100):
        c.observe(0.0, 0.0, key=stratum(1, 500))
    c.open("page_hinkley", "up", {"step_seq": 100})
    done = [c.observe(0.5, 0.0, key=stratum(1, 500)) for _ in range(50)]
    p = done[-1][0]
    assert p.strata_shift_z is not None and not p.confirmed  # 0.5 < 1.0
    c.open("page_hinkley", "up", {"step_seq": 150})
    done = [c.observe(1.5, 0.0, key=stratum(4, 9000)) for _ in range(50)]  # never seen before
    p = done[-1][0]
    assert p.strata_shift_z is None and not p.confirmed and p.unsupported  # lasted: 1.5 >= 1.0
    c.open("page_hinkley", "up", {"step_seq": 200})
    done = [c.observe(0.2, 0.0, key=stratum(4, 9000) + 1) for _ in range(50)]  # never seen; small
    p = done[-1][0]
    assert p.strata_shift_z is None and not p.confirmed and not p.unsupported


def test_the_calibration_primes_the_strata_and_round_trips_the_setting():
    cal = _calibration(True)
    assert checks.DriftCalibration.from_dict(cal.to_dict()).stratify is True
    assert dataclasses.replace(cal, stratify=False).confirmation().stratify is False
    size, kv, resid = _traffic([(SHORT, 300, 0.0)])
    mon = checks.DriftMonitor({"decode": cal})
    keys = np.array([stratum(b, k) for b, k in zip(size, kv)])
    mon.prime({"decode": resid}, keys={"decode": keys})
    before = mon._confirm["decode"]._before()
    assert list(before) == [stratum(*SHORT)] and before[stratum(*SHORT)][1] == 200


def test_without_features_a_stratified_monitor_alarms_as_before():
    """A stratified calibration fed steps without their composition (``DriftMonitor.update``, or
    no KV tokens) cannot place them in strata: a lasting shift is an alarm, as without strata,
    never held back as unsupported."""
    size, kv, resid = _traffic([(SHORT, 1200, 0.0), (SHORT, 800, 0.05)])
    mon = checks.DriftMonitor({"decode": _calibration(True)})
    n = len(resid)
    events = mon.update_many(
        np.arange(n), np.full(n, "decode"), resid, np.arange(n, dtype=float), {"batch_size": size}
    )
    assert events and 1200 <= events[0].details["detected_step_seq"], events
    assert mon.unsupported() == {}
    single = checks.DriftMonitor({"decode": _calibration(True)})
    assert [e for i, r in enumerate(resid) for e in single.update(i, "decode", float(r), float(i))]
    assert single.unsupported() == {}


def test_strata_seen_only_thinly_are_no_reason_to_hold_a_shift_back():
    """Design r32: traffic spread over many compositions leaves most strata thin (fewer than
    ``MIN_STRATUM`` steps each side), not unseen; a lasting shift there is judged as without
    strata and is an alarm (r31 held a 20 % slowdown back this way on CI's synthetic engine)."""
    c = AlarmConfirmation(steps=50, allowance_z=1.0, lag=20, stratify=True)
    keys = [stratum(1 + i % 8, 500 * (1 + i % 9)) for i in range(72)]  # 72 strata, one step each
    for k in keys * 2:
        c.observe(0.0, 0.0, key=k)
    c.open("page_hinkley", "up", {"step_seq": 144})
    done = [c.observe(2.0, 0.0, key=keys[i]) for i in range(50)]
    p = done[-1][0]
    assert p.strata_shift_z is None and p.confirmed and not p.unsupported


# Design r34: batches of 16 and 17 share r31's quarter-octave stratum (14-19) but run at CUDA
# graphs of 16 and 24; the model, smooth in the batch, is 4 % off between them.
AT_16, AT_17 = (16.0, 40000.0), (17.0, 40000.0)


def _graph_monitor(
    graph: bool, phases: list, pair: tuple = (AT_16, AT_17), octaves: bool = False, fallback: bool = False
) -> tuple:
    OFFSET.update({pair[0]: 0.0, pair[1]: -0.04})
    try:
        size, kv, resid = _traffic(phases)
        cs, ck, cr = _traffic([(pair[0], 200, 0.0), (pair[1], 200, 0.0)], seed=9)
    finally:
        del OFFSET[pair[0]], OFFSET[pair[1]]
    return _monitor(
        True, size, kv, resid, window=(cs, ck, cr), graph=graph, octaves=octaves, fallback=fallback
    )


def test_a_mix_moving_across_a_cuda_graph_edge_is_dismissed_with_graph_strata():
    assert stratum(*AT_16) == stratum(*AT_17) and stratum(*AT_16, True) != stratum(*AT_17, True)
    mix = [(AT_16, 400, 0.0), (AT_17, 400, 0.0)] * 4
    assert _graph_monitor(False, mix)[1], "in one r31 stratum the move is an alarm (H30-swing-long)"
    mon, events = _graph_monitor(True, mix)
    conf = mon.state()["classes"]["decode"]["confirmation"]
    assert events == [] and conf["dismissed_strata"] >= 1 and conf["unsupported"] == 0, str(conf)


def test_a_slower_engine_is_still_confirmed_with_graph_strata():
    phases = [(AT_16, 400, 0.0), (AT_17, 400, 0.0)] * 3 + [(AT_16, 400, 0.05), (AT_17, 400, 0.05)] * 2
    mon, events = _graph_monitor(True, phases)
    assert events, mon.state()["classes"]["decode"]["confirmation"]
    first = min(events, key=lambda e: e.step_seq)
    assert 2400 <= first.details["detected_step_seq"] and first.step_seq < 2400 + 800, first
    assert abs(first.details["strata_lasting_shift"] - 0.05) < 0.015, first.details
    cal = dataclasses.replace(_calibration(True), graph_strata=True)
    assert checks.DriftCalibration.from_dict(cal.to_dict()).graph_strata is True


# Design r37: batches of 10 and 14 both run at the CUDA graph of 16, so the engine's cost is
# flat between them while the model's grows with the batch: the model is 4 % off between them
# (F34-step8's healthy engine paged on such a move under r34).
AT_10, AT_14 = (10.0, 30000.0), (14.0, 30000.0)


def test_a_mix_moving_inside_one_cuda_graph_is_dismissed_with_octave_strata():
    assert stratum(*AT_10, True) == stratum(*AT_14, True)
    assert stratum(*AT_10, True, True) != stratum(*AT_14, True, True)
    mix = [(AT_10, 400, 0.0), (AT_14, 400, 0.0)] * 4
    pair = (AT_10, AT_14)
    assert _graph_monitor(True, mix, pair)[1], "in one r34 stratum the move is an alarm (F34-step8)"
    mon, events = _graph_monitor(True, mix, pair, octaves=True)
    conf = mon.state()["classes"]["decode"]["confirmation"]
    assert events == [] and conf["dismissed_strata"] >= 1 and conf["unsupported"] == 0, str(conf)


def test_octave_strata_still_keep_a_cuda_graph_edge_apart_and_confirm_a_slower_engine():
    mix = [(AT_16, 400, 0.0), (AT_17, 400, 0.0)] * 4
    assert _graph_monitor(True, mix, octaves=True)[1] == [], "r34's edge stays cut under r37"
    phases = [(AT_10, 400, 0.0), (AT_14, 400, 0.0)] * 3 + [(AT_10, 400, 0.05), (AT_14, 400, 0.05)] * 2
    mon, events = _graph_monitor(True, phases, (AT_10, AT_14), octaves=True)
    assert events, mon.state()["classes"]["decode"]["confirmation"]
    first = min(events, key=lambda e: e.step_seq)
    assert 2400 <= first.details["detected_step_seq"] and first.step_seq < 2400 + 800, first
    assert abs(first.details["strata_lasting_shift"] - 0.05) < 0.015, first.details
    cal = dataclasses.replace(_calibration(True), graph_strata=True, octave_strata=True)
    assert checks.DriftCalibration.from_dict(cal.to_dict()).octave_strata is True


# Design r38: batches of 10 and 12 run at the CUDA graph of 16 (one r34 stratum, two of r37's),
# and the model errs alike at both; at 17 (the graph of 24) it is 6 % low.  The calibration
# window held 10 and 17; then the mix moves wholly to 12, which r37's strata never saw (H35-swing-
# long's +7.2 % decode shift at 409,700 under r37 in small: unsupported, a blind class, a re-fit).
AT_12 = (12.0, 30000.0)


def _r38_monitor(phases: list, fallback: bool) -> tuple:
    offsets = {AT_10: 0.0, AT_12: 0.0, AT_17: -0.06}
    OFFSET.update(offsets)
    try:
        size, kv, resid = _traffic(phases)
        window = _traffic([(AT_10, 200, 0.0), (AT_17, 200, 0.0)], seed=9)
    finally:
        for k in offsets:
            del OFFSET[k]
    return _monitor(True, size, kv, resid, window=window, graph=True, octaves=True, fallback=fallback)


def test_r37_calls_a_move_into_an_unseen_octave_of_a_seen_graph_unsupported():
    assert stratum(*AT_10, True) == stratum(*AT_12, True)
    assert stratum(*AT_10, True, True) != stratum(*AT_12, True, True)
    mon, events = _r38_monitor([(AT_10, 400, 0.0), (AT_17, 400, 0.0)] * 2 + [(AT_12, 1200, 0.0)], False)
    assert events == [] and "decode" in mon.unsupported(), mon.state()["classes"]["decode"]["confirmation"]


def test_r38_judges_that_move_within_the_graph_and_dismisses_it():
    mon, events = _r38_monitor([(AT_10, 400, 0.0), (AT_17, 400, 0.0)] * 2 + [(AT_12, 1200, 0.0)], True)
    conf = mon.state()["classes"]["decode"]["confirmation"]
    assert events == [] and mon.unsupported() == {}, conf
    assert conf["judged_coarse"] >= 1 and conf["dismissed_strata"] >= 1 and conf["unsupported"] == 0, conf


def test_r38_still_confirms_a_slower_engine_there_where_r37_calls_it_unsupported():
    """A 5 % slowdown arriving with the move to 12: r37's strata never saw 12, so r37 holds the
    shift back as unsupported; r38 measures it against batches of 10 in the same graph."""
    phases = [(AT_10, 400, 0.0), (AT_17, 400, 0.0)] * 2 + [(AT_12, 1200, 0.05)]
    mon, events = _r38_monitor(phases, True)
    assert events, mon.state()["classes"]["decode"]["confirmation"]
    first = min(events, key=lambda e: e.step_seq)
    assert 1600 <= first.details["detected_step_seq"] and first.step_seq < 1600 + 800, first
    assert first.details["strata"] == "coarse", first.details
    assert abs(first.details["strata_lasting_shift"] - 0.05) < 0.015, first.details
    old, old_events = _r38_monitor(phases, False)
    assert old_events == [] and "decode" in old.unsupported()


def test_r38_leaves_a_window_r37_strata_cover_to_them():
    """F34-step8's case (a mix moving between 10 and 14 inside the graph of 16, the model 4 %
    apart there): r37's strata cover the window, so r38 judges it as r37 does and dismisses it."""
    mix = [(AT_10, 400, 0.0), (AT_14, 400, 0.0)] * 4
    mon, events = _graph_monitor(True, mix, (AT_10, AT_14), octaves=True, fallback=True)
    conf = mon.state()["classes"]["decode"]["confirmation"]
    assert events == [] and conf["dismissed_strata"] >= 1 and conf["judged_coarse"] == 0, conf
    cal = dataclasses.replace(_calibration(True), graph_strata=True, octave_strata=True, strata_fallback=True)
    assert checks.DriftCalibration.from_dict(cal.to_dict()).coarse_strata is True
    assert cal.confirmation().coarser is not None
    assert dataclasses.replace(cal, octave_strata=False).confirmation().coarser is None


AT_30 = (30.0, 30000.0)  # a composition neither strata level of the window below holds


def _r41_monitor(offset: float, seen_before: int, rare: bool) -> tuple:
    """Traffic at 10 and 17 (the model right there), ``seen_before`` steps at 30 among them, then
    the mix moves to 30, where the model errs by ``offset``: no slowdown anywhere."""
    OFFSET[AT_30] = offset
    try:
        phases = [(AT_10, 400, 0.0), (AT_17, 400, 0.0), (AT_30, seen_before, 0.0)]
        phases += [(AT_10, 400, 0.0), (AT_17, 400, 0.0), (AT_30, 1200, 0.0)]
        size, kv, resid = _traffic([p for p in phases if p[1]])
        window = _traffic([(AT_10, 200, 0.0), (AT_17, 200, 0.0)], seed=9)
    finally:
        del OFFSET[AT_30]
    return _monitor(True, size, kv, resid, window=window, graph=True, octaves=True, fallback=True, rare=rare)


def test_r41_holds_a_small_shift_in_a_rarely_seen_composition_unsupported():
    """H38-steady-12k's case: the mix moves to a composition seen a few times before (too few for
    any strata to judge), where the model errs by 1.5 allowances.  r38 judges the window without
    strata and pages; r41 holds it unsupported (INCONCLUSIVE until a re-fit)."""
    _, r38 = _r41_monitor(-0.03, 5, rare=False)
    assert r38, "r38: a lasting shift judged without strata, in compositions seen: an alarm"
    mon, r41 = _r41_monitor(-0.03, 5, rare=True)
    assert r41 == [] and "decode" in mon.unsupported(), mon.state()["classes"]["decode"]["confirmation"]


def test_r41_raises_a_large_shift_even_in_a_composition_never_seen():
    """2.5 allowances in a composition never seen before the move: r41 raises it (a shift that
    large is taken as drift wherever it lies), judged without strata."""
    mon, r41 = _r41_monitor(-0.05, 0, rare=True)
    assert r41 and r41[0].details.get("strata") is None, r41
    assert mon.unsupported() == {} and mon.state()["classes"]["decode"]["confirmation"]["unsupported"] == 0
    cal = dataclasses.replace(_calibration(True), graph_strata=True, octave_strata=True, strata_fallback=True)
    assert cal.confirmation().rare is None
    assert dataclasses.replace(cal, rare_unsupported=True).confirmation().rare is not None
