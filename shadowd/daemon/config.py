"""The daemon's TOML configuration: parsed once, checked completely, then frozen.

A typo in a service config must not start a daemon that silently uses a default, so
``load_config`` collects *every* problem before failing, each naming its dotted key, what
is wrong and the fix; the CLI prints them and exits 2 with nothing started.  SIGHUP goes
through :class:`ConfigHolder`, which keeps the running config when the new file is bad.

Relative paths (``db``, ``state_file``, ``export.dir``, an ``ipc://`` path) are taken
relative to the config file's directory.

>>> cfg = Config.default()
>>> cfg.http, cfg.retention.raw_days, cfg.gate.policy.consecutive_passes
('127.0.0.1:9477', 14, 3)
>>> parse_config({"http": "0.0.0.0:9477", "gate": {"intervall_s": 5}}, check_paths=False)
Traceback (most recent call last):
...
shadowd.daemon.config.ConfigError: invalid configuration:
  - gate.intervall_s: unknown key; did you mean 'interval_s'?
  - http: 0.0.0.0 is not a loopback address and the HTTP API has no authentication; use 127.0.0.1:PORT, or set http_allow_remote = true behind a firewall
"""

from __future__ import annotations

import dataclasses
import difflib
import ipaddress
import json
import logging
import os
import re
import threading
import tomllib
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import Any, get_type_hints

from checks import GatePolicy

log = logging.getLogger("shadowd.daemon.config")

FIXED_TERM_POLICIES = ("equal", "pro_rata")  # = shadowd.attribution.shares (a test holds them equal);
# not imported, so loading a config stays cheap
EXPORT_FORMATS = ("parquet",)
UNIX_PATH_MAX = 107  # sun_path minus the NUL
RESTART_KEYS = (
    "listen",
    "db",
    "http",
    "http_allow_remote",
    "state_file",
    "tap.max_frame_bytes",
    "storage.memory_limit",
    "storage.threads",
    "tenants.allow",
    "tenants.max_distinct",
    "privacy.hash_request_ids",
    "privacy.request_id_key_file",
    "api.workers",
    "api.timeout_s",
    "api.allowed_hosts",
)
DEFAULT_ALERTS: dict[str, Any] = {"sinks": {"journal": {"type": "log"}}}


class ConfigError(ValueError):
    """The configuration is unusable; ``problems`` lists every reason, each with its fix."""

    def __init__(self, problems: list[str]):
        self.problems = list(problems)
        super().__init__("invalid configuration:\n" + "\n".join(f"  - {p}" for p in self.problems))


# -- value checks: return None when fine, else "what is wrong; the fix" ----------------------
Check = Callable[[Any], "str | None"]


def positive(v: float) -> str | None:
    return None if v > 0 else f"must be > 0, got {v!r}"


def between(lo: float, hi: float) -> Check:
    return lambda v: None if lo <= v <= hi else f"must be between {lo:g} and {hi:g}, got {v!r}"


def one_of(*choices: str) -> Check:
    return lambda v: None if v in choices else f"{v!r} is not allowed; use one of: {', '.join(choices)}"


def subset_of(*choices: str) -> Check:
    def check(v: tuple[str, ...]) -> str | None:
        bad = [x for x in v if x not in choices]
        if not v or bad or len(set(v)) != len(v):
            return f"{list(v)!r}: want one or more distinct of {', '.join(choices)}"
        return None

    return check


def bounded_labels(most: int, longest: int) -> Check:
    def check(v: tuple[str, ...]) -> str | None:
        if len(v) > most:
            return f"at most {most} names, got {len(v)}"
        long = [x for x in v if len(x) > longest]
        return f"names longer than {longest} characters: {long[0][:80]!r}" if long else None

    return check


# ``[calibration] tenants`` and ``shadowd calibrate --tenant``: operator-typed, but bounded all the same.
TENANT_NAMES = bounded_labels(256, 64)


def key(default: Any, check: Check | None = None, help: str = "") -> Any:
    """A config key: its default, an optional value check, and a one-line help."""
    return field(default=default, metadata={"check": check, "help": help})


