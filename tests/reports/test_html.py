"""Reports over a real DuckDB file of realistic attributed rows, rendered in headless Chromium."""

from __future__ import annotations

import datetime as dt
import json
import re
import subprocess
from pathlib import Path

import duckdb
import numpy as np
import pytest

from shadowd.attribution.model_version import fit
from shadowd.attribution.synthetic_steps import synthetic_batch
from shadowd.reports.html import render_html, write_html
from shadowd.reports.model import collect
from shadowd.reports.text import render_text
from shadowd.steps.log_reader import Window
from storage.schema import migrate
from tests.chromium import distinct_colours, read_png, screenshot

START = dt.datetime(2025, 3, 18, 8, 0)
KEY = {
    "gpu": "H100-SXM",
    "model": "llama-3.1-8b",
    "dtype": "bf16",
    "tp": 1,
    "vllm": "0.33.0",
    "attention_backend": "FLASH_ATTN",
}


def write_steps(con, batch, *, engine: str, attribution=None, warmup: int = 0) -> None:
    """The contract columns of ``batch`` (and its attribution, after ``warmup`` steps)."""
    s, r = batch.num_steps, batch.num_requests
    ts = np.datetime64(START) + (np.arange(s) * 1_500_000).astype("timedelta64[us]")  # 1.5 s apart
    attributed = np.arange(s) >= warmup
    nan = np.full(s, np.nan)
    pre = batch.per_step_sum(np.where(batch.prefill, batch.new_tokens, 0).astype(float)).astype(int)
    dec = batch.per_step_sum(np.where(batch.prefill, 0, batch.new_tokens).astype(float)).astype(int)
    steps = {
        "engine_id": np.full(s, engine, object),
        "run_id": np.full(s, "run1", object),
        "step_seq": np.arange(s),
        "ts": ts,
        "latency_ms": batch.latency_ms,
        "kind": batch.kind_names(),
        "num_requests": batch.batch_size(),
        "prefill_tokens": pre,
        "decode_tokens": dec,
        "dropped_frames_total": np.zeros(s, int),
        "predicted_ms": np.where(attributed, attribution.predicted_ms, nan),
        "baseline_ms": np.where(attributed, attribution.baseline_ms, nan),
        "model_version": np.where(attributed, attribution.model_version, None).astype(object),
    }
    on = attributed[batch.req_step]
    rnan = np.full(r, np.nan)
    reqs = {
        "engine_id": np.full(r, engine, object),
        "run_id": np.full(r, "run1", object),
        "step_seq": batch.req_step,
        "req_id": batch.req_id,
        "tenant": batch.tenant,
        "phase": np.where(batch.prefill, "prefill", "decode").astype(object),
        "new_tokens": batch.new_tokens,
        "context_tokens": batch.context_tokens,
        "prompt_tokens": batch.prompt_tokens,
        "spec_tokens": batch.spec_tokens,
        "llmvisor_ms": np.where(on, attribution.llmvisor_ms, rnan),
        "llmvisor_measured_ms": np.where(on, attribution.llmvisor_measured_ms, rnan),
        "vtc_ms": np.where(on, attribution.vtc_ms, rnan),
        "vtc_tokens": np.where(on, attribution.vtc_tokens, rnan),
        "model_version": np.where(on, attribution.model_version, None).astype(object),
    }
    for table, cols in (("steps", steps), ("step_requests", reqs)):
        con.register("_buf", cols)
        names = ", ".join(cols)
        con.execute(f"INSERT INTO {table} ({names}) SELECT {names} FROM _buf")
        con.unregister("_buf")


