"""A demo run is the same run whatever the receiver's timing (``shadowd.demo.step_slices``).

Before the demo cut ingest at fixed steps, the step a model came into force at depended on where
the receiver's timed batches ended, and so did every later decision that counts its steps (a
re-fit, first of all): the same 1,200-step run installed its warm-up model at step 756 with the
receiver's default batches and at 723 with batches of three frames; cut at fixed steps, at 769 in
both.
"""

from __future__ import annotations

import random
from types import SimpleNamespace

import duckdb
import pytest

from shadowd.daemon import receiver
from shadowd.demo.scenario import run_demo
from shadowd.demo.spec import DemoSpec
from shadowd.demo.step_slices import StepSlices


def _undated(records):
    """Without wall-clock times: a demo's simulated clock starts at the wall clock's now."""
    return [{k: v for k, v in r.items() if k not in ("at_s", "ts", "resolved_at")} for r in records]


def _frames(seqs):
    return [SimpleNamespace(step_seq=s) for s in seqs]


def _slices(parts, cuts, every=8):
    """Feed ``parts`` (the receiver's batches) with a cut after the listed part indices."""
    got: list[list[int]] = []
    s = StepSlices(lambda frames: got.append([f.step_seq for f in frames]), every=every)
    for i, part in enumerate(parts):
        s(_frames(part))
        if i in cuts:
            s.cut(cuts[i])
    return got


def _split(seqs, rng):
    edges = sorted(rng.sample(range(1, len(seqs)), rng.randint(0, len(seqs) // 3)))
    return [seqs[a:b] for a, b in zip([0, *edges], [*edges, len(seqs)])]


def test_the_slices_do_not_depend_on_how_the_frames_were_batched():
    seqs = list(range(1, 101))
    rng = random.Random(3)
    runs = []
    for _ in range(20):
        # the engine stops at steps 30 and 100 (a gate evaluation each); the receiver's batches
        # end anywhere before
        first = _split(seqs[:30], rng)
        parts = first + _split(seqs[30:], rng)
        runs.append(_slices(parts, {len(first) - 1: 30, len(parts) - 1: 100}))
    assert all(r == runs[0] for r in runs)
    assert [len(x) for x in runs[0]] == [8, 8, 8, 6, 2, 8, 8, 8, 8, 8, 8, 8, 8, 4]
    assert sum(runs[0], []) == seqs  # every frame once, in order


def test_a_cut_waits_for_its_last_frame_and_a_flush_does_not():
    got = _slices([[1, 2, 3]], {0: 5})
    assert got == []  # steps 4 and 5 not here yet
    got2: list[list[int]] = []
    s = StepSlices(lambda frames: got2.append([f.step_seq for f in frames]), every=8)
    s(_frames([1, 2, 3]))
    s.cut(5)
    s.flush()  # the tap dropped 4 and 5: what is held goes
    assert got2 == [[1, 2, 3]]
    s(_frames([6, 7, 8, 9]))  # a frame past the boundary closes its slice
    assert got2 == [[1, 2, 3], [6, 7, 8]]


def test_a_failing_consumer_is_counted_and_ingest_goes_on():
    calls = []

    def consume(frames):
        calls.append(len(frames))
        if len(calls) == 1:
            raise RuntimeError("storage down")

    s = StepSlices(consume, every=2)
    s(_frames([1, 2, 3, 4]))
    assert calls == [2, 2] and s.faults == 1


@pytest.mark.usefixtures("vllm")
def test_the_same_demo_is_the_same_run_with_any_receiver_batching(tmp_path, monkeypatch):
    def run(name: str, batch_frames: int | None):
        if batch_frames is not None:
            init = receiver.FrameReceiver.__init__
            monkeypatch.setattr(
                receiver.FrameReceiver,
                "__init__",
                lambda self, *a, **k: init(self, *a, **{**k, "batch_frames": batch_frames}),
            )
        db = str(tmp_path / f"{name}.duckdb")
        result = run_demo(DemoSpec.build(db_path=db, steps=1200, seed=5))
        monkeypatch.undo()
        with duckdb.connect(db, read_only=True) as con:
            spans = con.execute(
                "SELECT model_version, min(step_seq), count(*) FROM steps GROUP BY 1 ORDER BY 2"
            ).fetchall()
        history = [(h["step"], h["verdict"], h.get("causes")) for h in result["gate_history"]]
        refits, events = _undated(result["refits"]), _undated(result["drift_events"])
        return spans, history, refits, events, result["frames_dropped"]

    default, threes = run("default", None), run("threes", 3)
    assert default[4] == threes[4] == 0  # no frame dropped: the slices are fixed by the run alone
    assert len(default[0]) >= 2, default[0]  # a model came into force
    assert default[:4] == threes[:4]
