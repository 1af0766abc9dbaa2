"""Render docs/benchmarks.md from the results document ``benchmarks.run`` writes."""

from __future__ import annotations

from typing import Any


def _fmt(v: Any, nd: int = 1) -> str:
    if v is None:
        return "–"
    if isinstance(v, bool):
        return "yes" if v else "no"
    if isinstance(v, float):
        return f"{v:,.{nd}f}"
    if isinstance(v, int):
        return f"{v:,}"
    return str(v)


def _met(v: Any) -> str:
    return "pending" if v is None else ("**met**" if v else "**missed**")


def _cmd(entry: dict | None) -> str:
    c = (entry or {}).get("meta", {}).get("command")
    return f"`{c}`" if c else "–"


def _load(entry: dict | None) -> str:
    m = (entry or {}).get("meta", {})
    if "load_avg_before" not in m:
        return ""
    return f"load average {m['load_avg_before'][0]:.1f} → {m['load_avg_after'][0]:.1f}, {m['started_at']}"


def _load_span(r: dict[str, Any]) -> str:
    """Lowest–highest one-minute load average over the stored runs (before and after each)."""
    loads = [
        x
        for e in r.values()
        for key in ("load_avg_before", "load_avg_after")
        for x in (e.get("meta", {}).get(key) or [])[:1]
    ]
    return f"{min(loads):.1f}–{max(loads):.1f}" if loads else "not recorded"


def _span(values: list[float], nd: int = 2) -> str:
    """``a–b`` (or ``a`` when they round alike) of measured values."""
    lo, hi = f"{min(values):.{nd}f}", f"{max(values):.{nd}f}"
    return lo if lo == hi else f"{lo}–{hi}"


def _ab_verdict(t: dict[str, Any]) -> str:
    spread = (max(t["block_ratios"]) - min(t["block_ratios"])) / 2
    if t["ratio"] <= 1.03:
        return "met (noisy)" if spread > 0.03 else "**met**"
    return f"below noise (±{spread:.0%})" if t["ratio"] - 1 < spread else "**missed**"


def summary_rows(r: dict[str, Any]) -> list[list[str]]:
    rows: list[list[str]] = []
    tap = r.get("tap_cost")
    for t in (tap or {}).get("data", []):
        n, c = t["requests_per_step"], t["cpu"]
        rows.append(
            [
                f"Tap cost, {t.get('workload', 'steady')} workload, {n} requests: extra engine-thread "
                "CPU per step, paired A/B (the hooks' own CPU); tapped/untapped CPU ratio; the frame "
                "builder's CPU on the tap's encoder thread, off the engine thread",
                f"{_fmt(c.get('paired_overhead_us_per_step', c['overhead_us_per_step']))} µs "
                f"({_fmt(t['hooks_cpu_us_per_step'])} µs); ×{c['ratio']:.3f} "
                f"(blocks {min(c['block_ratios']):.2f}–{max(c['block_ratios']):.2f}); "
                f"encoder {_fmt(t.get('encoder_cpu_us_per_step'))} µs",
                f"≤ {_fmt(t['target_us'], 0)} µs, ≤ ×{t.get('target_ratio', 1.03):.2f}",
                _met(t["met"]),
                _cmd(tap),
            ]
        )
    ing = r.get("ingest")
    for i in (ing or {}).get("data", []):
        label = "attributing (calibrated)" if i["attribute"] else "unattributed (no platform configured)"
        rows.append(
            [
                f"Daemon end-to-end ingest, one core, {label}: request rows stored/s",
                f"{_fmt(i['rows_per_s'])} (received {_fmt(i['rows_received_per_s'])}; writer dropped "
                f"{_fmt(i['rows_dropped_by_writer'])})",
                "≥ 1,000,000",
                _met(i["met"]),
                _cmd(ing),
            ]
        )
    st = r.get("ingest_stages")
    if st:
        d = st["data"]
        rows.append(
            [
                "Daemon path, in-process on one core: µs per request row (sum of stages)",
                f"{d['total_us_per_row']:.2f} µs → {_fmt(d['implied_rows_per_s'])} rows/s",
                "≤ 1 µs",
                _met(d["total_us_per_row"] <= 1.0),
                _cmd(st),
            ]
        )
    at = r.get("attribution")
    if at:
        d = at["data"]
        rows.append(
            [
                "Attribution, 256 requests/step: µs per step (ratio to token baseline alone)",
                f"{d['us_per_step']:.1f} µs ({d['ratio_to_token_baseline']:.1f}×)",
                f"≤ {d['target_us']:.0f} µs",
                _met(d["met"]),
                _cmd(at),
            ]
        )
    sto = r.get("storage")
    for s in (sto or {}).get("data", []):
        label = "attributed" if s["attribute"] else "unattributed"
        used = s.get("used_bytes_per_row")
        rows.append(
            [
                f"DuckDB bytes per stored request row, {label} (whole file after CHECKPOINT; in used blocks)",
                f"{s['bytes_per_row']:.2f} B; {_fmt(used, 2)} B",
                "≤ 16 B",
                _met(s["met"]),
                _cmd(sto),
            ]
        )
    ov = r.get("overload")
    for o in (ov or {}).get("data", []):
        rows.append(
            [
                f"Peak RSS under sustained overload, DuckDB memory_limit: {o['duckdb_memory_limit']}",
                f"{_fmt(o['peak_rss_mib'])} MiB",
                "≤ 500 MiB",
                _met(o["met"]),
                _cmd(ov),
            ]
        )
    k9 = r.get("kill9")
    if k9:
        d = k9["data"]
        rows.append(
            [
                "`kill -9` mid-ingest: frames lost (median / max over runs), flush interval 500 ms",
                f"{d['lost_ms_median']} / {d['lost_ms_max']} ms of frames",
                f"≤ {d['bound_ms']:.0f} ms, prefix intact",
                _met(d["met"]),
                _cmd(k9),
            ]
        )
    g = r.get("gate_eval")
    if g and "cold_s" in g["data"]:
        d = g["data"]
        rows.append(
            [
                f"Gate evaluation over {d['hours']:g} h of data ({_fmt(d['request_rows'])} request rows): "
                "s per evaluation, warm median / max (cold)",
                f"{d['warm_median_s']:.2f} / {d['warm_max_s']:.2f} s ({d['cold_s']:.2f} s)",
                f"≤ {d['target_s']:.0f} s",
                _met(d["met"]),
                _cmd(g),
            ]
        )
    return rows


def _table(header: list[str], rows: list[list[str]]) -> str:
    out = ["| " + " | ".join(header) + " |", "|" + "|".join("---" for _ in header) + "|"]
    out += ["| " + " | ".join(r) + " |" for r in rows]
    return "\n".join(out)