# -- sections ---------------------------------------------------------------------------------
@dataclass(frozen=True)
class Platform:
    """The running engine's platform key; a model calibrated for another key is not trusted."""

    gpu: str
    model: str
    dtype: str
    tp: int
    vllm: str
    attention_backend: str
    pp: int | None = None

    def as_key(self) -> dict[str, Any]:
        """The key as ``shadowd.attribution.model_version.fit`` takes it (unset fields left out)."""
        return {k: v for k, v in dataclasses.asdict(self).items() if v is not None}


@dataclass(frozen=True)
class CalibrationConfig:
    warmup_steps: int = key(2000, between(100, 10_000_000), "steps buffered before the first fit")
    holdout_fraction: float = key(0.3, between(0.05, 0.9), "later part of the window scored out of sample")
    max_age_s: float = key(7 * 86400.0, positive, "older calibrations are stale (gate fails closed)")
    policy: str = key("equal", one_of(*FIXED_TERM_POLICIES), "who pays the fixed term")
    refit: bool = key(True, None, "re-fit on recent traffic when it leaves the calibration (guarded)")
    max_window_rows: int = key(
        0,
        lambda v: (
            None
            if v == 0 or 10_000 <= v <= 10**10
            else f"must be 0 (no limit) or between 10000 and 1e10 request rows, got {v!r}"
        ),
        "the most request rows a calibration or re-fit window holds, 0 for no limit: its memory "
        "grows with them (docs/benchmarks.md); a window cut short may leave a step class unwatched",
    )
    memory_guard: bool = key(
        True,
        None,
        "cut a calibration, re-fit or stability window to the rows that fit under the daemon's "
        "cgroup memory limit (MemoryMax; MemoryHigh on cgroup v2), less DuckDB's memory_limit and "
        "a fifth kept aside, rather than be killed at it; no effect where no limit is set "
        "(docs/operations.md)",
    )
    tenants: tuple[str, ...] = key(
        (),
        TENANT_NAMES,
        "tenants the warm-up window waits for (widening up to its maximum) before the first fit; "
        "never newcomers to the gate, even if the window missed them",
    )
    platform: Platform | None = None


@dataclass(frozen=True)
class GateConfig:
    interval_s: float = key(30.0, positive, "seconds between gate evaluations")
    policy: GatePolicy = field(default_factory=GatePolicy)


@dataclass(frozen=True)
class DriftConfig:
    target_false_alarm_rate: float = key(
        1e-5, between(1e-9, 0.01), "per judged step of a class, split evenly over its detectors"
    )
    # Page-Hinkley alone by default (design r6): in docs/checks.md's delay tables it detects as many
    # slowdowns as both detectors together; a second one takes half of each class's budget.
    detectors: tuple[str, ...] = key(
        ("page_hinkley",), subset_of("page_hinkley", "adwin"), "residual drift detectors per class"
    )
    sim_steps: int = key(
        400_000, between(10_000, 100_000_000), "stationary steps simulated per class (>= 3 / target rate)"
    )
    adwin_sim_steps: int = key(400_000, between(10_000, 100_000_000), "ditto, for ADWIN (>= 3 / target rate)")
    min_class_steps: int = key(300, between(30, 10_000_000), "fewer held-out steps: class not watched")
    confirm_steps: int = key(
        200, between(0, 100_000), "judged steps a detection's shift must last to be an alarm (0: at once)"
    )
    coefficient_tolerance: float = key(0.05, between(0.001, 1.0), "relative change of T-hat on refit")
    envelope_cooldown_steps: int = key(1000, positive, "steps between envelope events")


@dataclass(frozen=True)
class StabilityConfig:
    interval_s: float = key(600.0, positive, "seconds between share-stability tests")
    window_s: float = key(3600.0, positive, "steps of the last window_s seconds are tested")
    n_boot: int = key(200, between(20, 10_000), "bootstrap replicates for the confidence interval")


@dataclass(frozen=True)
class RetentionConfig:
    raw_days: int = key(14, between(1, 3650), "raw steps/step_requests kept this many days")
    rollup_days: int = key(400, between(1, 36500), "per-tenant per-minute roll-ups kept this long")
    interval_s: float = key(3600.0, positive, "seconds between retention runs")
    chunk_rows: int = key(
        1_000_000, between(10_000, 100_000_000), "request rows per retention transaction (bounds each one)"
    )


