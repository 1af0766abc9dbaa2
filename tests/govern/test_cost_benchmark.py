"""``benchmarks/govern_cost.py`` measures what it says, on a CI-sized run of its trace workload.

The figures themselves are the benchmark's (``docs/admission.md``); here: the trace workload
really carries the Azure traces' lengths and churns, and the net figure compares like with
like (the FCFS queue on the untouched scheduler answers about as many calls as the governor's).
"""

from __future__ import annotations

import threading

import pytest

from benchmarks import govern_cost

pytestmark = pytest.mark.usefixtures("vllm")


def test_trace_lengths_are_the_azure_traces():
    pairs = govern_cost._trace_lengths(limit=500)
    prompts = [p for p, _ in pairs]
    outputs = [o for _, o in pairs]
    assert len(pairs) == 1000
    assert max(prompts) == govern_cost.TRACE_MAX_PROMPT  # long prompts: chunked prefills
    assert 20 < sum(outputs) / len(outputs) < govern_cost.TRACE_MAX_OUTPUT


def test_trace_workload_churns_and_nets_like_for_like():
    r = govern_cost.measure(32, "trace", blocks=2, block_steps=30, warmup=20)
    assert r["arrivals_per_step"] > 0 and r["requests_made"] > 32
    gov_queue_calls = r["governor_calls_per_step"] - 1  # less its on_schedule
    assert abs(gov_queue_calls - r["fcfs_calls_per_step"]) <= 0.25 * r["fcfs_calls_per_step"]
    assert r["governor_cpu_us_per_step"] > 0 and r["fcfs_queue_us_per_step"] > 0
    # Charged on the charge thread, as the engine runs it: its CPU is counted apart, and the engine
    # thread's wait for a charge is measured (the GPU wait emulated gives the thread its turn).
    assert r["charge"] == "thread" and r["charge_thread_us_per_step"] > 0
    assert r["engine_wait_us_per_step"] >= 0 and r["gpu_wait_s"] > 0


def test_a_part_is_timed_alone_and_unwrapped_after():
    """``_time_part`` counts the calls of one method (or ``__bool__``, looked up on the type) over
    the stretch and leaves the object as it found it."""

    class Part:
        def work(self) -> int:
            return 1

        def __bool__(self) -> bool:
            return True

    class Engine:
        def __init__(self, obj: Part) -> None:
            self.obj = obj

        def steps(self, k: int) -> None:
            for _ in range(k):
                self.obj.work()
                self.obj.work()
                bool(self.obj)

    obj = Part()
    eng = Engine(obj)
    work = govern_cost._time_part(eng, obj, "work", 10, per_call=0.0)
    truth = govern_cost._time_part(eng, obj, "__bool__", 10, per_call=0.0)
    assert work["calls_per_step"] == 2.0 and truth["calls_per_step"] == 1.0
    assert work["us_per_step"] > 0 and abs(work["us_per_call"] - work["us_per_step"] / 2.0) <= 0.01
    assert "work" not in vars(obj) and type(obj) is Part


def test_breakdown_reaches_every_part_its_workload_takes():
    r = govern_cost.breakdown(32, "churn", steps=12, warmup=10)
    names = [p["part"] for p in r["parts"]]
    assert names == [f"{owner}.{name}" for owner, name, _ in govern_cost.PARTS]
    by = {p["part"]: p for p in r["parts"]}
    assert by["governor.on_schedule"]["calls_per_step"] == 1.0
    # Arrivals every step at 32 rows: the per-row pass charges them, and the queue admits them.
    assert by["governor._charge_by_pass"]["calls_per_step"] > 0 and r["arrivals_per_step"] > 0
    assert by["queue.add_request"]["calls_per_step"] > 0 and by["queue.pop_request"]["calls_per_step"] > 0
    assert [p["part"] for p in r["fcfs"]] == [f"fcfs.{m}" for m in govern_cost.FCFS_PARTS]
    assert all(p["calls_per_step"] > 0 for p in r["fcfs"])
    assert by["governor.order_victims"]["calls_per_step"] == 0  # vLLM's own victims on churn


def test_breakdown_times_the_victim_order_under_pressure():
    r = govern_cost.breakdown(32, "pressure", steps=6, warmup=4)
    by = {p["part"]: p for p in r["parts"]}
    assert by["governor.order_victims"]["calls_per_step"] == 1.0  # asked before every step