def render(doc: dict[str, Any]) -> str:
    m, r = doc["machine"], doc["results"]
    parts = [
        HEAD.format(
            nproc=m["nproc"],
            cpu=m["cpu_model"],
            ram=m["ram_gib"],
            python=m["python"],
            platform=m["platform"],
            versions=", ".join(f"{k} {v}" for k, v in m["versions"].items() if v),
            load_span=_load_span(r),
        ),
        "## Summary\n",
        _table(["Figure", "Measured", "Target", "Met", "Command"], summary_rows(r)) + "\n",
    ]
    parts.append(_tap_section(r.get("tap_cost")))
    parts.append(_attribution_section(r.get("attribution")))
    parts.append(_ingest_section(r.get("ingest"), r.get("ingest_stages"), r.get("duckdb_append")))
    parts.append(_storage_section(r.get("storage")))
    parts.append(_overload_section(r.get("overload")))
    parts.append(_faults_section(r.get("kill9")))
    parts.append(_gate_section(r.get("gate_eval")))
    parts.append(_retention_section(r.get("retention")))
    parts.append(_stability_section(r.get("stability_cost")))
    parts.append(_demo_memory_section(r.get("demo_memory")))
    parts.append(_window_memory_section(r.get("window_memory")))
    return "\n".join(p for p in parts if p) + "\n"


HEAD = """# Benchmarks

Generated by `.venv/bin/python -m benchmarks.run` (`benchmarks/run.py`; `--only NAME` reruns one,
`--quick` shortens them); the raw figures, with the command, time and load average of each run,
are in `docs/benchmarks.json`.  Fault tests, which make claims about safety rather than speed, are
in `tests/daemon/test_faults.py` and `tests/daemon/test_receiver_fuzz.py`; their measured figures are below too.

**Machine**: {nproc} CPUs (`nproc`), {cpu}, {ram} GiB RAM; Python {python}; {platform}; {versions}.
The {nproc} vCPUs are shared with other jobs (load averages of {load_span} during these runs): wall-clock figures
carry that noise, so each benchmark pins its processes (daemon on CPU 0, generator on CPU 1),
interleaves A/B runs, and reports CPU time where wall time would mostly measure the neighbours.
"""


def _tap_section(entry: dict | None) -> str:
    from shadowd.tap import builder as _bld
    from shadowd.tap import recorder as _rec

    if not entry:
        return ""
    rows = []
    for t in entry["data"]:
        c = t["cpu"]
        hooks = t.get("hooks_cpu_by_hook_us_per_step", {})
        rows.append(
            [
                t.get("workload", "steady"),
                str(t["requests_per_step"]),
                _fmt(t.get("arrivals_per_step"), 2),
                _fmt(t.get("mean_batch"), 1),
                _fmt(t.get("chunked_prefill_step_share"), 2),
                f"{_fmt(c['untapped_us_per_step'])} / {_fmt(c['tapped_us_per_step'])}",
                _fmt(c.get("paired_overhead_us_per_step"), 1),
                f"{c['ratio']:.3f} ({min(c['block_ratios']):.2f}–{max(c['block_ratios']):.2f})",
                f"{_fmt(c.get('engine_bias_us_per_step'), 1)}",
                f"{t['ratio']:.3f}",
                _p99(t),
                _fmt(t["hooks_cpu_us_per_step"], 1),
                " / ".join(
                    _fmt(hooks.get(h), 1) for h in ("on_admit", "on_schedule", "on_output", "on_finish")
                ),
                f"{_fmt(t.get('encoder_cpu_us_per_step'), 1)} ({t.get('encoder', 'inline')})",
                _fmt(t.get("hooks_cpu_inline_us_per_step"), 1),
                f"{t['frames_sent']:,} / {t['frames_received']:,} / {t['frames_dropped']:,}",
            ]
        )
    table = _table(
        [
            "workload",
            "requests",
            "arrivals/step",
            "mean batch",
            "steps with a prefill chunk",
            "CPU µs/step untapped / tapped",
            "extra CPU µs/step (paired)",
            "CPU ratio (blocks)",
            "engine bias µs (±, cancelled)",
            "wall ratio",
            "wall p99 µs/step untapped / tapped",
            "hooks CPU µs/step",
            "admit / schedule / output / finish µs",
            "frame builder CPU µs/step (where)",
            "hooks CPU µs/step with the builder inline",
            "frames built / received / dropped",
        ],
        rows,
    )
    return f"""## Tap cost on the real vLLM scheduler

`benchmarks/tap_cost.py`: two vLLM 0.33 `TapAsyncScheduler`s, one with its tap off (vLLM's
`AsyncScheduler` plus inert wrappers, whose cost is timed apart and added) and one with it on (sending
to a discarding PULL socket in another process), side by side in one process, fed the same workload, driven in the engine's pipelined order (schedule N+1, then N's output) and taking turns step
by step (which goes first rotates), so both meet the same machine; the tap is switched between the two
schedulers every block (crossover).  Timed per step,
in thread CPU time and wall time: `add_request` for the step's arrivals + `schedule()` +
`update_from_output()` (not building the requests or the fake model output).  Workloads:
*steady*, 32 or 256 long-output requests with 32-token prompts (the same decode batch every step);
*churn*, 32 or 256 requests admitted at all times, refilled before every step as requests finish,
outputs of 8–40 tokens, prompt lengths drawn from the Azure 2023 conversation trace (capped at 4,096),
8,192-token step budget, so arrivals, finishes and chunked prefills happen on most steps.  Figures: the
median over blocks of each block's median step time, the ratio per block, the median of the per-step
paired differences (each averaged over the two arms of the crossover); then the hooks (`on_admit`, `on_schedule`, `on_output`, `on_finish`) timed
directly, mean per step over blocks (sends are batched, so the mean carries their cost), the median of
6 blocks, the timers' own cost subtracted.  {_load(entry)}.

{table}

Reading it: "extra CPU µs/step" is what the tap adds to the scheduler's own thread per step, all
hooks and side effects included (plus the tapped class's inert wrappers, timed apart and added); the
hooks' column is the part spent inside the tap's hooks.  The engine thread is what the targets are
about: it is the scheduling loop.  The frame builder's column is the tap's other CPU, spent on its
encoder thread (`SHADOWD_TAP_ENCODER=thread`, the default) off the engine thread's path, measured
apart on the same steps; the run puts a {_gpu_wait(entry)} sleep after every round of steps where
the GPU's part of a step would be (far shorter than a real step of an 8B model at these batch
sizes), which is when that thread gets the interpreter.  The extra CPU can come out below zero on
churn: the tap holds each step's `SchedulerOutput` until its frame is built, so freeing it (lists
of the batch's ids and counts) moves to the encoder thread too.  The wall ratio and the wall
p99 show what the engine thread felt of the encoder thread (waiting for the interpreter while it
finishes a frame) plus the host's noise.  Two
schedulers of the same class differ by themselves (memory layout): the run is a crossover, each
scheduler carrying the tap in every other block, so that difference ("engine bias") enters the two
arms with opposite signs and cancels in their mean.  On this shared 2-vCPU host thread CPU time also
absorbs cache and hypervisor effects of the neighbours (see the load average above and the ratio's
block range).

**How the tap keeps the engine thread's cost proportional to what changed** (`shadowd/tap/recorder.py`
on the engine thread, `shadowd/tap/builder.py` on the encoder thread):
- *The engine thread reads only what changes under it*: which of the step's rows may be prefilling
  (new, resumed and still-chunking requests: `is_prefill_chunk` on the live request), who got a first
  token at this output, when a request left.  It queues the step (a reference to vLLM's
  `SchedulerOutput`, whose lists vLLM builds afresh each step and never changes) and returns; the
  queue is bounded ({_rec.MAX_QUEUED_EVENTS:,} events: beyond, steps are dropped and counted; at four
  times that the tap turns itself off).  The encoder thread wakes every
  {_rec.ENCODER_POLL_S * 1e3:g} ms (the engine thread never signals it) and yields the interpreter
  after every {_rec.ENCODER_SLICE_NS / 1e3:g} µs of work (an engine thread back from the GPU waits for
  that at most; yielding after every event starved the encoder against a busy engine thread).
- *Per request, once.*  Tenant and prompt length are resolved (by the builder) at admission and
  dropped at finish (`on_finish`, hooked on vLLM's `_free_request`, which every finish and abort goes
  through), where the request's lifecycle record is queued too.  Finishes the tap missed are looked for
  only once it knows {_rec.RECONCILE_SLACK} more requests than the scheduler holds, never by a scan
  per step.
- *Tenant and prompt columns* are one C-level dict lookup per row (`map`); keeping them in the
  scheduler's running order and editing them per arrival and finish was tried and cost more (async
  scheduling skips requests whose last token is in flight, so the kept order needed a Python-level
  repair every step).
- *Token and prefill columns from the candidates only.*  Every row but the candidates is a one-token
  decode, proven by the step's token total (else every multi-token row is looked at).  Columns of all
  zeros, ones or `False` come from a cache.
- *Steady decode steps reuse the previous frame's encoded columns*; frames are assembled from encoded
  parts (byte for byte `encode_frame`'s, asserted in `tests/tap/test_batching.py`).
- *Sends are batched*: one zmq message per batch of frames, at most one send per
  {_bld.SEND_INTERVAL_NS // 1_000_000} ms of engine clock unless {_bld.BATCH_FRAMES} frames wait or the
  engine goes idle (a frame waits at most {_bld.SEND_INTERVAL_NS // 1_000_000} ms plus one step and one
  encoder wake-up): a zmq send costs a fixed amount of CPU, and more wall time, whatever its size.
- With everything on the engine thread (`SHADOWD_TAP_ENCODER=inline`, the design before the encoder
  thread; last column, the same steps timed again), the per-row work lands on the scheduling loop;
  no reordering of it met the churn targets there.  Tried and not kept: resolving a step's arrivals in one loop, encoding
  each column at schedule time (as `msgspec.Raw`) and each frame straight onto its batch buffer was
  faster on a warm replay of captured steps but slower inside the running scheduler.  What counts is
  the tap's cost in the engine, not in isolation.
- Exactness under churn (arrivals every step, chunked prefill, preemption, aborts), with the encoder
  thread and inline: `tests/tap/test_churn.py`; the bounded queue and a stalled encoder:
  `tests/tap/test_recorder.py`.
"""


