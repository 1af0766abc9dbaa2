"""Loaders for the real request traces under ``traces/`` in the shared data.

* Azure LLM inference trace 2023 (CSV ``TIMESTAMP,ContextTokens,GeneratedTokens``;
  one hour of a production service each for code and conversation; CC-BY-4.0).
* Mooncake FAST'25 traces (JSONL ``timestamp`` ms, ``input_length``, ``output_length``,
  ``hash_ids`` of 512-token prefix blocks; Apache-2.0) - the one source with real
  prefix sharing, turned into ``prefix_blocks``.
* ServeGen ``m-small`` clients (Alibaba Model Studio; Apache-2.0): per client,
  ``chunk-<c>-trace.csv`` (no header: window start s, rate req/s, CV, arrival
  distribution, its two parameters; 600 s windows over 14 days) and
  ``chunk-<c>-dataset.json`` (per 6 h window, input/output length PMFs as Python
  dict literals).  Arrivals are generated window by window from the named
  distribution with the window's mean rate (Gamma: shape = first parameter; Weibull:
  shape = first parameter), lengths drawn from the latest dataset window at or
  before the arrival window, as ServeGen's own ``ClientPool`` pairs them.
* Length statistics (``lengths/``: ShareGPT and arXiv-summarisation prompt/response token
  counts, as Sarathi-Serve and Vidur publish them; no arrival times). ``load_lengths`` pairs
  each real (prompt, output) pair, drawn with replacement, with Poisson arrivals at a stated
  rate: the lengths are real, the arrival process is not, and the docs say so where it counts.

Every loader returns requests sorted by arrival with the first at 0 s, optionally
stopping after ``limit`` requests or ``duration_s`` seconds.
"""

from __future__ import annotations

import ast
import json
import math
from pathlib import Path

import numpy as np

from shadowd.paths import data_dir

from .request_spec import RequestSpec, block_key

SERVEGEN_WINDOW_S = 600.0


def _stop(i: int, t: float, limit: int | None, duration_s: float | None) -> bool:
    return (limit is not None and i >= limit) or (duration_s is not None and t > duration_s)


def _clock_seconds(stamp: str) -> float:
    """Seconds since midnight of day 0 for ``YYYY-MM-DD HH:MM:SS.fffffff`` (7 digits allowed)."""
    date, clock = stamp.strip().split(" ")
    y, mo, d = (int(x) for x in date.split("-"))
    hh, mm, ss = clock.split(":")
    days = (np.datetime64(f"{y:04d}-{mo:02d}-{d:02d}") - np.datetime64("2000-01-01")).astype(int)
    return int(days) * 86400.0 + int(hh) * 3600.0 + int(mm) * 60.0 + float(ss)


def load_azure(
    path: str | Path, tenant: str, *, limit: int | None = None, duration_s: float | None = None
) -> list[RequestSpec]:
    """Azure 2023 CSV rows as requests (no prefix information in this trace)."""
    out: list[RequestSpec] = []
    t0 = None
    with open(path) as f:
        header = f.readline().strip().split(",")
        if header[:3] != ["TIMESTAMP", "ContextTokens", "GeneratedTokens"]:
            raise ValueError(f"{path}: not an Azure LLM trace (header {header})")
        for line in f:
            stamp, ctx, gen = line.strip().split(",")[:3]
            t = _clock_seconds(stamp)
            t0 = t if t0 is None else t0
            if _stop(len(out), t - t0, limit, duration_s):
                break
            out.append(RequestSpec(t - t0, tenant, max(1, int(ctx)), max(1, int(gen))))
    return sorted(out, key=lambda r: r.arrival_s)


def load_mooncake(
    path: str | Path, tenant: str, *, limit: int | None = None, duration_s: float | None = None
) -> list[RequestSpec]:
    """Mooncake JSONL rows as requests; ``hash_ids`` become namespaced ``prefix_blocks``."""
    source = Path(path).stem
    out: list[RequestSpec] = []
    t0 = None
    with open(path) as f:
        for line in f:
            if not line.strip():
                continue
            row = json.loads(line)
            t = float(row["timestamp"]) / 1000.0
            t0 = t if t0 is None else t0
            if _stop(len(out), t - t0, limit, duration_s):
                break
            blocks = tuple(block_key(source, tenant, int(h)) for h in row.get("hash_ids", ()))
            out.append(
                RequestSpec(
                    t - t0,
                    tenant,
                    max(1, int(row["input_length"])),
                    max(1, int(row["output_length"])),
                    blocks or None,
                )
            )
    return sorted(out, key=lambda r: r.arrival_s)


def servegen_paths(client: str | int | Path) -> tuple[Path, Path]:
    """(trace CSV, dataset JSON) of a ServeGen client id, or of a path to either file."""
    p = Path(str(client))
    if p.suffix in {".csv", ".json"}:
        stem = str(p).rsplit("-", 1)[0]
        return Path(stem + "-trace.csv"), Path(stem + "-dataset.json")
    base = data_dir() / "traces" / "servegen" / "m-small" / f"chunk-{client}"
    return Path(f"{base}-trace.csv"), Path(f"{base}-dataset.json")


def _servegen_windows(trace: Path) -> list[tuple[float, float, float, str, float, float]]:
    rows = []
    for line in trace.read_text().splitlines():
        if not line.strip():
            continue
        ts, rate, cv, dist, a, b = (line.split(",") + [""] * 6)[:6]
        rows.append((float(ts), float(rate or 0), float(cv or 0), dist.strip(), float(a or 0), float(b or 0)))
    return rows