@dataclass(frozen=True)
class ExportConfig:
    dir: str | None = key(None, None, "Parquet export directory; unset disables export")
    interval_s: float = key(3600.0, positive, "seconds between export runs")
    format: str = key("parquet", one_of(*EXPORT_FORMATS), "file format")


def memory_size(v: str) -> str | None:
    """A DuckDB memory size such as ``256MB`` or ``2GiB``."""
    ok = isinstance(v, str) and re.fullmatch(r"\s*\d+(\.\d+)?\s*(B|KB|MB|GB|TB|KiB|MiB|GiB|TiB)\s*", v, re.I)
    return None if ok else f'{v!r} is not a memory size; write it like "256MB" or "1GiB"'


@dataclass(frozen=True)
class StorageConfig:
    memory_limit: str = key("192MB", memory_size, "DuckDB's memory limit (its default is 80% of RAM)")
    threads: int = key(
        1, between(1, 256), "DuckDB threads for the writer; a sidecar leaves the host's cores alone"
    )


@dataclass(frozen=True)
class TapConfig:
    max_frame_bytes: int = key(8 << 20, between(1024, 1 << 30), "larger frames are dropped and counted")
    clock_tolerance_s: float = key(
        60.0, between(1.0, 86400.0), "a frame dated this far after receipt gets receipt time (counted)"
    )


@dataclass(frozen=True)
class TenantsConfig:
    """Tenant labels come from outside; the daemon bounds them (``shadowd.daemon.tenants``)."""

    allow: tuple[str, ...] = key((), None, "if set, only these labels are kept; others become 'other'")
    max_distinct: int = key(256, between(1, 100_000), "labels beyond this many become 'other' (counted)")


@dataclass(frozen=True)
class PrivacyConfig:
    hash_request_ids: bool = key(False, None, "store keyed hashes of request ids, never the ids")
    request_id_key_file: str | None = key(None, None, "the host's hashing key; default: beside the db")


@dataclass(frozen=True)
class ApiConfig:
    workers: int = key(8, between(1, 64), "HTTP requests served at once; more wait in the listen queue")
    timeout_s: float = key(10.0, between(0.1, 600.0), "a connection idle this long is closed")
    allowed_hosts: tuple[str, ...] = key(
        (), None, "Host header names accepted besides IP literals and localhost (DNS rebinding guard)"
    )


@dataclass(frozen=True)
class ReportConfig:
    default_window_s: float = key(3600.0, between(1.0, 366 * 86400.0), "window of /report without one")
    max_window_s: float = key(86400.0, between(1.0, 366 * 86400.0), "longest window /report accepts")


@dataclass(frozen=True)
class Config:
    """Everything the daemon reads from its config file; see docs/operations.md."""

    listen: str = key("ipc:///run/shadowd-tap/tap.sock", None, "zmq endpoint the tap pushes to")
    db: str = key("/var/lib/shadowd/shadowd.duckdb", None, "DuckDB file (the daemon owns it)")
    http: str = key("127.0.0.1:9477", None, "HOST:PORT of /metrics, /gate, /healthz")
    http_allow_remote: bool = key(False, None, "allow a non-loopback http address")
    state_file: str = key("/run/shadowd/gate.json", None, "gate verdict, written atomically")
    calibration: CalibrationConfig = field(default_factory=CalibrationConfig)
    gate: GateConfig = field(default_factory=GateConfig)
    drift: DriftConfig = field(default_factory=DriftConfig)
    stability: StabilityConfig = field(default_factory=StabilityConfig)
    alerts: Mapping[str, Any] = field(default_factory=lambda: dict(DEFAULT_ALERTS))
    retention: RetentionConfig = field(default_factory=RetentionConfig)
    export: ExportConfig = field(default_factory=ExportConfig)
    tap: TapConfig = field(default_factory=TapConfig)
    storage: StorageConfig = field(default_factory=StorageConfig)
    tenants: TenantsConfig = field(default_factory=TenantsConfig)
    privacy: PrivacyConfig = field(default_factory=PrivacyConfig)
    api: ApiConfig = field(default_factory=ApiConfig)
    report: ReportConfig = field(default_factory=ReportConfig)
    source: str | None = None  # the file it came from, for messages

    @classmethod
    def default(cls) -> Config:
        return cls()

    @property
    def http_host(self) -> str:
        return split_host_port(self.http)[0]

    @property
    def http_port(self) -> int:
        return split_host_port(self.http)[1]

    def diff(self, other: Config) -> list[str]:
        """Dotted keys whose values differ (``source`` ignored)."""
        a, b = _flatten(dataclasses.asdict(self)), _flatten(dataclasses.asdict(other))
        return sorted(k for k in a.keys() | b.keys() if k != "source" and a.get(k) != b.get(k))