def _p99(t: dict) -> str:
    p = t.get("wall_p99_us")
    return f"{_fmt(p['untapped'], 1)} / {_fmt(p['tapped'], 1)}" if p else "–"


def _gpu_wait(entry: dict) -> str:
    waits = {t.get("gpu_wait_ms") for t in entry["data"]}
    return " / ".join(f"{w:g} ms" for w in sorted(w for w in waits if w is not None)) or "no"


def _attribution_section(entry: dict | None) -> str:
    if not entry:
        return ""
    d = entry["data"]
    return f"""## Attribution cost

`benchmarks/attribution_cost.py` (`benchmarks.attribution_timing.time_attribution`): {d["steps"]:,}
synthetic steps of {d["requests_per_step"]:.0f} requests, `ModelVersion.attribute` over all of them at once (as the daemon
does per batch), best of a few repeats, on one CPU: **{d["us_per_step"]:.1f} µs per step**, the token baseline's
part alone {d["token_baseline_us_per_step"]:.1f} µs ({d["ratio_to_token_baseline"]:.1f}×).  In the
daemon, `pipeline._attribute` costs more per row (see the ingest stages: NaN defaults, float32
copies, a model-version string per row).  {_load(entry)}.
"""


def _append_table(entry: dict | None) -> str:
    if not entry:
        return ""
    d = entry["data"]
    rows = [[k, f"{v:.3f}"] for k, v in d["us_per_row"].items()]
    return (
        f"\n\n`benchmarks/duckdb_append.py`: DuckDB alone, {_fmt(d['rows'])} rows shaped like "
        f"`step_requests`, one DuckDB thread, best of {d['repeats']}.  {_load(entry)}.\n\n"
        + _table(["DuckDB append, fed as", "µs per request row"], rows)
    )


def _free_blocks_table(entry: dict | None) -> str:
    rows = [
        [
            " / ".join(f"{x:,}" for x in r["append_rows"]),
            f"{r['free_blocks']} of {r['total_blocks']}",
            f"{r['file_over_used']:.2f}",
            _fmt(r.get("cpu_us_per_row"), 3),
        ]
        for r in ((entry or {}).get("data", {}).get("free_blocks_by_append_size") or [])
    ]
    if not rows:
        return ""
    return (
        "\n\nFree blocks after `CHECKPOINT`, and CPU per row, by the size of each append "
        "(`benchmarks/duckdb_append.py`, the same rows each time; sizes cycled; one DuckDB thread):\n\n"
        + _table(
            ["rows per append (transaction)", "free blocks", "file size / used blocks", "append CPU µs/row"],
            rows,
        )
        + "\n"
    )


def _ingest_figures(stages: dict[str, Any], append: dict | None) -> tuple[str, ...]:
    """The prose figures of the ingest verdict, from the stored stage and DuckDB-alone results."""
    per = stages["us_per_row"]
    duck = next((v for k, v in per.items() if k.startswith("DuckDB append")), None)
    decode = next((v for k, v in per.items() if k.startswith("decode")), None)
    alone = (append or {}).get("data", {}).get("us_per_row", {})
    fed = [v for k, v in alone.items() if k.endswith("(file)") and "alone" not in k]
    memory = next((v for k, v in alone.items() if "in-memory" in k), None)
    blocks = (append or {}).get("data", {}).get("free_blocks_by_append_size") or []
    whole = [
        b["cpu_us_per_row"]
        for b in blocks
        if len(b["append_rows"]) == 1 and b["append_rows"][0] % 122880 == 0
    ]
    wal = [b["cpu_us_per_row"] for b in blocks if b["append_rows"] == [65536]]
    col = alone.get("engine_id alone (file)")
    return (
        _span(fed) if fed else "–",
        _fmt(memory, 2),
        _fmt(1.0 - duck, 2) if duck is not None else "–",
        _fmt(decode, 2),
        _span(whole) if whole else "–",
        _span(wal) if wal else "–",
        _fmt(col, 2),
        _fmt(duck, 2),
    )


