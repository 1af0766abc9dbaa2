"""Command line: click wiring only; the work lives in the modules it calls."""

from __future__ import annotations

import json
import logging
import os
import sys
import warnings
from typing import Any

import click

EXIT_CONFIG = 2
EXIT_USAGE = 2


def _is_user_error(exc: BaseException) -> bool:
    """Errors that mean "the input is wrong" (a path, a name, a locked file), not a bug."""
    if isinstance(
        exc, (FileNotFoundError, NotADirectoryError, IsADirectoryError, PermissionError, ValueError)
    ):
        return True
    from urllib.error import URLError

    from shadowd.steps.log_reader import DatabaseBusy

    if isinstance(exc, (URLError, DatabaseBusy, ConnectionError)):
        return True
    return type(exc).__module__.split(".")[0] in ("duckdb", "_duckdb") and type(exc).__name__ in (
        "IOException",
        "CatalogException",
    )


class ShadowdGroup(click.Group):
    """Every user error is one line on stderr and exit 2; ``-v`` shows the traceback instead."""

    def invoke(self, ctx: click.Context) -> Any:
        try:
            return super().invoke(ctx)
        except (click.exceptions.Exit, click.ClickException, SystemExit, KeyboardInterrupt):
            raise
        except Exception as exc:
            if not _is_user_error(exc) or (ctx.obj or {}).get("verbose"):
                raise
            click.echo(f"shadowd: error: {exc}", err=True)
            ctx.exit(EXIT_USAGE)


def _quiet_engine_imports() -> None:
    """torch and vLLM announce deprecations and a missing CUDA on import; an operator needs none of it.

    Only third-party loggers and warnings are lowered, and only for shadowd's own commands; shadowd's
    loggers keep their level.  torch resets its loggers when it is first imported, hence the import.
    """
    os.environ.setdefault("VLLM_LOGGING_LEVEL", "ERROR")
    for module in ("torch", "vllm", "transformers"):
        warnings.filterwarnings("ignore", module=rf"{module}(\.|$)")
    import torch  # noqa: F401

    for name in ("torch", "vllm", "transformers"):
        logging.getLogger(name).setLevel(logging.ERROR)


@click.group(cls=ShadowdGroup)
@click.option("-v", "--verbose", count=True, help="More log output (-vv for debug); tracebacks on errors.")
@click.pass_context
def main(ctx: click.Context, verbose: int) -> None:
    """shadowd: shadow-mode validation and drift monitoring of LLM latency attribution."""
    ctx.obj = {"verbose": verbose}
    level = logging.WARNING - 10 * min(verbose, 2)
    logging.basicConfig(level=level, format="%(asctime)s %(levelname)s %(name)s: %(message)s")


def _echo_json(obj: Any) -> None:
    click.echo(json.dumps(obj, indent=1, default=str))


@main.command()
@click.option("--config", "config_path", type=click.Path(dir_okay=False), help="TOML config file.")
@click.option("--listen", help="zmq endpoint the tap sends to (overrides the config).")
@click.option("--db", "db_path", type=click.Path(dir_okay=False), help="DuckDB file (overrides the config).")
@click.option("--http", "http_addr", help="HOST:PORT for /metrics, /gate, /healthz (overrides the config).")
@click.option("--state-file", help="Where the gate verdict is written (overrides the config).")
def run(
    config_path: str | None,
    listen: str | None,
    db_path: str | None,
    http_addr: str | None,
    state_file: str | None,
) -> None:
    """Run the daemon until SIGTERM (SIGHUP reloads --config)."""
    from shadowd.daemon.config import ConfigError
    from shadowd.daemon.runner import config_for_run, serve

    logging.getLogger().setLevel(min(logging.getLogger().level, logging.INFO))
    try:
        cfg = config_for_run(config_path, listen=listen, db=db_path, http=http_addr, state_file=state_file)
    except ConfigError as exc:
        click.echo(str(exc), err=True)
        sys.exit(EXIT_CONFIG)
    sys.exit(serve(cfg, config_path))


