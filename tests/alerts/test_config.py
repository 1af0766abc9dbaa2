"""Config validation names the key and the fix; a valid config builds a working notifier."""

from __future__ import annotations

import tomllib

import pytest
from alert_http_stub import Reply, StubServer

from alerts import ConfigError, build_notifier, catalog, validate
from alerts.sinks import AlertmanagerSink, PagerDutySink, SlackSink

EXAMPLE = """
[alerts]
labels = { service = "shadowd" }

[alerts.sinks.am]
type = "alertmanager"
urls = ["http://127.0.0.1:9093", "http://127.0.0.1:9095"]

[alerts.sinks.pd]
type = "pagerduty"
routing_key = "0123456789abcdef0123456789abcdef"
max_attempts = 8

[alerts.sinks.ops]
type = "slack"
webhook_url = "https://hooks.slack.com/services/T/B/x"

[alerts.sinks.journal]
type = "log"

[[alerts.routes]]
match = { severity = "page" }
sinks = ["pd", "am"]
continue = true

[[alerts.routes]]
sinks = ["ops", "journal"]
"""


def problems(config: dict) -> list[str]:
    with pytest.raises(ConfigError) as caught:
        validate(config)
    return caught.value.problems


def test_the_documented_toml_example_validates_and_fills_defaults():
    config = tomllib.loads(EXAMPLE)["alerts"]
    settings = validate(config)
    assert settings["am"]["resend_interval_s"] == 60.0 and settings["am"]["ends_at_horizon_s"] == 300.0
    assert settings["pd"]["max_attempts"] == 8 and settings["pd"]["resend_interval_s"] == 3600.0
    assert settings["ops"]["resend_interval_s"] == 4 * 3600.0
    assert settings["journal"]["queue_size"] == 1000


def test_the_module_docstring_example_is_this_example():
    import alerts.config

    documented = alerts.config.__doc__.split("::", 1)[1].split("Without ``routes``")[0]
    validate(tomllib.loads(documented.replace("<Events API v2 integration key>", "k"))["alerts"])


def test_build_notifier_wires_types_routes_and_labels():
    notifier = build_notifier(tomllib.loads(EXAMPLE)["alerts"])
    try:
        kinds = {name: type(box.sink) for name, box in notifier._outboxes.items()}
        assert kinds["am"] is AlertmanagerSink and kinds["pd"] is PagerDutySink and kinds["ops"] is SlackSink
        assert notifier.router.sinks_for(catalog.gate_left_go("NO_GO", platform="p")) == (
            "pd",
            "am",
            "ops",
            "journal",
        )
        assert notifier.router.sinks_for(catalog.storage_error(operation="append", error="x")) == (
            "ops",
            "journal",
        )
        assert notifier.labels == {"service": "shadowd"}
    finally:
        notifier.close(drain_s=0)


def test_a_built_notifier_delivers_with_configured_backoff():
    with StubServer([Reply(503), Reply(202)]) as pagerduty:
        notifier = build_notifier(
            {
                "sinks": {
                    "pd": {
                        "type": "pagerduty",
                        "routing_key": "k",
                        "url": pagerduty.url,
                        "backoff_initial_s": 0.01,
                        "backoff_max_s": 0.02,
                    }
                },
            }
        )
        notifier.fire(catalog.calibration_missing(platform="p"))
        assert notifier.flush(timeout=10)
        notifier.close()
        assert len(pagerduty.received) == 2
    assert notifier.counters()["pd"]["sent"] == 1


def test_every_problem_is_reported_at_once_with_key_and_fix():
    found = problems(
        {
            "sink": {},
            "labels": {"alertname": "x", "team": 3},
            "sinks": {
                "pd": {"type": "pagerduty", "timeout": 5},
                "am": {"type": "alertmanager", "urls": ["127.0.0.1:9093"], "resend_interval_s": 600},
                "x": {"type": "email"},
                "log": {"type": "log", "queue_size": True, "backoff_initial_s": 10, "backoff_max_s": 1},
            },
            "routes": [
                {"match": {"severity": ["page", "critical"]}, "sinks": ["pd", "pagerduty"], "contine": True},
                {"sinks": []},
            ],
        }
    )
    expected = [
        "alerts.sink: unknown key; did you mean 'sinks'?",
        "alerts.labels.alertname: label names must match",
        "alerts.labels.team: label values must be strings; quote it",
        "alerts.sinks.pd.timeout: unknown key; did you mean 'timeout_s'?",
        "alerts.sinks.pd.routing_key: missing; set it to the Events API v2 integration key",
        "alerts.sinks.am.urls: must start with http:// or https:// and name a host (got '127.0.0.1:9093')",
        "alerts.sinks.am.resend_interval_s: Alertmanager expires alerts at endsAt",
        "alerts.sinks.x.type: 'email' is unknown; use one of alertmanager, log, pagerduty, slack, webhook",
        "alerts.sinks.log.queue_size: expected int, got bool",
        "alerts.sinks.log.backoff_max_s: must be >= backoff_initial_s",
        "alerts.routes[0].contine: unknown key; did you mean 'continue'?",
        "alerts.routes[0].match.severity: 'critical' is not a severity; use page, warning or info",
        "alerts.routes[0].sinks: 'pagerduty' is not defined; define [alerts.sinks.pagerduty] or use one of",
        "alerts.routes[1].sinks: expected a non-empty list of sink names",
    ]
    for prefix in expected:
        assert any(p.startswith(prefix) for p in found), (prefix, found)
    assert len(found) == len(expected), found