def _ingest_section(entry: dict | None, stages: dict | None, append: dict | None = None) -> str:
    out = ["## Daemon end-to-end ingest\n"]
    if entry:
        rows = []
        for i in entry["data"]:
            rows.append(
                [
                    "yes" if i["attribute"] else "no",
                    _fmt(i["rows_per_s"]),
                    _fmt(i["rows_received_per_s"]),
                    _fmt(i["steps_per_s"]),
                    _fmt(i["rows_sent"]),
                    _fmt(i["rows_stored"]),
                    _fmt(i["rows_dropped_by_writer"]),
                    _fmt(i["peak_rss_mib"]),
                ]
            )
        out.append(
            f"""`benchmarks/ingest.py`: the production `Daemon` (receiver, pipeline with its observers, jobs,
DuckDB writer) in its own process pinned to CPU 0 (`benchmarks/ingest_daemon.py`); a generator
process pinned to CPU 1 (`benchmarks/framegen.py`) pushes pre-encoded frames of 256 requests
(50-character request ids that churn as requests finish and arrive, 8 tenants, mixed steps) over the real ipc socket with blocking sends, so zmq's high-water marks
throttle it to what the daemon takes.  "Attributing": a platform is configured, the daemon
calibrates on the first 1000 steps and attributes every later step, drift detectors on.
Rate = rows reaching DuckDB per second, from 3 s after start (or calibration) until the generator
stops.  When the writer is behind, the receiver waits for it (up to 1 s per batch, then the batch
is dropped and counted), so the generator is throttled through zmq rather than rows dropped.
Peak RSS here is with the daemon's defaults (`[storage]`: 192 MB, one thread; see the overload section).  {_load(entry)}.

"""
            + _table(
                [
                    "attributing",
                    "rows stored/s",
                    "rows received/s",
                    "steps/s",
                    "rows sent",
                    "rows stored",
                    "rows dropped by writer",
                    "peak RSS MiB",
                ],
                rows,
            )
            + "\n"
        )
    if stages:
        d = stages["data"]
        fed_file, in_memory, left, decode, aligned, wal, string_col, duck = _ingest_figures(d, append)
        rows = [[k, f"{v:.3f}"] for k, v in d["us_per_row"].items()]
        rows.append(["**total**", f"**{d['total_us_per_row']:.3f}**"])
        out.append(
            f"""### Where a row's time goes (in-process, one CPU, DuckDB threads = 1)

`benchmarks.ingest.stage_costs`: the same daemon, calibrated, driven stage by stage on batches of
{d["batch_frames"]} frames ({_fmt(d["rows"])} rows).  {_load(stages)}.

"""
            + _table(["stage", "µs per request row"], rows)
            + _append_table(append)
            + _free_blocks_table(append)
            + f"""

**Verdict: missed, by a factor of {1 / max(d["implied_rows_per_s"] / 1e6, 1e-9):.1f} on this CPU.**
The target (1 µs per row, all stages, one core) is out of reach with the v1 wire format and this
schema on this CPU.  The floor is DuckDB: its append into a file of the `step_requests` columns
costs {fed_file} µs per row here however it is fed (the DuckDB-alone table above: object columns,
strings as SQL constants or as codes; Arrow dictionary arrays were tried too and not adopted), and
in memory {in_memory} µs, so most is the write path itself.  That leaves
{left} µs per row for decoding, columns, attribution and checks; msgspec's decoding of a v1 frame
alone costs {decode} µs per row (the stage table: two Python strings and six ints per row).

**What was optimised** (the stage table above shows where each stage stands now; the costs before
these changes were not kept in `docs/benchmarks.json`):
- Appends are cut at DuckDB's row-group boundaries (`storage/row_groups.py`, see the
  storage section): whole row groups are DuckDB's cheapest append (the free-blocks table: {aligned}
  µs per row for appends of whole row groups, against {wal} for appends of 65,536 rows that go
  through the WAL).
- CPython's young-generation collection runs every 50,000 allocations instead of 700
  (`shadowd.daemon.receiver.tune_gc_for_ingest`): each pass walked every item of every decoded frame's
  lists (the decode stage).
- Workload-envelope checks run on whole batches (`EnvelopeMonitor.update_many`, new tenants
  found from the batch's tenant codes) (`DriftWatch.observe`).
- `model_version` columns are filled, not built with `np.full`, which is slow for a `str`
  (attribution).
- `frames_to_columns` (`shadowd/steps/columns.py`): `np.fromiter` over
  `chain`/`map(attrgetter)` (object columns too) instead of generator expressions and list copies;
  request ids and tenants go through a code table, so all rows of a request share one `str` (a
  queued row then holds one reference instead of its own string) and `StepColumns.tenant_index`
  gives per-tenant codes for free.
- `IngestStats.observe` (`shadowd/daemon/metrics.py`) sums per tenant over those codes instead of
  `np.unique` over the tenant strings.
- The pipeline stores a batch's steps and request rows as one unit (`Writer.append_many`): a full
  queue drops both or neither.  While the writer is behind, the receiver waits up to 1 s for room
  (`Writer.append_many(wait_s=...)`): zmq's queue fills, and overload becomes drops the tap counts
  and reports in later frames (so they reach the database), instead of drops after receipt.
- DuckDB runs on `[storage] threads = 1` by default (faster appends on one core than all
  cores, and a sidecar leaves the host's cores to the engine), with `memory_limit = "192MB"`.
- Batches are bounded by rows (`FrameReceiver(batch_rows=32_768)`) as well as frames, and the
  writer's queue by rows (see the overload section).

**What would close the gap** (not done): the decode and column stages are the Python-object
cost of the v1 format's per-request lists.  A frame v2 with packed little-endian columns makes
them `np.frombuffer` calls, but a prototype showed the packing moves into the tap, where building
byte columns from vLLM's Python lists costs more than msgpack-encoding them, and the tap's budget
(the engine's hot path) is the tighter one; packing would have to come from vLLM's own arrays.
Dropping per-row copies of step-level strings (`engine_id`, `run_id`, `model_version`, joined from
`steps` by a view with the contract's name) saves about {string_col} µs per column (`engine_id alone`
in the DuckDB-alone table).  Even so, with DuckDB's append at {duck} µs per row, 1 M rows per second
on one core of this CPU needs a faster core, or the writer on a second core.
"""
        )
    return "\n".join(out)


def _free_series(entry: dict) -> str:
    series = next(
        (s.get("free_blocks_over_time") for s in entry["data"] if s.get("free_blocks_over_time")), None
    )
    if not series:
        return "not measured in this run"
    last = series[-1]
    return (
        ", ".join(str(m["free_blocks"]) for m in series)
        + f" (of {last['total_blocks']} at the end, {_fmt(last['rows'])} rows, {last['bytes_per_row']:.2f} B per row)"
    )