@main.command()
@click.option("--db", "db_path", required=True, type=click.Path(dir_okay=False))
@click.option("--since", help="Start of the fit window (timestamp, UTC).")
@click.option("--until", help="End of the fit window (timestamp, UTC).")
@click.option("--steps", type=int, help="Fit on the last N steps instead of a time window.")
@click.option(
    "--platform",
    "platform",
    multiple=True,
    metavar="KEY=VALUE",
    help="Platform key fields (gpu, model, dtype, tp, pp, vllm, attention_backend).",
)
@click.option(
    "--tenant",
    "tenants",
    multiple=True,
    metavar="NAME",
    help="A tenant the model vouches for even if the window holds none of its steps "
    "(as [calibration] tenants); repeatable.",
)
@click.option("--json", "as_json", is_flag=True)
def calibrate(
    db_path: str,
    since: str | None,
    until: str | None,
    steps: int | None,
    platform: tuple[str, ...],
    tenants: tuple[str, ...],
    as_json: bool,
) -> None:
    """Fit LLMVisor and the token model on stored steps; store the model version."""
    from shadowd.daemon.calibrator import calibrate_db, zero_priced_warnings
    from shadowd.daemon.config import TENANT_NAMES

    problem = TENANT_NAMES(tenants) or ("empty name" if "" in tenants else None)
    if problem:
        raise click.BadParameter(problem, param_hint="--tenant")
    result = calibrate_db(db_path, since=since, until=until, steps=steps, platform=platform, tenants=tenants)
    if as_json:
        _echo_json(result)
    else:
        click.echo(
            f"model version {result['model_version']} for {result['platform_key']} "
            f"({result['fit_window']['steps']} steps); stored in {db_path}"
        )
    for line in zero_priced_warnings(result["fit_metrics"]):
        click.echo(f"warning: {line}", err=True)


@main.command()
@click.option("--db", "db_path", type=click.Path(dir_okay=False), help="DuckDB file (daemon not running).")
@click.option("--daemon", "daemon_url", help="URL of a running daemon, e.g. http://127.0.0.1:9477.")
@click.option(
    "--parquet", "parquet_glob", help="Analyse Parquet exports instead, e.g. 'exports/**/*.parquet'."
)
@click.option("--since")
@click.option("--until")
@click.option("--steps", type=int, help="Only the last N steps.")
@click.option(
    "--html", "html_path", type=click.Path(dir_okay=False), help="Write a self-contained HTML report."
)
@click.option("--json", "as_json", is_flag=True)
def report(
    db_path: str | None,
    daemon_url: str | None,
    parquet_glob: str | None,
    since: str | None,
    until: str | None,
    steps: int | None,
    html_path: str | None,
    as_json: bool,
) -> None:
    """Out-of-sample accuracy of LLMVisor and the token baseline, tenants, drift, gate."""
    from shadowd.reports.html import write_atomic
    from shadowd.reports.sources import report_any
    from shadowd.steps.log_reader import Window

    formats = (
        (("html",) if html_path else ())
        + (("json",) if as_json else ())
        + (("text",) if not (as_json or html_path) else ())
    )
    window = Window(since=since, until=until, last_steps=steps)
    out = report_any(
        db_path=db_path, daemon_url=daemon_url, parquet_glob=parquet_glob, window=window, formats=formats
    )
    if html_path:
        write_atomic(html_path, out["html"])
        click.echo(f"wrote {html_path}", err=True)
    if as_json:
        _echo_json(out["json"])
    elif "text" in out:
        click.echo(out["text"])


@main.command()
@click.option("--db", "db_path", type=click.Path(dir_okay=False))
@click.option("--daemon", "daemon_url")
@click.option("--json", "as_json", is_flag=True)
def gate(db_path: str | None, daemon_url: str | None, as_json: bool) -> None:
    """The go/no-go verdict. Exit code: 0 GO, 1 NO_GO, 2 INCONCLUSIVE, 3 error."""
    from shadowd.reports.sources import read_verdict

    try:
        decision = read_verdict(db_path=db_path, daemon_url=daemon_url)
    except Exception as exc:
        click.echo(f"error: {exc}", err=True)
        sys.exit(3)
    if as_json:
        _echo_json(decision)
    else:
        click.echo(f"{decision['verdict']}: {decision.get('reason') or ''}")
    sys.exit({"GO": 0, "NO_GO": 1, "INCONCLUSIVE": 2}.get(decision["verdict"], 3))