@pytest.fixture(scope="module")
def report_db(tmp_path_factory) -> str:
    path = str(tmp_path_factory.mktemp("report") / "shadowd.duckdb")
    con = duckdb.connect(path)
    migrate(con)
    version = fit(synthetic_batch(steps=600, seed=11), KEY)
    con.execute(
        "INSERT INTO model_versions (version, platform_key, created_at, fit_steps, body) "
        "VALUES (?, ?, ?, ?, ?)",
        [version.version, json.dumps(KEY, sort_keys=True), START, 600, version.to_json()],
    )
    live = synthetic_batch(steps=1500, seed=12)
    write_steps(con, live, engine="gpu-host-1", attribution=version.attribute(live), warmup=200)
    t = lambda minutes: START + dt.timedelta(minutes=minutes)  # noqa: E731
    con.executemany(
        "INSERT INTO gate_decisions (ts, verdict, reason, consecutive_passes, checks) "
        "VALUES (?, ?, ?, ?, '[]')",
        [
            (t(m), v, why, n)
            for m, v, why, n in [
                (5, "INCONCLUSIVE", "evidence: 120 decode steps < 5000", 0),
                (12, "INCONCLUSIVE", "evidence: shadow duration", 0),
                (20, "GO", None, 3),
                (30, "NO_GO", "drift: page_hinkley decode", 0),
                (35, "NO_GO", "drift", 0),
            ]
        ],
    )
    con.executemany(
        "INSERT INTO drift_events (ts, engine_id, step_seq, detector, statistic, threshold, "
        "step_class, details, resolved_at) VALUES (?, 'gpu-host-1', ?, ?, ?, ?, 'decode', '{}', ?)",
        [(t(29), 1160, "page_hinkley", 31.2, 25.0, None), (t(24), 960, "adwin", 0.8, 0.5, t(26))],
    )
    con.close()
    return path


def test_html_report_renders_in_headless_chromium(report_db, tmp_path):
    with duckdb.connect(report_db, read_only=True) as con:
        page = write_html(collect(con, title="shadowd validation: gpu-host-1"), str(tmp_path / "report.html"))
    text = Path(page).read_text()

    plots = re.findall(r'<figure class="plot" data-plot="([a-z-]+)">.*?<svg', text, flags=re.S)
    assert len(plots) >= 3 and {"scatter", "error-cdf", "tenant-time"} <= set(plots)
    assert set(plots) == {"scatter", "error-cdf", "tenant-time", "drift", "gate"}
    assert not re.search(r"""(src|href)=["']?(https?:)?//""", text)  # self-contained
    assert "<script" not in text
    for tenant in ("chat", "code", "longdoc"):
        assert f'<td class="t">{tenant}</td>' in text
    assert "NO_GO now" in text and "No data yet" not in text

    png = screenshot(page, tmp_path)
    image = read_png(png)
    assert image.shape[0] >= 2000 and image.shape[1] >= 1000
    assert distinct_colours(image) > 50, "screenshot is blank or nearly so"
    rows_with_ink = (image[..., :3].min(axis=2) < 0.8).any(axis=1).mean()
    assert rows_with_ink > 0.4, f"only {rows_with_ink:.0%} of the page has content"


def test_empty_database_says_no_data_yet(tmp_path):
    with duckdb.connect(str(tmp_path / "empty.duckdb")) as con:
        migrate(con)
        page = render_html(collect(con, title="empty"))
        text = render_text(collect(con, title="empty"))
    assert "No data yet" in page and 'class="plot"' not in page
    assert "No data yet" in text
    (tmp_path / "empty.html").write_text(page)
    assert distinct_colours(read_png(screenshot(str(tmp_path / "empty.html"), tmp_path))) > 2


def test_unattributed_steps_get_an_explanation_not_an_error(tmp_path):
    batch = synthetic_batch(steps=50, seed=1)
    version = fit(synthetic_batch(steps=300, seed=2), KEY)
    with duckdb.connect(str(tmp_path / "warm.duckdb")) as con:
        migrate(con)
        write_steps(con, batch, engine="e0", attribution=version.attribute(batch), warmup=50)
        page = render_html(collect(con, title="warming up"))
    assert "none is attributed yet" in page and "No data yet" not in page
    assert 'data-plot="scatter"' not in page