def _share_column_bytes(entry: dict) -> str:
    """Bytes per row of the ``llmvisor_ms`` column in the attributed storage run."""
    runs = [s for s in entry["data"] if s["attribute"]]
    col = runs[-1]["step_requests_column_bytes_per_row"].get("llmvisor_ms") if runs else None
    return _fmt(col, 2)


def _storage_section(entry: dict | None) -> str:
    if not entry:
        return ""
    rows = []
    for s in entry["data"]:
        cols = ", ".join(f"{k} {v:.2f}" for k, v in list(s["step_requests_column_bytes_per_row"].items())[:8])
        rows.append(
            [
                "yes" if s["attribute"] else "no",
                _fmt(s["rows"]),
                _fmt(s["distinct_req_ids"]),
                f"{s['bytes_per_row']:.2f}",
                _fmt(s.get("used_bytes_per_row"), 2),
                _fmt(s.get("marginal_bytes_per_row"), 2),
                f"{s.get('free_blocks')} of {s.get('total_blocks')}",
                f"{s['steps_bytes_per_request_row']:.2f}",
                cols,
            ]
        )
    return (
        f"""## DuckDB bytes per stored request row

`benchmarks/storage_size.py`: realistic frames (as above) through the production pipeline into a
DuckDB file, `CHECKPOINT`, file size ÷ `step_requests` rows (the `steps` table and catalog
included).  Then each `step_requests` column is copied alone into a fresh file (DuckDB allocates
256 kB blocks, so small columns round up).  With attribution, the first 1000 steps (warm-up) are
unattributed.  {_load(entry)}.

"""
        + _table(
            [
                "attributed",
                "request rows",
                "distinct request ids",
                "file bytes/row",
                "used-block bytes/row",
                "file growth per row, second half",
                "free blocks (256 kB)",
                "steps table bytes/request row",
                "largest step_requests columns (bytes/row)",
            ],
            rows,
        )
        + """

**Met, on the whole file.**  The writer cuts its appends where DuckDB's row groups end
(`storage/row_groups.py`): every `step_requests` row group but the last holds exactly 122,880
rows, so no checkpoint rewrites one and no blocks are left free by it.  Before (appends of
131,072 rows; those figures were not kept in `docs/benchmarks.json`) the file held many free
blocks, because a transaction that ends part-way into a row group makes a later checkpoint
rewrite that group (the free-blocks table in the ingest section shows it in isolation).
The few free blocks left come and go with each checkpoint (the small tables' last row groups are
rewritten) and do not grow with the file: over a longer attributed run, checkpointed every
1,024,000 rows (`storage_size.free_blocks_over_time`), free blocks were """
        + _free_series(entry)
        + """.

The cut may fall inside a step.  That step's first request rows are then committed without its
`steps` row, which follows with the rest of them one flush later (within 0.5 s); the first
transaction also records the step in `partial_steps` and the second removes the record, so a crash
in between leaves a record, and the next open deletes the orphaned rows
(`Alignment.recover`; `tests/storage/test_writer.py` kills a writer between the two transactions).
Queries that join request rows to their steps never see the half step; sums over `step_requests`
alone may count it up to one flush early.

What dominates the used bytes (the largest columns in the table above): the two LLMVisor share
columns (`llmvisor_ms`, `llmvisor_measured_ms`: REAL, ALP-RD compressed, since shares differ row by
row), the request id (50 characters, but each repeats on every step of its request, so DuckDB's
dictionary compression shrinks it to a few bytes), context and prompt token counts (bit-packed).
The VTC columns compress to almost nothing (equal shares for a step's decode rows).
Cheap fixes on the used bytes, both contract changes: drop `llmvisor_ms` (it is
`llmvisor_measured_ms` × predicted/measured, derivable per step: −"""
        + _share_column_bytes(entry)
        + """ B), or store shares as ‰ of the step in SMALLINT.  Earlier versions of this benchmark
fed latencies that did not depend on context, so every decode row of a step got the same share and
compressed to nothing: the generator now prices KV reads, as real traffic does.
"""
    )


def _overload_section(entry: dict | None) -> str:
    if not entry:
        return ""
    rows = []
    for o in entry["data"]:
        rows.append(
            [
                o["duckdb_memory_limit"],
                _fmt(o["peak_rss_mib"]),
                _fmt(o["send_rate_frames_per_s"]),
                _fmt(o["frames_dropped_by_sender"]),
                _fmt(o["frames_received"]),
                _fmt(o["rows_dropped_by_writer"]),
                _fmt(o["rows_stored"]),
                _fmt(o["unaccounted_frames"]),
                _fmt(o["drain_on_sigterm_s"]),
            ]
        )
    return (
        f"""## Peak RSS under sustained overload

`benchmarks/overload.py`: the attributing daemon (pinned to CPU 0) fed by a generator sending as
fast as it can with the tap's semantics (non-blocking, `IMMEDIATE`, send high-water mark 1000:
a refused frame is dropped and counted by the sender), for {entry["data"][0]["seconds"]:.0f} s;
then SIGTERM (the daemon drains what zmq holds, flushes and exits).  {_load(entry)}.

"""
        + _table(
            [
                "DuckDB memory_limit",
                "peak RSS MiB",
                "frames delivered/s",
                "frames dropped by sender",
                "frames received",
                "rows dropped by writer",
                "rows stored",
                "frames unaccounted",
                "SIGTERM drain s",
            ],
            rows,
        )
        + """

Every frame is accounted for: sent = received (nothing lost in transit once zmq took it), and
received rows = stored + dropped by the writer (the writer's `rows_dropped` counts rows of both
tables, so it exceeds the request rows by one per dropped step).  Where memory goes, beyond the
imports (scipy, DuckDB, numpy): zmq's receive queue (≤ 512 messages, here single frames), one
batch of decoded frames (≤ 32,768 rows), the writer's queue (≤ 131,072 rows) and buffer (flushed
once it can complete a DuckDB row group of 122,880 rows), and DuckDB, which takes more without a
limit (the table's rows differ only in DuckDB's `memory_limit`).

**What was changed** (the figures before were not kept in `docs/benchmarks.json`): the bounds
were a zmq receive queue of 100,000 frames, batches of 2,000 frames (512,000 rows) and a writer
queue bounded only in items (4,096 batches); now `RCV_HWM_MESSAGES = 512` (2,048 until the
row-group-aligned writer), `BATCH_ROWS = 32_768` (65,536 until then)
(`shadowd/daemon/receiver.py`); `Writer(flush_rows=131_072, queue_max_rows=131_072,
buffer_max_rows=1_000_000)`, flushing as it drains on stop (`storage/writer.py`); request ids and
tenants interned per batch; DuckDB's memory bounded by `[storage] memory_limit` (the first row;
the second row resets it to DuckDB's own default, 80 % of the host's RAM); `MALLOC_ARENA_MAX=2`
in the systemd unit and in this benchmark's daemon (fewer glibc malloc arenas for the daemon's
threads).  Under overload the receiver now waits up to 1 s for the writer before a batch is
dropped (`Writer.append_many(wait_s=1)`), so most of the overload is refused at the tap, where it
is counted and later reported in frames (`dropped_total`).
"""
    )