Pmf = tuple[np.ndarray, np.ndarray]  # values, probabilities


def _servegen_lengths(dataset: Path) -> list[tuple[float, Pmf, Pmf]]:
    """(window start s, input-length PMF, output-length PMF) for windows that have both."""
    out = []
    for ts, fields in sorted(json.loads(dataset.read_text()).items(), key=lambda kv: float(kv[0])):
        pmfs = []
        for name in ("input_tokens", "output_tokens"):
            pmf = ast.literal_eval(fields.get(name, "{}"))
            if not pmf:
                break
            vals = np.array([float(v) for v in pmf.keys()])
            probs = np.array([float(p) for p in pmf.values()])
            pmfs.append((vals, probs / probs.sum()))
        if len(pmfs) == 2:
            out.append((float(ts), pmfs[0], pmfs[1]))
    if not out:
        raise ValueError(f"{dataset}: no window with length distributions")
    return out


def servegen_mean_rate(client: str | int | Path) -> float:
    """Mean request rate (req/s) over the client's active windows."""
    rates = [w[1] for w in _servegen_windows(servegen_paths(client)[0]) if w[3] and w[1] > 0]
    return float(np.mean(rates)) if rates else 0.0


def load_servegen(
    client: str | int | Path,
    tenant: str,
    *,
    seed: int = 0,
    limit: int | None = None,
    duration_s: float | None = 600.0,
    start_s: float | None = None,
    rate_scale: float = 1.0,
) -> list[RequestSpec]:
    """Generate a ServeGen client's requests from its first active window (or ``start_s``)."""
    trace, dataset = servegen_paths(client)
    windows = [w for w in _servegen_windows(trace) if w[3] and w[1] > 0]
    if not windows:
        raise ValueError(f"{trace}: client never active")
    lengths = _servegen_lengths(dataset)
    rng = np.random.default_rng(seed)
    start = windows[0][0] if start_s is None else start_s
    out: list[RequestSpec] = []
    for ts, rate, cv, dist, a, _ in windows:
        if ts + SERVEGEN_WINDOW_S <= start:
            continue
        rate *= rate_scale
        t = max(ts, start)
        while True:
            t += _interarrival(rng, dist, rate, cv, a)
            if t >= ts + SERVEGEN_WINDOW_S:
                break
            if _stop(len(out), t - start, limit, duration_s):
                return out
            pmf_in, pmf_out = _window_pmfs(lengths, ts)
            p = int(rng.choice(pmf_in[0], p=pmf_in[1]))
            o = int(rng.choice(pmf_out[0], p=pmf_out[1]))
            out.append(RequestSpec(t - start, tenant, max(1, p), max(1, o)))
    return out


def _window_pmfs(lengths, ts: float):
    chosen = lengths[0]
    for entry in lengths:
        if entry[0] <= ts:
            chosen = entry
    return chosen[1], chosen[2]


def _interarrival(rng: np.random.Generator, dist: str, rate: float, cv: float, shape: float) -> float:
    mean = 1.0 / rate
    if dist == "Gamma" and shape > 0:
        return float(rng.gamma(shape, mean / shape))
    if dist == "Weibull" and shape > 0:
        return float(mean / math.gamma(1.0 + 1.0 / shape) * rng.weibull(shape))
    if cv > 0 and dist:
        k = 1.0 / (cv * cv)
        return float(rng.gamma(k, mean / k))
    return float(rng.exponential(mean))


LENGTH_FILES = {
    "sharegpt": "sharegpt_8k_filtered_stats_llama2_tokenizer.csv",
    "arxiv": "arxiv_summarization_stats_llama2_tokenizer_filtered_v2.csv",
}


def length_pairs(name: str) -> np.ndarray:
    """The (prompt, output) token pairs of a ``lengths/`` file, as an ``(n, 2)`` int array."""
    if name not in LENGTH_FILES:
        raise KeyError(f"unknown length statistics {name!r}; known: {', '.join(LENGTH_FILES)}")
    path = data_dir() / "traces" / "lengths" / LENGTH_FILES[name]
    with open(path) as f:
        header = f.readline().strip().split(",")
        if header[:2] != ["num_prefill_tokens", "num_decode_tokens"]:
            raise ValueError(f"{path}: not a length-statistics file (header {header})")
        rows = [line.split(",", 2)[:2] for line in f if line.strip()]
    return np.maximum(np.asarray(rows, dtype=np.int64), 1)


def load_lengths(
    name: str,
    tenant: str,
    *,
    rate: float,
    seed: int = 0,
    limit: int | None = None,
    duration_s: float | None = None,
) -> list[RequestSpec]:
    """Real length pairs of ``name`` (drawn with replacement), Poisson arrivals at ``rate`` req/s;
    stops at ``limit`` requests or ``duration_s`` (default 600 s)."""
    if not rate > 0:
        raise ValueError(f"lengths:{name} needs a positive rate (req/s), got {rate!r}")
    pairs = length_pairs(name)
    if limit is None and duration_s is None:
        duration_s = 600.0
    rng = np.random.default_rng(seed)
    out: list[RequestSpec] = []
    t = 0.0
    while not _stop(len(out), t, limit, duration_s):
        p, o = pairs[int(rng.integers(len(pairs)))]
        out.append(RequestSpec(t, tenant, int(p), int(o)))
        t += float(rng.exponential(1.0 / rate))
    return out
