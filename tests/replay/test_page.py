"""``shadowd replay --html``: the page of a CI-sized replay, parsed, and rendered in headless Chromium.

The page is checked against the JSON of the same run (``conftest.py``): the plots are there with
one panel per policy and per tenant, their legends carry the run's TTFT p99s, the tables carry its
shares and TTFTs; the per-window share series pool back to the run's totals; tenant labels
(client-controlled) are drawn as written and escaped in the tables.
"""

from __future__ import annotations

import json
import re
from html.parser import HTMLParser
from pathlib import Path

import pytest
from click.testing import CliRunner

from shadowd.cli import main
from shadowd.replay.page import render_replay_html
from shadowd.reports.model import CDF_P, MAX_TENANTS
from tests.chromium import distinct_colours, read_png, screenshot

POLICIES = ("fcfs", "vtc", "llmvisor")
LABEL = {"fcfs": "FCFS", "vtc": "VTC", "llmvisor": "governed"}


class Page(HTMLParser):
    """Figures (data-plot -> the text drawn in its SVG) and tables (h2 title -> header, rows)."""

    def __init__(self, text: str) -> None:
        super().__init__()
        self.figures: dict[str, list[str]] = {}
        self.tables: dict[str, tuple[list[str], list[list[str]]]] = {}
        self.tags: set[str] = set()
        self._figure: str | None = None
        self._h2: list[str] | None = None
        self._title = ""
        self._row: list[str] | None = None
        self._cell: list[str] | None = None
        self._in_svg_text = False
        self.feed(text)

    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        self.tags.add(tag)
        if tag == "figure":
            self._figure = a.get("data-plot")
            self.figures[self._figure] = []
        elif tag == "text" and self._figure:
            self._in_svg_text = True
            self.figures[self._figure].append("")
        elif tag == "h2":
            self._h2 = []
        elif tag == "table":
            self.tables[self._title] = ([], [])
        elif tag == "tr":
            self._row = []
        elif tag in ("td", "th"):
            self._cell = []

    def handle_endtag(self, tag):
        if tag == "figure":
            self._figure = None
        elif tag == "text":
            self._in_svg_text = False
        elif tag == "h2" and self._h2 is not None:
            self._title, self._h2 = "".join(self._h2), None
        elif tag in ("td", "th") and self._cell is not None:
            self._row.append("".join(self._cell))
            self._cell = None
        elif tag == "tr" and self._row is not None:
            head, rows = self.tables[self._title]
            (rows if head else head).extend([self._row] if head else self._row)
            self._row = None

    def handle_data(self, data):
        if self._in_svg_text:
            self.figures[self._figure][-1] += data
        if self._h2 is not None:
            self._h2.append(data)
        if self._cell is not None:
            self._cell.append(data)

    def table(self, title: str) -> dict[str, dict[str, str]]:
        """Rows by their first cell, cells by header."""
        head, rows = self.tables[title]
        return {r[0]: dict(zip(head, r)) for r in rows}


@pytest.fixture(scope="module")
def noisy_page(noisy_replay) -> tuple[dict, Page, Path]:
    out, path = noisy_replay
    return out, Page(path.read_text()), path