def _flatten(d: Mapping[str, Any], prefix: str = "") -> dict[str, Any]:
    out: dict[str, Any] = {}
    for k, v in d.items():
        if isinstance(v, Mapping) and f"{prefix}{k}" != "alerts":
            out.update(_flatten(v, f"{prefix}{k}."))
        else:
            out[f"{prefix}{k}"] = v
    return out


# -- parsing ----------------------------------------------------------------------------------
def load_config(path: str | os.PathLike, *, check_paths: bool = True) -> Config:
    """Read and check a TOML file; raises :class:`ConfigError` with every problem."""
    p = Path(path)
    try:
        data = tomllib.loads(p.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise ConfigError([f"{p}: config file not found; create it (see systemd/shadowd.toml)"]) from None
    except (OSError, UnicodeDecodeError) as exc:
        raise ConfigError([f"{p}: cannot read the config file ({exc}); check its permissions"]) from None
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError([f"{p}: TOML syntax error: {exc}; fix that line"]) from None
    return parse_config(data, base_dir=p.resolve().parent, check_paths=check_paths, source=str(p))


def parse_config(
    data: Mapping[str, Any],
    *,
    base_dir: Path | None = None,
    check_paths: bool = True,
    source: str | None = None,
) -> Config:
    """Build a :class:`Config` from a parsed TOML document (see :func:`load_config`)."""
    problems: list[str] = []
    specials = {"calibration": _calibration, "gate": _gate, "alerts": _alerts}
    values = _section(Config, data, "", problems, specials, skip={"source"})
    cfg = Config(**values, source=source)
    if base_dir is not None:
        cfg = _resolve_paths(cfg, base_dir)
    problems += check_endpoints(cfg)
    if cfg.retention.rollup_days < cfg.retention.raw_days:
        problems.append(
            f"retention.rollup_days: {cfg.retention.rollup_days} is shorter than raw_days "
            f"({cfg.retention.raw_days}), so roll-ups would expire before the raw rows they "
            "summarise; make it ≥ raw_days"
        )
    if cfg.report.default_window_s > cfg.report.max_window_s:
        problems.append(
            f"report.default_window_s: {cfg.report.default_window_s:g} exceeds max_window_s "
            f"({cfg.report.max_window_s:g}); make it ≤ max_window_s"
        )
    if check_paths:
        problems += check_config_paths(cfg)
    if problems:
        raise ConfigError(problems)
    return cfg


def _toml_type(v: Any) -> str:
    names = {bool: "boolean", int: "integer", float: "float", str: "string", dict: "table", list: "array"}
    return names.get(type(v), type(v).__name__)


def _toml_value(v: Any) -> str:
    """How ``v`` is written in TOML (for messages)."""
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, (str, int, float)):
        return json.dumps(v)
    return repr(v)


def _coerce(tp: Any, v: Any) -> tuple[bool, Any]:
    """Is ``v`` a TOML value of type ``tp``? Returns (ok, value converted)."""
    if tp is bool:
        return isinstance(v, bool), v
    if tp is int:
        return isinstance(v, int) and not isinstance(v, bool), v
    if tp is float:
        ok = isinstance(v, (int, float)) and not isinstance(v, bool)
        return ok, float(v) if ok else v
    if tp is str:
        return isinstance(v, str), v
    return True, v