def test_text_report_tables(report_db):
    with duckdb.connect(report_db, read_only=True) as con:
        text = render_text(collect(con, Window(engine_id="gpu-host-1"), title="t"))
        later = render_text(collect(con, Window(since=str(START + dt.timedelta(hours=1))), title="t"))
    lines = text.splitlines()
    acc = lines.index("Accuracy per step class (relative error |T̂−T|/T)")
    header = lines[acc + 2].split()
    assert header[:3] == ["class", "steps", "LLMVisor"]
    by_class = {ln.split()[0]: ln.split() for ln in lines[acc + 4 : acc + 8]}
    assert set(by_class) == {"prefill", "decode", "mixed", "all"}
    assert int(by_class["all"][1]) == 1300  # warm-up steps excluded
    assert sum(int(by_class[c][1]) for c in ("prefill", "decode", "mixed")) == 1300
    assert "Per-tenant attributed GPU time" in text and "Drift events" in text
    assert "page_hinkley" in text and "open" in text
    assert "No data yet" in later  # window after the data


def test_report_over_parquet_exports_matches_the_database(report_db, tmp_path):
    """The fleet path: exports of the same rows give the same accuracy and tenant tables."""
    from storage.export import attach_exports, export_parquet

    with duckdb.connect(report_db, read_only=True) as con:
        export_parquet(con, tmp_path / "export", now=START + dt.timedelta(days=2))
        direct = render_text(collect(con, title="t"))
    with duckdb.connect() as fleet:
        attach_exports(fleet, str(tmp_path / "export"))
        fleet_text = render_text(collect(fleet, title="t"))
        page = render_html(collect(fleet, title="fleet"))
    section = lambda text, name: text.split(name, 1)[1].split("\n\n", 1)[0].strip()  # noqa: E731
    for name in ("Accuracy per step class", "Per-tenant attributed GPU time"):
        assert section(fleet_text, name) == section(direct, name)
    assert "Drift events" not in fleet_text and 'data-plot="scatter"' in page


def _cli(*args: str) -> subprocess.CompletedProcess:
    import sys

    return subprocess.run(
        [sys.executable, "-m", "shadowd.cli", "report", *args], capture_output=True, text=True, timeout=180
    )


def test_html_honours_the_window_and_matches_the_json_report(report_db, tmp_path):
    """One report model: ``--html --steps 500`` shows the same steps and accuracy as ``--json --steps 500``."""
    page = tmp_path / "last500.html"
    html_run = _cli("--db", report_db, "--steps", "500", "--html", str(page))
    json_run = _cli("--db", report_db, "--steps", "500", "--json")
    assert html_run.returncode == 0, html_run.stderr
    assert json_run.returncode == 0, json_run.stderr
    rep = json.loads(json_run.stdout)
    assert rep["steps"] == 500 and rep["accuracy_source"] == "stored"
    text = page.read_text()
    overview = re.search(r"<h2>Overview</h2><table><tr>.*?</tr><tr>(.*?)</tr>", text, flags=re.S).group(1)
    cells = re.findall(r"<td[^>]*>(.*?)</td>", overview)
    assert int(cells[1].replace(",", "")) == 500  # steps in the window, not the whole file
    acc_row = re.search(r"<tr><td class=\"t\">all</td>(.*?)</tr>", text, flags=re.S).group(1)
    acc_cells = re.findall(r"<td[^>]*>(.*?)</td>", acc_row)
    lv = rep["accuracy"]["all"]["llmvisor"]
    assert int(acc_cells[0].replace(",", "")) == rep["accuracy"]["all"]["steps"]
    assert acc_cells[1:4] == [f"{100 * lv[q]:.1f}%" for q in ("p50", "p90", "p99")]


def test_tenant_names_are_drawn_as_written(tmp_path):
    """A tenant label is someone else's input: ``$...$`` must not be parsed as mathtext."""
    batch = synthetic_batch(steps=300, seed=3)
    batch.tenant[:] = np.where(batch.tenant == "chat", "$\\frac{a}{$", batch.tenant)
    version = fit(synthetic_batch(steps=300, seed=4), KEY)
    with duckdb.connect(str(tmp_path / "odd.duckdb")) as con:
        migrate(con)
        write_steps(con, batch, engine="e0", attribution=version.attribute(batch))
        page = render_html(collect(con, title="odd names"))
    assert 'data-plot="tenant-time"' in page and "$\\frac{a}{$" in page