def test_scenario_page_has_the_plots_and_the_tables_of_its_run(noisy_page):
    out, page, path = noisy_page
    text = path.read_text()
    assert set(page.figures) == {"share-time", "ttft-cdf"}
    assert text.count("<svg") == 2 and "<script" not in text
    assert not re.search(r"""(src|href)=["']?(https?:)?//""", text)  # self-contained
    tenants = sorted(out["tenants"])

    drawn = page.figures["share-time"]
    for policy in POLICIES:  # one panel per policy, the true share, the entitlement line
        assert any(s.startswith(f"{LABEL[policy]}: true (Shapley) GPU-time share") for s in drawn), policy
    assert "entitlement" in drawn and set(tenants) <= set(drawn)

    cdf = page.figures["ttft-cdf"]
    for tenant in tenants:  # a panel per tenant, a line per policy labelled with that run's p99
        assert tenant in cdf
        for policy in POLICIES:
            p99 = out["policies"][policy]["service"][tenant]["ttft_p99_s"]
            assert f"{LABEL[policy]} (p99 {p99:.3g} s)" in cdf, (tenant, policy)
    assert "TTFT (s)" in cdf and not any("mathdefault" in s for s in cdf)

    side = page.table("Service received beside cost caused")
    assert sorted(side) == tenants
    for tenant in tenants:
        row = side[tenant]
        for policy in POLICIES:
            run = out["policies"][policy]
            share = run["truth"]["per_tenant"][tenant]["attributed_share"]
            assert row[f"attributed {LABEL[policy]}"] == f"{share:.1%}"
            assert row[f"TTFT p99 {LABEL[policy]} s"] == f"{run['service'][tenant]['ttft_p99_s']:.3f}"
        f, g = (out["policies"][p]["service"][tenant]["ttft_p99_s"] for p in ("fcfs", "llmvisor"))
        assert row["p99 governed ÷ FCFS"] == f"{g / f:.2f}"
    # The roles, checked against their definition: the tenant furthest over its entitlement
    # under FCFS is the noisy neighbour; victims are the others better served governed.
    fcfs = out["policies"]["fcfs"]["truth"]["per_tenant"]
    over = {t: fcfs[t]["attributed_share"] / out["tenants"][t]["entitlement"] for t in tenants}
    noisy = max(over, key=over.get)
    assert over[noisy] > 1 and side[noisy]["role under FCFS"] == "noisy neighbour"
    for tenant in set(tenants) - {noisy}:
        f, g = (out["policies"][p]["service"][tenant]["ttft_p99_s"] for p in ("fcfs", "llmvisor"))
        assert side[tenant]["role under FCFS"] == ("victim" if g < f else "")
    assert "victim" in {side[t]["role under FCFS"] for t in tenants}
    for policy in POLICIES:
        rows = page.table(f"{LABEL[policy]} ({policy}): per tenant")
        assert sorted(rows) == tenants
        truth = out["policies"][policy]["truth"]["per_tenant"]
        for tenant in tenants:
            assert rows[tenant]["true"] == f"{truth[tenant]['true_share']:.1%}"
            assert rows[tenant]["requests"] == str(out["policies"][policy]["service"][tenant]["requests"])


def test_share_series_pools_back_to_the_run_totals(noisy_replay):
    """The windows after the warm-up, pooled by their GPU time, give the run's true shares."""
    out, _ = noisy_replay
    assert out["ttft_cdf_levels"] == CDF_P
    for policy, run in out["policies"].items():
        s = run["series"]
        assert s["basis"] == "true" and len(s["t_s"]) == len(s["gpu_ms"])
        first = round(out["warmup_fraction"] * len(s["t_s"]))  # the scored window starts on a window edge
        scored = sum(s["gpu_ms"][first:])
        for tenant, shares in s["share"].items():
            pooled = sum((v or 0.0) * g for v, g in zip(shares[first:], s["gpu_ms"][first:])) / scored
            assert pooled == pytest.approx(run["truth"]["per_tenant"][tenant]["true_share"], rel=1e-6)
        for w, g in enumerate(s["gpu_ms"]):
            if g > 0:
                assert sum(v[w] for v in s["share"].values()) == pytest.approx(1.0)
        for tenant, svc in run["service"].items():  # the CDF is the tenant's TTFT quantiles
            q = svc["ttft_cdf_s"]
            assert len(q) == len(CDF_P) and q == sorted(q), (policy, tenant)
            assert q[0] <= svc["ttft_p50_s"] <= q[-1]