def _section(
    cls: type,
    table: Any,
    where: str,
    problems: list[str],
    specials: Mapping[str, Callable] | None = None,
    skip: frozenset[str] = frozenset(),
) -> dict[str, Any]:
    """Values for ``cls``'s fields from ``table``: defaults filled, bad keys reported."""
    specials = specials or {}
    if not isinstance(table, Mapping):
        problems.append(
            f"{where.rstrip('.')}: expected a table, got {_toml_type(table)}; "
            f"write it as [{where.rstrip('.')}]"
        )
        return {}
    hints = get_type_hints(cls)
    known = [f.name for f in fields(cls) if f.name not in skip]
    for k in table:
        if k not in known:
            close = difflib.get_close_matches(str(k), known, n=1)
            hint = f"did you mean {close[0]!r}?" if close else f"known keys: {', '.join(known)}"
            problems.append(f"{where}{k}: unknown key; {hint}")
    out: dict[str, Any] = {}
    for f in fields(cls):
        name, here = f.name, f"{where}{f.name}"
        if name in skip or name not in table:
            continue
        value = table[name]
        if name in specials:
            out[name] = specials[name](value, here, problems)
            continue
        tp = hints[name]
        if dataclasses.is_dataclass(tp):
            out[name] = tp(**_section(tp, value, here + ".", problems))
            continue
        if tp == tuple[str, ...]:
            if not isinstance(value, list) or not all(isinstance(x, str) and x for x in value):
                problems.append(
                    f"{here}: expected an array of non-empty strings, got {_toml_value(value)}; "
                    f'e.g. {name} = ["acme", "globex"]'
                )
            else:
                check = f.metadata.get("check")
                msg = check(tuple(value)) if check else None
                if msg:
                    problems.append(f"{here}: {msg}")
                else:
                    out[name] = tuple(value)
            continue
        base = next((t for t in (bool, int, float, str) if t == tp or t in getattr(tp, "__args__", ())), None)
        ok, value = _coerce(base, value)
        if not ok:
            example = _toml_value(f.default) if f.default not in (None, dataclasses.MISSING) else '"..."'
            what = {bool: "true or false", int: "an integer", float: "a number", str: "a string"}[base]
            problems.append(
                f"{here}: expected {what}, got {_toml_type(table[name])} "
                f"{_toml_value(table[name])}; e.g. {name} = {example}"
            )
            continue
        check = f.metadata.get("check")
        msg = check(value) if check else None
        if msg:
            problems.append(f"{here}: {msg}")
            continue
        out[name] = value
    return out


def _calibration(table: Any, where: str, problems: list[str]) -> CalibrationConfig:
    vals = _section(CalibrationConfig, table, where + ".", problems, {"platform": _platform})
    return CalibrationConfig(**vals)


def _platform(table: Any, where: str, problems: list[str]) -> Platform | None:
    before = len(problems)
    vals = _section(Platform, table, where + ".", problems)
    if len(problems) > before:
        return None
    missing = [f.name for f in fields(Platform) if f.default is dataclasses.MISSING and f.name not in vals]
    if missing:
        problems.append(
            f"{where}: missing {', '.join(missing)}; the platform key needs all of gpu, "
            "model, dtype, tp, vllm, attention_backend (pp optional)"
        )
    for name in ("tp", "pp"):
        if vals.get(name) is not None and vals[name] < 1:
            problems.append(f"{where}.{name}: must be ≥ 1, got {vals[name]!r}")
    return Platform(**vals) if len(problems) == before else None


def _gate(table: Any, where: str, problems: list[str]) -> GateConfig:
    vals = _section(GateConfig, table, where + ".", problems, {"policy": _gate_policy})
    return GateConfig(**vals)


def _gate_policy(table: Any, where: str, problems: list[str]) -> GatePolicy:
    """Each key tried on its own first, so every bad key is reported, not only the first."""
    if not isinstance(table, Mapping):
        problems.append(f"{where}: expected a table of gate thresholds; write it as [{where}]")
        return GatePolicy()
    good = {}
    for k, v in table.items():
        try:
            GatePolicy.from_dict({k: v})
            good[k] = v
        except (ValueError, TypeError) as exc:
            msg = str(exc).replace("gate policy ", "")
            if msg.startswith("unknown"):
                msg += "; see checks/policy.py for the keys"
            elif not msg.startswith(str(k)):
                default = getattr(GatePolicy(), str(k))
                msg = f"invalid value {v!r} ({msg}); use {_describe_default(default)}"
            problems.append(f"{where}.{k}: {msg.removeprefix(str(k) + ' ').removeprefix(str(k) + ': ')}")
    try:
        return GatePolicy.from_dict(good)
    except (ValueError, TypeError) as exc:  # keys fine alone but not together
        problems.append(f"{where}: {exc}")
        return GatePolicy()