def _faults_section(entry: dict | None) -> str:
    k9 = ""
    if entry:
        d = entry["data"]
        runs = ", ".join(f"{r['lost']} of {r['sent']}" for r in d["runs"])
        k9 = f"""`benchmarks/kill9.py` ({_cmd(entry)}), the scenario of the fault test repeated
{len(d["runs"])} times: frames lost of frames sent = {runs}; i.e. {d["lost_ms_median"]} ms of frames
lost at the median, {d["lost_ms_max"]} ms at most, against a flush interval of
{d["flush_interval_ms"]:.0f} ms (bound asserted by the test: {d["bound_ms"]:.0f} ms = flush interval +
50 ms receiver batching + 150 ms for the flush itself and scheduling).  The writer flushes every
half interval: a row the row-group cut holds back (`storage/row_groups.py`) goes with the next
flush, so none waits longer than the interval.  Every run: the file opened cleanly and held a
gap-free prefix of steps, each with all its request rows.  {_load(entry)}.
"""
    return f"""## Fault tests (`tests/daemon/test_faults.py`, `tests/daemon/test_receiver_fuzz.py`)

`.venv/bin/python -m pytest -s tests/daemon/test_faults.py tests/daemon/test_receiver_fuzz.py`.

**kill -9 mid-ingest.**  {k9}

**Engine carries on through `kill -9`** (real vLLM `AsyncScheduler`, tapped): the daemon process is
killed at step 400 of 800 while the engine runs; the test asserts no exception, a median engine
step time after the kill within twice the one before (plus 0.5 ms), no step blocked (each under
0.25 s), and at least 300 of the dead daemon's frames dropped and counted by the tap; after a
restart on the same file every step is stored, counted as dropped by the tap
(`dropped_frames_total`), or counted as a gap by the daemon (lost with the killed process):
stored + dropped + gap = steps run.  Finding: a run the database has never stored a step of (the daemon killed
before its first flush of that run) restarts gap counting from zero, so those steps are not counted
anywhere (`RunTracker` treats a run unknown to the database as new; counting `step_seq − 1 −
dropped_total` for it would close the hole, at the price of counting a whole history when a daemon
is first deployed beside a long-running engine).

**Disk full**: a real ENOSPC from a 3 MB tmpfs the test mounts (root; skipped without), space
returned by remounting it at 64 MB.  While full: the daemon keeps receiving, `writer.stats.errors`
counts each failed flush (retried every 0.25 s) with `last_error` "No space left on device", the
`StorageErrors` alert fires, the gate still evaluates (not GO); once space returns every step is
stored (nothing lost: the retry buffer held them) and the alert resolves.

**Wall-clock jumps** of −3 h and +5 h with steady monotonic stamps: every stored `latency_ms` is
exactly the 5 ms step (monotonic stamps only); `ts` follows the wall clock.

**Fuzzing**: 1,000,000 mutated messages (frames and batches of frames; byte overwrites,
truncations, insertions, splices, garbage) through `decode_message` + `frames_to_columns`,
100,000 structure-aware random frames (edge values, wrong types, ragged columns) through
`decode_frame` + `frames_to_columns`, 400 hypothesis structures, and 20,000 messages (half
fuzzed) through a running daemon: nothing but `FrameError`, every decoded frame stored, every
message without one counted.  Found and
fixed: frames that decode but carry ints outside the stored column types (≥ 2³¹ tokens, 2⁶⁴
stamps, negative counts) made `frames_to_columns` raise and lost the whole batch of good frames
with them; `StepFrame` now declares ranges (msgspec `Meta`, checked in C while decoding), so such
a frame is counted as malformed.  Finding, not fixed: a frame with a corrupted, huge `step_seq` in
a known run inflates the `gap` count by the jump.

A corrupt config on reload is covered by the config tests (`tests/daemon/test_config.py`).
"""


def _gate_section(entry: dict | None) -> str:
    if not entry or "cold_s" not in entry["data"]:
        return ""
    d = entry["data"]
    q = ", ".join(f"{k} {v:.2f} s" for k, v in d["query_s"].items())
    return f"""## Gate evaluation over {d["hours"]:g} h of data

`benchmarks/gate_eval.py`: a daemon database holding {d["hours"]:g} h of one engine at
{d["rate_steps_per_s"]} steps/s and {d["requests_per_step"]} requests per step
({_fmt(d["steps"])} steps, {_fmt(d["request_rows"])} request rows, {d["file_bytes"] / 2**20:,.0f} MiB;
built with `INSERT … SELECT` from `range()` in {d["build_s"]:.0f} s), then the production
`GateKeeper` on the daemon's `Writer` (`memory_limit` {d["memory_limit"]}, {d["duckdb_threads"]}
DuckDB thread) evaluating the gate over the last 24 h, {d["repeats"]} times.  {_load(entry)}.

| first evaluation (cold) | warm median | warm max | target | evidence queries (warm) |
|---|---|---|---|---|
| {d["cold_s"]:.2f} s | {d["warm_median_s"]:.2f} s | {d["warm_max_s"]:.2f} s | ≤ {d["target_s"]:.0f} s | {q} |

The gate job runs every 30 s (`[gate] interval_s`); an evaluation scans the window's `steps`
(accuracy quantiles per class, drop rate) and `step_requests` (tenants and longest context seen
under the model version), on one DuckDB thread, so its cost is linear in the window's rows.
"""