def test_engine_side_times_the_engine_threads_own_parts_with_the_charge_thread():
    """``--engine-side``: charged on the charge thread, the engine thread's parts are reached (a
    step submitted every step, handed over every ``hand_over_every`` steps once nothing reads a
    counter, the owed charge taken in through the queue's calls after each hand-over, the
    arrivals that waited in the inbox meanwhile), and none of the charge's own parts is among them."""
    steps = 32
    r = govern_cost.breakdown(32, "every-step", steps=steps, warmup=40, charge="thread")
    every = r["hand_over_every"]
    assert every == 16
    assert r["charge"] == "thread"
    names = [p["part"] for p in r["parts"]]
    assert names == [f"{owner}.{name}" for owner, name, _ in govern_cost.ENGINE_PARTS]
    by = {p["part"]: p for p in r["parts"]}
    calls = {part: round(p["calls_per_step"] * steps) for part, p in by.items()}
    assert calls["governor.on_schedule"] == steps
    # One arrival a step and nothing to read a counter: a hand-over every ``every`` steps (the
    # others deferred), settled by the first queue call after it; arrivals meanwhile go straight in.
    assert calls["charger.submit"] == steps // every and calls["charger.defer"] == steps - steps // every
    assert calls["queue._settle"] == calls["queue.admit_inbox"] == steps // every
    assert calls["queue.add_request"] == steps + calls["queue.admit_inbox"]  # the inbox's twice
    assert calls["queue._arrive"] > 0
    assert not {"governor._charge_by_pass", "roster.fold", "governor._charge_sums"} & set(by)


@pytest.mark.parametrize(
    ("argv", "code"), [(["--help"], 0), (["--bogus"], 2), (["--quick", "--breakdown"], 2)]
)
def test_flags_are_parsed_before_anything_runs(argv, code, monkeypatch):
    """``--help`` or a mistyped flag exits before a measurement: nothing stored is overwritten."""
    import benchmarks.admission

    monkeypatch.setattr(benchmarks.admission, "store_section", lambda *a, **k: pytest.fail("stored"))
    monkeypatch.setattr(govern_cost, "run", lambda **k: pytest.fail("ran"))
    with pytest.raises(SystemExit) as exc:
        govern_cost.main(argv)
    assert exc.value.code == code


def test_every_step_workload_has_one_arrival_and_one_completion_a_step():
    """The target's "arrivals and completions every step" read literally: staggered outputs keep
    it at one of each in every step, not on average over bursts."""
    from shadowd.govern.config import GovernConfig

    eng = govern_cost._engine(32, "every-step", GovernConfig(), 200)
    eng.steps(5)
    arrivals = []
    for _ in range(60):
        made = eng.made
        eng.steps(1)
        arrivals.append(eng.made - made)
    assert arrivals == [1] * 60
    r = govern_cost.measure(32, "every-step", blocks=2, block_steps=30, warmup=20)
    assert r["arrivals_per_step"] == 1.0 and r["workload"] == "every-step"


@pytest.mark.parametrize("follow", [False, True])
def test_wake_times_the_hand_over_alone_and_the_charge_thread_ends(follow):
    r = govern_cost.wake(0.2, wakes=20, follow=follow)
    assert r["wakes"] == 20 and r["busy_ms"] == 0.2
    assert r["charge_cpu"] == ("engine" if follow else "any")
    # One thread's CPU time within an interval cannot exceed the interval's wall time.
    assert 0 < r["submit_cpu_us"] <= r["submit_wall_us"] + 0.5
    assert 0 < r["put_unwaited_cpu_us"]
    assert not any(t.name == "shadowd-bench-wake" for t in threading.enumerate())


def test_hand_over_runs_each_value_on_its_own_engine_and_applies_the_rule():
    """``--hand-over``: one governed engine per value on the same arrivals; handing every step
    over keeps none, more steps per hand-over keep most (one arrival a step reads no counter),
    and the choice is the rule's, read from the rows."""
    r = govern_cost.hand_over(32, "every-step", (1, 16), blocks=2, block_steps=32, warmup=40)
    by = {v["hand_over_every"]: v for v in r["values"]}
    assert by[1]["steps_deferred_pct"] == 0 and by[16]["steps_deferred_pct"] > 80
    assert all(v["engine_wait_us_per_step"] >= 0 and v["charge_thread_us_per_step"] > 0 for v in by.values())
    assert r["choice"] == govern_cost.hand_over_choice(r["values"])


def test_the_hand_over_rule_breaks_near_ties_towards_fewer_steps_kept():
    rows = [{"hand_over_every": v, "engine_us_per_step": us} for v, us in ((4, 19.0), (16, 18.2), (32, 18.0))]
    assert govern_cost.hand_over_choice(rows) == 16  # 18.2 is within the tie of 18.0
    rows[1]["engine_us_per_step"] = 18.0 + govern_cost.HAND_OVER_TIE_US + 0.01
    assert govern_cost.hand_over_choice(rows) == 32