def _describe_default(default: Any) -> str:
    if isinstance(default, dict):
        return "a table of step class to number, e.g. { mixed = 0.2 }"
    if isinstance(default, tuple):
        return "an array of step classes"
    return f"{_toml_type(default)} like {default!r}"


def _alerts(table: Any, where: str, problems: list[str]) -> Mapping[str, Any]:
    from alerts.config import ConfigError as AlertConfigError
    from alerts.config import validate

    if not isinstance(table, Mapping):
        problems.append(f"{where}: expected a table; write it as [{where}]")
        return dict(DEFAULT_ALERTS)
    try:
        validate(table, prefix=where)
    except AlertConfigError as exc:
        problems.extend(exc.problems)
    return dict(table)


# -- addresses and paths ------------------------------------------------------------------------
def split_host_port(text: str) -> tuple[str, int]:
    """``'127.0.0.1:9477'`` or ``'[::1]:9477'`` -> (host, port); ``ValueError`` otherwise.

    >>> split_host_port("[::1]:9477")
    ('::1', 9477)
    """
    host, sep, port = text.rpartition(":")
    if not sep or not host or not port.isdigit() or not 0 <= int(port) < 65536:  # 0: any free port
        raise ValueError(text)
    if host.startswith("[") and host.endswith("]"):
        host = host[1:-1]
    elif ":" in host:
        raise ValueError(text)
    return host, int(port)


def is_loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def ipc_path(endpoint: str) -> str | None:
    return endpoint[len("ipc://") :] if endpoint.startswith("ipc://") else None


def check_endpoints(cfg: Config) -> list[str]:
    """Problems with ``listen`` and ``http``: malformed, or not loopback (the CLI's overrides too)."""
    problems = []
    try:
        host, _ = split_host_port(cfg.http)
        if not is_loopback(host) and not cfg.http_allow_remote:
            problems.append(
                f"http: {host} is not a loopback address and the HTTP API has no "
                "authentication; use 127.0.0.1:PORT, or set http_allow_remote = true "
                "behind a firewall"
            )
    except ValueError:
        problems.append(
            f'http: {cfg.http!r} is not HOST:PORT; e.g. http = "127.0.0.1:9477" (IPv6: "[::1]:9477")'
        )
    path = ipc_path(cfg.listen)
    if path is not None:
        if not path:
            problems.append("listen: ipc:// needs a socket path; e.g. ipc:///run/shadowd/tap.sock")
        elif len(path.encode()) > UNIX_PATH_MAX:
            problems.append(
                f"listen: socket path is {len(path.encode())} bytes, over the "
                f"{UNIX_PATH_MAX}-byte limit of unix sockets; use a shorter path"
            )
    elif cfg.listen.startswith("tcp://"):
        try:
            host, _ = split_host_port(cfg.listen[len("tcp://") :])
            if not is_loopback(host):
                problems.append(
                    f"listen: {host} is not loopback; the tap runs on this host, so "
                    "bind ipc:///run/shadowd/tap.sock or tcp://127.0.0.1:PORT"
                )
        except ValueError:
            problems.append(
                f'listen: {cfg.listen!r} is not tcp://HOST:PORT; e.g. listen = "tcp://127.0.0.1:5557"'
            )
    else:
        problems.append(
            f"listen: {cfg.listen!r} is not a zmq endpoint; use "
            '"ipc:///run/shadowd/tap.sock" or "tcp://127.0.0.1:PORT"'
        )
    return problems


