"""The held-out share misses of docs/accuracy.md (``benchmarks/share_misses.py``): every tenant
over the 3 % target in a study's own runs, read against the truth's own Monte Carlo error.

A miss within two standard errors of the target may be the truth's sampling, not the model; a
study stored before the error was measured must say so (a dash), not count as either; a window
with one tenant tests nothing; a cross-regime score is not a run's own.
"""

from __future__ import annotations

from benchmarks.share_misses import beyond_noise, misses, section, summary


def _tenant(att: float, shap: float, se: float | None = None) -> dict:
    v = {"attributed_ms": att, "shapley_ms": shap, "error": abs(att - shap) / shap}
    if se is not None:
        v["shapley_se_ms"] = se
    return v


def _run(name: str, per: dict, sampled: int | None = None) -> dict:
    block = {"per_tenant": per}
    shares = {
        "llmvisor": block,
        "llmvisor_policies": {"equal": block, "pro_rata": {"per_tenant": per}},
        "token_baseline": {"per_tenant": per},
        "tenants_sampled": len(per) if sampled is None else sampled,
    }
    return {
        "case": {"name": name, "steps": 1000},
        "shares": {"multi_request": shares},
        "noise_free": {"shares": {"llmvisor": block}},
        "coefficients": {
            "breakpoint_tokens": None,
            "segments": [{"beta_ms": 24.0, "prefill": {"p": 0.0}}, {"beta_ms": 24.0, "prefill": {"p": 0.0}}],
        },
        "regime": {"simulated_s": 27.0, "tokens_per_step": {"p50": 2048, "p90": 2048, "p99": 2048}},
    }


DOC = {
    "held_out": {  # held-out 2 is stored under this key
        "set": "held_out_2",
        "runs": [
            # c: 58 % off, the truth's error 0.2 %: the model's
            _run("x/saturated", {"b": _tenant(4029.0, 3997.0, 8.0), "c": _tenant(23.0, 55.0, 0.1)}),
            # a: 4 % off with an error of 1 % of its sum: within two of the target
            _run("x/light", {"a": _tenant(104.0, 100.0, 1.0), "b": _tenant(900.0, 901.0, 2.0)}),
            # one tenant sampled: not a test
            _run("x/one", {"a": _tenant(150.0, 100.0, 1.0)}, sampled=1),
        ],
    },
    "held_out_4": {
        "set": "held_out_4",
        "runs": [_run("y/saturated", {"a": _tenant(110.0, 100.0), "b": _tenant(5.0, 5.0)})],
    },
}


def test_a_miss_is_read_against_the_truths_error():
    assert beyond_noise(_tenant(23.0, 55.0, 0.1)) is True
    assert beyond_noise(_tenant(104.0, 100.0, 1.0)) is False
    assert beyond_noise(_tenant(110.0, 100.0)) is None  # stored before the error was measured


def test_every_tenant_over_the_target_in_a_studys_own_runs():
    found = {(m["set"], m["run"], m["tenant"]): m for m in misses(DOC)}
    assert set(found) == {
        ("held_out_2", "x/saturated", "c"),
        ("held_out_2", "x/light", "a"),
        ("held_out_4", "y/saturated", "a"),
    }
    c = found[("held_out_2", "x/saturated", "c")]
    assert round(c["tenant_share"], 4) == round(55.0 / 4052.0, 4) and c["mean_step_ms"] == 27.0
    assert [m["beyond_noise"] for m in found.values()] == [True, False, None]


def test_the_summary_counts_only_measured_misses_and_the_table_shows_each():
    assert (
        "Of the 2 tenants over the target where the truth's Monte Carlo error was measured, 1 is"
        in summary(DOC)
    )
    text = "\n".join(section(DOC))
    assert "| held-out-2 | x/saturated | c | 1.4% | 58.2% | 0.18% | yes |" in text
    assert "| held-out-2 | x/light | a | 10.0% | 4.0% | 1.00% | no |" in text
    assert "| held-out-4 | y/saturated | a |" in text and "| – | – |" in text
    assert "24.00 / 24.00 vs 27.0 | 0 / 0 | 2048 / 2048 / 2048 |" in text
    assert (
        "Misses beyond the truth's noise, 1: 1 miss on the noiseless engine too (the model's error, "
        "not the jitter); 1 lie in runs whose scored steps nearly all carried one token count"
    ) in text
    assert "1 are of tenants with under 10% of the time" in text
    assert "within the target under `pro_rata` in 0 and under the token split in 0." in text
    assert summary({}) == "" and section({}) == []
