"""Command line: click wiring only; the work lives in the modules it calls."""
from __future__ import annotations

import logging
import sys

import click


@click.group()
@click.option("-v", "--verbose", count=True, help="More log output (-vv for debug).")
def main(verbose: int) -> None:
    """shadowd: shadow-mode validation and drift monitoring of LLM latency attribution."""
    level = logging.WARNING - 10 * min(verbose, 2)
    logging.basicConfig(level=level, format="%(asctime)s %(levelname)s %(name)s: %(message)s")


@main.command()
@click.option("--listen", default=None, help="zmq endpoint the tap sends to, e.g. ipc:///run/shadowd/tap.sock")
@click.option("--db", "db_path", default=None, type=click.Path(dir_okay=False), help="DuckDB file.")
@click.option("--config", "config_path", default=None, type=click.Path(dir_okay=False),
              help="TOML config file (flags override it).")
def run(listen: str | None, db_path: str | None, config_path: str | None) -> None:
    """Run the daemon until SIGTERM."""
    from shadowd.daemon import Daemon

    if not listen or not db_path:
        raise click.UsageError("--listen and --db are required")
    logging.getLogger().setLevel(min(logging.getLogger().level, logging.INFO))
    sys.exit(Daemon(listen, db_path).serve())


if __name__ == "__main__":
    main()