def _resolve_paths(cfg: Config, base: Path) -> Config:
    def rel(p: str) -> str:
        return p if os.path.isabs(p) else str(base / p)

    listen = cfg.listen
    if (path := ipc_path(listen)) and not os.path.isabs(path):
        listen = "ipc://" + rel(path)
    export = (
        cfg.export if cfg.export.dir is None else dataclasses.replace(cfg.export, dir=rel(cfg.export.dir))
    )
    key_file = cfg.privacy.request_id_key_file
    privacy = (
        cfg.privacy
        if key_file is None
        else dataclasses.replace(cfg.privacy, request_id_key_file=rel(key_file))
    )
    return dataclasses.replace(
        cfg, listen=listen, db=rel(cfg.db), state_file=rel(cfg.state_file), export=export, privacy=privacy
    )


def _writable_dir(key_name: str, directory: str, what: str) -> str | None:
    if not os.path.isdir(directory):
        return (
            f"{key_name}: directory {directory} does not exist; create it ({what}) "
            "or point the key at an existing writable directory"
        )
    if not os.access(directory, os.W_OK | os.X_OK):
        return (
            f"{key_name}: directory {directory} is not writable by this user; fix its owner/"
            f"mode ({what}) or choose another directory"
        )
    return None


def check_config_paths(cfg: Config) -> list[str]:
    """Problems with the files the daemon must create: parent missing or not writable."""
    checks = [
        ("db", os.path.dirname(cfg.db), "systemd's StateDirectory=shadowd creates /var/lib/shadowd"),
        (
            "state_file",
            os.path.dirname(cfg.state_file),
            "systemd's RuntimeDirectory=shadowd creates /run/shadowd",
        ),
    ]
    if path := ipc_path(cfg.listen):
        checks.append(("listen", os.path.dirname(path), "shadowd.tmpfiles creates /run/shadowd-tap"))
    if cfg.export.dir is not None:
        target = cfg.export.dir if os.path.isdir(cfg.export.dir) else os.path.dirname(cfg.export.dir)
        checks.append(("export.dir", target, "and add it to ReadWritePaths= in the unit"))
    problems = [p for k, d, why in checks if (p := _writable_dir(k, d or ".", why))]
    if os.path.exists(cfg.db) and not os.access(cfg.db, os.R_OK | os.W_OK):
        problems.append(
            f"db: {cfg.db} exists but is not readable and writable by this user; chown it to the service user"
        )
    return problems


# -- reload -----------------------------------------------------------------------------------
class ConfigHolder:
    """The live config; ``reload()`` swaps it only when the new file is valid (SIGHUP).

    Listeners get ``(old, new)`` after a successful swap, on the reloading thread.
    """

    def __init__(
        self, config: Config, path: str | os.PathLike | None = None, *, check_paths: bool = True
    ) -> None:
        self._config = config
        self.path = path if path is not None else config.source
        self.check_paths = check_paths
        self.last_problems: list[str] = []
        self._lock = threading.Lock()
        self._listeners: list[Callable[[Config, Config], None]] = []

    @property
    def current(self) -> Config:
        return self._config

    def subscribe(self, listener: Callable[[Config, Config], None]) -> None:
        self._listeners.append(listener)

    def reload(self, path: str | os.PathLike | None = None) -> bool:
        """Load ``path`` (default: the original file); True if it is now the live config."""
        path = path if path is not None else self.path
        if path is None:
            log.warning("reload requested but the daemon was started without --config; nothing to do")
            return False
        try:
            new = load_config(path, check_paths=self.check_paths)
        except ConfigError as exc:
            self.last_problems = exc.problems
            log.error(
                "config reload from %s rejected; keeping the running config:\n%s",
                path,
                "\n".join(f"  - {p}" for p in exc.problems),
            )
            return False
        with self._lock:
            old, self._config, self.path = self._config, new, path
        self.last_problems = []
        changed = old.diff(new)
        restart = [k for k in changed if k in RESTART_KEYS]
        log.info("config reloaded from %s; changed: %s", path, ", ".join(changed) or "nothing")
        if restart:
            log.warning("changed keys that take effect only after a restart: %s", ", ".join(restart))
        for listener in self._listeners:
            try:
                listener(old, new)
            except Exception:
                log.exception("config reload listener %r failed", listener)
        return True