@pytest.mark.parametrize(
    ("config", "message"),
    [
        ({}, "alerts.sinks: define at least one sink"),
        ({"sinks": {"j": "log"}}, "alerts.sinks.j: expected a table with a type key"),
        ({"sinks": {"j": {}}}, "alerts.sinks.j.type: missing; use one of"),
        (
            {"sinks": {"j": {"type": "log"}}, "routes": {"sinks": ["j"]}},
            "alerts.routes: expected an array of tables",
        ),
        (
            {"sinks": {"s": {"type": "slack", "webhook_url": "https://h/x", "timeout_s": 0}}},
            "alerts.sinks.s.timeout_s: must be > 0",
        ),
        (
            {"sinks": {"p": {"type": "pagerduty", "routing_key": "k", "severities": {"page": "sev1"}}}},
            "alerts.sinks.p.severities: page = 'sev1': PagerDuty accepts critical, error, warning, info",
        ),
        (
            {"sinks": {"w": {"type": "webhook", "url": "http://h", "headers": {"X-N": 1}}}},
            "alerts.sinks.w.headers: header values must be strings",
        ),
        (
            {"sinks": {"a": {"type": "alertmanager", "urls": []}}},
            "alerts.sinks.a.urls: must list at least one URL",
        ),
        (
            {"sinks": {"a": {"type": "alertmanager", "urls": ["http://h"], "resend_interval_s": 0}}},
            "alerts.sinks.a.resend_interval_s: Alertmanager expires alerts at endsAt",
        ),
    ],
)
def test_single_problems(config, message):
    found = problems(config)
    assert len(found) == 1 and found[0].startswith(message), found


def test_numbers_written_as_integers_are_accepted_for_seconds():
    settings = validate({"sinks": {"j": {"type": "log", "resend_interval_s": 0, "backoff_max_s": 30}}})
    assert settings["j"]["resend_interval_s"] == 0 and settings["j"]["backoff_max_s"] == 30


def test_the_error_message_lists_problems_under_a_header_and_a_custom_prefix():
    with pytest.raises(ConfigError) as caught:
        validate({"sinks": {}}, prefix="shadowd.alerts")
    assert str(caught.value) == (
        "invalid alert configuration:\n"
        "  - shadowd.alerts.sinks: define at least one sink, e.g. [shadowd.alerts.sinks.journal] "
        'with type = "log"'
    )


def test_secrets_come_from_systemd_credentials(tmp_path, monkeypatch):
    """``"credential:NAME"`` reads $CREDENTIALS_DIRECTORY/NAME (systemd's LoadCredential=): the
    secret never has to sit in the group-readable TOML."""
    with StubServer([Reply(200)]) as hook:
        (tmp_path / "hook-url").write_text(hook.url + "/secret-path\n")
        monkeypatch.setenv("CREDENTIALS_DIRECTORY", str(tmp_path))
        notifier = build_notifier({"sinks": {"hook": {"type": "webhook", "url": "credential:hook-url"}}})
        notifier.fire(catalog.tap_silent(seconds_since_last_frame=90.0))
        (got,) = hook.wait_for(1)
        notifier.close()
    assert got.path == "/secret-path"
    monkeypatch.delenv("CREDENTIALS_DIRECTORY")
    with pytest.raises(ConfigError) as err:
        validate({"sinks": {"pd": {"type": "pagerduty", "routing_key": "credential:pagerduty-key"}}})
    assert err.value.problems == [
        "alerts.sinks.pd.routing_key: credential 'pagerduty-key' not available: no $CREDENTIALS_DIRECTORY "
        "(add LoadCredential=pagerduty-key:/path/to/secret to the unit)"
    ]