@main.group()
def twin() -> None:
    """The reference engine (kernel-table GPU model)."""


@twin.command("step")
@click.option("--platform", default="builtin", show_default=True, help="Kernel-table directory or 'builtin'.")
@click.option("--model", default="llama-3.1-8b", show_default=True, help="Model directory or name.")
@click.option("--tp", default=1, show_default=True)
@click.option("--prefill", "prefills", multiple=True, metavar="TOKENS[@PREFIX]")
@click.option("--decode", "decodes", multiple=True, metavar="COUNTxKV")
@click.option("--json", "as_json", is_flag=True)
def twin_step(
    platform: str, model: str, tp: int, prefills: tuple[str, ...], decodes: tuple[str, ...], as_json: bool
) -> None:
    """Latency of one step on the reference engine."""
    from shadowd.twin.step_command import twin_step as run_step

    try:
        out = run_step(platform, model, tp, list(prefills), list(decodes))
    except (ValueError, FileNotFoundError) as exc:
        raise click.BadParameter(str(exc)) from None
    if as_json:
        _echo_json(out)
    else:
        click.echo(f"{out['latency_ms']:.3f} ms  ({out['platform']}, {out['model']}, tp={out['tp']})")


@main.command()
@click.option("--platform", default="builtin", show_default=True)
@click.option("--model", default="llama-3.1-8b", show_default=True)
@click.option("--tp", default=1, show_default=True)
@click.option(
    "--tenant",
    "tenants",
    multiple=True,
    metavar="NAME=TRACE[:RATE]",
    help="TRACE: a trace file, azure-code, azure-conv, mooncake-conversation, mooncake-synthetic, "
    "servegen:CLIENT, synthetic:chat|code|longdoc, lengths:sharegpt|arxiv (real lengths, Poisson arrivals)",
)
@click.option("--steps", default=4000, show_default=True)
@click.option(
    "--horizon",
    type=int,
    help="Size warm-up, settle and evidence minimums for a run this long (default: --steps); "
    "the steps beyond it keep that schedule (a fault after a shorter run's first GO)",
)
@click.option("--seed", default=0, show_default=True)
@click.option(
    "--inject",
    "injects",
    multiple=True,
    metavar="SPEC",
    help="slowdown:FRACTION@STEP | step-slowdown:FRACTION@STEP | platform:DIR@STEP | tenant:NAME=TRACE@STEP; "
    "@go:STEP fires at the first GO verdict from STEP on (a fault that lands on a gate vouching for the engine)",
)
@click.option(
    "--load",
    "loads",
    multiple=True,
    metavar="[TENANT=]PROFILE",
    help="steady | ramp:LOW:HIGH:SECONDS | swing:LOW:HIGH:PERIOD (rate multiplier; all tenants by default)",
)
@click.option("--db", "db_path", type=click.Path(dir_okay=False))
@click.option("--html", "html_path", type=click.Path(dir_okay=False))
@click.option(
    "--govern",
    is_flag=True,
    help="Admit by the governor, which follows the demo's own gate (attributed GPU time while GO, VTC otherwise)",
)
@click.option(
    "--max-waiting-tokens",
    type=click.IntRange(min=1),
    help="Stop the run, with its reason, when more prompt tokens wait for the engine: offered load it "
    "cannot serve [default: shadowd.demo.spec.DEFAULT_MAX_WAITING_TOKENS, its memory in docs/benchmarks.md]",
)
@click.option("--json", "as_json", is_flag=True)
def demo(
    platform: str,
    model: str,
    tp: int,
    tenants: tuple[str, ...],
    steps: int,
    horizon: int | None,
    seed: int,
    injects: tuple[str, ...],
    loads: tuple[str, ...],
    db_path: str | None,
    html_path: str | None,
    govern: bool,
    max_waiting_tokens: int | None,
    as_json: bool,
) -> None:
    """The whole pipeline on the reference engine: real vLLM scheduler, tap, daemon, gate."""
    from shadowd.demo.spec import DemoSpec  # no engine imports: bad arguments fail in a second

    try:
        spec = DemoSpec.build(
            platform=platform,
            model=model,
            tp=tp,
            tenants=tenants,
            steps=steps,
            horizon=horizon,
            seed=seed,
            injects=injects,
            loads=loads,
            db_path=db_path,
            html_path=html_path,
            govern=govern,
            **({"max_waiting_tokens": max_waiting_tokens} if max_waiting_tokens else {}),
        )
    except ValueError as exc:  # a missing trace file is the group's one-line error
        raise click.BadParameter(str(exc)) from None
    if not click.get_current_context().find_root().obj.get("verbose"):
        _quiet_engine_imports()
    from shadowd.demo.scenario import BacklogError, run_demo

    try:
        result = run_demo(spec, progress=not as_json)
    except BacklogError as exc:
        raise click.ClickException(str(exc)) from None
    if as_json:
        _echo_json(result)
    else:
        from shadowd.demo.summary import render_summary

        click.echo(render_summary(result))