def test_scenario_page_renders_in_headless_chromium(noisy_page, tmp_path):
    _, _, path = noisy_page
    image = read_png(screenshot(str(path), tmp_path))
    assert distinct_colours(image) > 50, "screenshot is blank or nearly so"
    rows_with_ink = (image[..., :3].min(axis=2) < 0.8).any(axis=1).mean()
    assert rows_with_ink > 0.4, f"only {rows_with_ink:.0%} of the page has content"


def test_recorded_page_shows_attributed_shares_and_the_fidelity_check(recorded_replay, tmp_path):
    out, path = recorded_replay
    page = Page(path.read_text())
    assert set(page.figures) == {"share-time", "ttft-cdf"}
    drawn = page.figures["share-time"]
    assert any(s.startswith("FCFS: attributed (LLMVisor) GPU-time share") for s in drawn)
    assert not any("true (Shapley)" in s for s in drawn)  # no ground truth for recorded traffic
    fid = page.table("Fidelity: FCFS replayed against the record")
    assert sorted(fid) == sorted(out["fidelity"]["per_tenant"])
    for tenant, p in out["fidelity"]["per_tenant"].items():
        assert fid[tenant]["recorded TTFT p50 (ms)"] == f"{p['recorded_ttft_p50_ms']:.0f}"
        assert fid[tenant]["within"] == ("yes" if p["within_tolerance"] else "NO")
    side = page.table("Service received beside cost caused")
    for tenant, share in out["policies"]["llmvisor"]["attributed_share"].items():
        assert side[tenant]["attributed governed"] == f"{share:.1%}"
    assert distinct_colours(read_png(screenshot(str(path), tmp_path))) > 50


def _renamed(result: dict, old: str, new: str) -> dict:
    """The result with tenant ``old`` renamed (keys and values) throughout."""
    text = json.dumps(result).replace(json.dumps(old), json.dumps(new))
    return json.loads(text)


def test_tenant_labels_are_drawn_as_written_and_escaped(noisy_replay):
    """A tenant label is someone else's input: no mathtext in the plots, escaped in the tables."""
    out, _ = noisy_replay
    odd = _renamed(_renamed(out, "chat", "$\\frac{a}{$"), "code", "<b>" + "c" * 60)
    page = Page(render_replay_html(odd))
    assert "$\\frac{a}{$" in page.figures["share-time"]
    assert any(s.startswith("$\\frac{a}{$") for s in page.figures["ttft-cdf"])
    side = page.table("Service received beside cost caused")
    assert "$\\frac{a}{$" in side and "<b>" + "c" * 60 in side  # the tables show every name in full
    text = render_replay_html(odd)
    assert "<b>ccc" not in text and "&lt;b&gt;ccc" in text
    assert "<b>" + "c" * 60 not in page.figures["share-time"]  # plots cut long names


def test_html_into_a_missing_directory_fails_before_the_replay(tmp_path):
    res = CliRunner().invoke(main, ["replay", "--minutes", "1", "--html", str(tmp_path / "no" / "r.html")])
    assert res.exit_code != 0 and "does not exist" in res.output


def test_plots_are_bounded_to_max_tenants_and_tables_are_not(noisy_replay):
    out, _ = noisy_replay
    many = json.loads(json.dumps(out))
    extra = [f"clone{i}" for i in range(MAX_TENANTS)]
    for name in extra:  # copies of "chat" under other names
        many["tenants"][name] = many["tenants"]["chat"]
        for run in many["policies"].values():
            run["service"][name] = run["service"]["chat"]
            run["truth"]["per_tenant"][name] = run["truth"]["per_tenant"]["chat"]
            run["series"]["share"][name] = run["series"]["share"]["chat"]
    page = Page(render_replay_html(many))
    legend = set(page.figures["share-time"]) & set(many["tenants"])
    assert len(legend) == MAX_TENANTS
    assert "longdoc" in legend  # the largest FCFS share is drawn first
    assert len(page.table("Service received beside cost caused")) == len(many["tenants"])
    assert f"Plots show {MAX_TENANTS} tenants" in render_replay_html(many)