def _retention_section(entry: dict | None) -> str:
    if not entry or "sizes" not in entry["data"]:
        return ""
    d = entry["data"]
    rows = []
    for z in d["sizes"]:
        c, u = z["chunked"], z["unchunked"]
        rows.append(
            [
                f"{z['days']} days, {_fmt(z['rows']['step_requests'])} request rows "
                f"({z['file_bytes'] / 2**20:,.0f} MiB); rows older than {z['raw_days']} days pruned",
                f"{_fmt(c['transactions'])}: longest {c['longest_s']:.2f} s, median {c['median_s']:.2f} s, "
                f"total {c['total_s']:.1f} s",
                f"longest {u['longest_s']:.1f} s, total {u['total_s']:.1f} s",
                _fmt(c["requests_deleted"]),
            ]
        )
    table = _table(
        [
            "database",
            f"chunked ({_fmt(d['sizes'][0]['chunk_rows'])} request rows per transaction)",
            "unchunked (one transaction per phase)",
            "request rows pruned",
        ],
        rows,
    )
    busy = d["busy_steps_per_s"] * d["busy_requests_per_step"]
    small, large = d["sizes"][0], d["sizes"][-1]
    here = d["steps_per_s"] * d["requests_per_step"]
    return f"""## Retention over two busy weeks

`benchmarks/retention_cost.py`: a database of 7 and of 14 days of one engine at {d["steps_per_s"]:g}
step(s)/s and {d["requests_per_step"]} requests per step (built with `INSERT … SELECT` from
`range()`), then `storage.retention.run_retention` as the daemon runs it (one DuckDB thread,
`memory_limit` 192MB): roll-up of every minute, pruning of the older half.  Each chunk is its own
writer job, so the watchdog's storage bound ({d["stall_bound_s"]:.0f} s without a flush or job
progress) applies to the longest chunk, not to the whole run.  {_load(entry)}.

{table}

A chunk holds a fixed number of request rows, so its duration follows the chunk size, not the
database's size: from {small["days"]} to {large["days"]} days the longest chunk went from
{small["chunked"]["longest_s"]:.2f} to {large["chunked"]["longest_s"]:.2f} s (a shared, loaded host:
noise of this order), the unchunked transaction from {small["unchunked"]["longest_s"]:.1f} to
{large["unchunked"]["longest_s"]:.1f} s.  A busy host ({d["busy_steps_per_s"]} steps/s, {d["busy_requests_per_step"]} requests per
step) stores {busy * 86400 / 1e6:,.0f} M request rows a day, {busy / here:,.0f}x this rate: its
unchunked transaction would grow by that factor, its chunks would not (same `chunk_rows`).
"""


def _stability_section(entry: dict | None) -> str:
    if not entry or "speedup" not in entry["data"]:
        return ""
    d = entry["data"]
    e = d["point_error_vs_long_double"]
    table = _table(
        ["form", "wall s", "peak traced MiB"],
        [
            [
                "row level (each replicate from the rows)",
                f"{d['row_level_s']:.2f}",
                f"{d['row_level_peak_mib']:.0f}",
            ],
            [
                "group moments (each replicate from per-step sums)",
                f"{d['group_moments_s']:.2f}",
                f"{d['group_moments_peak_mib']:.0f}",
            ],
        ],
    )
    return f"""## Share-stability check on a gate window

`benchmarks/stability_cost.py`: `checks.stability_report` (the gate's stability check) on one
window of {_fmt(d["steps"])} steps whose batch size swings between 2 and 256 requests
({_fmt(d["rows"])} request rows, {d["buckets"]} shape buckets, {d["splits"]} splits,
{d["n_boot"]} bootstrap replicates), in its former row-level form and its current form, in one
run.  {_load(entry)}.

{table}

The current form is {d["speedup"]:.1f}x faster here, and its peak is that of the window's columns:
the row-level form also held, per bucket, a replicates × rows weight matrix and a rows × d²
array of moment products.  The two
agree to {d["max_relative_difference"]:.1e} (relative, effect and interval bounds); against moment
sums in long double, a bucket's point effect is off by at most {e["row_level"]:.1e} in the row-level
form and {e["group_moments"]:.1e} in the current one (the effect subtracts nearly equal moments, so
the rounding of a float64 sum over ~10^5 rows shows; sums per step keep it small).
"""


def _demo_memory_section(entry: dict | None) -> str:
    if not entry:
        return ""
    d = entry["data"]
    every, kept = d["every_step_kib_per_step"], d["truth_sample_kib_per_step"]
    ratio = f" ({every / kept:.0f}x less)" if kept > 0 else ""
    stop = d["default_max_waiting_tokens"]
    return f"""## The demo's memory over a long run

`benchmarks/demo_memory.py`: the engine alone (the real vLLM scheduler and the reference engine,
as `shadowd demo` drives them), each arm in a process of its own.  {_load(entry)}.

- **Recorded steps**, {_fmt(d["steps"], 0)} steps of `{d["record_tenant"]}`.  Keeping every step's
  schedule ({_fmt(d["every_step_recorded"], 0)} steps held) grew resident memory by {every:.2f} KiB per
  engine step over the run's second half; keeping only the Shapley truth's sample, as the demo now
  does ({_fmt(d["truth_sample_recorded"], 0)} steps held), by {kept:.2f} KiB{ratio}.
- **A backlog**, `{d["backlog_tenant"]}` for {_fmt(d["backlog_steps"], 0)} steps: up to
  {_fmt(d["waiting_max"], 0)} requests ({_fmt(d["waiting_tokens_max"], 0)} prompt tokens) waiting, resident
  memory {_fmt(d["rss_mib_at_waiting_max"], 0)} MiB.  Least squares over the checkpoints:
  {d["kib_per_waiting_request"]:.1f} KiB per waiting request, {d["bytes_per_waiting_token"]:.1f} bytes per
  waiting prompt token (vLLM holds each prompt's token ids twice).  The demo's default
  `--max-waiting-tokens`, {_fmt(stop, 0)}, is {stop * d["bytes_per_waiting_token"] / 2**30:.1f} GiB of
  backlog at that rate: a run whose backlog outgrows it stops with the reason, not in the
  out-of-memory killer's hands.
"""


def _window_memory_section(entry: dict | None) -> str:
    if not entry:
        return ""
    d = entry["data"]
    same = "the same report" if d["stability_reports_equal"] else "**different reports**"
    ids, no_ids = d["load_ids_held_b_per_row"], d["load_no_ids_held_b_per_row"]
    labels, codes = d["stability_labels_peak_b_per_row"], d["stability_codes_peak_b_per_row"]
    return f"""## A calibration window's memory, per request row

`benchmarks/window_memory.py`: a demo log of `{"`, `".join(d["tenants"])}` (seed {d["seed"]}),
{_fmt(d["steps"], 0)} steps and {_fmt(d["rows"], 0)} request rows, read back whole as a calibration
window; each arm in a process of its own, peaks from `tracemalloc` (DuckDB's own buffers, bounded
by its memory limit, not counted).  {_load(entry)}.

- **Loading the window** (`load_batch`): with request ids {d["load_ids_peak_b_per_row"]:.0f} bytes per
  row at the peak and {ids:.0f} held; without, as a fit, a re-fit and a stability baseline now read it,
  {d["load_no_ids_peak_b_per_row"]:.0f} and {no_ids:.0f} ({ids / no_ids:.1f}x less held).
- **The stability baseline** (`stability_of`): shape buckets as a label string per row
  {labels:.0f} bytes per row at the peak, as codes {codes:.0f} ({labels / codes:.1f}x less), with {same}.
- **A whole calibration** (`calibrate`, the fit, its drift thresholds and the stability baseline):
  {d["calibrate_peak_b_per_row"]:.0f} bytes per row at the peak, above the loaded window.{_stability_job(d)}

A re-fit holds the loaded window and a calibration's peak at once, so its memory still grows with
the window's rows: what is measured here is per row, not a bound.{_shipped_window(d, no_ids)}
{_under_limit(d)}"""


