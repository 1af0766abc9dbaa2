"""Governor settings from the environment and tenant files: bounded, with clear errors; the plugin
is off by default and governs whichever class vLLM picked when switched on."""

from __future__ import annotations

import json

import pytest

from shadowd.govern.config import MAX_TENANTS, GovernConfig, TenantPolicy


def test_off_by_default_and_modes():
    assert not GovernConfig.from_env({}).enabled
    assert GovernConfig.from_env({"SHADOWD_GOVERN": "1"}).mode == "on"
    assert GovernConfig.from_env({"SHADOWD_GOVERN": "VTC"}).mode == "vtc"
    with pytest.raises(ValueError, match="SHADOWD_GOVERN"):
        GovernConfig.from_env({"SHADOWD_GOVERN": "maybe"})


def test_preemption_choice_is_off_by_default_and_checked():
    assert GovernConfig.from_env({}).preempt == "vllm"
    assert GovernConfig.from_env({"SHADOWD_GOVERN_PREEMPT": " Over-Served "}).preempt == "over-served"
    with pytest.raises(ValueError, match="SHADOWD_GOVERN_PREEMPT='newest'"):
        GovernConfig.from_env({"SHADOWD_GOVERN_PREEMPT": "newest"})


def test_the_engine_charges_on_a_thread_unless_told_inline():
    assert GovernConfig.from_env({}).charge == "thread"  # the engine's default
    assert GovernConfig.from_env({"SHADOWD_GOVERN_CHARGE": " Inline "}).charge == "inline"
    assert GovernConfig().charge == "inline"  # built in code (the replay, tests): inline
    with pytest.raises(ValueError, match="SHADOWD_GOVERN_CHARGE"):
        GovernConfig.from_env({"SHADOWD_GOVERN_CHARGE": "later"})


def test_hand_overs_carry_up_to_sixteen_steps_unless_told_and_the_bound_is_checked():
    assert GovernConfig.from_env({}).hand_over_every == 16 == GovernConfig().hand_over_every
    assert GovernConfig.from_env({"SHADOWD_GOVERN_HAND_OVER_EVERY": " 1 "}).hand_over_every == 1
    assert GovernConfig.from_env({"SHADOWD_GOVERN_HAND_OVER_EVERY": "64"}).hand_over_every == 64
    for bad in ("0", "65", "-3", "2.5", "many"):
        with pytest.raises(ValueError, match="SHADOWD_GOVERN_HAND_OVER_EVERY"):
            GovernConfig.from_env({"SHADOWD_GOVERN_HAND_OVER_EVERY": bad})
    with pytest.raises(ValueError, match="whole number of steps"):
        GovernConfig(hand_over_every=True)


def test_inline_and_file_tenant_policies(tmp_path):
    p = TenantPolicy.parse("acme=2, beta=1:500")
    assert p.weight("acme") == 2 and p.weight("zeta") == 1 and p.caps_ms_per_s == {"beta": 500.0}
    f = tmp_path / "tenants.json"
    f.write_text(json.dumps({"weights": {"acme": 3}, "caps_ms_per_s": {"acme": 100}, "default_weight": 0.5}))
    q = TenantPolicy.parse(str(f))
    assert q.weight("acme") == 3 and q.weight("other") == 0.5 and q.caps_ms_per_s["acme"] == 100


@pytest.mark.parametrize(
    ("text", "msg"),
    [
        ("acme=0", "must be > 0"),
        ("acme=nan", "must be > 0"),
        ("acme=x", "not a number"),
        ("=2", "tenant name"),
        ("a" * 65 + "=1", "tenant name"),
        ("acme=1:-5", "must be > 0"),
        (",".join(f"t{i}=1" for i in range(MAX_TENANTS + 1)), "at most"),
    ],
)
def test_bad_inline_policies_are_refused(text, msg):
    with pytest.raises(ValueError, match=msg):
        TenantPolicy.parse(text)


def test_bad_files_are_refused(tmp_path):
    with pytest.raises(ValueError, match="tenant policy"):
        TenantPolicy.parse(str(tmp_path / "missing.json"))
    big = tmp_path / "big.json"
    big.write_text(" " * 70000)
    with pytest.raises(ValueError, match="bytes"):
        TenantPolicy.parse(str(big))
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps({"weights": ["acme"]}))
    with pytest.raises(ValueError, match="must be an object"):
        TenantPolicy.parse(str(bad))


@pytest.mark.usefixtures("vllm")
def test_plugin_governs_the_class_vllm_picks_only_when_switched_on(monkeypatch):
    from vllm.config.scheduler import SchedulerConfig
    from vllm.v1.core.sched.async_scheduler import AsyncScheduler

    from shadowd.govern import plugin
    from shadowd.govern.vllm import GovernMixin

    original = SchedulerConfig.get_scheduler_cls
    monkeypatch.setattr(SchedulerConfig, "get_scheduler_cls", original)
    monkeypatch.delenv("SHADOWD_GOVERN", raising=False)
    plugin.register()
    assert SchedulerConfig.get_scheduler_cls is original
    monkeypatch.setenv("SHADOWD_GOVERN", "on")
    monkeypatch.setattr(SchedulerConfig, "get_scheduler_cls", lambda self: AsyncScheduler)
    plugin.register()
    cls = SchedulerConfig.get_scheduler_cls(None)
    assert issubclass(cls, GovernMixin) and issubclass(cls, AsyncScheduler)
    plugin.register()  # idempotent
    assert SchedulerConfig.get_scheduler_cls(None) is cls
