"""Starting the daemon from the command line: config + overrides, then serve."""

from __future__ import annotations

import dataclasses
from pathlib import Path

from shadowd.daemon.config import (
    Config,
    ConfigError,
    ConfigHolder,
    check_config_paths,
    check_endpoints,
    load_config,
)


def config_for_run(
    path: str | None,
    *,
    listen: str | None = None,
    db: str | None = None,
    http: str | None = None,
    state_file: str | None = None,
) -> Config:
    """The config file (or defaults) with command-line overrides, checked as the file is.

    An override gets the same endpoint rules as the file (loopback only unless the file says
    ``http_allow_remote``), so ``--http 0.0.0.0:9477`` cannot open what the config would refuse.
    """
    cfg = load_config(path) if path else Config.default()
    over = {
        k: v for k, v in (("listen", listen), ("db", db), ("http", http), ("state_file", state_file)) if v
    }
    if db and not state_file and not path:
        over["state_file"] = str(Path(db).with_suffix(".gate.json"))
    cfg = dataclasses.replace(cfg, **over)
    problems = check_endpoints(cfg) + check_config_paths(cfg)
    if problems:
        raise ConfigError(problems)
    return cfg


def serve(cfg: Config, config_path: str | None) -> int:
    from shadowd.daemon.service import Daemon

    holder = ConfigHolder(cfg, config_path)
    daemon = Daemon(cfg)
    return daemon.serve(reload=lambda: holder.current if holder.reload() else None)