@main.command()
@click.option(
    "--scenario",
    default="noisy-neighbour",
    show_default=True,
    type=click.Choice(["noisy-neighbour", "decode-heavy"]),
)
@click.option("--minutes", default=10.0, show_default=True, help="Simulated minutes of arrivals.")
@click.option("--platform", default="h100", show_default=True)
@click.option("--model", default="llama-3.1-8b", show_default=True)
@click.option("--tp", default=1, show_default=True)
@click.option("--seed", default=0, show_default=True)
@click.option("--policy", "policies", multiple=True, type=click.Choice(["fcfs", "vtc", "llmvisor"]))
@click.option(
    "--pairs",
    default=8,
    show_default=True,
    type=click.IntRange(1, 256),
    help="Antithetic pairs of orderings per step for the Shapley values (every step is scored).",
)
@click.option(
    "--db",
    "db_path",
    type=click.Path(dir_okay=False),
    help="Replay this recorded database's traffic instead of a scenario (FCFS fidelity check first).",
)
@click.option(
    "--oracle",
    default="model",
    show_default=True,
    type=click.Choice(["model", "reference"]),
    help="With --db: step time from the stored calibrated model, or the reference engine.",
)
@click.option(
    "--html",
    "html_path",
    type=click.Path(dir_okay=False),
    help="Also write a self-contained HTML page: shares over time, TTFT CDFs, the tables.",
)
@click.option("--json", "as_json", is_flag=True)
def replay(
    scenario: str,
    minutes: float,
    platform: str,
    model: str,
    tp: int,
    seed: int,
    policies: tuple[str, ...],
    pairs: int,
    db_path: str | None,
    oracle: str,
    html_path: str | None,
    as_json: bool,
) -> None:
    """The same arrivals through the real vLLM scheduler under FCFS, VTC and the governed policy."""
    from shadowd.replay.engine import POLICIES, EngineSetup
    from shadowd.replay.replay import replay as run_replay
    from shadowd.replay.table import render_table

    if html_path is not None and not os.path.isdir(os.path.dirname(os.path.abspath(html_path))):
        raise click.BadParameter(f"{html_path}: its directory does not exist", param_hint="--html")
    if db_path is not None:
        from shadowd.replay.recorded import render_recorded, replay_recorded

        try:
            rec = replay_recorded(db_path, oracle=oracle, policies=policies or POLICIES, seed=seed)
        except (FileNotFoundError, ValueError) as exc:
            raise click.ClickException(str(exc)) from None
        _replay_html(rec, html_path)
        click.echo(json.dumps(rec, indent=1, default=str) if as_json else render_recorded(rec))
        return

    if minutes <= 0 or minutes > 240:
        raise click.BadParameter("--minutes must be in (0, 240]")
    setup = EngineSetup(platform=platform, model=model, tp=tp, seed=seed)
    result = run_replay(scenario, minutes=minutes, setup=setup, policies=policies or POLICIES, pairs=pairs)
    _replay_html(result, html_path)
    click.echo(json.dumps(result, indent=1, default=str) if as_json else render_table(result))


def _replay_html(result: dict, html_path: str | None) -> None:
    if html_path is not None:
        from shadowd.replay.page import write_replay_html

        click.echo(f"wrote {write_replay_html(result, html_path)}", err=True)


if __name__ == "__main__":
    main()
