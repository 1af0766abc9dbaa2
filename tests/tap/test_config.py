"""The tap's environment settings: bad values fall back with a clear warning, never an error."""

from __future__ import annotations

import logging

import pytest

from shadowd.tap.config import DEFAULT_HWM, HWM_RANGE, TapConfig


@pytest.mark.parametrize(
    ("raw", "want", "warns"),
    [
        (None, DEFAULT_HWM, False),
        ("", DEFAULT_HWM, False),
        ("200000", 200000, False),
        ("lots", DEFAULT_HWM, True),
        ("0", HWM_RANGE[0], True),
        ("-5", HWM_RANGE[0], True),
        ("99999999999", HWM_RANGE[1], True),
    ],
)
def test_hwm_bounded(raw, want, warns, caplog):
    env = {} if raw is None else {"SHADOWD_TAP_HWM": raw}
    with caplog.at_level(logging.WARNING, logger="shadowd.tap"):
        assert TapConfig.from_env(env=env).hwm == want
    assert bool([r for r in caplog.records if "SHADOWD_TAP_HWM" in r.getMessage()]) == warns