def _job_against(d: dict) -> str:
    job = d.get("stability_job_peak_b_per_row")
    return "" if job is None else f", and the stability test's {job:.0f} against both together"


def _stability_job(d: dict) -> str:
    if "stability_job_peak_b_per_row" not in d:
        return ""
    return f"""
- **The scheduled stability test** (`stability_from_db`: its own load of the window, here the
  whole log, the shares and the report): {d["stability_job_peak_b_per_row"]:.0f} bytes per row at
  the peak."""


def _held_out_allowance(d: dict, allow: dict) -> str:
    """The allowances, set on the log above, read on a log that played no part in setting them."""
    h = d.get("held_out")
    if not h:
        return ""
    loaded = max(h["load_no_ids_peak_b_per_row"], h["load_no_ids_held_b_per_row"])
    job = h.get("stability_job_peak_b_per_row", 0.0)  # a loading window: both allowances
    fits = (
        loaded <= allow["loaded"]
        and h["calibrate_peak_b_per_row"] <= allow["calibration"]
        and job <= allow["loaded"] + allow["calibration"]
    )
    verdict = "within both allowances" if fits else "**over an allowance**: the guard would under-count there"
    return f"""
The allowances were set on that log's figures.  On a log that played no part in setting them
(`{h["platform"].rsplit("/", 1)[-1]}` tables, `{h["model"].rsplit("/", 1)[-1]}`, tenants
`{"`, `".join(h["tenants"])}`, seed {h["seed"]}; {_fmt(h["steps"], 0)} steps,
{_fmt(h["rows"], 0)} request rows): loading {h["load_no_ids_peak_b_per_row"]:.0f} bytes a row at the
peak and {h["load_no_ids_held_b_per_row"]:.0f} held, a calibration {h["calibrate_peak_b_per_row"]:.0f}
at its peak, the stability test {job:.0f} (against both allowances together, as the guard counts
a window still to load): {verdict}.
"""


def _under_limit(d: dict) -> str:
    """The memory guard's allowances against the figures above, and a re-fit's and the warm-up's
    windows run under a real cgroup limit with the guard and without it."""
    allow, run = d.get("guard_allowance_b_per_row"), d.get("under_limit")
    if not allow or not run:
        return ""
    head = f"""
### The memory guard

A calibration, re-fit, envelope-extension or stability window is cut to the rows that fit
under the daemon's cgroup memory limit, less DuckDB's `memory_limit` and
{_fmt(100 * d["guard_reserve_fraction"], 0)} % of the limit (`[calibration] memory_guard`, on by
default; `shadowd/daemon/window_bound.py`).  It allows {allow["loaded"]} bytes a row for the loaded
window and {allow["calibration"]} for the calibration's peak, against the
{d["load_no_ids_held_b_per_row"]:.0f} held, {d["load_no_ids_peak_b_per_row"]:.0f} at the load's peak and
{d["calibrate_peak_b_per_row"]:.0f} measured above{_job_against(d)}.
"""
    head += _held_out_allowance(d, allow)
    if "not_run" in run:
        return head + f"\nNo arm ran under a limit here: {run['not_run']}.\n"
    head += f"""
Under a real limit (a memory cgroup of the benchmark's own, the kernel's limit as systemd's
`MemoryMax` sets it; DuckDB's `memory_limit` {run["duckdb_limit"]}), each window the whole log, run
first in a cgroup with no limit (the most the kernel charged it), then limited to
{_fmt(100 * run["limit_fraction"], 0)} % of that, without the guard and with it:

| window | charged, no limit | limit | without the guard | with the guard |
|---|---|---|---|---|
"""
    what = {
        "under_limit": "a re-fit's (`RegimeRefit`'s window, loaded and calibrated on)",
        "warmup_under_limit": f"the warm-up's (`WarmupCalibrator`, fed {_fmt(d['steps'], 0)} steps as ingest feeds it)",
    }
    for key, label in what.items():
        r = d.get(key)
        if r and "not_run" not in r:
            head += (
                f"| {label} | {r['free']['cgroup_peak_mib']:.0f} MiB | {r['limit_mib']:.0f} MiB | "
                f"{_limit_arm(r['unguarded'])} | {_limit_arm(r['guarded'])} |\n"
            )
    return (
        head
        + """
The guard is conservative: what it leaves aside (DuckDB's whole `memory_limit`, a share of the
limit, the allowances above the measured bytes) can cut a window further than the limit needs.
"""
    )


def _limit_arm(a: dict) -> str:
    if a["returncode"] != 0:
        return f"killed by the kernel (exit {a['returncode']}, {a['oom_kills']} out-of-memory kill)"
    cut = a["cuts"]["memory"]
    window = f"{_fmt(a['window_steps'], 0)} of {_fmt(a['log_steps'], 0)} steps"
    return f"completed on {window}, charged at most {a['cgroup_peak_mib']:.0f} MiB" + (
        f", {cut} memory cut counted" if cut else ""
    )


def _guard_at_unit(d: dict, steps: int) -> str:
    rows, high = d.get("guard_rows_at_unit_limit"), d.get("unit_memory_high_mib")
    if not rows:
        return ""
    limit = f"`MemoryHigh` of {_fmt(high, 0)} MiB, below `MemoryMax`" if high else "`MemoryMax`"
    return (
        f" (under the unit's {limit}, its allowances leave room for about {_fmt(rows, 0)} rows before "
        f"the daemon's own resident memory: the widest warm-up window is cut where its steps average "
        f"more than about {_fmt(rows / steps, 0)} requests, fewer as the daemon's own memory grows)"
    )


def _shipped_window(d: dict, held: float) -> str:
    """The per-row figures read against the shipped configuration's widest window (arithmetic on
    the stored figures, said as such)."""
    steps, cap = d.get("widest_window_steps"), d.get("unit_memory_max_mib")
    if not steps or not cap:
        return ""
    per_row = held + d["calibrate_peak_b_per_row"]
    mib = lambda rows: _fmt(rows * per_row / 2**20, 0)  # noqa: E731
    return f"""  Read against the shipped configuration
(arithmetic on the figures above, not a run): its widest warm-up window is {_fmt(steps, 0)} steps; at
256 request rows a step that is {_fmt(steps * 256, 0)} rows, about {mib(steps * 256)} MiB for a
re-fit's window and calibration, and at 1,024 rows a step about {mib(steps * 1024)} MiB, against
the unit's `MemoryMax` of {_fmt(cap, 0)} MiB (`systemd/shadowd.service`; DuckDB's own limit apart).
A larger `warmup_steps` or batch needs a larger cap, or a bound on the window's rows: the
memory guard (below) cuts a window to what fits under the cap{_guard_at_unit(d, steps)}, and `[calibration]
max_window_rows` (off by default) to a number an operator chooses.  A window either cuts short
may leave a step class unwatched, and no held-out set has judged the gate on such windows (none
ran under a limit that bound)."""
