"""The gate's confusion matrix on declared development and held-out scenarios (docs/validation.md).

Each scenario is one ``shadowd demo`` run (real vLLM scheduler on simulated time, reference
engine, tap -> daemon -> calibration -> drift watch -> gate), run as the CLI command the
document prints beside it. Healthy scenarios inject nothing and should reach GO; fault scenarios
inject a change after the gate had its chance to reach GO and should end not GO. Per scenario:
the final verdict, the engine step of the first GO, NO_GO and INCONCLUSIVE episodes with the
checks behind them, NO_GO evaluations after the first GO (pages on healthy traffic), residual
drift events before any fault per judged step (false alarms), and the delay from the fault to
the first residual drift event and to the first not-GO evaluation.

The sets are declared in ``SCENARIOS`` and ``PROTOCOL`` below and committed before the held-out
runs; the document renders them from the stored result. Never retune on the held-out set: a
design change made after seeing held-out results needs a new held-out set (``PROTOCOL``).

    .venv/bin/python -m benchmarks.gate_matrix                  # all scenarios, 2 at a time;
                                                                # writes docs/validation.{json,md}
    .venv/bin/python -m benchmarks.gate_matrix --set held_out --only H-steady,F-step8
    .venv/bin/python -m benchmarks.gate_matrix --from-json docs/validation.json   # re-render only
"""

from __future__ import annotations

import argparse
import json
import math
import re
import shlex
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from checks.policy import GatePolicy
from shadowd.demo.step_slices import SLICE_STEPS

REPO = Path(__file__).resolve().parent.parent
KERNELS = "$SHADOWD_SHARED/data/kernels/aiconfigurator-vllm-0.14.0"
RESIDUAL = ("page_hinkley", "adwin", "coefficient")

# -- the protocol, declared before the held-out runs ------------------------------------------

# The regimes of held-out sets 3-5 (each declared with its set; the same five for all three).
SATURATING_REGIMES = [
    "steady",
    "saturating (every rate x3 throughout, to fill the engine)",
    "ramp light -> saturated (rate x0.3 -> x3 over 300 simulated s)",
    "swing light <-> saturated (x0.3 <-> x3, period 150 simulated s)",
    "tenant mix shifting (one tenant x2 -> x0.5, another x0.5 -> x3 over 300 s)",
]

PROTOCOL = {
    "development": {
        "platforms": ["builtin analytic profile", "A100 SXM tables", "H100 SXM tables"],
        "models": ["llama-3.1-8b tp1", "qwen2.5-14b tp1"],
        "tenants": [
            "synthetic chat/code/longdoc",
            "Azure 2023 code and conversation",
            "Mooncake",
            "ServeGen clients 0, 13, 14, 27",
        ],
        "seeds": "0-199",
        "regimes": ["steady load at trace or fixed rates"],
        "note": (
            "Everything the design (checks, thresholds, calibration settings) was built and tuned "
            "on. Two smoke runs on the H200 tables (llama-3.1-8b tp1 built-in mix, seed 0; "
            "qwen2.5-32b tp2 with ServeGen clients 0/13/14 swinging, seed 101) checked the "
            "machinery before the design changes of this revision; they belong here, which is "
            "why the held-out set below uses another model and other clients and seeds."
        ),
    },
    "held_out_1": {
        "platforms": ["H200 SXM tables"],
        "models": ["llama-3.1-70b tp4 (public config, benchmarks/models/llama-3.1-70b)"],
        "tenants": ["ServeGen clients 3, 22, 10 as tenants; client 33 as the new heavy tenant"],
        "seeds": "201-209",
        "regimes": [
            "steady",
            "ramp light -> saturated (rate x0.3 -> x3 over 300 simulated s)",
            "swing light <-> saturated (x0.3 <-> x3, period 150 simulated s)",
            "tenant mix shifting (one tenant x2 -> x0.5, another x0.5 -> x3 over 300 s)",
        ],
        "note": (
            "Not run, looked at or tuned on before this revision's design was committed. Run "
            "length: 8000 engine steps were declared first; the first matrix attempt was stopped "
            "(two-core budget) before any held-out run finished, and the length cut to 6000 with "
            "the fault at step 4200, unseen. Its results (design r1: share stability judged as an "
            "absolute effect) showed every healthy run paging on share stability while LLMVisor's "
            "per-tenant shares were within a few percent of Shapley; the design changed (r2: "
            "stability judged as growth over the calibration window's own effect), so from then "
            "on this set is development data and held-out 2 was named."
        ),
    },
    "held_out_2": {
        "platforms": ["H200 SXM tables (also in held-out 1: no other unseen tables exist)"],
        "models": ["qwen2.5-72b tp4 (public config, benchmarks/models/qwen2.5-72b)"],
        "tenants": ["ServeGen clients 6, 37, 23 as tenants; client 4 as the new heavy tenant"],
        "seeds": "301-309",
        "regimes": [
            "steady",
            "ramp light -> saturated (rate x0.3 -> x3 over 300 simulated s)",
            "swing light <-> saturated (x0.3 <-> x3, period 150 simulated s)",
            "tenant mix shifting (one tenant x2 -> x0.5, another x0.5 -> x3 over 300 s)",
        ],
        "note": (
            "Named after the r2 design change and before any run of it; rates sized from the "
            "clients' native request rates and lengths only (no gate run). Its fault runs first "
            "injected at step 4200, before most runs had reached their first GO (not a test); "
            "they were re-run with the fault at step 5000, nothing else changed. The superseded "
            "rows are kept in docs/validation.json (superseded_rows) and listed at the end. Design "
            "r3 was then built on four of its scenarios (H2-steady, H2-swing, F2-step5, F2-step15: "
            "the re-fit's time-invariance check came from F2-step15, whose 15 % slowdown the first "
            "r3 draft absorbed), so from then on this set is development data."
        ),
    },
    "held_out_3": {
        "platforms": ["H200 SXM tables (as in held-out 1 and 2: no other unseen tables exist)"],
        "models": ["mistral-small-24b tp2 (public config, benchmarks/models/mistral-small-24b)"],
        "tenants": [
            "ServeGen clients 20, 34, 18 as tenants (chosen for arrivals that start together, from "
            "the traces' first arrival times only); client 30 as the new heavy tenant"
        ],
        "seeds": "401-410",
        "regimes": SATURATING_REGIMES,
        "note": (
            "Named after the held-out 2 results and before design r3 (guarded re-fit on traffic "
            "that left the envelope, evidence kept across a re-fit's lineage, INCONCLUSIVE for "
            "classes calibration barely held) was written; nothing in it was run before r3 was "
            "committed. Rates use the same total as held-out 2 (8 req/s), the long-prompt client "
            "lowest. From here on held-out 2 is development data. Its one run under r3 is kept; "
            "design r4 was then built on four of its scenarios (H3-steady, H3-ramp, F3-step5, "
            "F3-step8: the steady run's fit mispredicted the decode batches larger than those it "
            "held, and the gate paged on it), so from then on it is development data too."
        ),
    },
    "held_out_4": {
        "platforms": ["H200 SXM tables (as in held-out 1-3: no other unseen tables exist)"],
        "models": ["mistral-nemo-12b tp2 (public config, benchmarks/models/mistral-nemo-12b)"],
        "tenants": [
            "ServeGen clients 25, 24, 15 as tenants (the unused clients with length data whose "
            "arrivals start within 6 s, from the traces' first arrival times only); client 40 as "
            "the new heavy tenant"
        ],
        "seeds": "501-512 (511 and 512: the accuracy study's saturated and light runs, "
        "benchmarks/held_out_accuracy.py, named after the matrix run and before they ran)",
        "regimes": SATURATING_REGIMES,
        "note": (
            "Named after the held-out 3 results and before design r4 (accuracy judged on the steps "
            "inside the calibrated envelope of the model that scored them; the steps beyond it are "
            "the coverage check's and a re-fit's reason) was written; nothing in it was run before "
            "r4 was committed. Rates use the same total as held-out 2 and 3 (8 req/s), the "
            "long-prompt client lowest. From here on held-out 3 is development data."
        ),
    },
    "held_out_5": {
        "platforms": ["H200 SXM tables (as in held-out 1-4: no other unseen tables exist)"],
        "models": ["qwen2.5-7b tp2 (public config, benchmarks/models/qwen2.5-7b)"],
        "tenants": [
            "ServeGen clients 42 (never used), 3 and 22 (tenants of held-out 1, development data "
            "since: no other client with length data is left unused); client 10 (held-out 1) as "
            "the new heavy tenant"
        ],
        "seeds": "601-610",
        "regimes": SATURATING_REGIMES,
        "note": (
            "Named after the held-out 4 results and before a design r5 (the warm-up window widened "
            "until each common class had enough held-out steps inside its limits) was tried; r5 "
            "did not mend the development demos and was dropped with r4, so this set was run "
            "under design r3, which was committed before any of held-out 3, 4 or 5 was named. "
            "Rates use the same total as held-out 2-4 (8 req/s)."
        ),
        "long_run": (
            "H5-steady-long: H5-steady (seed 601, design r3 unchanged) run 305,000 steps, declared "
            "after the set-5 results and before this run, for one figure only: the false alarms per "
            "judged step on a held-out healthy scenario. With none, the Poisson 95 % bound over about "
            "300,000 judged steps reaches 1e-5; 6,000-step runs cannot show a rate that small."
        ),
    },
    "held_out_6": {
        "platforms": ["H200 SXM tables (as in held-out 1-5: no other unseen tables exist)"],
        "models": ["phi-3-medium (14B) tp2 (public config, benchmarks/models/phi-3-medium)"],
        "tenants": [
            "ShareGPT length statistics as tenant a and arXiv-summarisation length statistics as "
            "tenant c (never used: real prompt/output pairs drawn with replacement, Poisson arrivals, "
            "`lengths:` tenants); the Mooncake synthetic trace as tenant b (never used); ServeGen "
            "client 42 (held-out 5) as the new heavy tenant"
        ],
        "seeds": "701-710",
        "regimes": SATURATING_REGIMES,
        "note": (
            "Named after the held-out 5 results, with design r6 (share stability's growth "
            "INCONCLUSIVE and a re-fit trigger; Page-Hinkley alone by default; the false-alarm target "
            "per judged step of a class, split over its detectors) written and not yet run on any "
            "scenario; nothing in this set was run before r6 was committed, except one 800-step "
            "machinery check of the new model config and tenant sources on the H100 tables "
            "(development platform, seed 99; its verdict was not read). Rates sized from the "
            "sources' lengths only, about 10k prompt tokens/s at the base rate, the long-prompt "
            "tenant lowest (a 2, b 0.15, c 1.5 req/s). Fault runs are 9000 steps with the fault at "
            "7000, as held-out 5's were re-run. From here on held-out 5 is development data."
        ),
        "long_run": (
            "H6-steady-long: H6-steady (seed 701) run 605,000 steps, declared with the set, for the "
            "false alarms per judged step on a held-out healthy scenario: the demo calibrates by at "
            "most 60 % of the run, so about 240,000 steps or more are judged; with no false alarm the "
            "Poisson 95 % bound over 300,000 judged steps reaches 1e-5."
        ),
    },
    "held_out_7": {
        "platforms": ["H200 SXM tables (as in held-out 1-6: no other unseen tables exist)"],
        "models": ["llama-3.2-3b tp2 (public config, benchmarks/models/llama-3.2-3b; never used)"],
        "tenants": [
            "ShareGPT length statistics as tenant a (held-out 6); the Mooncake conversation trace "
            "as tenant b (never used by the gate: real long contexts with prefix sharing); ServeGen "
            "client 27 as tenant c (never used: 51-token prompts, 3-token outputs); arXiv-"
            "summarisation length statistics (held-out 6) at 1 req/s as the new heavy tenant, "
            "Poisson arrivals so it is busy from its first second"
        ],
        "seeds": "801-812 (811 and 812: the accuracy study's saturated and light runs, "
        "benchmarks/held_out_accuracy.py, named after the matrix run and before they ran)",
        "regimes": SATURATING_REGIMES,
        "note": (
            "Named after design r7 (Page-Hinkley's allowance floor raised: `min_shift` 0.04, so "
            "the smallest shift the detectors raise is 2 %, where it was 1 %) was committed and "
            "before any run of this set. r7 was chosen on development runs only: held-out 6's "
            "short scenarios, now development data. A first r7 candidate, each class's residual "
            "less its batch-size bucket's calibration-window mean, was tried on the same runs and "
            "dropped (it added a false alarm on H6-steady). Rates sized from the sources' lengths "
            "only, the long-context tenant lowest (a 6, b 1, c 20 req/s). The declaration said "
            "'mean prompts: ShareGPT a few hundred tokens, Mooncake conversation 13.5k, client 27 "
            "51: about 16k prompt tokens/s at the base rate'; corrected after the runs: ShareGPT's "
            "mean prompt is 2,340 tokens, so the base rate is about 29k prompt tokens/s (no "
            "scenario was changed). Fault runs are 9000 steps with the fault at 7000. From here on "
            "held-out 6 is development data."
        ),
        "long_run": (
            "H7-steady-long: H7-steady (seed 801) run 605,000 steps, declared with the set, for the "
            "false alarms per judged step on a held-out healthy scenario (as H6-steady-long)."
        ),
    },
    "held_out_8": {
        "platforms": ["H200 SXM tables (as in held-out 1-7: no other unseen tables exist)"],
        "models": ["qwen2.5-3b tp2 (public config, benchmarks/models/qwen2.5-3b; never used)"],
        "tenants": [
            "Azure 2023 conversation trace as tenant a, the Mooncake synthetic trace as tenant b, "
            "ServeGen client 13 as tenant c: every trace source has been used before (development "
            "or earlier held-out sets), this mix, model and its rates have not; the Azure 2023 code "
            "trace at 8 req/s as the new heavy tenant, sized to offer about as many prompt tokens "
            "per second as the three tenants together (held-out 7's newcomer offered under a tenth "
            "and never reached the gate's new-tenant share)"
        ],
        "seeds": "901-912 (911 and 912 reserved for the accuracy study's saturated and light runs)",
        "regimes": SATURATING_REGIMES,
        "note": (
            "Named after design r8 (a residual detection pages only if its shift lasts 200 more "
            "judged steps; a re-fit that would blind a watched class is refused) was committed "
            "and before any run of this set. r8 was tried on held-out 7's runs only, development "
            "data from r8 on. Rates sized from the sources' lengths only (mean prompts: Azure "
            "conversation 1,150 tokens, Mooncake synthetic 13,630, client 13 64, Azure code "
            "2,006; `load_stream` on the traces, limit 3000): a 6, b 0.5, c 20 req/s, about 15k "
            "prompt tokens/s at the base rate, the newcomer about 16k. Fault runs are 9000 steps "
            "with the fault at 7000."
        ),
        "long_run": (
            "H8-steady-long: H8-steady (seed 901) run 605,000 steps, declared with the set, for "
            "the false alarms per judged step on a held-out healthy scenario (as H7-steady-long)."
        ),
    },
    "held_out_9": {
        "platforms": ["H200 SXM tables (as in held-out 1-8: no other unseen tables exist)"],
        "models": [
            "llama-2-7b tp1 (public config, benchmarks/models/llama-2-7b; never used): full multi-head "
            "attention (32 KV heads, 4x the KV traffic per token of the grouped-query models so far) "
            "and 4,096 positions, so prompts are capped at 3,072 tokens"
        ],
        "tenants": [
            "the Azure 2023 code trace at 4 req/s as tenant a, ServeGen client 40 at 8 req/s as "
            "tenant b, arXiv-summarisation length statistics at 1 req/s as tenant c (every source "
            "used before, this mix, model and these rates not); ShareGPT length statistics at 6 "
            "req/s as the new heavy tenant (Poisson arrivals: busy from its first second)"
        ],
        "seeds": "1001-1012 (1011 and 1012 reserved for the accuracy study's saturated and light runs)",
        "regimes": SATURATING_REGIMES,
        "note": (
            "Named with design r8 unchanged (r8 was confirmed on held-out 8, development data from "
            "here on) and one scenario change, declared before any run of this set: fault runs are "
            "9000 steps with the fault at 7000 and `--horizon 6000`, so their warm-up, settle and "
            "evidence minimums are sized as the 6000-step healthy runs' and the first GO can come "
            "before the fault (held-out 8's 9000-step fault runs, sized to their own length, first "
            "reached GO at 7001-7202, after the fault, so none of them tested the gate). No gate "
            "setting changes with the horizon. Rates sized from the sources' lengths only (mean "
            "prompts from `load_stream`, limit 3000: Azure code 2,006, client 40 496, arXiv 2,578, "
            "ShareGPT 2,427 tokens): about 14.6k prompt tokens/s at the base rate, the newcomer "
            "about as much again, with ShareGPT's long outputs (mean 445 tokens) on top. One "
            "800-step machinery check of the new config on the H100 tables (development platform, "
            "seed 99) was run first; its verdict was not read."
        ),
        "long_run": (
            "H9-steady-long: H9-steady (seed 1001) run 605,000 steps, declared with the set, for "
            "the false alarms per judged step on a held-out healthy scenario (as H8-steady-long)."
        ),
    },
    "held_out_10": {
        "platforms": ["H200 SXM tables (as in held-out 1-9: no other unseen tables exist)"],
        "models": [
            "llama-3.2-1b tp1 (public config, benchmarks/models/llama-3.2-1b; never used): 16 layers, "
            "hidden 2048, steps short enough that fixed per-step costs weigh more than in any set so far"
        ],
        "tenants": [
            "the Mooncake conversation trace at 0.5 req/s as tenant a (long contexts, prefix sharing), "
            "the Azure 2023 conversation trace at 8 req/s as tenant b, ServeGen client 4 at 20 req/s "
            "as tenant c (every source used before, this mix, model and these rates not); arXiv-"
            "summarisation length statistics at 4 req/s as the new heavy tenant (Poisson arrivals)"
        ],
        "seeds": "1101-1112 (1111 and 1112 reserved for the accuracy study's saturated and light runs)",
        "regimes": SATURATING_REGIMES,
        "note": (
            "Named after design r9 (a re-fit is refused while tenants calibration never saw carry "
            "more of the recent attributed time than the new-tenant limit) was committed and tried "
            "on held-out 9's short runs, and before any run of this set. Fault runs as held-out "
            "9's: 9000 steps, the fault at 7000, `--horizon 6000`. Rates sized from the sources' "
            "lengths only (mean prompts from `load_stream`, limit 3000: Mooncake conversation "
            "11,007, Azure conversation 1,150, client 4 194, arXiv 2,578 tokens): about 18.6k prompt "
            "tokens/s at the base rate, the newcomer about 10k more. One 800-step machinery check of "
            "the new config on the H100 tables (development platform, seed 99) was run first; its "
            "verdict was not read. No long run is declared for this set."
        ),
    },
    "held_out_11": {
        "platforms": ["H200 SXM tables (as in held-out 1-10: no other unseen tables exist)"],
        "models": [
            "qwen2.5-0.5b tp1 (public config, benchmarks/models/qwen2.5-0.5b; never used): hidden 896, "
            "2 KV heads, the smallest model so far"
        ],
        "tenants": [
            "ShareGPT length statistics at 4 req/s as tenant a (Poisson), ServeGen client 15 at 20 "
            "req/s as tenant b, the Azure 2023 code trace at 3 req/s as tenant c (every source used "
            "before, this mix, model and these rates not); the Mooncake synthetic trace at 1 req/s as "
            "the new heavy tenant"
        ],
        "seeds": "1201-1212 (1211 and 1212 reserved for the accuracy study's saturated and light runs)",
        "regimes": SATURATING_REGIMES,
        "note": (
            "Named after design r10 (while tenants calibration never saw carry more than the "
            "new-tenant limit, their steps are left out of the accuracy evidence) was committed and "
            "tried on held-out 10's short runs, and before any run of this set. Fault runs as "
            "held-out 9's: 9000 steps, the fault at 7000, `--horizon 6000`. Rates sized from the "
            "sources' lengths only (mean prompts from `load_stream`, limit 3000: ShareGPT 2,427, "
            "client 15 168, Azure code 2,006, Mooncake synthetic 11,444 tokens): about 19k prompt "
            "tokens/s at the base rate, the newcomer about 11k more. One 800-step machinery check of "
            "the new config on the H100 tables (development platform, seed 99) was run first; its "
            "verdict was not read. No long run is declared for this set."
        ),
    },
    "held_out_12": {
        "platforms": ["H200 SXM tables (as in held-out 1-11: no other unseen tables exist)"],
        "models": [
            "Yi-1.5-9B tp1 (public config, benchmarks/models/yi-1.5-9b; never used): 48 layers of "
            "hidden 4096, 4 KV heads (8 query heads per KV head), 4k positions"
        ],
        "tenants": [
            "ServeGen client 30 at 10 req/s as tenant a, ShareGPT length statistics at 3 req/s as "
            "tenant b (Poisson), the Mooncake conversation trace at 0.3 req/s as tenant c (long "
            "contexts cut to the model's 4k positions, prefix sharing); every source used before, "
            "this mix, model and these rates not; the Azure 2023 code trace at 6 req/s as the new "
            "heavy tenant"
        ],
        "seeds": "1301-1312 (1311 and 1312 reserved for the accuracy study's saturated and light runs)",
        "regimes": SATURATING_REGIMES,
        "note": (
            "Named after design r11 (the warm-up window waits for the tenants a run starts with) was "
            "committed and tried on development rows of held-out 9-11, and before any run of this "
            "set. Fault runs as held-out 9's: 9000 steps, the fault at 7000, `--horizon 6000`. Rates "
            "sized from the sources' lengths only (mean prompts from `load_stream`, limit 3000: "
            "ShareGPT 2,427, Mooncake conversation 13,517 before the 4k cut, Azure code 2,006 "
            "tokens). One 800-step machinery check of the new config on the H100 tables "
            "(development platform, seed 99) was run first; its verdict was not read. No long run "
            "is declared for this set."
        ),
    },
    "held_out_13": {
        "platforms": ["H200 SXM tables (as in held-out 1-12: no other unseen tables exist)"],
        "models": [
            "CodeLlama-13B tp1 (public config, benchmarks/models/codellama-13b; never used): 40 layers "
            "of hidden 5120, full multi-head attention (40 KV heads), 16k positions: the most KV "
            "traffic per token of any set"
        ],
        "tenants": [
            "the Azure 2023 conversation trace at 3 req/s as tenant a, ServeGen client 14 at 10 req/s "
            "as tenant b, arXiv-summarisation length statistics at 0.5 req/s as tenant c (Poisson); "
            "every source used before, this mix, model and these rates not; the Mooncake synthetic "
            "trace at 0.5 req/s as the new heavy tenant"
        ],
        "seeds": "1401-1412 (1411 and 1412 reserved for the accuracy study's saturated and light runs)",
        "regimes": SATURATING_REGIMES,
        "note": (
            "Named after design r12 (steps beyond the calibrated envelope are left out of the "
            "accuracy evidence while they exceed the extrapolation limit) was committed and tried "
            "on held-out 12's short runs, and before any run of this set. Fault runs as held-out "
            "9's: 9000 steps, the fault at 7000, `--horizon 6000`. Rates sized from the sources' "
            "lengths only (mean prompts from `load_stream`, limit 3000: Azure conversation 1,150, "
            "arXiv 2,578 tokens), lower than held-out 12's for a model about 1.5x its size. One "
            "800-step machinery check of the new config on the H100 tables (development platform, "
            "seed 99) was run first; its verdict was not read. No long run is declared for this set."
        ),
    },
    "held_out_14": {
        "platforms": ["H200 SXM tables (as in held-out 1-13: no other unseen tables exist)"],
        "models": [
            "DeepSeek-Coder-33B tp2 (public config, benchmarks/models/deepseek-coder-33b; never "
            "used): 62 layers of hidden 7168, 8 KV heads (7 query heads per KV head), 16k positions "
            "(linear RoPE scaling x4): the deepest model of any set"
        ],
        "tenants": [
            "ShareGPT length statistics at 1 req/s as tenant a (Poisson; long outputs), ServeGen "
            "client 22 at 2 req/s as tenant b, the Mooncake conversation trace at 0.1 req/s as "
            "tenant c (contexts up to the model's 16k positions, prefix sharing); every source used "
            "before, this mix, model and these rates not; the Azure 2023 code trace at 3 req/s as the "
            "new heavy tenant"
        ],
        "seeds": "1501-1512 (1511 and 1512 reserved for the accuracy study's saturated and light runs)",
        "regimes": SATURATING_REGIMES,
        "note": (
            "Named after design r13 (the re-fit guard judges the model in force on the window's "
            "steps inside its calibrated envelope) was committed and tried on held-out 12 and 13's "
            "short runs, and before any run of this set. Fault runs as held-out 9's: 9000 steps, "
            "the fault at 7000, `--horizon 6000`. Rates sized from the sources' lengths only (mean "
            "prompts from `load_stream`, limit 3000: ShareGPT 2,369, client 22 1,035, Mooncake "
            "conversation 13,516, Azure code 2,005 tokens): about 5.9k prompt tokens/s at the base "
            "rate, as held-out 13's for a model of about half the size per GPU, the newcomer about "
            "6k more. One 800-step machinery check of the new config on the H100 tables "
            "(development platform, seed 99) was run first; its verdict was not read. No long run "
            "is declared for this set."
        ),
    },
    "held_out_15": {
        "platforms": ["H200 SXM tables (as in held-out 1-14: no other unseen tables exist)"],
        "models": [
            "DeepSeek-LLM-67B tp4 (public config, benchmarks/models/deepseek-llm-67b; never used): "
            "95 layers of hidden 8192, 8 KV heads (8 query heads per KV head), 4k positions, a "
            "102k vocabulary: the deepest model of any set"
        ],
        "tenants": [
            "the Azure 2023 conversation trace at 2 req/s as tenant a, ServeGen client 25 at 3 req/s "
            "as tenant b, arXiv-summarisation length statistics at 0.5 req/s as tenant c (Poisson, "
            "prompts cut to the model's 4k positions); every source used before, this mix, model and "
            "these rates not; ShareGPT length statistics at 3 req/s as the new heavy tenant"
        ],
        "seeds": "1601-1612 (1611 and 1612 reserved for the accuracy study's saturated and light runs)",
        "regimes": SATURATING_REGIMES,
        "note": (
            "Named after design r16 (a re-fit keeps its parent's tenants; r15: a re-fit whose "
            "detectors would not raise a 5 % slowdown where its parent's do is refused; r14: listed "
            "tenants are known to the gate) was committed and tried on held-out 12 and 14's short "
            "runs, and before any run of this set. Fault "
            "runs as held-out 9's: 9000 steps, the fault at 7000, `--horizon 6000`. Rates sized "
            "from the sources' lengths only (mean prompts from `load_stream`, limit 3000: Azure "
            "conversation 1,150, client 25 714, arXiv 2,585, ShareGPT 2,326 tokens): about 5.7k "
            "prompt tokens/s at the base rate, as held-out 14's, the newcomer about 7k more. One "
            "800-step machinery check of the new config on the H100 tables (development platform, "
            "seed 99) was run first; its verdict was not read. No long run is declared for this set."
        ),
    },
    "held_out_16": {
        "platforms": ["H200 SXM tables (as in held-out 1-15: no other unseen tables exist)"],
        "models": [
            "Yi-34B tp4 (public config, benchmarks/models/yi-34b; never used): 60 layers of hidden "
            "7168, 56 query heads over 8 KV heads (14 query and 2 KV heads per GPU at tp4), 4k "
            "positions, RoPE theta 5e6, a 64k vocabulary"
        ],
        "tenants": [
            "ServeGen client 0 at 12 req/s as tenant a (never used: short prompts and outputs), the "
            "Azure 2023 code trace at 1.5 req/s as tenant b, ShareGPT length statistics at 0.8 req/s "
            "as tenant c (Poisson; long outputs; prompts cut to the model's 4k positions); this mix, "
            "model and these rates not used before; the Azure 2023 conversation trace at 5 req/s as "
            "the new heavy tenant"
        ],
        "seeds": "1701-1712 (1711 and 1712 reserved for the accuracy study's saturated and light runs)",
        "regimes": SATURATING_REGIMES,
        "note": (
            "Named after design r17 (an envelope floor under batch size; barely-held classes "
            "counted on the calibration window's fit part; after a re-fit, a parent's steps judged "
            "inside its own envelope) was committed and tried on held-out 12-15's short runs, and "
            "before any run of this set. Fault runs as held-out 9's: 9000 steps, the fault at "
            "7000, `--horizon 6000`. Rates sized from the sources' lengths only (mean prompts from "
            "`load_stream`, limit 3000: ServeGen client 0 254, Azure code 2,006, ShareGPT 2,427 "
            "tokens): about 7.9k prompt tokens/s at the base rate, more than held-out 15's for a "
            "model half its size on as many GPUs; the newcomer (Azure conversation, 1,150) about "
            "5.8k more. One 800-step machinery check of the new config on the H100 tables "
            "(development platform, seed 99) was run first; its verdict was not read. No long run "
            "is declared for this set."
        ),
    },
    "held_out_17": {
        "platforms": ["H200 SXM tables (as in held-out 1-16: no other unseen tables exist)"],
        "models": [
            "DeepSeek-LLM-7B tp2 (public config, benchmarks/models/deepseek-llm-7b; never used): 30 "
            "layers of hidden 4096, full multi-head attention (32 KV heads, 16 per GPU at tp2), 4k "
            "positions, a 102k vocabulary"
        ],
        "tenants": [
            "the Mooncake conversation trace at 1 req/s as tenant a (prefix sharing; prompts cut to "
            "the model's 4k positions), ServeGen client 33 at 20 req/s as tenant b, the Azure 2023 "
            "conversation trace at 3 req/s as tenant c; every source used before, this mix, model "
            "and these rates not; arXiv-summarisation length statistics at 3 req/s as the new heavy "
            "tenant"
        ],
        "seeds": "1801-1812 (1811 and 1812 reserved for the accuracy study's saturated and light runs)",
        "regimes": SATURATING_REGIMES,
        "note": (
            "Named after design r18 (the breakpoint search keeps as many distinct token counts per "
            "segment as a segment has coefficients; r17: an envelope floor, barely-held classes "
            "counted on the fit part, a parent's steps judged inside its own envelope) was "
            "committed and tried on held-out 15 and 16's short runs, and before any run of this "
            "set. Fault runs as held-out 9's: 9000 steps, the fault at 7000, `--horizon 6000`. "
            "Rates sized from the sources' lengths only (mean prompts from `load_stream`, limit "
            "3000, cut to 3k tokens: Mooncake conversation 2,640, ServeGen client 33 210, Azure "
            "conversation 1,072 tokens): about 10k prompt tokens/s at the base rate, for a 7B "
            "model on two GPUs; the newcomer (arXiv, 2,414) about 7.2k more. One 800-step "
            "machinery check of the new config on the H100 tables (development platform, seed 99) "
            "was run first; its verdict was not read. No long run is declared for this set."
        ),
    },
    "held_out_18": {
        "platforms": ["H200 SXM tables (as in held-out 1-17: no other unseen tables exist)"],
        "models": [
            "Yi-6B tp2 (public config, benchmarks/models/yi-6b; never used): 32 layers of hidden "
            "4096, 32 query heads over 4 KV heads (2 per GPU at tp2), 4k positions, RoPE theta 5e6"
        ],
        "tenants": [
            "the Azure 2023 code trace at 2 req/s as tenant a, ServeGen client 20 at 5 req/s as "
            "tenant b, arXiv-summarisation length statistics at 0.5 req/s as tenant c (Poisson; "
            "prompts cut to the model's 4k positions); every source used before, this mix, model "
            "and these rates not; the Mooncake conversation trace at 2 req/s as the new heavy tenant"
        ],
        "seeds": "1901-1912 (1911 and 1912 reserved for the accuracy study's saturated and light runs)",
        "regimes": SATURATING_REGIMES,
        "note": (
            "Named after design r19 (drift INCONCLUSIVE where the calibrated detectors would not "
            "raise a 5 % slowdown in time) was committed and tried on held-out 16 and 17's short "
            "runs, and before any run of this set. Fault runs as held-out 9's: 9000 steps, the "
            "fault at 7000, `--horizon 6000`. Rates sized from the sources' lengths only (mean "
            "prompts from `load_stream`, limit 3000, cut to 3k tokens: Azure code 2,006, ServeGen "
            "client 20 922, arXiv 2,414 tokens): about 9.8k prompt tokens/s at the base rate, "
            "for a 6B model on two GPUs; the newcomer (Mooncake conversation, 2,640) about 5.3k "
            "more. The fault runs were first run without `--horizon 6000` (`HORIZON_SETS` missed "
            "the set: a slip in the code, not the declaration); those rows are kept as superseded "
            "and the fault runs were re-run as declared, nothing else changed. One 800-step machinery check of the new config on the H100 tables "
            "(development platform, seed 99) was run first; its verdict was not read. No long run "
            "is declared for this set."
        ),
    },
    "held_out_19": {
        "platforms": ["H200 SXM tables (as in held-out 1-18: no other unseen tables exist)"],
        "models": [
            "Mistral-7B v0.3 tp1 (public config, benchmarks/models/mistral-7b-v0.3; never used): "
            "32 layers of hidden 4096, 32 query heads over 8 KV heads, 32k positions, no sliding "
            "window, a 32,768 vocabulary; the first held-out set on one GPU since held-out 13"
        ],
        "tenants": [
            "ShareGPT length statistics at 1.5 req/s as tenant a, ServeGen client 13 at 25 req/s "
            "as tenant b, the Mooncake conversation trace at 0.8 req/s as tenant c (prefix "
            "sharing); every source used before, this mix, model and these rates not; the Azure "
            "2023 conversation trace at 4 req/s as the new heavy tenant"
        ],
        "seeds": "2001-2012 (2011 and 2012 reserved for the accuracy study's saturated and light runs)",
        "regimes": SATURATING_REGIMES,
        "note": (
            "Named after design r20 (decode-only steps judged on the batch range and KV tokens "
            "read of the fit part's decode-only steps; the re-fit guard's residual check on steps "
            "inside the envelope too) was committed and tried on held-out 17 and 18's runs, and "
            "before any run of this set. Fault runs as held-out 9's: 9000 steps, the fault at "
            "7000, `--horizon 6000`. Rates sized from the sources' lengths only (mean prompts "
            "from `load_stream`, limit 3000, cut to 3k tokens: ShareGPT 1,766, ServeGen client 13 "
            "64, Mooncake conversation 2,640 tokens): about 6.4k prompt tokens/s at the base "
            "rate, for a 7B model on one GPU; the newcomer (Azure conversation, 1,072) about 4.3k "
            "more. One 800-step machinery check of the new config on the H100 tables "
            "(development platform, seed 99) was run first; its verdict was not read. No long run "
            "is declared for this set."
        ),
    },
    "held_out_20": {
        "platforms": ["H200 SXM tables (as in held-out 1-19: no other unseen tables exist)"],
        "models": [
            "TinyLlama-1.1B tp1 (public config, benchmarks/models/tinyllama-1.1b; never used): "
            "22 layers of hidden 2048, 32 query heads over 4 KV heads, 2k positions, a 32,000 "
            "vocabulary: the smallest steps of any set"
        ],
        "tenants": [
            "the Azure 2023 code trace at 5 req/s as tenant a, ServeGen client 37 at 8 req/s as "
            "tenant b, ShareGPT length statistics at 3 req/s as tenant c (prompts cut to the "
            "model's 2k positions); every source used before, this mix, model and these rates "
            "not; the Mooncake conversation trace at 3 req/s as the new heavy tenant"
        ],
        "seeds": "2101-2112 (2111 and 2112 reserved for the accuracy study's saturated and light runs)",
        "regimes": SATURATING_REGIMES,
        "note": (
            "Named after design r21 (a floor under tokens per step; a version's drift detectors "
            "primed with its calibration's held-out residuals) was committed and tried on "
            "held-out 17, 18 and 19's runs, and before any run of this set. Fault runs as "
            "held-out 9's: 9000 steps, the fault at 7000, `--horizon 6000`. Rates sized from the "
            "sources' lengths only (mean prompts from `load_stream`, limit 3000, cut to 2k "
            "tokens: Azure code 1,295, ServeGen client 37 920, ShareGPT 1,344 tokens): about "
            "17.9k prompt tokens/s at the base rate, for a 1.1B model on one GPU; the newcomer "
            "(Mooncake conversation, 1,866) about 5.6k more. One 800-step machinery check of the "
            "new config on the H100 tables (development platform, seed 99) was run first; its "
            "verdict was not read. No long run is declared for this set."
        ),
    },
    "held_out_21": {
        "platforms": ["H200 SXM tables (as in held-out 1-20: no other unseen tables exist)"],
        "models": [
            "Qwen2.5-1.5B tp1 (public config, benchmarks/models/qwen2.5-1.5b; never used): 28 "
            "layers of hidden 1536, 12 query heads over 2 KV heads, 32k positions, a 151,936 "
            "vocabulary with tied embeddings"
        ],
        "tenants": [
            "arXiv-summarisation length statistics at 1.5 req/s as tenant a, ServeGen client 24 at "
            "3 req/s as tenant b, the Azure 2023 conversation trace at 4 req/s as tenant c; every "
            "source used before, this mix, model and these rates not; the Mooncake synthetic "
            "trace at 0.4 req/s as the new heavy tenant"
        ],
        "seeds": "2201-2212 (2211 and 2212 reserved for the accuracy study's saturated and light runs)",
        "regimes": SATURATING_REGIMES,
        "note": (
            "Named after design r23 (`evidence.tenants` counts the tenants the calibration scored "
            "out of sample on its held-out part) was committed and tried on held-out 20's healthy "
            "runs and CI's rows, and before any run of this set. Fault runs as held-out 9's: 9000 "
            "steps, the fault at 7000, `--horizon 6000`. Rates sized from the sources' lengths "
            "only (mean prompts from `load_stream`, limit 3000, cut to the demo's 31,744 tokens: "
            "arXiv 2,606, ServeGen client 24 2,360, Azure conversation 1,150 tokens): about 15.6k "
            "prompt tokens/s at the base rate, for a 1.5B model on one GPU; the newcomer (Mooncake "
            "synthetic, 11,714) about 4.7k more. No machinery check was run on the new config "
            "before the set's rows; no long run is declared for this set."
        ),
    },
    "held_out_22": {
        "platforms": ["H200 SXM tables (as in held-out 1-21: no other unseen tables exist)"],
        "models": [
            "Llama-2-13B tp2 (public config, benchmarks/models/llama-2-13b; never used): 40 layers "
            "of hidden 5120, 40 query heads and as many KV heads (no grouped-query attention), "
            "4k positions, a 32,000 vocabulary"
        ],
        "tenants": [
            "ShareGPT length statistics at 2 req/s as tenant a, ServeGen client 33 at 6 req/s as "
            "tenant b, the Mooncake conversation trace at 0.6 req/s as tenant c (prefix sharing, "
            "prompts cut to the model's 4k positions); every source used before, this mix, model "
            "and these rates not; the Azure 2023 code trace at 3 req/s as the new heavy tenant"
        ],
        "seeds": "2301-2312 (2311 and 2312 reserved for the accuracy study's saturated and light runs)",
        "regimes": SATURATING_REGIMES,
        "note": (
            "Named after design r24 (the drift detectors watch each class's residual less its "
            "calibrated bias over batch composition) was committed and tried on held-out 19-21's "
            "runs, and before any run of this set. Fault runs as held-out 9's: 9000 steps, the "
            "fault at 7000, `--horizon 6000`. Rates sized from the sources' lengths only (mean "
            "prompts from `load_stream`, limit 3000, cut to the demo's 3,072 tokens: ShareGPT "
            "1,756, ServeGen client 33 210, Mooncake conversation 2,640 tokens): about 6.4k "
            "prompt tokens/s at the base rate, for a 13B model on two GPUs; the newcomer (Azure "
            "code, 1,582) about 4.7k more. No machinery check was run on the new config before "
            "the set's rows; no long run is declared for this set."
        ),
    },
    "held_out_23": {
        "platforms": ["H200 SXM tables (as in held-out 1-22: no other unseen tables exist)"],
        "models": [
            "Phi-3-mini-4k tp1 (public config, benchmarks/models/phi-3-mini-4k; never used): 32 "
            "layers of hidden 3072, 32 query heads and as many KV heads, 4k positions, a 32,064 "
            "vocabulary"
        ],
        "tenants": [
            "the Azure 2023 conversation trace at 5 req/s as tenant a, ServeGen client 10 at 12 "
            "req/s as tenant b, arXiv-summarisation length statistics at 0.7 req/s as tenant c "
            "(prompts cut to the model's 4k positions); every source used before, this mix, model "
            "and these rates not; the Mooncake conversation trace at 1 req/s as the new heavy tenant"
        ],
        "seeds": "2401-2412 (2411 and 2412 reserved for the accuracy study's saturated and light runs)",
        "regimes": SATURATING_REGIMES,
        "note": (
            "Declared under design r24 (in force since held-out 22) after design r25 was tried on "
            "held-out 21 and 22 and withdrawn, and before any run of this set: a second unseen set "
            "for r24. Fault runs as held-out 9's: 9000 steps, the fault at 7000, `--horizon "
            "6000`. Rates sized from the sources' lengths only (mean prompts from `load_stream`, "
            "limit 3000, cut to the demo's 3,072 tokens: Azure conversation 1,072, ServeGen client "
            "10 101, arXiv 2,421 tokens): about 8.3k prompt tokens/s at the base rate, for a 3.8B "
            "model on one GPU; the newcomer (Mooncake conversation, 2,640) about 2.6k more. No "
            "machinery check was run on the new config before the set's rows; no long run is "
            "declared for this set."
        ),
    },
    "held_out_24": {
        "platforms": ["H200 SXM tables (as in held-out 1-23: no other unseen tables exist)"],
        "models": [
            "CodeLlama-34B tp4 (public config, benchmarks/models/codellama-34b; never used): 48 "
            "layers of hidden 8192, 64 query heads over 8 KV heads, 16k positions, a 32,000 "
            "vocabulary"
        ],
        "tenants": [
            "the Azure 2023 code trace at 2 req/s as tenant a, ServeGen client 18 at 10 req/s as "
            "tenant b, ShareGPT length statistics at 1 req/s as tenant c; every source used "
            "before, this mix, model and these rates not; the Azure 2023 conversation trace at "
            "3 req/s as the new heavy tenant"
        ],
        "seeds": "2501-2512 (2511 and 2512 reserved for the accuracy study's saturated and light runs)",
        "regimes": SATURATING_REGIMES,
        "note": (
            "Named after design r26 (a detection on the residual less its composition bias is "
            "confirmed only if the residual as measured shifted too) was committed and tried on "
            "held-out 21, 22 and 23's runs, and before any run of this set. Fault runs as "
            "held-out 9's: 9000 steps, the fault at 7000, `--horizon 6000`. Rates sized from the "
            "sources' lengths only (mean prompts from `load_stream`, limit 3000, cut to the "
            "model's 16k positions: Azure code 2,006, ServeGen client 18 47, ShareGPT 2,366 "
            "tokens): about 6.9k prompt tokens/s at the base rate, for a 34B model on four GPUs; "
            "the newcomer (Azure conversation, 1,150) about 3.5k more. No machinery check was run "
            "on the new config before the set's rows; no long run is declared for this set."
        ),
    },
    "held_out_25": {
        "platforms": ["H200 SXM tables (as in held-out 1-24: no other unseen tables exist)"],
        "models": [
            "Granite-3.1-8B tp2 (public config, benchmarks/models/granite-3.1-8b; never used): 40 "
            "layers of hidden 4096, 32 query heads over 8 KV heads, an MLP of 12,800, 128k "
            "positions, a 49,155 vocabulary"
        ],
        "tenants": [
            "the Mooncake conversation trace at 0.4 req/s as tenant a (prefix sharing, long "
            "contexts), ServeGen client 0 at 6 req/s as tenant b, the Azure 2023 code trace at 1.5 "
            "req/s as tenant c; every source used before, this mix, model and these rates not; "
            "arXiv-summarisation length statistics at 1.5 req/s as the new heavy tenant"
        ],
        "seeds": (
            "2601-2612 (2611 and 2612 reserved for the accuracy study's saturated and light runs); "
            "2613 for H25-steady-xl"
        ),
        "regimes": SATURATING_REGIMES,
        "note": (
            "Named after design r27 (a newcomer's share is of the last 1,000 attributed steps) was "
            "committed and tried on held-out 21-24's runs, and before any run of this set. Fault "
            "runs as held-out 9's: 9000 steps, the fault at 7000, `--horizon 6000`. Rates sized "
            "from the sources' lengths only (mean prompts from `load_stream`, limit 3000, cut to "
            "the demo's 31,744 tokens: Mooncake conversation 11,168, ServeGen client 0 247, Azure "
            "code 2,006 tokens): about 9.0k prompt tokens/s at the base rate, for an 8B model on "
            "two GPUs; the newcomer (arXiv, 2,576) about 3.9k more. One 800-step machinery check "
            "of the new config on the H100 tables (development platform, seed 99) was run first; "
            "its verdict was not read. H25-steady-long: H25-steady (seed 2601) run 605,000 steps, "
            "for the false alarms per judged step on a held-out healthy scenario (as "
            "H8-steady-long), declared after the set's other rows had run under r27 and before "
            "its own run; no design was changed after it was declared. H25-steady-xl: H25-steady's "
            "load with a seed of its own (2613) run 1,000,000 steps, declared under r27 after "
            "H25-steady-long's run (whose false-alarm bound ended just above the target: too few "
            "judged steps) and before its own; no design was changed after it was declared."
        ),
    },
    "held_out_26": {
        "platforms": ["H200 SXM tables (as in held-out 1-25: no other unseen tables exist)"],
        "models": [
            "qwen2.5-32b tp4 (public config, benchmarks/models/qwen2.5-32b; never in a declared set, "
            "once in an early tp2 machinery check of the demo): 64 layers of hidden 5120, 40 query "
            "heads over 8 KV heads, an MLP of 27,648, a 152,064 vocabulary"
        ],
        "tenants": [
            "ServeGen client 40 at 4 req/s as tenant a, the Azure 2023 conversation trace at 1.5 "
            "req/s as tenant b, ShareGPT length statistics at 0.6 req/s as tenant c; every source "
            "used before, this mix, model, parallelism and these rates not; the Mooncake synthetic "
            "trace at 0.3 req/s as the new heavy tenant"
        ],
        "seeds": "2701-2712 (2711 and 2712 reserved for the accuracy study's saturated and light runs)",
        "regimes": SATURATING_REGIMES,
        "note": (
            "Named after design r28 (a class whose work the fit priced at zero is barely held) was "
            "committed and tried on held-out 21 and 25's short rows, and before any run of this "
            "set. Fault runs as held-out 9's: 9000 steps, the fault at 7000, `--horizon 6000`. "
            "Rates sized from the sources' lengths only (mean prompts from `load_stream`, limit "
            "3000, cut to the demo's 31,744 tokens: ServeGen client 40 496, Azure conversation "
            "1,150, ShareGPT 2,427 tokens): about 5.2k prompt tokens/s at the base rate, for a 32B "
            "model on four GPUs; the newcomer (Mooncake synthetic, 11,714) about 3.5k more. No "
            "machinery check was run on the new config before the set's rows. H26-steady-long: "
            "H26-steady (seed 2701) run 800,000 steps, for the false alarms per judged step on a "
            "held-out healthy engine (about 40 % of a run is judged, the demo's calibration window "
            "growing with it, so about 320,000 judged steps: enough for a bound below 1e-5 with "
            "no alarm), declared after the set's other rows had run under r28 and before its own "
            "run; no design was changed after it was declared. H26-ramp-30k and H26-swing-30k: "
            "H26-ramp and H26-swing (seeds 2702, 2703) run 30,000 steps, so that the ramp (300 "
            "simulated s; a 6000-step run simulates about 72 s of it) reaches its top and holds, "
            "and the swing (period 150 s) turns more than twice: the evidence time to a first GO "
            "where load moves. H26-swing-long: H26-swing (seed 2703) run 800,000 steps, for the "
            "false alarms per judged step on the swinging held-out scenario (as H26-steady-long). "
            "All three declared under r28 after H26-steady-long's run and before their own; no "
            "design was changed after they were declared."
        ),
    },
    "held_out_27": {
        "platforms": ["H200 SXM tables (as in held-out 1-26: no other unseen tables exist)"],
        "models": [
            "mistral-large-2407 tp4 (public config of Mistral Large 2, added for this set as "
            "benchmarks/models/mistral-large-2407; never run before, by any set or study): 88 "
            "layers of hidden 12,288, 96 query heads over 8 KV heads, an MLP of 28,672, a 32,768 "
            "vocabulary, the largest model of any set"
        ],
        "tenants": [
            "the Azure 2023 code trace at 0.3 req/s as tenant a, the Azure 2023 conversation trace "
            "at 0.3 req/s as tenant b, arXiv length statistics at 0.2 req/s as tenant c; every "
            "source used before, this mix, model, parallelism and these rates not; the Mooncake "
            "conversation trace at 0.1 req/s as the new heavy tenant"
        ],
        "seeds": "2801-2812 (2811 and 2812 reserved for the accuracy study's saturated and light runs)",
        "regimes": SATURATING_REGIMES,
        "note": (
            "Named after design r29 (a re-fit after half a window, its guard judging the model in "
            "force on the steps it scored; a class wholly beyond its envelope set aside as "
            "extrapolation where another class anchors the engine) was committed, with unit and "
            "daemon tests only: no matrix row ran under r29 before this set. Fault runs as "
            "held-out 9's: 9000 steps, the fault at 7000, `--horizon 6000`. Rates sized from the "
            "sources' lengths only (mean prompts as stated in earlier sets' notes: Azure code "
            "2,006, Azure conversation 1,150, arXiv 2,576, Mooncake conversation 11,168 tokens): "
            "about 1.5k prompt tokens/s at the base rate, for a 123B model on four GPUs (held-out "
            "26's 32B model ran 5.2k, scaled by the parameter count); the newcomer about 1.1k "
            "more. One 800-step machinery check of the new config on the H100 tables "
            "(development platform, seed 99) was run first; its verdict was not read. "
            "H27-ramp-30k and H27-swing-30k (seeds 2802, 2803) declared with the set, as "
            "held-out 26's, for the evidence time where load moves."
        ),
    },
    "held_out_28": {
        "platforms": ["H200 SXM tables (as in held-out 1-27: no other unseen tables exist)"],
        "models": [
            "smollm2-1.7b tp1 (public config of SmolLM2 1.7B, added for this set as "
            "benchmarks/models/smollm2-1.7b; never run before, by any set or study): 24 layers "
            "of hidden 2,048, 32 query heads over 32 KV heads (full multi-head attention), an "
            "MLP of 8,192, a 49,152 vocabulary, 8,192 positions"
        ],
        "tenants": [
            "ShareGPT length statistics at 3 req/s as tenant a, the Azure 2023 conversation trace "
            "at 5 req/s as tenant b, the Azure 2023 code trace at 2 req/s as tenant c; every "
            "source used before, this mix, model and these rates not; the Mooncake synthetic "
            "trace at 0.5 req/s as the new heavy tenant"
        ],
        "seeds": "2901-2912 (2911 and 2912 reserved for the accuracy study's saturated and light runs)",
        "regimes": SATURATING_REGIMES,
        "note": (
            "Declared after design r30 (residual detections judged within composition strata) "
            "was committed and tried on held-out 27's rows; r30 was then withdrawn (it missed "
            "F21-step5's slowdown) before any run of this set, which runs design r29: r29 was "
            "tried on held-out 27 only, so this set is held out for it too. Fault runs as "
            "held-out 9's: 9000 steps, the fault at 7000, `--horizon 6000`. Rates sized from the "
            "sources' lengths only (mean prompts as stated in earlier sets' notes: ShareGPT "
            "2,427, Azure conversation 1,150, Azure code 2,006 tokens; the model's 8,192 "
            "positions cut the longest): about 17k prompt tokens/s at the base rate, for a 1.7B "
            "model on one GPU (held-out 21's 1.5B model ran a similar load); the newcomer "
            "(Mooncake synthetic, 11,714, cut) about 5.9k more. One 800-step machinery check of "
            "the new config on the H100 tables (development platform, seed 99) was run first; its "
            "verdict was not read. H28-ramp-30k and H28-swing-30k (seeds 2902, 2903) declared "
            "with the set, as held-out 26's and 27's."
        ),
    },
    "held_out_29": {
        "platforms": ["H200 SXM tables (as in held-out 1-28: no other unseen tables exist)"],
        "models": [
            "ministral-8b tp1 (public config of Ministral 8B, added for this set as "
            "benchmarks/models/ministral-8b; never run before, by any set or study): 36 layers of "
            "hidden 4,096, 32 query heads over 8 KV heads, an MLP of 12,288, a 131,072 vocabulary"
        ],
        "tenants": [
            "the Mooncake conversation trace at 0.3 req/s as tenant a, the Azure 2023 conversation "
            "trace at 3 req/s as tenant b, ShareGPT length statistics at 1.5 req/s as tenant c; "
            "every source used before, this mix, model and these rates not; arXiv length "
            "statistics at 1.5 req/s as the new heavy tenant"
        ],
        "seeds": "3001-3012 (3011 and 3012 reserved for the accuracy study's saturated and light runs)",
        "regimes": SATURATING_REGIMES,
        "note": (
            "Named after design r31 (residual detections judged within composition strata where "
            "strata seen before hold a fifth of the window; a lasting shift where they do not "
            "unsupported, not an alarm) was committed and tried on held-out 27's rows and on "
            "held-out 21's two CI rows, and before any run of this set. Fault runs as held-out "
            "9's: 9000 steps, the fault at 7000, `--horizon 6000`. Rates sized from the sources' "
            "lengths only (mean prompts as stated in earlier sets' notes: Mooncake conversation "
            "11,168, Azure conversation 1,150, ShareGPT 2,427, arXiv 2,576 tokens): about 10.5k "
            "prompt tokens/s at the base rate, for an 8B model on one GPU (held-out 25's 8B model "
            "on two ran about 9k); the newcomer about 3.9k more. One 800-step machinery check of "
            "the new config on the H100 tables (development platform, seed 99) was run first; its "
            "verdict was not read. H29-ramp-30k and H29-swing-30k (seeds 3002, 3003) declared "
            "with the set, as held-out 26-28's. H29-swing-long: H29-swing-30k's seed and load "
            "run 800,000 steps, for the false alarms per judged step on a swinging engine that "
            "none of designs r29-r32 was built on; declared under r32 after the set's other rows "
            "had run, and before its own run."
        ),
    },
    "held_out_30": {
        "platforms": ["H200 SXM tables (as in held-out 1-29: no other unseen tables exist)"],
        "models": [
            "falcon3-7b tp2 (public config of Falcon3 7B Base, added for this set as "
            "benchmarks/models/falcon3-7b; never run before, by any set or study): 28 layers of "
            "hidden 3,072, 12 query heads over 4 KV heads of 256 dimensions (the first model "
            "here with heads wider than 128), an MLP of 23,040, a 131,072 vocabulary"
        ],
        "tenants": [
            "the Azure 2023 code trace at 2 req/s as tenant a, ShareGPT length statistics at "
            "1 req/s as tenant b, the Mooncake conversation trace at 0.2 req/s as tenant c; every "
            "source used before, this mix, model, parallelism and these rates not; the Azure 2023 "
            "conversation trace at 3 req/s as the new heavy tenant"
        ],
        "seeds": "3101-3112 (3111 and 3112 reserved for the accuracy study's saturated and light runs)",
        "regimes": SATURATING_REGIMES,
        "note": (
            "Named after design r33 (each class's drift detectors judge a step against its "
            "batch-size stratum's own detrend baseline) was committed and tried on held-out 27's "
            "ten short rows (its decode stream, H27-saturated's, is what r33 was built on), "
            "held-out 21's two CI rows, and H22-ramp, H22-steady, F22-step15, H23-ramp, F23-step8 "
            "and F23-step15 (where withdrawn design r25's per-size offsets had paged on healthy "
            "engines), and before any run of this set. Fault runs as held-out 9's: 9000 steps, "
            "the fault at 7000, `--horizon 6000`. Rates sized from the sources' lengths only "
            "(mean prompts as stated in earlier sets' notes: Azure code 2,006, ShareGPT 2,427, "
            "Mooncake conversation 11,168 tokens): about 8.7k prompt tokens/s at the base rate, "
            "for a 7B model on two GPUs (held-out 25's 8B model on two ran about 9k); the "
            "newcomer (Azure conversation, 1,150) about 3.5k more. One 800-step machinery check "
            "of the new config on the H100 tables (development platform, seed 99) was run first; "
            "its verdict was not read. H30-ramp-30k and H30-swing-30k (seeds 3102, 3103) "
            "declared with the set, as held-out 26-29's. H30-swing-long: H30-swing-30k's seed "
            "and load run 800,000 steps, for r33's false alarms per judged step on a swinging "
            "engine it was not built on; declared after the set's ten short rows had run and "
            "before its own run."
        ),
    },
    "held_out_31": {
        "platforms": ["H200 SXM tables (as in held-out 1-30: no other unseen tables exist)"],
        "models": [
            "granite-3.1-2b tp1 (after the public config of Granite 3.1 2B Base, added for this "
            "set as benchmarks/models/granite-3.1-2b; never run before, by any set or study): 40 "
            "layers of hidden 2,048 (the thinnest model here), 32 query heads over 8 KV heads of "
            "64 dimensions, an MLP of 8,192, a 49,155 vocabulary"
        ],
        "tenants": [
            "the Azure 2023 conversation trace at 4 req/s as tenant a, the Mooncake conversation "
            "trace at 0.4 req/s as tenant b, ShareGPT length statistics at 1.2 req/s as tenant c; "
            "every source used before, this model and these rates not; the Azure 2023 code trace "
            "at 2 req/s as the new heavy tenant"
        ],
        "seeds": "3201-3212 (3211 and 3212 reserved for the accuracy study's saturated and light runs)",
        "regimes": SATURATING_REGIMES,
        "note": (
            "Named after design r34 (r31's confirmation strata take batch sizes above 8 by the "
            "CUDA graph they run at) was committed, built on held-out 30's H30-swing-long run "
            "(docs/swing_drift.md), and before any run of this set. Fault runs as held-out 9's: "
            "9000 steps, the fault at 7000, `--horizon 6000`. Rates sized from the sources' "
            "lengths only (mean prompts as stated in earlier sets' notes: Azure conversation "
            "1,150, Mooncake conversation 11,168, ShareGPT 2,427 tokens): about 12k prompt "
            "tokens/s at the base rate, for a 2B model on one GPU (held-out 29's 8B model on one "
            "ran about 8.7k); the newcomer (Azure code, 2,006) about 4k more. One 800-step "
            "machinery check of the new config on the H100 tables (development platform, seed "
            "99) was run first; its verdict was not read. H31-ramp-30k and H31-swing-30k (seeds "
            "3202, 3203) and H31-swing-long (H31-swing-30k's seed and load, 800,000 steps: r34's "
            "false alarms per judged step on a swinging engine it was not built on) declared "
            "with the set."
        ),
    },
    "held_out_32": {
        "platforms": ["H200 SXM tables (as in held-out 1-31: no other unseen tables exist)"],
        "models": [
            "qwen3-4b tp2 (after the public config of Qwen3 4B, added for this set as "
            "benchmarks/models/qwen3-4b; never run before, by any set or study): 36 layers of "
            "hidden 2,560, 32 query heads over 8 KV heads of 128 dimensions (the first model here "
            "whose attention is wider than its hidden size), an MLP of 9,728, a 151,936 vocabulary"
        ],
        "tenants": [
            "the Azure 2023 conversation trace at 3 req/s as tenant a, ShareGPT length statistics "
            "at 1.5 req/s as tenant b, arXiv-summarisation length statistics at 0.6 req/s as "
            "tenant c; every source used before, this mix, model and these rates not; arXiv "
            "lengths at 2 req/s as the new heavy tenant (Poisson arrivals, so it stays busy: set "
            "31's bursty Azure code newcomer sent 12 requests and fell silent)"
        ],
        "seeds": "3301-3313 (3311 and 3312 reserved for the accuracy study's saturated and light runs)",
        "regimes": SATURATING_REGIMES,
        "note": (
            "Named under design r34 (nothing in the gate changed since held-out 31), before any "
            "run of this set. New in the protocol, not the design: the faults are armed "
            "(`--inject ...@go:7000`: each fires at the first GO verdict from step 7000 on, or "
            "never) and the fault runs are 12,000 steps scheduled as 6,000 (`--horizon 6000`). "
            "Sets 30 and 31's faults mostly landed on a gate already INCONCLUSIVE (traffic left "
            "the calibrated envelope between steps 5600 and 7000: F31-step8, its rows below, was "
            "INCONCLUSIVE from 6030, on coverage.extrapolation and drift), so they tested nothing; an armed fault lands on "
            "a gate vouching for the engine, and a row whose gate never says GO from 7000 on is "
            "not a test. H32-steady-12k (seed 3313) runs the fault runs' timeline with nothing "
            "injected. Rates sized from the sources' lengths only (mean prompts as stated in "
            "earlier sets' notes: Azure conversation 1,150, ShareGPT 2,427, arXiv 2,578 tokens): "
            "about 8.6k prompt tokens/s at the base rate, for a 4B model on two GPUs (held-out "
            "30's 7B model on two ran about 8.7k); the newcomer about 5.2k more. One 800-step "
            "machinery check of the new config on the H100 tables (development platform, seed "
            "99) was run first; its verdict was not read. H32-ramp-30k and H32-swing-30k (seeds "
            "3302, 3303) declared with the set."
        ),
    },
    "held_out_33": {
        "platforms": ["H200 SXM tables (as in held-out 1-32: no other unseen tables exist)"],
        "models": [
            "qwen3-1.7b tp1 (after the public config of Qwen3 1.7B, added for this set as "
            "benchmarks/models/qwen3-1.7b; never run before, by any set or study): 28 layers of "
            "hidden 2,048, 16 query heads over 8 KV heads of 128 dimensions, an MLP of 6,144, a "
            "151,936 vocabulary"
        ],
        "tenants": [
            "the Azure 2023 conversation trace at 5 req/s as tenant a, arXiv-summarisation length "
            "statistics at 1 req/s as tenant b, ShareGPT length statistics at 1.2 req/s as tenant "
            "c; every source used before, this mix, model and these rates not; ShareGPT lengths "
            "at 3 req/s as the new heavy tenant (Poisson arrivals: it stays busy)"
        ],
        "seeds": "3401-3413 (3411 and 3412 reserved for the accuracy study's saturated and light runs)",
        "regimes": SATURATING_REGIMES,
        "note": (
            "Named after design r35 (a re-fit may leave unwatched a class too rare in its window "
            "for the gate to require it) was committed and tried on held-out 31 and 32's short, "
            "12,000- and 30,000-step rows (its finding came from 31 and 32's 30,000-step swings), "
            "and before any run of this set. Faults armed as held-out 32's (`@go:7000`, 12,000 "
            "steps scheduled as 6,000); H33-steady-12k (seed 3413) runs their timeline with "
            "nothing injected. Rates sized from the sources' lengths only (mean prompts as stated "
            "in earlier sets' notes: Azure conversation 1,150, arXiv 2,578, ShareGPT 2,427 "
            "tokens): about 11k prompt tokens/s at the base rate, for a 1.7B model on one GPU "
            "(held-out 31's 2B model on one ran about 12k); the newcomer about 7.3k more. One "
            "800-step machinery check of the new config on the H100 tables (development "
            "platform, seed 99) was run first; its verdict was not read. H33-ramp-30k and "
            "H33-swing-30k (seeds 3402, 3403) and H33-swing-long (H33-swing-30k's seed and load, "
            "800,000 steps: r35's false alarms per judged step on a swinging engine it was not "
            "built on, as r35 installs re-fits r8 refused) declared with the set."
        ),
    },
    "held_out_34": {
        "platforms": ["H200 SXM tables (as in held-out 1-33: no other unseen tables exist)"],
        "models": [
            "qwen3-8b tp2 (after the public config of Qwen3 8B, added for this set as "
            "benchmarks/models/qwen3-8b; never run before, by any set or study): 36 layers of "
            "hidden 4,096, 32 query heads over 8 KV heads of 128 dimensions, an MLP of 12,288, a "
            "151,936 vocabulary"
        ],
        "tenants": [
            "arXiv-summarisation length statistics at 0.8 req/s as tenant a, the Azure 2023 "
            "conversation trace at 2.5 req/s as tenant b, ShareGPT length statistics at 1.5 req/s "
            "as tenant c; every source used before, this mix, model and these rates not; arXiv "
            "lengths at 2.5 req/s as the new heavy tenant (Poisson arrivals: it stays busy)"
        ],
        "seeds": "3501-3513 (3511 and 3512 reserved for the accuracy study's saturated and light runs)",
        "regimes": SATURATING_REGIMES,
        "note": (
            "Named after design r36 (a re-fit is also considered while GO is held through an "
            "inconclusive round) was committed and tried on held-out 31, 32 and 33's short, "
            "12,000- and 30,000-step rows (its finding came from H32-saturated), and before any "
            "run of this set. Faults armed as held-out 32's (`@go:7000`, 12,000 steps scheduled "
            "as 6,000); H34-steady-12k (seed 3513) runs their timeline with nothing injected. "
            "Rates sized from the sources' lengths only (mean prompts as stated in earlier sets' "
            "notes: arXiv 2,578, Azure conversation 1,150, ShareGPT 2,427 tokens): about 8.5k "
            "prompt tokens/s at the base rate, for an 8B model on two GPUs (held-out 25's 8B "
            "model on two ran about 9k); the newcomer about 6.4k more. One 800-step machinery "
            "check of the new config on the H100 tables (development platform, seed 99) was run "
            "first; its verdict was not read. H34-ramp-30k and H34-swing-30k (seeds 3502, 3503) "
            "and H34-swing-long (H34-swing-30k's seed and load, 800,000 steps: r36's false alarms "
            "per judged step on a swinging engine it was not built on, as r36 starts re-fits "
            "earlier) declared with the set."
        ),
    },
    "held_out_35": {
        "platforms": ["H200 SXM tables (as in held-out 1-34: no other unseen tables exist)"],
        "models": [
            "qwen3-14b tp4 (after the public config of Qwen3 14B, added for this set as "
            "benchmarks/models/qwen3-14b; never run before, by any set or study): 40 layers of "
            "hidden 5,120, 40 query heads over 8 KV heads of 128 dimensions, an MLP of 17,408, a "
            "151,936 vocabulary; the first set at tensor parallelism 4 since held-out 2"
        ],
        "tenants": [
            "ShareGPT length statistics at 1.5 req/s as tenant a, the Azure 2023 code trace at "
            "2 req/s as tenant b, the Mooncake conversation trace at 0.2 req/s as tenant c; every "
            "source used before, this mix, model and these rates not; the Azure 2023 conversation "
            "trace at 4 req/s as the new heavy tenant"
        ],
        "seeds": "3601-3613 (3611 and 3612 reserved for the accuracy study's saturated and light runs)",
        "regimes": SATURATING_REGIMES,
        "note": (
            "Named after design r37 (confirmation strata cut at CUDA-graph edges and at quarter "
            "octaves both; built on F34-step8, whose healthy engine paged under r34's graph "
            "strata) was committed and tried on held-out 34's short, 12,000- and 30,000-step rows, "
            "and before any run of this set. Faults armed as held-out 32-34's (`@go:7000`, "
            "12,000 steps scheduled as 6,000); H35-steady-12k (seed 3613) runs their timeline with "
            "nothing injected. Rates sized from the sources' lengths only (mean prompts as stated "
            "in earlier sets' notes: ShareGPT 2,427, Mooncake conversation about 12k, Azure code "
            "about 2k tokens): about 10k prompt tokens/s at the base rate, for a 14B model on four "
            "GPUs; the newcomer about 4.6k more. One 800-step machinery check of the new config "
            "on the H100 tables (development platform, seed 99) was run first; its verdict was "
            "not read. H35-ramp-30k and H35-swing-30k (seeds 3602, 3603) and H35-swing-long "
            "(H35-swing-30k's seed and load, 800,000 steps: r37's false alarms per judged step "
            "on a swinging engine it was not built on, as r37's strata are finer) declared with "
            "the set."
        ),
    },
    "held_out_36": {
        "platforms": ["H200 SXM tables (as in held-out 1-35: no other unseen tables exist)"],
        "models": [
            "phi-4 tp2 (after the public config of Microsoft's Phi-4, added for this set as "
            "benchmarks/models/phi-4; never run before, by any set or study): 40 layers of hidden "
            "5,120, 40 query heads over 10 KV heads of 128 dimensions, an MLP of 17,920, a "
            "100,352 vocabulary; the first model with 10 KV heads (5 per GPU at tensor "
            "parallelism 2)"
        ],
        "tenants": [
            "ServeGen client 34 at 1.2 req/s as tenant a, the Azure 2023 conversation trace at "
            "1.5 req/s as tenant b, ShareGPT length statistics at 0.8 req/s as tenant c; every "
            "source used before, this mix, model and these rates not; arXiv lengths at 1.5 req/s "
            "as the new heavy tenant (Poisson arrivals: it stays busy)"
        ],
        "seeds": "3701-3713 (3711 and 3712 reserved for the accuracy study's saturated and light runs)",
        "regimes": SATURATING_REGIMES,
        "note": (
            "Named after design r38 (r34's graph strata judge a detection where r37's are too "
            "thin; built on H35-swing-long, whose healthy engine paged under r37 after a re-fit "
            "asked for by an unsupported window) was committed, and before any run of this set "
            "or of r38 on another. Faults armed as held-out 32-35's (`@go:7000`, 12,000 steps "
            "scheduled as 6,000); H36-steady-12k (seed 3713) runs their timeline with nothing "
            "injected. Rates sized from the sources' lengths only (mean prompts: ServeGen client "
            "34 1,950 over its first 600 s, Azure conversation 1,150, ShareGPT 2,427 tokens): "
            "about 5.9k prompt tokens/s at the base rate, for a 14B model on two GPUs (held-out "
            "35's 14B model on four ran about 10k); the newcomer about 3.9k more. One 800-step "
            "machinery check of the new config on the H100 tables (development platform, seed "
            "99) was run first; its verdict was not read. H36-ramp-30k and H36-swing-30k (seeds "
            "3702, 3703) and H36-swing-long (H36-swing-30k's seed and load, 800,000 steps: r38's "
            "false alarms per judged step on a swinging engine it was not built on) declared "
            "with the set."
        ),
    },
    "held_out_37": {
        "platforms": ["H200 SXM tables (as in held-out 1-36: no other unseen tables exist)"],
        "models": [
            "codestral-22b tp4 (after the public config of Mistral's Codestral 22B, added for this "
            "set as benchmarks/models/codestral-22b; never run before, by any set or study): 56 "
            "layers of hidden 6,144, 48 query heads over 8 KV heads of 128 dimensions, an MLP of "
            "16,384, a 32,768 vocabulary; the first model of hidden 6,144. Declared first: "
            "InternLM2.5 20B (a config of the same width), which failed the machinery check "
            "below (vLLM's config parser does not know its model type without remote code) and "
            "was replaced before any run"
        ],
        "tenants": [
            "the Azure 2023 code trace at 2 req/s as tenant a, arXiv-summarisation length "
            "statistics at 0.8 req/s as tenant b, ServeGen client 10 at 15 req/s as tenant c; "
            "every source used before, this mix, model and these rates not; ShareGPT lengths at "
            "2 req/s as the new heavy tenant (Poisson arrivals: it stays busy)"
        ],
        "seeds": "3801-3813 (3811 and 3812 reserved for the accuracy study's saturated and light runs)",
        "regimes": SATURATING_REGIMES,
        "note": (
            "A second set for design r38, declared after held-out 36's runs (which met every "
            "target but never exercised r38's fallback: r37 ended them alike) and before any run "
            "of this set; no setting changed. Faults armed as held-out 32-36's (`@go:7000`, "
            "12,000 steps scheduled as 6,000); H37-steady-12k (seed 3813) runs their timeline "
            "with nothing injected. Rates sized from the sources' lengths only (mean prompts: "
            "Azure code about 2k, arXiv 2,578, ServeGen client 10 102 tokens over its first "
            "600 s): about 7.6k prompt tokens/s at the base rate, for a 22B model on four GPUs "
            "(held-out 35's 14B model on four ran about 10k); the newcomer about 4.9k more. One "
            "800-step machinery check of the new config on the H100 tables (development "
            "platform, seed 99) was run first; its verdict was not read. H37-ramp-30k and "
            "H37-swing-30k (seeds 3802, 3803) and H37-swing-long (H37-swing-30k's seed and load, "
            "800,000 steps) declared with the set."
        ),
    },
    "held_out_38": {
        "platforms": ["H200 SXM tables (as in held-out 1-37: no other unseen tables exist)"],
        "models": [
            "command-r-35b tp4 (after the public config of Cohere's Command-R v01, added for this "
            "set as benchmarks/models/command-r-35b; never run before, by any set or study): 40 "
            "layers of hidden 8,192, 64 query heads over 64 KV heads of 128 dimensions (full "
            "multi-head attention: the most KV per token of any model run), an MLP of 22,528, a "
            "256,000 vocabulary, 8,192 positions (prompts capped by them)"
        ],
        "tenants": [
            "Azure 2023 conversation trace at 2 req/s as tenant a, ShareGPT length statistics at "
            "1 req/s as tenant b, the Mooncake conversation trace at 0.15 req/s as tenant c; every "
            "source used before, this mix, model and these rates not; the Azure 2023 code trace "
            "at 1.5 req/s as the new heavy tenant"
        ],
        "seeds": "3901-3913 (3911 and 3912 reserved for the accuracy study's saturated and light runs)",
        "regimes": SATURATING_REGIMES,
        "note": (
            "The set for design r39, declared after r39 was committed with its development "
            "evidence (held-out 30, 36 and 37's rows under r39) and before any run of this set. "
            "Faults armed as held-out 32-37's (`@go:7000`, 12,000 steps scheduled as 6,000); "
            "H38-steady-12k (seed 3913) runs their timeline with nothing injected. Rates sized "
            "from the sources' mean prompt lengths as stated in earlier sets' notes (Azure "
            "conversation 1,150, ShareGPT 2,427, Mooncake conversation 11,168 tokens, cut here "
            "to about 7k by the model's positions): about 5.8k prompt tokens/s at the base rate, "
            "for a 35B model on four GPUs (held-out 26's 32B model on four ran 5.2k); the "
            "newcomer (Azure code, about 2k) about 3k more. One 800-step machinery check of the "
            "new config on the H100 tables (development platform, seed 99) was run first; its "
            "verdict was not read. H38-ramp-30k and H38-swing-30k (seeds 3902, 3903) and "
            "H38-swing-long (H38-swing-30k's seed and load, 800,000 steps) declared with the set. "
            "r39 was withdrawn on this set's H38-swing-30k (a page on a healthy engine) and on "
            "H30-swing-long; H38-swing-long under r39 was stopped then (no row), and the set's "
            "rows were run under r38 for comparison (rows marked r38), where H38-steady-12k paged."
        ),
    },
    "held_out_39": {
        "platforms": ["H200 SXM tables (as in held-out 1-38: no other unseen tables exist)"],
        "models": [
            "olmo-2-13b tp2 (after the public config of AI2's OLMo-2 1124 13B, added for this set "
            "as benchmarks/models/olmo-2-13b; never run before, by any set or study): 40 layers of "
            "hidden 5,120, 40 query heads over 40 KV heads of 128 dimensions, an MLP of 13,824, a "
            "100,352 vocabulary, 4,096 positions (prompts capped by them)"
        ],
        "tenants": [
            "Azure 2023 conversation trace at 2.5 req/s as tenant a, arXiv-summarisation length "
            "statistics at 0.6 req/s as tenant b, the Azure 2023 code trace at 1.2 req/s as tenant "
            "c; every source used before, this mix, model and these rates not; the Mooncake "
            "conversation trace at 0.5 req/s as the new heavy tenant"
        ],
        "seeds": "4001-4013 (4011 and 4012 reserved for the accuracy study's saturated and light runs)",
        "regimes": SATURATING_REGIMES,
        "note": (
            "The set for design r40, declared after r40 was committed, with its one development "
            "run (H38-steady-12k under r40, the run it was built on), and before any run of this "
            "set. Faults armed as held-out 32-38's (`@go:7000`, 12,000 steps scheduled as 6,000); "
            "H39-steady-12k (seed 4013) runs their timeline with nothing injected. Rates sized "
            "from the sources' mean prompt lengths as stated in earlier sets' notes (Azure "
            "conversation 1,150, arXiv 2,578 cut by the model's 4,096 positions, Azure code about "
            "2k): about 6.8k prompt tokens/s at the base rate, for a 13B model on two GPUs; the "
            "newcomer (Mooncake conversation, prompts cut to about 3k) about 1.5k more. One "
            "800-step machinery check of the new config on the built-in platform (seed 99) was "
            "run first; its verdict was not read. H39-ramp-30k and H39-swing-30k (seeds 4002, "
            "4003) and H39-swing-long (H39-swing-30k's seed and load, 800,000 steps) declared with "
            "the set. r40 was withdrawn after its development runs (on held-out 38's "
            "H38-swing-30k); this set's rows ran under r40 and, for comparison, under r38 (rows "
            "marked r38): alike, step for step. H39-swing-long under r40 was stopped then (no row)."
        ),
    },
    "held_out_40": {
        "platforms": ["H200 SXM tables (as in held-out 1-39: no other unseen tables exist)"],
        "models": [
            "gpt-neox-20b tp2 (after the public config of EleutherAI's GPT-NeoX-20B, added for "
            "this set as benchmarks/models/gpt-neox-20b; never run before, by any set or study): "
            "44 layers of hidden 6,144, 64 heads of 96 dimensions (full multi-head attention), an "
            "MLP of 24,576, a 50,432 vocabulary, 2,048 positions (prompts capped by them)"
        ],
        "tenants": [
            "Azure 2023 conversation trace at 3 req/s as tenant a, ServeGen client 10 at 10 req/s "
            "as tenant b, ShareGPT length statistics at 1 req/s as tenant c; every source used "
            "before, this mix, model and these rates not; the Azure 2023 code trace at 2 req/s "
            "as the new heavy tenant"
        ],
        "seeds": "4101-4113 (4111 and 4112 reserved for the accuracy study's saturated and light runs)",
        "regimes": SATURATING_REGIMES,
        "note": (
            "The set for design r41, declared after r41 was committed (r40 withdrawn on held-out "
            "38's H38-swing-30k, a development run for it) and before any run of this set; "
            "held-out 39 played no part in r41 (its rows ended alike under r38 and r40), but was "
            "run under r40, so r41 gets a set of its own. Faults armed as held-out 32-39's "
            "(`@go:7000`, 12,000 steps scheduled as 6,000); H40-steady-12k (seed 4113) runs "
            "their timeline with nothing injected. Rates sized from the sources' mean prompt "
            "lengths as stated in earlier sets' notes (Azure conversation 1,150, ServeGen client "
            "10 102, ShareGPT 2,427 cut by the model's 2,048 positions): about 5.7k prompt "
            "tokens/s at the base rate, for a 20B model on two GPUs; the newcomer (Azure code, "
            "about 2k, capped likewise) about 3k more. One 800-step machinery check of the new "
            "config on the built-in platform (seed 99) was run first; its verdict was not read. "
            "H40-ramp-30k and H40-swing-30k (seeds 4102, 4103) declared with the set; "
            "H40-swing-long (H40-swing-30k's seed and load, 800,000 steps) declared after the "
            "set's other rows had run (under r41 and r38: alike) and before its own run."
        ),
    },
    "held_out_41": {
        "platforms": ["H200 SXM tables (as in held-out 1-40: no other unseen tables exist)"],
        "models": [
            "stablelm-2-12b tp1 (after the public config of Stability AI's StableLM 2 12B, added "
            "for this set as benchmarks/models/stablelm-2-12b; never run before, by any set or "
            "study): 40 layers of hidden 5,120, 32 query heads over 8 KV heads of 160 dimensions "
            "(the first model here with heads of 160), an MLP of 13,824, a 100,352 vocabulary, "
            "4,096 positions (prompts capped by them); the first set on one GPU since held-out 39"
        ],
        "tenants": [
            "the Azure 2023 code trace at 1.5 req/s as tenant a, arXiv-summarisation length "
            "statistics at 0.5 req/s as tenant b, ServeGen client 13 at 10 req/s as tenant c; every "
            "source used before, this mix, model and these rates not; ShareGPT length statistics "
            "at 2 req/s as the new heavy tenant (Poisson arrivals: busy from its first second)"
        ],
        "seeds": "4201-4213 (4211 and 4212 reserved for the accuracy study's saturated and light runs)",
        "regimes": SATURATING_REGIMES,
        "note": (
            "A third set for design r41, declared after held-out 40's runs (where r41's rule never "
            "acted) and before any run of this set; no design was changed for it. Faults armed as "
            "held-out 32-40's (`@go:7000`, 12,000 steps scheduled as 6,000); H41-steady-12k (seed "
            "4213) runs their timeline with nothing injected. The newcomer is drawn from length "
            "statistics with Poisson arrivals, so it is busy from the moment it is armed (held-out "
            "40's, a bursty trace, barely arrived before its run ended). Rates sized from the "
            "sources' mean prompt lengths as stated in earlier sets' notes (Azure code about 2k, "
            "arXiv 2,578 cut by the model's 4,096 positions, ServeGen client 13 64): about 4.9k "
            "prompt tokens/s at the base rate, for a 12B model on one GPU; the newcomer (ShareGPT, "
            "2,427) about 4.8k more. One 800-step machinery check of the new config on the "
            "built-in platform (seed 99) was run first; its verdict was not read. H41-ramp-30k "
            "and H41-swing-30k (seeds 4202, 4203) and H41-swing-long (H41-swing-30k's seed and "
            "load, 800,000 steps) declared with the set. Rows run under r41; a row is re-run "
            "under r38 (from a worktree with `rare_unsupported` off) only where r41's rule acted "
            "(its `unsupported` count above zero)."
        ),
    },
    "held_out_42": {
        "platforms": ["H200 SXM tables (as in held-out 1-41: no other unseen tables exist)"],
        "models": [
            "gemma-7b tp1 (after the public config of Google's Gemma 7B, added for this set as "
            "benchmarks/models/gemma-7b; never run before, by any set or study): 28 layers of "
            "hidden 3,072, 16 heads of 256 dimensions (full multi-head attention), an MLP of "
            "24,576, a 256,000 vocabulary (the largest here), 8,192 positions. InternLM2 20B was "
            "declared first; its 800-step machinery check failed before any step (vLLM's model "
            "config needs its remote code), so it was replaced before any run of the set"
        ],
        "tenants": [
            "ShareGPT length statistics at 1 req/s as tenant a, the Azure 2023 conversation trace "
            "at 2 req/s as tenant b, ServeGen client 33 at 5 req/s as tenant c; every source used "
            "before, this mix, model and these rates not; arXiv-summarisation length statistics "
            "at 1.5 req/s as the new heavy tenant (Poisson arrivals: busy from its first second)"
        ],
        "seeds": "4301-4313 (4311 and 4312 reserved for the accuracy study's saturated and light runs)",
        "regimes": SATURATING_REGIMES,
        "note": (
            "The set for design r42, declared after r42 was committed with its development runs "
            "(held-out 40 and 41's rows, development data from here on) and before any run of "
            "this set. Faults armed as held-out 32-41's (`@go:7000`, 12,000 steps scheduled as "
            "6,000); H42-steady-12k (seed 4313) runs their timeline with nothing injected. Rates "
            "sized from the sources' mean prompt lengths as stated in earlier sets' notes "
            "(ShareGPT 2,427, Azure conversation 1,150, ServeGen client 33 210): about 5.7k "
            "prompt tokens/s at the base rate, for an 8.5B model on one GPU (held-out 41's 12B on "
            "one ran about 4.9k); the newcomer (arXiv, 2,578) about 3.9k more. One 800-step "
            "machinery check of the new config on the built-in platform (seed 99) was run "
            "first; its verdict was not read. H42-ramp-30k and H42-swing-30k (seeds 4302, 4303) "
            "declared with the set; no long run is declared for this set. Rows run under r42 "
            "and, for comparison, under r41 (from a worktree with `stratified_level_shift` off; "
            "rows marked r41). r42 was withdrawn after these runs (DESIGN); r41 stays in force."
        ),
    },
}
DESIGN_REVISION = "r41"
# How the demo hands frames to the daemon's pipeline (not a design: the protocol's).  "steps":
# in slices cut at fixed steps (``shadowd.demo.step_slices``), so a row is the same run when
# repeated; rows without the field ran on the receiver's timed batches, where the step a model
# came into force at, and everything that counts from it, moved with thread timing.
INGEST = "steps"

DESIGN = [
    "NO_GO (pages) only on evidence that attribution is wrong now: accuracy beyond its limits, "
    "unresolved residual drift, share instability (since r6: only where calibration left no "
    "baseline), a platform mismatch, data health (drop rate).",
    "Traffic beyond the calibrated envelope and tenants calibration never saw are INCONCLUSIVE with "
    "the way out in the reason (recalibrate, or wait); unseen tenants count by their share of the "
    "window's attributed time (`max_new_tenant_share`), not by a lifetime count.",
    "Thin evidence is INCONCLUSIVE and says to wait; the longest-context minimum is capped at the "
    "longest context the calibration window held (short-context workloads can reach GO).",
    "The advantage over the token baseline is reported (`details.advantage`, `/metrics`, the demo "
    "summary, the report), not judged.",
    "A detector that cannot reach the false-alarm target on a class is dropped for that class and the "
    "other watches it alone (the drift check names which); only when none can is the class blind.",
    "Share stability pages on growth of the composition effect over the calibration window's own "
    "effect under the model in force (design r2); design r1 judged the absolute effect.",
    "Design r6: that growth is INCONCLUSIVE (re-fit or recalibrate), not NO_GO, and a re-fit "
    "trigger. Under one model version the gated own-work share is the model's, not a measurement, "
    "so its composition effect is a function of the traffic alone: growth says the batch "
    "compositions moved beyond those the model was validated on. A result computed under an "
    "earlier model is missing evidence until the next test; the absolute effect, where calibration "
    "left no baseline, still pages.",
    "Design r6: residual drift is watched by Page-Hinkley alone by default (`[drift] detectors`; "
    "in docs/checks.md's delay tables, on development runs, it detects as many slowdowns as both "
    "detectors together), and "
    "the false-alarm target is per judged step of a class, split evenly over its detectors, so the "
    "drift check's rate per judged step is at most the target (design r3 gave each detector the "
    "whole target).",
    "Design r7: Page-Hinkley's allowance is at least `min_shift / 2` with `min_shift` 0.04 "
    "(r6: 0.02). The faults the gate must catch are whole-step slowdowns of 5 % or more; on "
    "development runs the r6 detectors raised lasting 1-3 % moves of the decode residual that "
    "follow the batch composition on healthy engines (benchmarks/alarm_study.py), and a 2 % "
    "allowance ignores most of them while a 5 % slowdown still exceeds it by 3 %. Smaller, slower "
    "degradations are the accuracy check's (per-class error limits).",
    "Design r8: a residual detection is an alarm (a drift event, which pages) only if the shift "
    "it saw lasts: it is held pending for `confirm_steps` (200) more judged steps of its class and "
    "confirmed only if their mean residual still sits at least the calibration's allowance, in the "
    "detection's direction, from the baseline as it stood `detrend_steps` steps before the "
    "detection (checks/alarm_confirmation.py); otherwise it is dismissed and counted "
    "(`shadowd_drift_detections{outcome}`). The false alarm studied on a development run "
    "(H6-steady, benchmarks/alarm_study.py) was a burst of about 25 steps of a 2-3 % move of the "
    "decode residual with no change of batch size or context, then back; held-out 6 and 7's long "
    "runs paged on false alarms from the first tens of thousands of judged steps on. The faults "
    "the gate must catch make every later step slower. The price is delay: an alarm comes 200 "
    "class steps after its detection, inside the 500-step target for an 8 % slowdown (200 was "
    "set from that budget, not tuned). Tried on held-out 7's runs (development data from r8 on) "
    "before held-out 8 was run: on H7-steady-long (its r8 row below) nearly every detection was "
    "confirmed, so that run's alarms were lasting shifts of the decode residual, not bursts, and "
    "r8 does not bound a long run's alarms; confirmation only filters bursts like the one above.",
    "Design r15: a re-fit is refused if its drift detectors would not raise a 5 % whole-step "
    "slowdown (the smallest fault the gate must end not GO on) within 300 judged steps (the 8 % "
    "target's 500 less the 200 of confirmation) on a class where the model in force's detectors "
    "do (`checks/fault_sensitivity.py`: a noise-free lasting shift through the calibrated "
    "standardisation, detrend and detectors; `newly_dulled` in `shadowd/daemon/refit.py`). A "
    "window whose residual wanders gives its detectors far higher thresholds, and a re-fit on it "
    "can be blind to the faults its parent would catch. Seen on held-out 14's F14-step5 under r14: "
    "a re-fit installed at 6432 carried a decode Page-Hinkley threshold of 76.25 (its parent's: "
    "8.0), raised nothing in the 2,000 steps of the 5 % slowdown from 7000 (the decode residual "
    "rose from -1.3 % to +5.1 %), and the gate, GO from 7001, ended GO. Tried on held-out 12 and 14's "
    "short runs (rows marked r15): F14-step5's re-fit at 6432 was refused (decode: the re-fit's "
    "detectors raised no 5 % slowdown within 1,200 judged steps, its parent's in 5) and the run "
    "ended NO_GO, its drift event 229 steps after the fault; F14-tenant ended GO (first GO 8006, "
    "after its fault): its first re-fit was refused the same way, a later one, with the new heavy "
    "tenant below the new-tenant limit in its window, took that tenant in (design r16); the other "
    "rows ended as under r14.",
    "Design r16: a re-fit keeps its parent's tenants (`shadowd/daemon/refit.py`). A newcomer below "
    "the new-tenant limit does not stop a re-fit (r9), but the re-fit no longer takes it in: it "
    "stays new to the gate, which judges its share of the recent time from then on, until an "
    "operator calibrates with it. Seen on held-out 14's F14-tenant under r15 (above). Tried on held-out 12 and 14's short runs (rows "
    "marked r16) before held-out 15 was named: F14-tenant's re-fit at 7403 was still installed "
    "(the heavy tenant under the limit in its window) but did not take the tenant in; the gate was "
    "GO from 8006 and ended INCONCLUSIVE once the newcomer's share passed the limit (r15: ended "
    "GO); every other row ended as under r15.",
    "Design r34 (built on held-out 30's H30-swing-long run under r32; in force from held-out "
    "31, declared after it): r31's confirmation strata take a batch of more than 8 by the CUDA "
    "graph vLLM runs it at by default (a graph every 8 up to 256, every 16 up to 512; larger "
    "batches run unpadded and keep quarter octaves), no longer by quarter octaves "
    "(`checks.stratum(..., graph=True)`; `CalibrationSettings.graph_strata`, "
    "`DriftCalibration.graph_strata`). A finding of held-out 30 under r32: H30-swing-long's five "
    "decode drift events on its healthy engine came in windows of mean batch 14-18, and within "
    "r31's strata each window's measured shift matched its noise-free one (the reference "
    "engine's latency recomputed without jitter), so each was the model's own error moving "
    "inside a stratum: r31's stratum of 14-19 holds batches run at the graphs of 16 and of 24, "
    "which the model, smooth in the batch, prices alike. Within r34's strata none of the five "
    "moved by more than 0.52 %, while F30-step8's slowdown kept its 7.92 %; the ratio of graph "
    "size to batch size explains 81 % of the variance of the model's noise-free error within "
    "r31's strata on that run: docs/swing_drift.md (`.venv/bin/python -m benchmarks.swing_drift_study`). For "
    "mixed steps vLLM pads tokens, not requests, so there the buckets are only a finer "
    "partition. On held-out 31's short and 30,000-step rows r34 and r32 (run on the same rows "
    "for comparison) ended alike, step for step in their first GO: six of seven healthy runs "
    "reached GO and none paged; the 30,000-step swing ended INCONCLUSIVE (half its recent "
    "decode steps outside the compositions calibration saw); the fault runs ended not GO but "
    "for F31-tenant (GO with the new tenant in force: its Azure code trace sent 12 requests, in "
    "steps 7,002-7,383, then fell silent to the run's end, so its share of the recent time fell "
    "under the new-tenant limit; the row's command with `--db`, `step_requests`), and were tests "
    "only where GO came before the fault (the platform swap; the 8 % slowdown's drift event came 212 steps after it, after "
    "an INCONCLUSIVE spell). H31-swing-long (r34, declared with the set) met the false-alarm "
    "target: no drift event in 399,810 judged steps (95 % bound 7.5e-6 per step), GO from step "
    "514,560 to its end without a page. H30-swing-long re-run under r34 (the run r34 was built "
    "on, so not held-out evidence): no drift event in 399,811 judged steps (r32: five), no page; "
    "it ended INCONCLUSIVE, its decode detectors too dull to raise a 5 % slowdown in time, and "
    "its re-fits refused as no keener.",
    "Design r35 (built on held-out 31 and 32's 30,000-step swings under r34; in force from "
    "held-out 33, declared after it): a re-fit may leave unwatched a class carrying less than "
    "`cover_class_share` (a quarter) of its window's steps (`shadowd.daemon.refit.rare_classes`; "
    "`CalibrationSettings.refit_unwatch_rare`); r8 still refuses a re-fit that would lose the "
    "detectors of a class its window carries. A finding of held-out 31 and 32 under r34: "
    "H31-swing-30k and H32-swing-30k ended INCONCLUSIVE because every re-fit asked for in the "
    "light half of the swing was refused under r8 (mixed steps: 29, 76 and 16 held out, fewer "
    "than the 150 its detectors need), keeping a model whose decode steps had left their "
    "calibrated compositions, to the run's end. A class too rare to be required costs the gate "
    "nothing unwatched; when the swing brings it back it is required, blind, and so a re-fit "
    "trigger (`drift_blind`), and that re-fit's window holds it. On the same rows under r35 "
    "(development evidence, rows marked r35): H32-swing-30k re-fitted at 23,718 and 28,341 and "
    "ended GO; H31-swing-30k re-fitted at 26,733 and still ended INCONCLUSIVE (the run ended "
    "before a further re-fit could be asked for); every other short, 12,000- and 30,000-step "
    "row of both sets ended as under r34, with the same first GO and drift delays (set 31's one "
    "step shorter: faults are now located at the step they fired, 7001). On held-out 33 "
    "(declared after r35; r34 run on the same rows for comparison, from a worktree with "
    "`refit_unwatch_rare` off): six of eight healthy runs reached GO under both and none paged; "
    "every fault, armed, was a test and met its target under both, step for step (the 5 % "
    "slowdown's fault fired at 7604, at the gate's first GO from 7000 on, and its drift event "
    "came 272 steps after); r35 installed one re-fit r34 refused (H33-swing-30k at 26,130: mixed, "
    "136 held-out steps), but the run's traffic left that re-fit's envelope (66 % of its recent "
    "steps beyond at the end) before another re-fit could be asked for, and it ended "
    "INCONCLUSIVE under both. H33-steady, GO from 5628, ended INCONCLUSIVE at its last evaluation (its traffic left "
    "the envelope; a re-fit was installed there) under both. H33-swing-long (r35, declared with "
    "the set) met the false-alarm target: no drift event in 399,811 judged steps (95 % bound "
    "7.5e-6 per step), GO from step 541,895 to its end without a page; no re-fit was asked for "
    "on it, so r35's change was not exercised there.",
    "Design r36 (built on held-out 32's H32-saturated under r35; in force from held-out 34, "
    "declared after it): a re-fit is also considered while GO is held through an inconclusive "
    "round (`shadowd.daemon.refit.vouching`; `CalibrationSettings.refit_in_grace`), no longer "
    "only once the gate has left GO. The gate's grace (`inconclusive_grace`, one round) keeps GO "
    "and its consecutive passes through one inconclusive evaluation; a re-fit started then is "
    "in force by the next, where before the gate first went INCONCLUSIVE and had to earn its "
    "passes again. A finding of held-out 32 under r35: H32-saturated, GO from 4623, went "
    "INCONCLUSIVE at 5628 on coverage (traffic beyond the envelope), re-fitted there, and ended "
    "one passing evaluation short of GO. The re-fit's guard is unchanged: a re-fit considered in "
    "the grace round is judged and refused as any other. On held-out 31, 32 and 33's short, "
    "12,000- and 30,000-step rows under r36 (development evidence, rows marked r36): "
    "H32-saturated ended GO; every other row ended as under r35, with the same first GO; the "
    "drift delays moved by at most 12 steps (F33-step5: 284, r35 272), except F31-platform, "
    "whose re-fit at 6834, before the swap, was installed (under r35 refused), and whose new "
    "detectors raised no drift event after the swap: it was NO_GO from the swap's own "
    "evaluation on, on the platform and decode accuracy checks, as under r35. On held-out 34 "
    "(declared after r36; r35 run on the same rows for comparison, from a worktree with "
    "`refit_in_grace` off): both ended every row alike. Seven of eight healthy runs reached GO "
    "(the 30,000-step swing too; H34-swing ended INCONCLUSIVE, its decode detectors blind on "
    "compositions seen too rarely) and none paged; four faults were tests that met their "
    "targets (the 5 and 15 % slowdowns' drift events 214 and 213 steps after them, the platform "
    "swap NO_GO at once, the new tenant INCONCLUSIVE); F34-step8 was not a test: its healthy "
    "engine raised a decode Page-Hinkley drift event at step 5342, confirmed, and paged from "
    "5427 on (34 NO_GO evaluations), so the armed slowdown never fired: the never-page target "
    "missed on a healthy engine, under r35 and r36 alike. H34-swing-long (r36, declared with the "
    "set) met the false-alarm target: no drift event in 399,811 judged steps (95 % bound 7.5e-6 "
    "per step), GO from step 507,926 to its end without a page; no re-fit was asked for on it.",
    "Design r37 (built on held-out 34's F34-step8 under r36; in force from held-out 35, declared "
    "after it): r34's CUDA-graph confirmation strata are also cut where r31's quarter octaves "
    "are (`checks.stratum(..., graph=True, octaves=True)`; `CalibrationSettings.octave_strata`, "
    "`DriftCalibration.octave_strata`), so no stratum spans more than a quarter octave or "
    "crosses a graph edge: the graph of 16 holds strata of 9-10, 11-12, 13-14 and 15-16. A "
    "finding of held-out 34 under r36: F34-step8's engine, healthy until its armed fault, "
    "raised a downward decode drift event at 5342 (detected at 5133) in a window of mean batch "
    "12.5, confirmed at -3.38 % within r34's strata (cover 100 %) and at -0.27 % within r31's "
    "(cover 37 %): inside the graph of 16 the model's noise-free error falls from -1.7 % at "
    "batches of 9-10 to -7.6 % at 14, as the engine runs every batch's GEMMs at 16 while the "
    "model's cost grows with the batch, and the window's mix had moved from the graph's small "
    "batches to its large ones: docs/graph_strata.md (`.venv/bin/python -m "
    "benchmarks.swing_drift_study --scenario F34-step8 ...`; the run under r37 beside it). r34 "
    "was right that an edge must not lie inside a stratum, and wrong that the model's error is "
    "constant inside a graph. On held-out 34's short, 12,000- and 30,000-step rows under r37 "
    "(development evidence, rows marked r37): F34-step8's gate did not page before its fault, "
    "the armed slowdown fired at 7001 and its drift event came 214 steps after; every other row "
    "ended as under r36, with the same first GO and drift delays. H30-swing-long re-run under "
    "r37 (the run r34 was built on) ended as under r34, counter for counter: no drift event in "
    "399,811 judged steps (33 decode detections dismissed, 32 of them by the strata), no page, "
    "INCONCLUSIVE (its decode detectors too dull to raise a 5 % slowdown in time). On held-out 35 (declared "
    "after r37; r36 run on the same rows for comparison, from a worktree with `octave_strata` "
    "off): both ended every short, 12,000- and 30,000-step row alike, step for step, so those "
    "rows do not test r37's change. "
    "Three of eight healthy runs reached GO (saturated, the 12,000-step steady and the "
    "30,000-step ramp) and none paged; steady, ramp and swing ended INCONCLUSIVE on "
    "`evidence.tenants` (the two trace tenants sent their requests in the run's first 806 steps "
    "and fell silent, so the model was scored out of sample on one tenant: H35-steady's command "
    "with `--db`, `step_requests`), mix one passing evaluation short of GO, the 30,000-step swing "
    "INCONCLUSIVE (a decode shift in compositions seen too rarely: unsupported). Every fault "
    "ended not GO and none paged before it: the 8 and 15 % slowdowns' drift events came 229 and "
    "237 steps after them, the platform swap was NO_GO at its own evaluation, the new tenant "
    "INCONCLUSIVE; the 5 % slowdown ended INCONCLUSIVE without a drift event, its shift lasting "
    "in compositions too rarely seen to judge (unsupported, under r36 too). H35-swing-long (r37, "
    "declared with the set) missed the false-alarm target: one decode Page-Hinkley drift event "
    "on its healthy engine (detected at 660,137, a lasting shift of 9.5 %) in 399,810 judged "
    "steps (95 % bound 1.2e-5 per step), after two re-fits (520,187 and 640,385) asked for by "
    "decode detectors blind on compositions seen too rarely; never GO, it paged from 660,485 to "
    "its end (696 NO_GO evaluations). r36 on the same row (the worktree above) raised no drift "
    "event and did not page: it ended INCONCLUSIVE, its decode detectors too dull, and refused "
    "the re-fits asked for at the same steps as no keener. Under r37 the first of them was asked "
    "for because a +7.2 % decode shift from 409,700 lay in compositions r37's finer strata had "
    "not seen (unsupported: the class blind), and it was installed; the page came under the "
    "second re-fit's model. Under r36 no window was unsupported over the whole run (its counters: "
    "22 detections dismissed by the strata, none unsupported). So r37 removed a page on a development run (F34-step8) and added "
    "one on a held-out run: finer strata leave more windows unsupported, and an unsupported "
    "class asks for re-fits. A next design must weigh that, and be confirmed on a set declared "
    "after it. A repeat of H35-swing-long (its command with `--db`) did not page: its warm-up "
    "model came into force at 400,192 (its `steps` table), its first re-fit came one evaluation "
    "later (520,388) on another window, and the run went another way. The demo's ingest was "
    "then cut at fixed steps (`shadowd/demo/step_slices.py`; the protocol, not the design) and "
    "held-out 35's rows were run again under r37 (rows with `ingest: steps`; the earlier ones "
    "are superseded): every row ended as before, step for step, except H35-saturated, whose "
    "first GO came one evaluation sooner (4221), and H35-swing-long paged again, with the same "
    "re-fits at the same steps and its drift event in the same place. So r37's false alarm "
    "there stands, and is repeatable.",
    "Design r41 (built on held-out 38's H38-steady-12k under r38, with H38-swing-30k under r40 "
    "in view; in force from held-out 40, declared after it): r40's rule for rare compositions "
    "alone, without r40's quarter-octave judging. Where no strata judge a detection's "
    "confirmation window (r37's, then r34's graph strata, as under r38) and most of the window "
    "lies in quarter-octave strata (`checks.alarm_confirmation.octave_stratum`, r31's) seen "
    "fewer than ten times before its reference point, a lasting shift of less than twice the "
    "allowance (`RARE_SHIFT`) is unsupported (the class's drift evidence missing until a re-fit: "
    "INCONCLUSIVE, no page); a larger one is an alarm, as is any lasting shift in compositions "
    "seen more often (`AlarmConfirmation(rare=...)`; `CalibrationSettings.rare_unsupported`, "
    "`DriftCalibration.rare_unsupported`). This rule replaces r38's for windows no strata judge "
    "(r38: unsupported where most of the window lies in graph strata never seen, whatever the "
    "shift). So r41 turns a small alarm in rarely seen compositions into INCONCLUSIVE (a real "
    "fault there is INCONCLUSIVE rather than NO_GO while its shift is under twice the "
    "allowance), and an r38 unsupported into an alarm where the shift is twice the allowance or "
    "more, or where the graph strata never saw the compositions but the quarter octaves did, "
    "ten times or more. Neither happened on the rows below except the first, once. A finding "
    "while testing r41 (tests/checks/test_strata_confirmation.py): r38's never-seen test counts "
    "a graph stratum as seen once the detection window's own first steps lie in it (its memory "
    "lists the stratum with no step before the reference point), so with r38's fallback on a "
    "window is seldom unsupported; r41 counts the steps before the point. Development "
    "evidence under r41 (rows marked r41): H38-steady-12k GO from 5,427, INCONCLUSIVE from "
    "7,236 to 8,643 (its decode detection at 7,135 unsupported: a lasting 2.5 % shift in "
    "compositions seen too rarely, against a 2 % allowance), re-fitted at 8,241, then GO to its "
    "end without a page (r38: NO_GO from 7,437); H38-swing-30k GO from 24,924 without a page, "
    "as under r38; every other short, 12,000- and 30,000-step row of the set ended as under "
    "r38, step for step. On held-out 40 (declared after r41: GPT-NeoX-20B at tensor "
    "parallelism 2; r38 run on the same rows for comparison, from a worktree with "
    "`rare_unsupported` off) r41 and r38 ended all 13 short, 12,000- and 30,000-step rows "
    "alike, step for step, so the set shows r41 costs nothing there, not that it removes "
    "pages elsewhere. No row paged; two of eight healthy runs ended GO (H40-ramp from 5,025, "
    "H40-steady-12k from 5,829) and H40-mix reached GO at 4,824 and ended INCONCLUSIVE on share "
    "stability, as did H40-steady; H40-swing (decode detectors too dull), H40-swing-30k (blind), "
    "H40-ramp-30k (too few decode steps) and H40-saturated (traffic beyond the envelope) were "
    "never GO. Every slowdown fired on a GO gate and ended NO_GO, its drift event 238, 220 and "
    "219 steps after the 5, 8 and 15 % slowdowns; the platform swap NO_GO at once; the new heavy "
    "tenant (Azure code at 2 req/s) ended GO, a miss. H40-swing-long (declared before its run) "
    "met the false-alarm target under r41: no drift event in 399,813 judged steps (95 % bound "
    "7.5e-6 per step), none of its detections unsupported; it was never GO (decode detectors "
    "too dull; its three re-fits refused, the model in force missing the prefill limits on "
    "their windows). On held-out 41 (declared after held-out 40's runs, a third set for r41: "
    "StableLM 2 12B on one GPU) r41's rule acted once, on H41-swing-30k (a mixed detection "
    "held unsupported); r38, run on that row from a worktree, held the same detection "
    "unsupported and ended the row alike, step for step. No row paged. Three of eight healthy "
    "runs ended GO (H41-ramp from 5,427, H41-mix from 5,628, H41-steady-12k from 5,226); "
    "H41-ramp-30k reached GO at 21,105 and ended INCONCLUSIVE (traffic beyond the envelope); "
    "H41-steady (5.1 % of recent steps beyond the envelope, against 5 %), H41-swing (too few "
    "decode and mixed steps), H41-swing-30k (decode detectors too dull) and H41-saturated (one "
    "tenant in the shadow steps; shares depending on batch composition more than in "
    "calibration) were never GO. Every fault fired on a GO gate and ended not GO: the 5, 8 and "
    "15 % slowdowns' drift events 346, 373 and 390 steps after them, the platform swap NO_GO at "
    "its own evaluation, the new heavy tenant (ShareGPT lengths at 2 req/s, busy from its "
    "first second) INCONCLUSIVE on its share of the attributed time. H41-swing-long (declared "
    "with the set) met the false-alarm target under r41: no drift event in 319,818 judged steps "
    "(95 % bound 9.4e-6 per step), none of its detections unsupported; it was never GO (its "
    "shadow steps held one tenant, and too few decode steps). Held-out 42 (declared for r42, "
    "withdrawn after it; Gemma 7B on one GPU) ran under r41 too, a fourth set r41 was not built "
    "on: no row paged; four of eight healthy runs ended GO (H42-mix from 4,824, H42-saturated "
    "from 5,025, H42-steady-12k from 10,452, H42-ramp-30k from 27,939); H42-steady (28 % of "
    "recent steps beyond the envelope), H42-ramp (shares depending on batch composition more "
    "than in calibration), H42-swing (decode detectors blind: most recent steps outside the "
    "compositions calibration saw) and H42-swing-30k (decode detectors too dull) were never "
    "GO. Every fault fired on a GO gate and ended not GO: the 5, 8 and 15 % slowdowns' drift "
    "events 225, 218 and 217 steps after them, the platform swap NO_GO at its own evaluation, "
    "the new heavy tenant (arXiv lengths at 1.5 req/s) INCONCLUSIVE on its share of the "
    "attributed time.",
    "Design r42 (built on held-out 40 and 41's rows under r41, development evidence from here "
    "on; withdrawn after held-out 42, below): a re-fit's check for a change at one moment (check 5 of "
    "`checks.refit_guard`) measures the re-fitted model's residual level shift within the CUDA "
    "graph each step ran at (a batch of up to 8 its own; `checks.graph_size`, "
    "`checks.refit_guard.largest_level_shift_within`, `CalibrationSettings"
    ".stratified_level_shift`): at each split of the window the shift is the weighted mean, "
    "over graphs with `MIN_STRATUM` steps or more on both sides, of each graph's mean after "
    "less its mean before; a split where such graphs hold less than `MIN_COVERAGE` of the "
    "class's steps (the alarm confirmation's constants, r31) is judged pooled, as before: there "
    "time and composition cannot be told apart. A finding of held-out 40 and 41 under r41: "
    "re-fits on healthy engines were refused as 'drift, not a new regime' (H41-steady at "
    "5,427: the mixed level moving 2.4 % over its window against 2 %; H41-swing-30k, "
    "H41-ramp-30k, H40-swing, H40-swing-30k), a misdiagnosis the page's reader would act on. "
    "Over such a window load moves the mix between CUDA graphs, where the smooth model's error "
    "steps by about the allowance (docs/steady_drift.md), so the pooled residual moves with the "
    "mix, in time; a slower engine moves every graph's residual from its moment on, and shows "
    "within graphs as it did pooled (`tests/checks/test_refit.py`; the daemon's slowdown inside "
    "a re-fit window is still refused, `tests/daemon/test_refit.py`). Tried first on H41-steady's "
    "window (its command with `--db`, re-fitted offline) and dropped: r34's full strata, which "
    "also cut KV tokens in half octaves (near the window's end too few held enough steps on the "
    "short side, so the split was judged pooled and the refusal stood), and a coverage of one "
    "half (the same at H41-swing-30k's window's end). On held-out 40 and 41's 26 short, 12,000- "
    "and 30,000-step rows under r42 (rows marked r42) every verdict, first GO, drift delay and "
    "page count was as under r41; seven re-fits r41 had refused as a change at one moment "
    "passed the check (H41-steady, H41-ramp-30k's second, H41-swing-30k, H40-swing's third, "
    "H40-swing-30k's three): one was installed (H40-swing-30k at 19,697), the others were "
    "refused because their drift detectors would have been too dull (r15, r19), which is what "
    "keeps those engines from GO; H41-swing's re-fit was refused by both (0.0204 pooled, 0.0245 "
    "within graphs: the within-graph estimate is the noisier). Withdrawn after held-out 42 "
    "(declared after r42, run under r42 and r41; rows marked each): every verdict alike, and "
    "every first GO but one: on H42-ramp-30k r42 refused the re-fit at 19,698 that r41 "
    "installed (a mixed level shift of 0.0216 within graphs against 0.02; r41's pooled one "
    "passed), so its first GO came at 28,542 instead of 27,939; on H42-steady-12k the re-fit "
    "at 6,834 passed r42's check (r41: 0.0461 pooled) and was refused as too dull instead. So "
    "the change swaps some refusals confounded by the mix for some made by noise and moves no "
    "verdict; r41 stays in force, and r42's code stays behind `CalibrationSettings"
    ".stratified_level_shift` (off).",
    "Design r40 (built on held-out 38's H38-steady-12k under r38; withdrawn after its development "
    "runs, with held-out 39 declared and run under it; its rows are marked r40; the code is "
    "behind `CalibrationSettings.octave_fallback`, off): where neither r37's strata nor r34's "
    "graph strata hold enough of a detection's confirmation window to judge it, r31's "
    "quarter-octave strata judge it if they do (`checks.alarm_confirmation.octave_stratum`, "
    "`AlarmConfirmation(coarsest=...)`; counted as `judged_octave`, "
    "`shadowd_drift_detections_judged_octave`); and where none do and most of the window lies in "
    "quarter-octave strata seen fewer than ten times before its reference point, a lasting "
    "shift of less than twice the allowance (`RARE_SHIFT`) is unsupported (INCONCLUSIVE until a "
    "re-fit, no page) instead of an alarm. A finding of held-out 38 under r38: H38-steady-12k's "
    "page (a decode drift event at 7,342, detected at 7,135, 100 judged steps after a re-fit was "
    "installed) came from a mix moving across a CUDA-graph edge, from batches of about 20 run at "
    "the graph of 24 (the model's noise-free error about +1.6 %) to batches of 13-16 run at the "
    "graph of 16 (about -1.8 %), compositions the re-fit's held-out steps, the strata's only "
    "memory then, had not held: no strata covered the window, which was judged without strata "
    "as a lasting 2.5 % shift against a 2 % allowance, and the graph strata had seen it a few "
    "times, so r38 called it an alarm (docs/steady_drift.md, `.venv/bin/python -m "
    "benchmarks.swing_drift_study --scenario H38-steady-12k ...`; the run itself is "
    "stationary). The quarter-octave judging alone did not cover that window either (tried "
    "first: the run still paged), and holding every rare window unsupported hid the 20 % "
    "slowdown of tests/daemon/test_alertmanager_round_trip.py, as r31's rule did; the bound of "
    "twice the allowance keeps that slowdown an alarm (the jump of the model's error across a "
    "graph edge, about 3.4 % on that run, is under twice its 2 % allowance). Every fault stays "
    "not GO either way (unsupported is INCONCLUSIVE). Development evidence under r40 (rows "
    "marked r40): H38-steady-12k GO from 5,427, INCONCLUSIVE from 7,236 to 8,643 (the decode "
    "detection unsupported, traffic beyond the envelope), re-fitted at 8,241, then GO to its "
    "end without a page; but H38-swing-30k, GO from 24,924 without a page under r38, paged "
    "from 25,125 to its end (26 NO_GO evaluations): a decode detection at 24,835, right after "
    "a re-fit at 24,321, was judged in quarter-octave strata (the only window judged there on "
    "the set) and confirmed, r31's flaw (a quarter octave mixes CUDA graphs whose cost the "
    "model cannot tell apart); every other row of the set ended as under r38, step for step. "
    "Held-out 39 (declared after r40: OLMo-2 13B at tensor parallelism 2; r38 run on the same "
    "rows for comparison, from a worktree with `octave_fallback` off) ended every short, "
    "12,000- and 30,000-step row alike under both, step for step: r40's change was not "
    "exercised there. H39-swing-long under r40 was stopped when r40 was withdrawn (no row).",
    "Design r39 (built on held-out 37's H37-swing-30k under r38, with held-out 30's H30-ramp-30k, "
    "where r33 paged, in view; confirmed against on held-out 38, then withdrawn; its rows are "
    "marked r39; the code is r38's again, r39 behind `CalibrationSettings.detrend_by_size`): "
    "design r33's detrend by batch-size stratum (`checks/stratified_detrend.py`), behind r34-r38's "
    "confirmation, which judges a detection's lasting shift within CUDA-graph and quarter-octave "
    "strata. r33 was withdrawn after held-out 30, where its keener detectors paged on two healthy "
    "engines with detections that r31's strata confirmed; r34-r38 were built since, on swinging "
    "engines, to dismiss shifts that batch composition explains. A finding of held-out 37 under "
    "r38: on H37-swing-30k the re-fits asked for at 24,321 and 28,944 were refused as duller than "
    "the model in force (r15: a 5 % slowdown not raised within 1,200 judged steps against its "
    "32), so traffic stayed beyond the envelope and the run ended INCONCLUSIVE. Development "
    "evidence under r39: H37-swing-30k first GO at 20,904, INCONCLUSIVE from 21,306 to 24,723 "
    "(traffic beyond the envelope), its re-fit at 24,321 installed, then GO to its end; H37-swing "
    "still INCONCLUSIVE; H30-ramp-30k GO from 20,100 with no page and no drift event (r33: 21 "
    "NO_GO evaluations after its first GO); H30-swing-30k GO from 19,698; held-out 36 and 37's "
    "other short, 12,000- and 30,000-step rows ended as under r38, with the same first GO, the "
    "slowdowns' drift events 1-11 steps sooner. H30-swing-long (800,000 steps, where r32 and r33 "
    "paged and r34 and r37 did not), still running when held-out 38 was declared, paged under "
    "r39: one decode drift event at step 794,280 (a lasting 5 % shift), NO_GO for its last 30 "
    "evaluations (95 % bound 1.2e-5 per judged step against the 1e-5 target). On held-out 38 "
    "(declared after r39: Command-R 35B at tensor parallelism 4) six of eight healthy short, "
    "12,000- and 30,000-step runs reached GO, and one of them paged: H38-swing-30k, GO from 19,899, "
    "then NO_GO from 26,733 to its end (a decode drift event, a lasting 2.3 % shift, 18 NO_GO "
    "evaluations); every fault ended not GO (the 8 % slowdown's drift event 205 steps after "
    "it). Run under r38 for comparison (rows marked r38), H38-swing-30k reached GO at 24,924 and "
    "did not page, but H38-steady-12k, GO under r39 without a page, paged under r38: a decode "
    "drift event at 7,342 (a lasting 2.5 % shift), 307 steps after a re-fit was installed at "
    "7,035, then NO_GO to its end (24 evaluations); so on this set each design paged one healthy "
    "engine that the other did not. r39 also paged on H30-swing-long, where r34 and r37 raised "
    "no drift event; a page on a healthy engine outweighs an earlier GO, as r33's did: r39 was "
    "withdrawn and r38 is in force again, with its page on H38-steady-12k a miss of its own. "
    "H38-swing-long under r39 was stopped when r39 was withdrawn (no row).",
    "Design r38 (built on held-out 35's H35-swing-long under r37, with F34-step8 kept in view; in "
    "force from held-out 36, declared after it): where r37's strata hold too little of a "
    "detection's confirmation window to judge it (under a fifth in strata seen on both sides), "
    "r34's graph strata judge it if they hold enough, and a lasting shift is unsupported only "
    "where most of the window lies in graph strata never seen (`checks.alarm_confirmation."
    "graph_stratum`, `AlarmConfirmation(coarser=...)`; `CalibrationSettings.strata_fallback`, "
    "`DriftCalibration.strata_fallback`; counted as `judged_coarse`, "
    "`shadowd_drift_detections_judged_coarse`). Where r37's strata cover a window they decide, as "
    "under r37, so F34-step8's case (covered at 37 %) is judged as r37 judges it. A finding of "
    "held-out 35 under r37: H35-swing-long's first re-fit was asked for because a +7.2 % decode "
    "shift from 409,700 lay in compositions r37's strata had not seen (unsupported: the class "
    "blind), and the page came under the second re-fit's model; r36, judging in graph strata "
    "alone, found no window unsupported over the whole run. An unsupported class is blind "
    "until a re-fit, and a re-fit on a window the class drifted in is the riskiest re-fit the "
    "daemon installs; r38 asks for one only where no strata at all can judge the window. The "
    "price: where only the graph strata judge, a mix moving inside one graph is judged with the "
    "model's error inside that graph (r34's flaw, F34-step8), now only on windows r37's strata "
    "leave thin. H35-swing-long re-run under r38 (the run r38 was built on, so not held-out "
    "evidence): no drift event in 399,810 judged steps (95 % bound 7.5e-6 per step; r37: one, "
    "and 696 NO_GO evaluations), no page; 22 decode detections dismissed by the strata (one of "
    "them judged in the graph strata), none unsupported; re-fits were asked for at 520,187, "
    "640,385 and 760,583, now because the decode detectors were too dull, and refused as no "
    "keener; it ended INCONCLUSIVE (decode detectors too dull), as under r36. On held-out 34 and "
    "35's short, 12,000- and 30,000-step rows under r38 (development evidence, rows marked r38): "
    "F35-step5 ended NO_GO, its drift event 222 steps after the 5 % slowdown (r37: INCONCLUSIVE "
    "without one): the lasting 5.3 % shift lay mostly in r37 strata never seen (unsupported "
    "under r37) but in graph strata seen before, so r38 judged it without strata and it was an "
    "alarm; F34-step8 and every other row ended as under r37, step for step. On held-out 36 "
    "(declared after r38; r37 run on the same rows for comparison, from a worktree with "
    "`strata_fallback` off): both ended every short, 12,000- and 30,000-step row alike, step for "
    "step, and r38's counters show its fallback never judged there, so those rows do not test "
    "r38's change. Every target was met: all eight healthy runs reached GO (first GO from 4221 "
    "to 24,723) and none paged; every fault was armed, fired at 7001 on a GO gate and ended not "
    "GO: the 5, 8 and 15 % slowdowns' drift events 217, 206 and 206 steps after them, the "
    "platform swap NO_GO at its own evaluation, the new tenant INCONCLUSIVE. H36-swing-long (r38, "
    "declared with the set) met the false-alarm target: no drift event in 399,810 judged steps "
    "(95 % bound 7.5e-6 per step), one re-fit installed (520,188), GO from step 524,007 to its "
    "end without a page; its fallback did not judge there either, so it confirms the gate on an "
    "engine none of r34-r38 was built on, not r38's change in particular. On held-out 37 (a "
    "second set for r38, declared after held-out 36's runs; r37 run on the same rows for "
    "comparison, as for 36): both ended every short, 12,000- and 30,000-step row alike, step for "
    "step, and r38's fallback judged nothing there either. Six of eight healthy runs reached GO "
    "and none paged; the two swinging runs ended INCONCLUSIVE: H37-swing with its decode "
    "detectors too dull (its one re-fit refused: the re-fitted model's residual level moved "
    "within its window), its stability interval straddling the limit and 34 % of its recent "
    "steps beyond the envelope; H37-swing-30k with 15 % beyond the envelope, its later re-fits "
    "refused as duller than the model in force (r15). Every fault fired on a GO gate and ended "
    "not GO: the 5, 8 and 15 % slowdowns' drift events 225, 212 and 212 steps after them, the "
    "platform swap NO_GO at its own evaluation, the new tenant INCONCLUSIVE. H37-swing-long met "
    "the false-alarm target: not one decode or mixed detection in 399,812 judged steps (95 % "
    "bound 7.5e-6 per step), GO from step 714,351 to its end without a page.",
    "Design r33 (built on held-out 27, confirmed against on held-out 30, then withdrawn; its "
    "rows are marked r33; the code is r32's again, r33 behind `CalibrationSettings."
    "detrend_by_size`): each watched class's drift detectors judged a step's standardised residual "
    "against the detrend baseline of its own batch-size stratum (exact up to 8, then quarter "
    "octaves: the size part of r31's stratum), no longer one class baseline "
    "(`checks/stratified_detrend.py`; `CalibrationSettings.detrend_by_size`, "
    "`DriftCalibration.detrend_by_size`). A stratum's baseline is the running mean of its first "
    "100 visits, then an exponentially weighted one over 100 of its visits, leaning on the class "
    "baseline until it has been run 10 times. Thresholds are calibrated on the held-out and "
    "whole-window residuals so detrended (the AR sieve resamples what the detectors see); the "
    "wander allowance, the confirmation stage and its reference (the class baseline) are as "
    "under r32; the power check (r19) replays the held-out steps' strata in their order "
    "(`DriftCalibration.fault_groups`). A finding of held-out 27 under r29-r32: its decode "
    "detectors were too dull (Page-Hinkley thresholds 44-75) on four healthy rows. On "
    "H27-saturated's run, the decode residual after calibration was mostly the model's own "
    "error, a step function of batch size (within 3 % at sizes up to 8, 6-11 % below at 9-19), "
    "plus independent jitter, and the mix of sizes moving slowly made it persistent; that "
    "window's decode calibration made both ways gave Page-Hinkley thresholds of 60 (r32, a 5 % "
    "slowdown not raised within 1,200 judged steps) and 15.25 (r33, raised 28 in): "
    "docs/size_strata.md (`.venv/bin/python -m benchmarks.size_strata_study`). Unlike withdrawn r25 (fixed per-size offsets from the "
    "window, which paged on held-out 22 and 23's healthy engines), each stratum's baseline keeps "
    "learning, and the thresholds are calibrated on what the detectors see. On held-out 30 "
    "(declared after r33) three of seven healthy runs reached GO and every fault run ended not "
    "GO, but two healthy runs paged: H30-ramp-30k from step 26,130 (two downward decode events, "
    "confirmed by r31's strata) and H30-swing-long, never GO and NO_GO from step 464,108 to its "
    "end, with 12 decode drift events in 399,811 judged steps (lasting shifts up to 8.6 %; 95 % "
    "bound 4.9e-5 per step against the 1e-5 target). Held-out 30, declared after r32 too, was "
    "then run under r32 (rows marked r32): H30-ramp-30k reached GO at 20,301 without a page, and "
    "H30-swing-long paged too, from the same step 464,108, with 5 decode drift events (95 % bound "
    "2.6e-5), so that engine's long swing is beyond both designs; r33 added a page on a healthy "
    "run and more than doubled the long run's false alarms for one more GO on the short and "
    "30,000-step rows (three against two). Pages on healthy engines outweigh more GO, as r25's "
    "did on held-out 22 and 23: r32 was in force again (until r34).",
    "Design r32, r31 narrowed: a lasting shift is unsupported only where most of its "
    "confirmation window lies in strata never seen at all before the reference point; strata "
    "seen a few times (fewer than the 10 that let them judge) count as seen, and the shift is "
    "judged as without strata, an alarm. A finding of CI under r31, not of a matrix row: in "
    "`tests/daemon/test_alertmanager_round_trip.py` (the synthetic engine, its traffic spread "
    "over many batch sizes and KV lengths) a 20 % slowdown raised no drift event, held back as "
    "unsupported. Re-run under r32: held-out 27's ten short rows, held-out 21's CI rows and "
    "held-out 29's ten short rows. Every row ended as under r31 except F27-step5, where one of "
    "r31's three unsupported shifts before the fault became a drift event on the healthy engine "
    "(five pages after its first GO; under r29 it had three). Held-out 29's rows are identical "
    "(r31 marked nothing unsupported there), so the set, declared after r31, speaks for r32 as "
    "well; its 30,000-step rows were not re-run, for the same reason.",
    "Design r31 (built on held-out 27's rows and held-out 21's two CI rows, which it was tried "
    "on; confirmed on held-out 29), r30 reworked: where composition strata seen before (batch "
    "size, exact up to 8 then in quarter octaves; KV tokens in half octaves; 10 steps each side "
    "at least) hold a fifth of a detection's confirmation window, the strata decide whether it "
    "is confirmed: per stratum, the window's mean less the stratum's own last 200 judged steps "
    "before the reference point, weighted by the window's steps (`checks/alarm_confirmation.py`). "
    "Where they hold less, a shift that lasts (judged as before) is *unsupported*: the class's "
    "drift evidence is missing until the next re-fit or calibration (INCONCLUSIVE, a re-fit "
    "trigger), not a page. And an unresolved drift event now pages even while a required class "
    "is blind (`checks/rules.py`; before, blindness hid it). A first form (strata deciding only "
    "at half the window, the rest judged as before) left three of F27-step5's false alarms, "
    "whose windows lay in strata never seen; it was changed before any held-out run. On held-out "
    "27 under r31 no row raised a drift event on a healthy engine (under r29, four fault runs "
    "did before their faults), every fault run ended not GO, and the slowdowns and the platform "
    "swap raised drift events 342, 714, 548 and 215 steps after them; F27-step5 and F27-step8 "
    "were no tests (INCONCLUSIVE before their faults: unsupported shifts). Held-out 21's CI rows "
    "ended as under r29.",
    "Design r30 (built on held-out 27's rows under r29 and tried on them, then withdrawn before "
    "any run of held-out 28; its rows are marked r30): a residual detection was judged "
    "within composition strata where it could be (`checks/alarm_confirmation.py`: a step's "
    "stratum is its batch size, exact up to 8 then in quarter octaves, with its KV tokens in "
    "half octaves; per stratum, the mean over the confirmation window less the stratum's own "
    "last 200 judged steps before the reference point), and a shift that lasted where strata "
    "seen on both sides held less than half the window was not an alarm but *unsupported* "
    "(drift evidence missing: INCONCLUSIVE). A finding of held-out 27 under r29: its fault runs "
    "raised drift events on the healthy engine before their faults (F27-step5, F27-step8, "
    "F27-step15, F27-platform), lasting decode shifts of 2.6-6.6 % as the mix moved between "
    "batch sizes and KV lengths the model prices a few percent apart (Mistral Large 2 on four "
    "GPUs, one to five requests a step). On those rows r30 raised no drift event before any "
    "fault and one after each. But on F21-step5, the held-out 5 % slowdown CI runs "
    "(tests/demo/test_gate_held_out.py), the slowdown's one detection was unsupported: a slower "
    "engine also grows its batches into compositions seen too rarely, so the strata could not "
    "judge it; no drift event was raised, and the gate was GO again once the mark lapsed (it "
    "held for 1,000 judged steps; it now holds until a re-fit). A gate that misses a 5 % "
    "slowdown is worse than one that pages on a moving mix, so r29 stayed in force for held-out "
    "28; r31 reworks it.",
    "Design r29, two parts, each a finding of held-out 26 under r28 (its 30,000-step ramp and "
    "swing: INCONCLUSIVE to the end once load reached saturation). (a) A re-fit may come once "
    "the model in force has scored half a calibration window (`SCORED_FRACTION` in "
    "`shadowd/daemon/refit.py`; a whole window before), still fitted on a whole window's worth "
    "of the latest steps; the guard judges the model in force on the window's steps it scored "
    "out of sample (`scored_by`), not on its own calibration window's. On H26-ramp-30k the load "
    "topped out just after a re-fit and the next could not come for 9,000 steps. (b) The guard "
    "sets aside an accuracy miss of a class with too few window steps inside its envelope "
    "(judged on all of them since r13) as the model extrapolating, the reason to re-fit, when "
    "another class was judged inside its envelope within the limits and a class anchors the "
    "residual inside the calibrated compositions (check 4); without both it refuses as before "
    "(`checks/refit_guard.py`). On H26-swing-30k the re-fit that would have covered saturation "
    "was refused on mixed steps that all lay beyond the light-load envelope. A fault confined to "
    "the set-aside class in the window where traffic left its envelope is what this cannot "
    "rule out (docs/operations.md, Re-fits).",
    "Design r28: a step class is also barely held (r17: the gate does not vouch for it; an "
    "accuracy miss is INCONCLUSIVE naming the reason, not a page) where the calibration's fit "
    "priced a work term at zero in a segment whose fit-part steps of that class carried that "
    "work: a decode row's KV reads, or a prefill row's new tokens with no per-token price at all "
    "(`LLMVisorModel.zero_priced`, `Calibration.barely_held`). A finding of whole steps timed on "
    "an H200 (`docs/gpu.md`, `benchmarks/gpu_steps.py`), not of any matrix run: a window of the "
    "light run's first 421 timed steps (engine v2) fits a breakpoint at 9 tokens and a segment "
    "above it whose decode KV term is zero while its fit part held 368 decode rows with KV in "
    "45 steps, so those decode steps are predicted at the segment's constant whatever their KV "
    "(`tests/daemon/test_identification.py`). The rule has no parameter chosen on any run. "
    "Tried on held-out 21 and 25's short rows (rows marked r28; 12 rows, the same runs as "
    "their r27 rows): every row ended as under r27 with the same first GO, drift and not-GO "
    "delays and judged steps (no reference-engine window there fits a zero-priced term). Run "
    "on held-out 26 (declared after it; no stored reason of its rows names a zero-priced term, "
    "so the rule did not act there either): three healthy runs of five reached GO (steady 4221, "
    "tenant mix 5427, saturated 4422) and none paged, ramp and swing ended INCONCLUSIVE (steps "
    "beyond the envelope 0.067 and 0.193 > 0.05); every fault run ended not GO, the 8 and 15 % "
    "slowdowns and the platform swap after a GO with drift events 280, 223 and 412 steps after "
    "them, while F26-step5 and F26-tenant were no tests (INCONCLUSIVE from 5828 and 6231, before "
    "the fault at 7000); H26-steady-long (800,000 steps, declared before its run) raised no "
    "drift event in 399,811 judged steps (95 % bound 7.5e-6, within the 1e-5 target) and was GO "
    "from 512,147 to its end. What r28 does on a GPU's fits remains shown by the test above only.",
    "Design r27: a newcomer's share (`coverage.new_tenants`, and what leaves its steps out of "
    "the accuracy evidence and stops a re-fit) is of the last `new_tenant_recent_steps` (1,000) "
    "attributed steps, not of the whole evidence window (`tenant_time_share` in "
    "`shadowd/daemon/gate_evidence.py`). A finding of held-out 24 under r26: F24-tenant ended GO "
    "with its new heavy tenant in; at the last evaluation the newcomer carried 2.0 % of the "
    "attributed time since calibration (limit 5 %) while it carried 13 % of the steps from 8500 "
    "(the row's command with `--db`, `step_requests`): a day-long window dilutes a newcomer that "
    "arrived minutes ago. The gate speaks for now, as the docs always said (`recent attributed "
    "time`). Tried on held-out 21-24's runs (rows marked r27) before held-out 25 was declared: "
    "F24-tenant ended INCONCLUSIVE (coverage.new_tenants, at its last evaluation; r26: GO); "
    "every other row of the four sets ended as under r26 with the same first GO and drift "
    "delays. Confirmed on held-out 25 (declared after it): three healthy runs of five reached GO "
    "(steady 4220, ramp and swing 4421) and none paged; every fault run was GO before its fault "
    "and ended not GO (drift events 207-253 steps after the slowdowns and the platform swap; "
    "the new heavy tenant INCONCLUSIVE on coverage.new_tenants).",
    "Design r26: where a class's detectors watch its residual less the composition bias (r24), "
    "a detection is confirmed only if the residual as measured (bias left in, with its own "
    "detrend baseline) also shifted in the detection's direction by at least its own allowance "
    "(`raw_allowance`: its wander over the calibration window, measured as the detectors' "
    "allowance is; `checks/alarm_confirmation.py`, `CalibrationSettings.confirm_raw`); a class "
    "whose raw allowance exceeds the 5 % slowdown counts as dull (r19). A slowdown of the engine "
    "moves every step's residual alike, so it shows on both streams; a bias fitted on a window "
    "that barely held a composition, carried to traffic that holds more of it, moves the "
    "unbiased stream alone. A finding of held-out 23 under r24: H23-ramp paged on a healthy "
    "engine (decode Page-Hinkley events confirmed at 3842 and 4178); its window's decode steps "
    "were mostly of one to three requests and the fitted bias fell by 4 % per unit of log batch "
    "size, so as the ramp brought batches of four and more the unbiased residual rose by 2.4 % "
    "in the 200 steps from 3600 while the raw residual moved by -0.1 % (the row's command with "
    "`--db`, 200-step block means of in-domain decode steps). Tried on held-out 21, 22 and 23's "
    "runs (rows marked r26) before held-out 24 was declared: H23-ramp reached GO (4623) and "
    "never paged (r24: NO_GO from 4020; both detections dismissed on the raw residual); "
    "F21-step15's first GO came at 6431 (r24: 6029); every other row of the three sets ended as "
    "under r24 with the same first GO and drift delays. F23-step8 still pages before its fault "
    "(a decode event at 6043): the decode residual fell by 2.8 % on both streams as batches "
    "grew toward the edge of the drift domain (steps faster than the model predicts there). "
    "Confirmed on held-out 24 (declared after r26): one healthy run of five reached GO (H24-mix, "
    "4422) and none paged; the 5, 8 and 15 % slowdowns and the platform swap ended NO_GO with "
    "drift events 263, 242, 237 and 225 steps after them; F24-tenant ended GO (design r27).",
    "Design r25 (tried on held-out 21 and 22, which it was built on, and on H19-steady, H19-mix "
    "and H20-ramp, then withdrawn; its rows are marked r25; the code is r24's again): after "
    "r24's smooth bias, each class's detectors also watched the residual less a per-batch-size "
    "offset (for every batch size the window held at least 30 times, the mean of what the smooth "
    "bias left there, shrunk by n / (n + 30)). A finding of held-out 22 under r24: H22-steady's "
    "decode detectors were too dull (Page-Hinkley threshold 36.25) while the fitted smooth bias "
    "was negligible (slopes about 5e-4), and the decode residual's mean by batch size alternated "
    "in sign (sizes 2-3 +1.6 %, 3-5 -1.0 %, 5-9 +1.0 %, 9-17 -0.65 %); offline on that run's "
    "window the threshold fell from 35 to 15.25. On the runs: H22-steady reached GO (5025), but "
    "H22-ramp paged on a healthy engine (a decode Page-Hinkley event at 4177) and F22-step15 "
    "paged at 5184, before its fault; F22-tenant ended GO with its new tenant in (r24: "
    "INCONCLUSIVE); held-out 21 and the other rows ended as under r24. Keener detectors met the "
    "residual of batch sizes the window held too rarely for an offset: two pages on healthy "
    "traffic outweigh one more GO, so r24 stays in force.",
    "Design r24: each watched class's drift detectors watch its residual less the residual's "
    "bias over batch composition: a linear function of log batch size, log KV tokens and log new "
    "tokens per step, fitted on the calibration window and centred on its means "
    "(`checks/residual_bias.py`; `CalibrationSettings.unbias`, `DriftCalibration.bias`). The "
    "thresholds, the wander allowance and the priming are calibrated on the same unbiased "
    "residual; a whole-step slowdown moves every step's residual alike, so it is still seen "
    "whole. A finding of held-out 21 under r23: H21-swing and H21-mix ended INCONCLUSIVE because "
    "their decode detectors would not raise a 5 % slowdown in time (Page-Hinkley thresholds "
    "25.25 and 21.25); on H21-swing's calibration window the residual's block wander fell from "
    "0.0055 to 0.0020 once the bias was taken out and the threshold from 28.75 to 12.5 (a 5 % "
    "slowdown raised 14 judged steps in; the row's command with `--db`, re-calibrated offline). "
    "Named after held-out 21's rows under r23; tried on held-out 21 (which it was built on, so "
    "no confirmation), 19 and 20's healthy runs, F19-step5, F20-step5 and CI's held-out 18 rows "
    "(marked r24) before held-out 22 was declared: H21-swing and H21-mix now reach GO (4420, "
    "5025) and H21-ramp sooner (4422, was 5427); every fault still ends not GO, drift events "
    "211-226 steps after the slowdowns; on held-out 19 and 20 every verdict is as under r23 "
    "(H19-mix and H20-ramp still too dull: their windows' wander is not composition's). Its "
    "cost, measured on docs/checks.md's development streams (`benchmarks.drift_figures`, re-run "
    "under r24): Page-Hinkley's false-alarm rate on resampled later residuals rose where it was "
    "already above the target (trace mix decode 95 % bound 4.5e-5 to 7.8e-5, light mix decode "
    "1.8e-4 to 2.6e-4; the demo mix's mixed steps stay within it), the keener thresholds meeting "
    "wander the bias does not explain. Confirmed on held-out 22 (declared after it) and on "
    "held-out 23 (declared after r25 was withdrawn): on 22 one healthy run of five reached GO "
    "and none paged; on 23 two reached GO (steady, swing) and the ramp paged on a healthy engine "
    "(decode Page-Hinkley events at 3842 and 4178), and two fault runs carried a decode event "
    "before their fault (F23-step8 at 6043, F23-step15 at 4754): the keener detectors r24 gives "
    "raise wander it does not explain, as r25's did on held-out 22.",
    "Design r23: `evidence.tenants` counts the tenants the model was scored on out of sample: "
    "those of the lineage's shadow steps, as before, and those with a request in the calibration "
    "window's held-out part (`Calibration.scored_tenants`, kept through re-fits; "
    "`tenants_scored` in `shadowd/daemon/gate_evidence.py`). A finding of held-out 20 under "
    "r21/r22: its bursty sources (ServeGen client 37 rescaled to its mean rate, the Azure code "
    "trace) went quiet soon after the calibration window, so every healthy run's shadow steps "
    "held one tenant and the gate stayed INCONCLUSIVE on `evidence.tenants` though the "
    "calibration had scored all three tenants on steps it had not fitted, exactly as the gate "
    "scores its own. A deployment that has only ever served one tenant still waits. Named after "
    "held-out 20's rows under r22; tried on its healthy runs, F20-tenant and CI's rows (marked "
    "r23) before held-out 21 was declared: every one ended as under r22, with the same first GO "
    "and drift delay. On held-out 20 r23 changes nothing: the calibration window had grown to "
    "2,400 steps, and its held-out part (the last 720) carried tenant c's requests only "
    "(H20-steady, `--db`, `model_versions.body`); the other tenants were fitted on, not scored. "
    "Nor did it decide a verdict of held-out 21, run under it: the shadow steps of H21-steady, "
    "-ramp and -saturated held two or three tenants by each one's first GO (their commands with "
    "`--db`, `step_requests`).",
    "Design r22: steps carrying a request of a tenant the calibration never saw are not fed to "
    "the residual drift detectors (`_carries_unseen_tenant` in `shadowd/daemon/drift_watch.py`); "
    "the envelope monitor still counts them and the coverage check judges the newcomers' share, "
    "as design r10 leaves them out of the accuracy evidence. Seen in CI's tests, not on a matrix "
    "row: `tests/daemon/test_refit.py::test_accuracy_on_an_unseen_tenants_steps_is_left_to_the_coverage_check` "
    "(a newcomer's steps 40 % slower than predicted) ended NO_GO on drift under r21, whose primed "
    "detectors no longer took that level as theirs; r10 means INCONCLUSIVE there. Named after "
    "held-out 20 was run under r21, so no held-out set has been run under r22: tried on held-out "
    "19 and 20's runs and on H18-steady, F18-step8, F18-tenant and F17-tenant (rows marked r22), "
    "every one of which ended as under r21 with the same first GO and drift delays.",
    "Design r21, two parts, each a finding of held-out 19 under r20. (a) A model version's drift "
    "detectors start primed with its calibration's held-out residuals (`DriftMonitor.prime` in "
    "`checks/residual_drift.py`, called by `DriftWatch.install`): fed through the "
    "standardisation, the detrend baseline, the confirmation's lag and the detectors, nothing "
    "raised or counted, so their level is the calibration's, not the first steps they see. Seen "
    "on F19-step5: a re-fit was installed at step 7001, the step after its 5 % slowdown began; "
    "its fresh detectors took the slower engine as their level (the decode residual sat about 5 % "
    "above the re-fit's calibrated mean for 1,899 steps; the row's command with `--db`, queried) "
    "and the run ended GO with the fault in force. (b) The envelope has a floor under tokens per "
    "step (the window's 1st-percentile step over 1 + `envelope_margin`), as r17's under batch "
    "size. Seen on H19-saturated: its window held only mixed steps near the token budget, its "
    "one-segment fit put most of a step's cost into the fixed term, and lighter mixed steps after "
    "it were over-predicted (mixed p90 1.34): NO_GO from 4020 on healthy traffic. Tried on "
    "held-out 17, 18 and 19's runs (rows marked r21) before held-out 20 was named: F19-step5 "
    "NO_GO with a drift event 235 steps after its fault (r20: ended GO); H19-saturated "
    "INCONCLUSIVE (r20: NO_GO from 4020); but H19-steady now pages (NO_GO from 4020): primed, its "
    "decode detectors detected at step 3709 (its first gate evaluation was at 3618) a shift of 3 % that "
    "lasted (confirmed), where fresh ones had taken that level as theirs (r20: INCONCLUSIVE); "
    "F18-step5's first GO came at 4422 (r20: 4623); every other row of the three sets ended as "
    "under r20 with the same first GO and drift delays. The price is stated: a version whose "
    "live traffic sits off its calibration's level from the start is now judged against that "
    "level.",
    "Design r20: decode-only steps are judged on their own envelope, taken from the calibration "
    "window's fit part (where their coefficients were identified, as r17 counts a class held): "
    "their batch range (p1-p99, widened by `envelope_margin`) and the KV tokens they read (the "
    "step's summed context, p99 widened). `checks/envelope.py`; the gate's within-envelope SQL, "
    "a parent's own envelope and the re-fit's `inside_envelope` honour it; bodies stored before "
    "r20 have no such range. The re-fit guard's residual check (check 4 of "
    "`checks/refit_guard.py`) now takes the steps inside both the drift domain and the envelope: "
    "the domain is drawn over the whole window, so a step between the two is extrapolation, not "
    "drift. Seen on held-out 17's H17-saturated under r19: the fit part's decode-only steps read "
    "at most about 20k KV tokens (p99 18k), later ones 9k-100k (median 44k; the row's command with "
    "`--db`, its steps and step_requests queried), and the model, "
    "extrapolating its per-KV-token cost, under-predicted them (decode p90 0.117): NO_GO from "
    "4623 on healthy traffic, inside the class-agnostic envelope (the longest context bounds one "
    "request, not what a batch reads), and every re-fit was refused as drift because the domain "
    "(whole window) covered those steps. A first form (decode-only batch range over the whole "
    "window) was tried on H17-saturated, F18-step15, H18-steady and F18-step8 and changed none of "
    "them; it was not kept. Tried on held-out 17 and 18's runs (rows marked r20) before held-out "
    "19 was named: H17-saturated GO from 5829 after a re-fit, no page (r19: NO_GO from 4623); "
    "F18-step15 GO from 6633 after a re-fit, NO_GO 403 steps after its fault with a drift event "
    "at 216 (r19: NO_GO from 4623, before its fault); first GO later on F17-step15 (7001, r19 "
    "6432), F17-platform (5829, 5427), F18-step5 (4623, 4422) and F18-tenant (5829, 5025); every "
    "other row ended as under r19 with the same first GO.",
    "Design r19: the gate does not vouch for drift where a class's calibrated detectors would not "
    "raise a 5 % whole-step slowdown within 300 judged steps (`Calibration.dull` in "
    "`shadowd/daemon/calibrator.py`, measured noise-free by `checks/fault_sensitivity.py`, r15's "
    "measure): the drift check is then INCONCLUSIVE (an unresolved event still fails it), a re-fit "
    "is asked for, and one whose detectors would be as dull is refused. r15 only compared a "
    "re-fit with its parent. Seen on held-out 17's F17-step5 under r18: its calibration window's "
    "decode residual wandered (bursty Mooncake and ServeGen arrivals), Page-Hinkley's decode "
    "threshold came out at 47.5 (noise-free, a 5 % slowdown was not raised within 1,200 judged "
    "steps), the one detection during the fault was dismissed by confirmation, and the run ended "
    "GO with the fault in force. Tried on held-out 16 and 17's short runs (rows marked r19) before "
    "held-out 18 was named: on 17 every run's first calibration had decode thresholds as dull "
    "(47.5-94.25), so no healthy run reached GO (r18: four of five; H17-steady's re-fit at 4824 "
    "got keen detectors, then traffic left its envelope) and F17-step5 ended INCONCLUSIVE, never "
    "GO (not a test); most re-fits asked for were refused as dull as well. On 16 the detectors were keen and "
    "every row ended as under r18 but F16-platform, never GO before its fault (r18: GO from "
    "5829). The price is stated: on traffic like held-out 17's the gate now says it cannot vouch "
    "that it would see a 5 % slowdown, where r18 said GO and, on one run, did not see it.",
    "Design r18 (the latency model's fit, `shadowd/attribution/llmvisor.py`): the breakpoint "
    "search tries a breakpoint only where each segment spans at least as many distinct step token "
    "counts as a segment has coefficients (`MIN_SEGMENT_LEVELS`); before, 30 steps sufficed. Seen "
    "on held-out 16's F16-tenant under r17: its calibration window held near-lone decode steps "
    "(one to three requests), with 20 mixed and 6 prefill steps in its fit part; the search put the breakpoint "
    "at two tokens, the upper segment's line through three-token steps charged 1.94 ms per "
    "request (the step costs about 8.8 ms at any of those sizes), and batches of four to seven "
    "after calibration were predicted 22-86 % too slow: decode p90 0.20, NO_GO from 4824, two "
    "thousand steps before the run's fault (a page on healthy traffic). Tried on held-out 15 and "
    "16's short runs (rows marked r18) before held-out 17 was named: F16-tenant was GO from 6633 "
    "(one segment, then a re-fit at 6030 with its breakpoint at 1,023 tokens), before its fault, "
    "and ended INCONCLUSIVE on the new tenant, a test met; H16-mix reached GO at 4824 (r17: "
    "6001), H15-steady at 4221 (r17: 4422); every other row of the two sets ended as under r17.",
    "Design r17, three parts, each a case of the gate judging a model on traffic it never "
    "identified. (a) The workload envelope has a floor: the calibration window's 1st-percentile "
    "batch size over 1 + `envelope_margin` (`checks/envelope.py`); a batch below it is "
    "extrapolation, as one beyond the ceiling is (a fit on saturated batches only does not "
    "separate a step's fixed cost from its per-request costs). (b) A class is barely held when "
    "the window's fit part (not the whole window, which includes the held-out part) held fewer "
    "than `min_class_steps` of it (`Calibration.fit_class_steps`): its accuracy misses are "
    "INCONCLUSIVE and the re-fit guard leaves it out. (c) After a re-fit, a step an earlier "
    "version of the lineage scored counts in the accuracy evidence only inside that version's own "
    "envelope (`shadowd/daemon/gate_evidence.py`): its steps beyond were the extrapolation the "
    "re-fit answered, left out while it was in force (r12). Seen on held-out 15 under r16: "
    "H15-saturated's window held batches of about 250 and 75 decode-only steps in its fit part "
    "(the rest came in the held-out part), its later traffic ran at batches of 40-100, and the "
    "decode error there (p50 16 %) paged from 4020 to the end; H15-swing's re-fit at 5829 was "
    "installed, then its parent's steps beyond the parent's envelope (decode p90 0.108 on all "
    "2,369, 0.035 on those inside) paged on the last evaluation. Tried on held-out 12-15's short "
    "runs (rows marked r17) before held-out 16 was named: H15-saturated and H15-swing end "
    "INCONCLUSIVE (recalibrate; the saturated run's re-fit is refused: its mixed steps, too few "
    "inside the envelope, are judged on all of them, as r13 says); F15-step8's drift event came "
    "291 steps after its fault (r16: 932): the floor put 5 % of its steps beyond the envelope, a "
    "re-fit was installed at 4824, before the fault, and its detectors raised the fault; every "
    "other row of held-out 14 and 15 ended as under r16; of held-out 12 and 13's steady, swing, "
    "mix and saturated rows re-run, each ended as before (H13-saturated's first GO 4824, r13: "
    "4623).",
    "Design r14: tenants the operator lists in `[calibration] tenants` are known to the gate even "
    "if the warm-up window missed them (`known_tenants` in `shadowd/daemon/calibrator.py`; "
    "`shadowd calibrate --tenant` for a calibration by hand): when one arrives its steps are "
    "judged like everyone's (accuracy, drift, the envelope, the composition domain) instead of "
    "holding the gate at INCONCLUSIVE as a newcomer and refusing re-fits (r9, r10). A tenant "
    "nobody listed, like the fault runs' new heavy tenant, is still new. On held-out 12 (r11-r13) "
    "and 14 (r13) a tenant a run started with stayed silent through the widest warm-up window and "
    "later carried from about 6 % to over 20 % of the attributed time, so healthy runs ended "
    "INCONCLUSIVE and the fault "
    "runs were never GO before their fault. Tried on held-out 12 and 14's short runs (development "
    "data from r14 on, rows marked r14) before held-out 15 was named: on held-out 12 four of five "
    "healthy runs reached GO (r13: two) and all five faults were tests that met their targets "
    "(r13: none a test; the 8 % slowdown's drift event 219 steps after it); on held-out 14 the "
    "healthy rows ended as under r13 (only H14-saturated GO), and F14-step5 ended GO: the re-fit "
    "it now installed could not see its fault (design r15).",
    "Design r13: the re-fit guard judges the model in force's accuracy on the window's steps "
    "inside its calibrated envelope, for each class with enough of them (a class with too few is "
    "judged on all its steps, as before); `checks/refit_guard.py`, `class_errors` in "
    "`shadowd/daemon/refit.py`. The model's error beyond the envelope is extrapolation, the very "
    "reason to re-fit, and the gate's own evidence already leaves those steps out (r12); a slower "
    "engine misses on the steps inside too, and the in-domain residual and the re-fit's time "
    "invariance still guard against smaller changes. On held-out 13 (r12) the 5 % and 8 % "
    "slowdowns and the new tenant were not tests: before each fault the gate left GO on traffic "
    "beyond its envelope, and the re-fits were refused because the model in force missed its "
    "limits on that traffic (mixed p90 0.18-0.22 on 261-264 steps, decode p90 0.21). Tried on "
    "held-out 12 and 13's short runs (development data from r13 on, rows marked r13) before "
    "held-out 14 was named: F13-step5 re-fitted at 6432, was GO when its fault began and ended "
    "NO_GO with its drift event 242 steps after (r12: not a test); F13-step8 and F13-tenant were "
    "still refused, now on the steps inside the envelope (mixed p99 0.34 on 176 steps; decode p90 "
    "0.107 on 1257 steps); the other set-13 rows ended as under r12. On held-out 12's rows no "
    "re-fit was considered at all, so r13 had nothing to judge there: every set-12 row ended with "
    "its r12 verdict and first GO.",
    "Design r12: while more of the steps than the extrapolation limit lie beyond the calibrated "
    "envelope (coverage.extrapolation is then INCONCLUSIVE: recalibrate on current traffic), the "
    "steps beyond it are left out of the accuracy evidence, as r10 does for unseen tenants "
    "(`shadowd/daemon/gate_evidence.py`): the model's error there is extrapolation, which the "
    "coverage check already reports. On held-out 12 (r11) H12-swing paged on mixed-step accuracy "
    "(p90 0.28) after its load swung to batches about six times the calibration window's largest "
    "(10.8 % of steps beyond the envelope). Accuracy on the steps inside still pages. Tried on "
    "held-out 12's short runs (development data from r12 on, rows marked r12) before held-out 13 "
    "was named: H12-swing ended INCONCLUSIVE without a page (r11: NO_GO); H12-ramp reached GO (r11: "
    "INCONCLUSIVE on an undecided stability interval; its model was installed one evaluation "
    "earlier in this run, 3618 against 3819: when a calibration is installed depends on thread "
    "timing in the demo, so part of that change may be timing); the other rows ended as under r11, "
    "the faults with the same drift-event delays.",
    "Design r11: the warm-up window also widens (within the same maximum) until every tenant the "
    "operator lists in `[calibration] tenants` has appeared in it; the demo lists the tenants a run "
    "starts with, never an injected one (`shadowd/daemon/calibrator.py`, `tenants_seen_by`). On "
    "held-out 9 (r9), 10 and 11 (r10) tenants that were silent through the calibration window (a "
    "bursty trace, a slow long-context one) were newcomers to the gate when they arrived, however "
    "healthy: H9-saturated and H11-saturated ended INCONCLUSIVE on coverage.new_tenants, and "
    "H10-steady and H10-swing paged (r9) or ended INCONCLUSIVE (r10) after one. A tenant nobody "
    "listed, like the fault runs' new heavy tenant, is still a newcomer. Tried on development "
    "rows of held-out 9-11 (rows marked r11) before held-out 12 was named: H11-saturated reached GO "
    "(first GO 4824; r10 never GO, on coverage.new_tenants); H11-ramp ended as under r10 "
    "(INCONCLUSIVE, one pass short of GO); in H9-saturated, H10-steady and H10-swing the quiet "
    "tenant had not appeared by the widest window (60 % of the run), so calibration came later "
    "(3617-3618 where r9/r10 calibrated by 3014-3216) and ended INCONCLUSIVE as before, H10's on "
    "that tenant; F9-tenant and F11-tenant still ended INCONCLUSIVE on the newcomer.",
    "Design r10: while tenants calibration never saw carry more of the recent attributed time than "
    "the new-tenant limit (coverage.new_tenants is then INCONCLUSIVE: recalibrate with them), the "
    "steps carrying their requests are left out of the accuracy evidence "
    "(`shadowd/daemon/gate_evidence.py`): the model's error there is on traffic it does not vouch "
    "for. On held-out 10 (r9) a long-context tenant silent through the calibration window paged "
    "on decode accuracy in two healthy runs. Accuracy beyond its limits on the rest still pages; "
    "below the limit every step is judged. Tried on held-out 10's short runs (development data "
    "from r10 on, rows marked r10) before held-out 11 was named: H10-steady and H10-swing ended "
    "INCONCLUSIVE without a page (r9: NO_GO, 2 and 1 pages); the fault runs' non-GO stretches "
    "before their faults became INCONCLUSIVE (no pages), so they still are not tests; every fault "
    "still ended NO_GO with the same drift-event delays.",
    "Design r9: a re-fit is refused while tenants calibration never saw carry more of the recent "
    "attributed time than the gate's new-tenant limit (`checks/refit_guard.py`): on held-out 9's "
    "F9-tenant (r8), a re-fit triggered by the newcomer's load took it in, and the gate was two "
    "passes from GO again with a tenant nobody had validated. The operator recalibrates with it. "
    "Tried on held-out 9's short runs (development data from r9 on, rows marked r9) before "
    "held-out 10 was named: F9-tenant's re-fits were refused and it ended INCONCLUSIVE on the "
    "newcomer; H9-saturated, where a tenant silent through the calibration window later carried "
    "most of the time, had its re-fits refused too and ended INCONCLUSIVE where r8 reached GO (to "
    "the daemon a tenant calibration never saw is a newcomer, however healthy); the other rows "
    "ended as under r8.",
    "Design r8: a re-fit that would leave a class without drift detectors that the model in force "
    "watches is refused (`shadowd/daemon/refit.py`, `newly_unwatched`): the model in force still "
    "speaks for the traffic it was calibrated on, and a swing back there finds it watching (on "
    "H7-swing, r7 installed such a re-fit and stayed blind on decode to the end).",
    "The warm-up window widens (up to `max_window_factor` x `warmup_steps`; in the demo, up to 60 % "
    "of the run) until every step class carrying >= 25 % of its steps has enough held-out steps for "
    "drift detectors.",
    "Design r3: when traffic leaves what the model in force was calibrated on (steps beyond the "
    "envelope, or drift detectors blind on batch compositions their calibration never saw) and the "
    "model has scored a full calibration window since it was installed, the daemon re-fits on that "
    "window (`shadowd/daemon/refit.py`) only if no check fails, no drift event is unresolved, the "
    "model in force meets the accuracy limits on the window, and its residual has not moved on steps "
    "inside the calibrated compositions (`checks/refit_guard.py`). Each re-fit is a new content-hashed "
    "version with its lineage and reason stored; tenants calibration never saw are not a re-fit "
    "trigger (the operator recalibrates with them).",
    "Design r3: the gate's evidence runs over the lineage of re-fits (each step scored by the model "
    "in force when it ran); accuracy beyond the limits on a class the calibration window held too "
    "few steps of is INCONCLUSIVE (recalibrate), not NO_GO.",
    "Design r4 (run on held-out 4 and on held-out 3, then withdrawn; its rows are marked r4): each "
    "step class got limits, the 0.95 quantiles of the batch sizes and tokens per step its fit held, "
    "and accuracy and drift were judged only inside them. On the development demos, whose load "
    "grows through the calibration window, most later steps fell beyond the fit part's limits and "
    "the gate stayed INCONCLUSIVE (tests/demo/test_demo.py failed), so r3 is the design in force.",
]


def _revision(row: dict[str, Any]) -> int:
    """The design revision a row ran under, as a number ("r10" after "r9")."""
    return int(row.get("design", "r1")[1:])


def _h200(model: str, tp: int, tenants: tuple[str, ...], steps: int = 6000) -> dict[str, Any]:
    """A held-out set's base: the H200 tables (the only tables no development run used)."""
    return dict(platform=f"{KERNELS}/h200_sxm", model=model, tp=tp, tenants=tenants, steps=steps)


HELD3_BASE = _h200(
    "benchmarks/models/mistral-small-24b", 2, ("a=servegen:20:4", "b=servegen:34:1", "c=servegen:18:3")
)
HELD4_BASE = _h200(
    "benchmarks/models/mistral-nemo-12b", 2, ("a=servegen:25:4", "b=servegen:24:1", "c=servegen:15:3")
)
HELD5_BASE = _h200(
    "benchmarks/models/qwen2.5-7b", 2, ("a=servegen:42:4", "b=servegen:3:1", "c=servegen:22:3")
)
HELD6_BASE = _h200(
    "benchmarks/models/phi-3-medium",
    2,
    ("a=lengths:sharegpt:2", "b=mooncake-synthetic:0.15", "c=lengths:arxiv:1.5"),
)
HELD7_BASE = _h200(
    "benchmarks/models/llama-3.2-3b",
    2,
    ("a=lengths:sharegpt:6", "b=mooncake-conversation:1", "c=servegen:27:20"),
)
HELD8_BASE = _h200(
    "benchmarks/models/qwen2.5-3b",
    2,
    ("a=azure-conv:6", "b=mooncake-synthetic:0.5", "c=servegen:13:20"),
)
HELD9_BASE = _h200(
    "benchmarks/models/llama-2-7b",
    1,
    ("a=azure-code:4", "b=servegen:40:8", "c=lengths:arxiv:1"),
)
HELD10_BASE = _h200(
    "benchmarks/models/llama-3.2-1b",
    1,
    ("a=mooncake-conversation:0.5", "b=azure-conv:8", "c=servegen:4:20"),
)
HELD11_BASE = _h200(
    "benchmarks/models/qwen2.5-0.5b",
    1,
    ("a=lengths:sharegpt:4", "b=servegen:15:20", "c=azure-code:3"),
)
HELD12_BASE = _h200(
    "benchmarks/models/yi-1.5-9b",
    1,
    ("a=servegen:30:10", "b=lengths:sharegpt:3", "c=mooncake-conversation:0.3"),
)
HELD13_BASE = _h200(
    "benchmarks/models/codellama-13b",
    1,
    ("a=azure-conv:3", "b=servegen:14:10", "c=lengths:arxiv:0.5"),
)
HELD14_BASE = _h200(
    "benchmarks/models/deepseek-coder-33b",
    2,
    ("a=lengths:sharegpt:1", "b=servegen:22:2", "c=mooncake-conversation:0.1"),
)
HELD15_BASE = _h200(
    "benchmarks/models/deepseek-llm-67b",
    4,
    ("a=azure-conv:2", "b=servegen:25:3", "c=lengths:arxiv:0.5"),
)
HELD16_BASE = _h200(
    "benchmarks/models/yi-34b",
    4,
    ("a=servegen:0:12", "b=azure-code:1.5", "c=lengths:sharegpt:0.8"),
)
HELD17_BASE = _h200(
    "benchmarks/models/deepseek-llm-7b",
    2,
    ("a=mooncake-conversation:1", "b=servegen:33:20", "c=azure-conv:3"),
)
HELD18_BASE = _h200(
    "benchmarks/models/yi-6b",
    2,
    ("a=azure-code:2", "b=servegen:20:5", "c=lengths:arxiv:0.5"),
)
HELD19_BASE = _h200(
    "benchmarks/models/mistral-7b-v0.3",
    1,
    ("a=lengths:sharegpt:1.5", "b=servegen:13:25", "c=mooncake-conversation:0.8"),
)
HELD20_BASE = _h200(
    "benchmarks/models/tinyllama-1.1b",
    1,
    ("a=azure-code:5", "b=servegen:37:8", "c=lengths:sharegpt:3"),
)
HELD21_BASE = _h200(
    "benchmarks/models/qwen2.5-1.5b",
    1,
    ("a=lengths:arxiv:1.5", "b=servegen:24:3", "c=azure-conv:4"),
)
HELD22_BASE = _h200(
    "benchmarks/models/llama-2-13b",
    2,
    ("a=lengths:sharegpt:2", "b=servegen:33:6", "c=mooncake-conversation:0.6"),
)
HELD23_BASE = _h200(
    "benchmarks/models/phi-3-mini-4k",
    1,
    ("a=azure-conv:5", "b=servegen:10:12", "c=lengths:arxiv:0.7"),
)
HELD24_BASE = _h200(
    "benchmarks/models/codellama-34b",
    4,
    ("a=azure-code:2", "b=servegen:18:10", "c=lengths:sharegpt:1"),
)
HELD25_BASE = _h200(
    "benchmarks/models/granite-3.1-8b",
    2,
    ("a=mooncake-conversation:0.4", "b=servegen:0:6", "c=azure-code:1.5"),
)
HELD26_BASE = _h200(
    "benchmarks/models/qwen2.5-32b",
    4,
    ("a=servegen:40:4", "b=azure-conv:1.5", "c=lengths:sharegpt:0.6"),
)
HELD27_BASE = _h200(
    "benchmarks/models/mistral-large-2407",
    4,
    ("a=azure-code:0.3", "b=azure-conv:0.3", "c=lengths:arxiv:0.2"),
)
HELD28_BASE = _h200(
    "benchmarks/models/smollm2-1.7b",
    1,
    ("a=lengths:sharegpt:3", "b=azure-conv:5", "c=azure-code:2"),
)
HELD29_BASE = _h200(
    "benchmarks/models/ministral-8b",
    1,
    ("a=mooncake-conversation:0.3", "b=azure-conv:3", "c=lengths:sharegpt:1.5"),
)
HELD30_BASE = _h200(
    "benchmarks/models/falcon3-7b",
    2,
    ("a=azure-code:2", "b=lengths:sharegpt:1", "c=mooncake-conversation:0.2"),
)
HELD31_BASE = _h200(
    "benchmarks/models/granite-3.1-2b",
    1,
    ("a=azure-conv:4", "b=mooncake-conversation:0.4", "c=lengths:sharegpt:1.2"),
)
HELD32_BASE = _h200(
    "benchmarks/models/qwen3-4b",
    2,
    ("a=azure-conv:3", "b=lengths:sharegpt:1.5", "c=lengths:arxiv:0.6"),
)
HELD33_BASE = _h200(
    "benchmarks/models/qwen3-1.7b",
    1,
    ("a=azure-conv:5", "b=lengths:arxiv:1", "c=lengths:sharegpt:1.2"),
)
HELD34_BASE = _h200(
    "benchmarks/models/qwen3-8b",
    2,
    ("a=lengths:arxiv:0.8", "b=azure-conv:2.5", "c=lengths:sharegpt:1.5"),
)
HELD35_BASE = _h200(
    "benchmarks/models/qwen3-14b",
    4,
    ("a=lengths:sharegpt:1.5", "b=azure-code:2", "c=mooncake-conversation:0.2"),
)
HELD36_BASE = _h200(
    "benchmarks/models/phi-4",
    2,
    ("a=servegen:34:1.2", "b=azure-conv:1.5", "c=lengths:sharegpt:0.8"),
)
HELD37_BASE = _h200(
    "benchmarks/models/codestral-22b",
    4,
    ("a=azure-code:2", "b=lengths:arxiv:0.8", "c=servegen:10:15"),
)
HELD38_BASE = _h200(
    "benchmarks/models/command-r-35b",
    4,
    ("a=azure-conv:2", "b=lengths:sharegpt:1", "c=mooncake-conversation:0.15"),
)
HELD39_BASE = _h200(
    "benchmarks/models/olmo-2-13b",
    2,
    ("a=azure-conv:2.5", "b=lengths:arxiv:0.6", "c=azure-code:1.2"),
)
HELD40_BASE = _h200(
    "benchmarks/models/gpt-neox-20b",
    2,
    ("a=azure-conv:3", "b=servegen:10:10", "c=lengths:sharegpt:1"),
)
HELD41_BASE = _h200(
    "benchmarks/models/stablelm-2-12b",
    1,
    ("a=azure-code:1.5", "b=lengths:arxiv:0.5", "c=servegen:13:10"),
)
HELD42_BASE = _h200(
    "benchmarks/models/gemma-7b",
    1,
    ("a=lengths:sharegpt:1", "b=azure-conv:2", "c=servegen:33:5"),
)
HELD2_BASE = _h200(
    "benchmarks/models/qwen2.5-72b", 4, ("a=servegen:6:4", "b=servegen:37:1", "c=servegen:23:3")
)
# 8000 steps declared first; cut to 6000 before any held-out result for the 2-core budget
HELD_BASE = _h200(
    "benchmarks/models/llama-3.1-70b", 4, ("a=servegen:3:4", "b=servegen:22:1", "c=servegen:10:3")
)
DEV_BASE = dict(
    platform=f"{KERNELS}/h100_sxm",
    model="llama-3.1-8b",
    tp=1,
    tenants=("chat=synthetic:chat:18", "code=synthetic:code:8", "docs=synthetic:longdoc:1.2"),
    steps=6000,
)
# Engine step of the fault, by run length. 4200 (of 6000) was declared first; most runs had not
# reached their first GO by then (calibration may widen to 60 % of the run), so those fault rows
# tested nothing; the faults were re-run at 5000 (no gate setting changed).
# Held-out 5's fault runs (6000 steps, fault at 5000) were mostly GO only after step 5000, so
# they tested nothing; they were re-run 9000 steps long with the fault at 7000, no gate setting
# changed (design r3 throughout). The first rows are kept as superseded.
FAULT_AT = {12000: 7000, 9000: 7000, 6000: 5000}  # engine step of the fault, by run length
# Sets whose faults are armed (``@go:7000``: the fault fires at the first GO verdict from step
# 7000 on, or never) and run this many steps (declared with held-out 32). Sets 30 and 31's
# faults mostly landed on a gate already INCONCLUSIVE, when traffic left the calibrated envelope
# between steps 5600 and 7000, and so tested nothing; an armed fault lands on a gate vouching
# for the engine, and 12,000 steps leave time after a late GO.
ARMED_SETS = {
    "32": 12000,
    "33": 12000,
    "34": 12000,
    "35": 12000,
    "36": 12000,
    "37": 12000,
    "38": 12000,
    "39": 12000,
    "40": 12000,
    "41": 12000,
    "42": 12000,
}
LONG_FAULT_SETS = {
    "5",
    "6",
    "7",
    "8",
    "9",
    "10",
    "11",
    "12",
    "13",
    "14",
    "15",
    "16",
    "17",
    "18",
    "19",
    "20",
    "21",
    "22",
    "23",
    "24",
    "25",
    "26",
    "27",
    "28",
    "29",
    "30",
    "31",
}  # sets whose fault runs are 9000 steps (``ARMED_SETS``: their own length)
# Sets whose 9000-step fault runs are scheduled as 6000-step runs (``--horizon``): their first GO
# can come where the healthy runs' does, before the fault at 7000 (declared with held-out 9).
HORIZON_SETS = {
    "9": 6000,
    "10": 6000,
    "11": 6000,
    "12": 6000,
    "13": 6000,
    "14": 6000,
    "15": 6000,
    "16": 6000,
    "17": 6000,
    "18": 6000,  # declared with the set; missing at its first fault runs (its note says)
    "19": 6000,
    "20": 6000,
    "21": 6000,
    "22": 6000,
    "23": 6000,
    "24": 6000,
    "25": 6000,
    "26": 6000,
    "27": 6000,
    "28": 6000,
    "29": 6000,
    "30": 6000,
    "31": 6000,
    "32": 6000,
    "33": 6000,
    "34": 6000,
    "35": 6000,
    "36": 6000,
    "37": 6000,
    "38": 6000,
}


@dataclass(frozen=True)
class Scenario:
    name: str
    set: str  # "development" | "held_out"
    expect: str  # "healthy" (should reach GO) | "fault" (should end not GO)
    what: str
    platform: str
    model: str
    tp: int
    tenants: tuple[str, ...]
    steps: int
    seed: int
    loads: tuple[str, ...] = ()
    injects: tuple[str, ...] = ()
    fault_step: int | None = None
    extra: dict[str, Any] = field(default_factory=dict)
    horizon: int | None = None  # ``shadowd demo --horizon``: the run length the schedule is sized for

    def demo_kwargs(self, shared: str) -> dict[str, Any]:
        """``DemoSpec.build`` arguments (paths under ``$SHADOWD_SHARED`` resolved to ``shared``)."""
        return dict(
            platform=self.platform.replace("$SHADOWD_SHARED", shared),
            model=str(REPO / self.model) if self.model.startswith("benchmarks/") else self.model,
            tp=self.tp,
            tenants=self.tenants,
            steps=self.steps,
            horizon=self.horizon,
            seed=self.seed,
            loads=self.loads,
            injects=tuple(i.replace("$SHADOWD_SHARED", shared) for i in self.injects),
        )

    def command(self, db: str | None = None) -> str:
        args = [
            ".venv/bin/python -m shadowd.cli demo",
            f"--platform {self.platform}",
            f"--model {self.model}",
            f"--tp {self.tp}",
            *(f"--tenant {t}" for t in self.tenants),
            f"--steps {self.steps}",
            *([f"--horizon {self.horizon}"] if self.horizon else []),
            f"--seed {self.seed}",
            *(f"--load {x}" for x in self.loads),
            *(f"--inject {x}" for x in self.injects),
            "--json",
        ]
        if db:
            args.append(f"--db {db}")
        return " ".join(args)


RAMP_30K = "load ramps light -> saturated, 30,000 steps: ramp done, then held"
SWING_30K = "load swings light <-> saturated, 30,000 steps: over two periods"


def _fault(
    name: str, set_: str, what: str, base: dict, seed: int, inject: str, armed: bool = False
) -> Scenario:
    """A fault row; ``armed`` (from held-out 32): the fault fires at the first GO from its step on."""
    at = FAULT_AT[base["steps"]]
    when = f"go:{at}" if armed else at
    return Scenario(
        name, set_, "fault", what, **base, seed=seed, injects=(inject.format(at=when),), fault_step=at
    )


def _scenarios() -> list[Scenario]:
    h, d = HELD_BASE, DEV_BASE
    out = [
        Scenario("D-steady", "development", "healthy", "built-in mix, steady", **d, seed=7),
        _fault("D-step8", "development", "whole step 8 % slower", d, 8, "step-slowdown:0.08@{at}"),
    ]
    for tag, base, seed0, heavy in (
        ("", h, 200, "servegen:33:20"),
        ("2", HELD2_BASE, 300, "servegen:4:30"),
        ("3", HELD3_BASE, 400, "servegen:30:30"),
        ("4", HELD4_BASE, 500, "servegen:40:30"),
        ("5", HELD5_BASE, 600, "servegen:10:30"),
        ("6", HELD6_BASE, 700, "servegen:42:30"),
        ("7", HELD7_BASE, 800, "lengths:arxiv:1"),
        ("8", HELD8_BASE, 900, "azure-code:8"),
        ("9", HELD9_BASE, 1000, "lengths:sharegpt:6"),
        ("10", HELD10_BASE, 1100, "lengths:arxiv:4"),
        ("11", HELD11_BASE, 1200, "mooncake-synthetic:1"),
        ("12", HELD12_BASE, 1300, "azure-code:6"),
        ("13", HELD13_BASE, 1400, "mooncake-synthetic:0.5"),
        ("14", HELD14_BASE, 1500, "azure-code:3"),
        ("15", HELD15_BASE, 1600, "lengths:sharegpt:3"),
        ("16", HELD16_BASE, 1700, "azure-conv:5"),
        ("17", HELD17_BASE, 1800, "lengths:arxiv:3"),
        ("18", HELD18_BASE, 1900, "mooncake-conversation:2"),
        ("19", HELD19_BASE, 2000, "azure-conv:4"),
        ("20", HELD20_BASE, 2100, "mooncake-conversation:3"),
        ("21", HELD21_BASE, 2200, "mooncake-synthetic:0.4"),
        ("22", HELD22_BASE, 2300, "azure-code:3"),
        ("23", HELD23_BASE, 2400, "mooncake-conversation:1"),
        ("24", HELD24_BASE, 2500, "azure-conv:3"),
        ("25", HELD25_BASE, 2600, "lengths:arxiv:1.5"),
        ("26", HELD26_BASE, 2700, "mooncake-synthetic:0.3"),
        ("27", HELD27_BASE, 2800, "mooncake-conversation:0.1"),
        ("28", HELD28_BASE, 2900, "mooncake-synthetic:0.5"),
        ("29", HELD29_BASE, 3000, "lengths:arxiv:1.5"),
        ("30", HELD30_BASE, 3100, "azure-conv:3"),
        ("31", HELD31_BASE, 3200, "azure-code:2"),
        ("32", HELD32_BASE, 3300, "lengths:arxiv:2"),
        ("33", HELD33_BASE, 3400, "lengths:sharegpt:3"),
        ("34", HELD34_BASE, 3500, "lengths:arxiv:2.5"),
        ("35", HELD35_BASE, 3600, "azure-conv:4"),
        ("36", HELD36_BASE, 3700, "lengths:arxiv:1.5"),
        ("37", HELD37_BASE, 3800, "lengths:sharegpt:2"),
        ("38", HELD38_BASE, 3900, "azure-code:1.5"),
        ("39", HELD39_BASE, 4000, "mooncake-conversation:0.5"),
        ("40", HELD40_BASE, 4100, "azure-code:2"),
        ("41", HELD41_BASE, 4200, "lengths:sharegpt:2"),
        ("42", HELD42_BASE, 4300, "lengths:arxiv:1.5"),
    ):
        set_ = f"held_out_{tag or '1'}"
        fb = {**base, "steps": 9000} if tag in LONG_FAULT_SETS else base  # the fault runs' base
        armed = tag in ARMED_SETS
        if armed:
            fb = {**base, "steps": ARMED_SETS[tag]}
        if tag in HORIZON_SETS:
            fb["horizon"] = HORIZON_SETS[tag]
        out += [
            Scenario(f"H{tag}-steady", set_, "healthy", "steady", **base, seed=seed0 + 1),
            Scenario(
                f"H{tag}-ramp",
                set_,
                "healthy",
                "load ramps light -> saturated",
                **base,
                seed=seed0 + 2,
                loads=("ramp:0.3:3:300",),
            ),
            Scenario(
                f"H{tag}-swing",
                set_,
                "healthy",
                "load swings light <-> saturated",
                **base,
                seed=seed0 + 3,
                loads=("swing:0.3:3:150",),
            ),
            Scenario(
                f"H{tag}-mix",
                set_,
                "healthy",
                "tenant mix shifts slowly",
                **base,
                seed=seed0 + 4,
                loads=("a=ramp:2:0.5:300", "c=ramp:0.5:3:300"),
            ),
            _fault(
                f"F{tag}-step5",
                set_,
                "whole step 5 % slower",
                fb,
                seed0 + 5,
                "step-slowdown:0.05@{at}",
                armed,
            ),
            _fault(
                f"F{tag}-step8",
                set_,
                "whole step 8 % slower",
                fb,
                seed0 + 6,
                "step-slowdown:0.08@{at}",
                armed,
            ),
            _fault(
                f"F{tag}-step15",
                set_,
                "whole step 15 % slower",
                fb,
                seed0 + 7,
                "step-slowdown:0.15@{at}",
                armed,
            ),
            _fault(
                f"F{tag}-platform",
                set_,
                "platform swap H200 -> H100",
                fb,
                seed0 + 8,
                f"platform:{KERNELS}/h100_sxm@{{at}}",
                armed,
            ),
            _fault(
                f"F{tag}-tenant",
                set_,
                f"new heavy tenant ({heavy})",
                fb,
                seed0 + 9,
                f"tenant:heavy={heavy}@{{at}}",
                armed,
            ),
        ]
    # The long steady runs: the false alarms per judged step on a held-out healthy engine.
    for tag, base, steps, seed in (
        ("5", HELD5_BASE, 305000, 601),
        ("6", HELD6_BASE, 605000, 701),
        ("7", HELD7_BASE, 605000, 801),
        ("8", HELD8_BASE, 605000, 901),
        ("9", HELD9_BASE, 605000, 1001),
        ("25", HELD25_BASE, 605000, 2601),
        ("26", HELD26_BASE, 800000, 2701),
    ):
        out.append(
            Scenario(
                f"H{tag}-steady-long",
                f"held_out_{tag}",
                "healthy",
                f"steady, {steps:,} steps: the false-alarm bound",
                **{**base, "steps": steps},
                seed=seed,
            )
        )
    out.append(
        Scenario(
            "H25-steady-xl",
            "held_out_25",
            "healthy",
            "steady, 1,000,000 steps, its own seed: the false-alarm bound",
            **{**HELD25_BASE, "steps": 1_000_000},
            seed=2613,
        )
    )
    # Where load moves: the evidence time once a ramp holds or a swing has turned (30,000 steps),
    # and the false-alarm bound on the swinging scenario (held-out 26's note).
    for name, what, steps, seed, load in (
        (
            "H26-ramp-30k",
            "load ramps light -> saturated, 30,000 steps: ramp done, then held",
            30000,
            2702,
            "ramp:0.3:3:300",
        ),
        (
            "H26-swing-30k",
            "load swings light <-> saturated, 30,000 steps: over two periods",
            30000,
            2703,
            "swing:0.3:3:150",
        ),
        (
            "H26-swing-long",
            "load swings, 800,000 steps: the false-alarm bound",
            800000,
            2703,
            "swing:0.3:3:150",
        ),
    ):
        out.append(
            Scenario(
                name,
                "held_out_26",
                "healthy",
                what,
                **{**HELD26_BASE, "steps": steps},
                seed=seed,
                loads=(load,),
            )
        )
    # Held-out 27-29's, declared with their sets (their notes): the evidence time where load
    # moves.
    for name, set_, base, what, seed, load in (
        ("H27-ramp-30k", "held_out_27", HELD27_BASE, RAMP_30K, 2802, "ramp:0.3:3:300"),
        ("H27-swing-30k", "held_out_27", HELD27_BASE, SWING_30K, 2803, "swing:0.3:3:150"),
        ("H28-ramp-30k", "held_out_28", HELD28_BASE, RAMP_30K, 2902, "ramp:0.3:3:300"),
        ("H28-swing-30k", "held_out_28", HELD28_BASE, SWING_30K, 2903, "swing:0.3:3:150"),
        ("H29-ramp-30k", "held_out_29", HELD29_BASE, RAMP_30K, 3002, "ramp:0.3:3:300"),
        ("H29-swing-30k", "held_out_29", HELD29_BASE, SWING_30K, 3003, "swing:0.3:3:150"),
        ("H30-ramp-30k", "held_out_30", HELD30_BASE, RAMP_30K, 3102, "ramp:0.3:3:300"),
        ("H30-swing-30k", "held_out_30", HELD30_BASE, SWING_30K, 3103, "swing:0.3:3:150"),
        ("H31-ramp-30k", "held_out_31", HELD31_BASE, RAMP_30K, 3202, "ramp:0.3:3:300"),
        ("H31-swing-30k", "held_out_31", HELD31_BASE, SWING_30K, 3203, "swing:0.3:3:150"),
        ("H32-ramp-30k", "held_out_32", HELD32_BASE, RAMP_30K, 3302, "ramp:0.3:3:300"),
        ("H32-swing-30k", "held_out_32", HELD32_BASE, SWING_30K, 3303, "swing:0.3:3:150"),
        ("H33-ramp-30k", "held_out_33", HELD33_BASE, RAMP_30K, 3402, "ramp:0.3:3:300"),
        ("H33-swing-30k", "held_out_33", HELD33_BASE, SWING_30K, 3403, "swing:0.3:3:150"),
        ("H34-ramp-30k", "held_out_34", HELD34_BASE, RAMP_30K, 3502, "ramp:0.3:3:300"),
        ("H34-swing-30k", "held_out_34", HELD34_BASE, SWING_30K, 3503, "swing:0.3:3:150"),
        ("H35-ramp-30k", "held_out_35", HELD35_BASE, RAMP_30K, 3602, "ramp:0.3:3:300"),
        ("H35-swing-30k", "held_out_35", HELD35_BASE, SWING_30K, 3603, "swing:0.3:3:150"),
        ("H36-ramp-30k", "held_out_36", HELD36_BASE, RAMP_30K, 3702, "ramp:0.3:3:300"),
        ("H36-swing-30k", "held_out_36", HELD36_BASE, SWING_30K, 3703, "swing:0.3:3:150"),
        ("H37-ramp-30k", "held_out_37", HELD37_BASE, RAMP_30K, 3802, "ramp:0.3:3:300"),
        ("H37-swing-30k", "held_out_37", HELD37_BASE, SWING_30K, 3803, "swing:0.3:3:150"),
        ("H38-ramp-30k", "held_out_38", HELD38_BASE, RAMP_30K, 3902, "ramp:0.3:3:300"),
        ("H38-swing-30k", "held_out_38", HELD38_BASE, SWING_30K, 3903, "swing:0.3:3:150"),
        ("H39-ramp-30k", "held_out_39", HELD39_BASE, RAMP_30K, 4002, "ramp:0.3:3:300"),
        ("H39-swing-30k", "held_out_39", HELD39_BASE, SWING_30K, 4003, "swing:0.3:3:150"),
        ("H40-ramp-30k", "held_out_40", HELD40_BASE, RAMP_30K, 4102, "ramp:0.3:3:300"),
        ("H40-swing-30k", "held_out_40", HELD40_BASE, SWING_30K, 4103, "swing:0.3:3:150"),
        ("H41-ramp-30k", "held_out_41", HELD41_BASE, RAMP_30K, 4202, "ramp:0.3:3:300"),
        ("H41-swing-30k", "held_out_41", HELD41_BASE, SWING_30K, 4203, "swing:0.3:3:150"),
        ("H42-ramp-30k", "held_out_42", HELD42_BASE, RAMP_30K, 4302, "ramp:0.3:3:300"),
        ("H42-swing-30k", "held_out_42", HELD42_BASE, SWING_30K, 4303, "swing:0.3:3:150"),
    ):
        out.append(
            Scenario(name, set_, "healthy", what, **{**base, "steps": 30000}, seed=seed, loads=(load,))
        )
    # Declared after design r32, before its run: the false-alarm bound on a swinging engine none
    # of r29-r32 was built on (held-out 26's H26-swing-long ran under r28).
    out.append(
        Scenario(
            "H29-swing-long",
            "held_out_29",
            "healthy",
            "load swings, 800,000 steps: the false-alarm bound",
            **{**HELD29_BASE, "steps": 800000},
            seed=3003,
            loads=("swing:0.3:3:150",),
        )
    )
    # Declared after design r33's short rows on held-out 30, before its own run: r33's bound.
    out.append(
        Scenario(
            "H30-swing-long",
            "held_out_30",
            "healthy",
            "load swings, 800,000 steps: the false-alarm bound",
            **{**HELD30_BASE, "steps": 800000},
            seed=3103,
            loads=("swing:0.3:3:150",),
        )
    )
    # Declared with held-out 31, after design r34: r34's bound on an engine it was not built on.
    out.append(
        Scenario(
            "H31-swing-long",
            "held_out_31",
            "healthy",
            "load swings, 800,000 steps: the false-alarm bound",
            **{**HELD31_BASE, "steps": 800000},
            seed=3203,
            loads=("swing:0.3:3:150",),
        )
    )
    # Declared with held-out 32-38: their fault runs' timeline with nothing injected (the stretch
    # an armed fault lands in, judged on a healthy engine too); and with 33 (after design r35:
    # re-fits installed that r8 refused), 34 (after r36: re-fits started earlier), 35 (after
    # r37: finer strata), 36 (after r38: coarser strata behind them), 37 (r38 again: a second
    # set, its fallback unexercised on 36) and 38 (after r39: stratified detrend behind them), the
    # false alarms per judged step on a swinging engine the design was not built on.
    steady_12k = "steady, 12,000 steps scheduled as 6,000: the fault runs' timeline, nothing injected"
    swing_long = "load swings, 800,000 steps: the false-alarm bound"
    swing = {"steps": 800000, "loads": ("swing:0.3:3:150",)}
    timeline = {"steps": 12000, "horizon": 6000}  # as ARMED_SETS' fault runs
    for name, set_, base, seed, what, kw in (
        ("H32-steady-12k", "held_out_32", HELD32_BASE, 3313, steady_12k, timeline),
        ("H33-steady-12k", "held_out_33", HELD33_BASE, 3413, steady_12k, timeline),
        ("H34-steady-12k", "held_out_34", HELD34_BASE, 3513, steady_12k, timeline),
        ("H35-steady-12k", "held_out_35", HELD35_BASE, 3613, steady_12k, timeline),
        ("H36-steady-12k", "held_out_36", HELD36_BASE, 3713, steady_12k, timeline),
        ("H37-steady-12k", "held_out_37", HELD37_BASE, 3813, steady_12k, timeline),
        ("H38-steady-12k", "held_out_38", HELD38_BASE, 3913, steady_12k, timeline),
        ("H39-steady-12k", "held_out_39", HELD39_BASE, 4013, steady_12k, timeline),
        ("H40-steady-12k", "held_out_40", HELD40_BASE, 4113, steady_12k, timeline),
        ("H41-steady-12k", "held_out_41", HELD41_BASE, 4213, steady_12k, timeline),
        ("H42-steady-12k", "held_out_42", HELD42_BASE, 4313, steady_12k, timeline),
        ("H33-swing-long", "held_out_33", HELD33_BASE, 3403, swing_long, swing),
        ("H34-swing-long", "held_out_34", HELD34_BASE, 3503, swing_long, swing),
        ("H35-swing-long", "held_out_35", HELD35_BASE, 3603, swing_long, swing),
        ("H36-swing-long", "held_out_36", HELD36_BASE, 3703, swing_long, swing),
        ("H37-swing-long", "held_out_37", HELD37_BASE, 3803, swing_long, swing),
        ("H38-swing-long", "held_out_38", HELD38_BASE, 3903, swing_long, swing),
        ("H39-swing-long", "held_out_39", HELD39_BASE, 4003, swing_long, swing),
        ("H40-swing-long", "held_out_40", HELD40_BASE, 4103, swing_long, swing),
        ("H41-swing-long", "held_out_41", HELD41_BASE, 4203, swing_long, swing),
    ):
        out.append(Scenario(name, set_, "healthy", what, **{**base, **kw}, seed=seed))
    for tag, base, seed in (
        ("3", HELD3_BASE, 410),
        ("4", HELD4_BASE, 510),
        ("5", HELD5_BASE, 610),
        ("6", HELD6_BASE, 710),
        ("7", HELD7_BASE, 810),
        ("8", HELD8_BASE, 910),
        ("9", HELD9_BASE, 1010),
        ("10", HELD10_BASE, 1110),
        ("11", HELD11_BASE, 1210),
        ("12", HELD12_BASE, 1310),
        ("13", HELD13_BASE, 1410),
        ("14", HELD14_BASE, 1510),
        ("15", HELD15_BASE, 1610),
        ("16", HELD16_BASE, 1710),
        ("17", HELD17_BASE, 1810),
        ("18", HELD18_BASE, 1910),
        ("19", HELD19_BASE, 2010),
        ("20", HELD20_BASE, 2110),
        ("21", HELD21_BASE, 2210),
        ("22", HELD22_BASE, 2310),
        ("23", HELD23_BASE, 2410),
        ("24", HELD24_BASE, 2510),
        ("25", HELD25_BASE, 2610),
        ("26", HELD26_BASE, 2710),
        ("27", HELD27_BASE, 2810),
        ("28", HELD28_BASE, 2910),
        ("29", HELD29_BASE, 3010),
        ("30", HELD30_BASE, 3110),
        ("31", HELD31_BASE, 3210),
        ("32", HELD32_BASE, 3310),
        ("33", HELD33_BASE, 3410),
        ("34", HELD34_BASE, 3510),
        ("35", HELD35_BASE, 3610),
        ("36", HELD36_BASE, 3710),
        ("37", HELD37_BASE, 3810),
        ("38", HELD38_BASE, 3910),
        ("39", HELD39_BASE, 4010),
        ("40", HELD40_BASE, 4110),
        ("41", HELD41_BASE, 4210),
        ("42", HELD42_BASE, 4310),
    ):
        out.append(
            Scenario(
                f"H{tag}-saturated",
                f"held_out_{tag}",
                "healthy",
                "saturating: every rate x3 throughout",
                **base,
                seed=seed,
                loads=("ramp:3:3:300",),
            )
        )
    return out


SCENARIOS = _scenarios()


def scenario(name: str) -> Scenario:
    """A declared scenario by name (CI runs held-out rows as declared: a 6,000-step run takes
    about half a minute, and a shortened one would be a scenario nobody declared)."""
    found = next((x for x in SCENARIOS if x.name == name), None)
    if found is None:
        raise KeyError(f"no scenario {name!r}; known: {', '.join(x.name for x in SCENARIOS)}")
    return found


# -- running --------------------------------------------------------------------------------


def run_scenario(s: Scenario, timeout_s: float | None = None) -> dict[str, Any]:
    """Run one scenario through the CLI; its JSON result plus the regime the engine saw.  The
    default time limit grows with the run's length (about 4 ms per step on a 2-core machine)."""
    import os

    timeout_s = timeout_s or max(1800.0, 0.012 * s.steps)

    env = {**os.environ, "PYTHONPATH": str(REPO)}
    shared = env.get("SHADOWD_SHARED", str(REPO.parent / "shared"))
    env["SHADOWD_SHARED"] = shared
    with tempfile.TemporaryDirectory(prefix="gate-matrix-") as tmp:
        db = f"{tmp}/run.duckdb"
        cmd = s.command(db).replace("$SHADOWD_SHARED", shared).replace(".venv/bin/python", sys.executable)
        t0 = time.perf_counter()
        proc = subprocess.run(
            shlex.split(cmd), cwd=REPO, env=env, capture_output=True, text=True, timeout=timeout_s
        )
        wall = time.perf_counter() - t0
        if proc.returncode != 0:
            return {"error": proc.stderr[-2000:], "wall_seconds": wall}
        result = json.loads(proc.stdout)
        result["regime"] = regime(db)
    result["wall_seconds"] = wall
    return result


def regime(db: str, block: int = 500) -> dict[str, Any]:
    """Requests per step and step time per block of engine steps: light vs saturated, as run."""
    import duckdb

    con = duckdb.connect(db, read_only=True)
    try:
        rows = con.execute(
            f"""SELECT step_seq // {block} AS b, avg(num_requests), avg(latency_ms)
                FROM steps GROUP BY b ORDER BY b"""
        ).fetchall()
    finally:
        con.close()
    reqs = [float(r[1]) for r in rows]
    return {
        "block_steps": block,
        "requests_per_step": [round(x, 1) for x in reqs],
        "step_ms": [round(float(r[2]), 1) for r in rows],
        "min_block_requests": min(reqs) if reqs else None,
        "max_block_requests": max(reqs) if reqs else None,
    }


def summarise(s: Scenario, r: dict[str, Any]) -> dict[str, Any]:
    """The matrix row of one run."""
    out: dict[str, Any] = {
        "scenario": asdict(s),
        "command": s.command(),
        "design": DESIGN_REVISION,
        "ingest": INGEST,
    }
    if "error" in r:
        return {**out, "error": r["error"], "final": "ERROR"}
    hist = r.get("gate_history", [])
    first_go = next((h["step"] for h in hist if h["verdict"] == "GO"), None)
    fired = [i["step"] for i in r.get("injections", [])]
    unfired = bool(r.get("injections_unfired"))
    # Where the fault began: an armed one fires at the first GO from its step on, or never.
    fault = fired[0] if fired else (None if unfired else s.fault_step)
    judged_from = hist[0]["step"] if hist else None  # first evaluation: calibration in force
    residual = [e for e in r.get("drift_events", []) if e["detector"] in RESIDUAL]
    before = [e for e in residual if fault is None or e["step_seq"] < fault]
    judged_steps = ((fault or r["steps"]) - judged_from) if judged_from is not None else 0
    after = [e["step_seq"] for e in residual if fault is not None and e["step_seq"] >= fault]
    # An evaluation at the fault's own step comes after it (the demo injects, then evaluates): a
    # platform swap is NO_GO there, the fault's doing, not a page on a healthy engine.
    not_go_after = next(
        (h["step"] for h in hist if fault is not None and h["step"] >= fault and h["verdict"] != "GO"), None
    )
    pages_after_go = sum(
        1
        for h in hist
        if first_go is not None
        and h["step"] > first_go
        and h["verdict"] == "NO_GO"
        and (fault is None or h["step"] < fault)
    )
    out.update(
        final=r["verdict"],
        final_reason=r.get("reason"),
        first_go_step=first_go,
        calibrated_by_step=judged_from,
        evaluations=len(hist),
        episodes=episodes(hist),
        pages_after_first_go=pages_after_go,
        false_alarms=len(before),
        judged_steps=judged_steps,
        false_alarm_upper95=_poisson_upper(len(before), judged_steps),
        fault_at=fault,
        fault_unfired=unfired,
        drift_delay_steps=(min(after) - fault) if after else None,
        not_go_delay_steps=(not_go_after - fault) if not_go_after is not None else None,
        accuracy=r.get("accuracy"),
        advantage=r.get("advantage"),
        truth=r.get("attribution_truth"),
        check_reasons=r.get("check_reasons"),
        regime=r.get("regime"),
        policy_note=r.get("policy_note"),
        simulated_seconds=r.get("simulated_seconds"),
        wall_seconds=r.get("wall_seconds"),
        frames_dropped=r.get("frames_dropped"),  # the tap's drops: a row's evidence is only what arrived
        drift_events=r.get("drift_events", [])[:40],
        alarm_confirmation=r.get("alarm_confirmation"),
        tenants_run=r.get("tenants"),
        refits=[
            {k: x.get(k) for k in ("step", "parent", "version", "why", "steps")} for x in r.get("refits", [])
        ],
    )
    return out


def episodes(hist: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Maximal runs of one non-GO verdict: first/last step, evaluations, the checks behind it."""
    out: list[dict[str, Any]] = []
    prev = None
    for h in hist:
        verdict = h["verdict"]
        if verdict != "GO":
            want = "fail" if verdict == "NO_GO" else "inconclusive"
            causes = sorted(k for k, v in h.get("causes", {}).items() if v == want)
            if prev == verdict:
                last = out[-1]
                last["last_step"], last["evaluations"] = h["step"], last["evaluations"] + 1
                last["causes"] = sorted(set(last["causes"]) | set(causes))
            else:
                out.append(
                    {
                        "verdict": verdict,
                        "first_step": h["step"],
                        "last_step": h["step"],
                        "evaluations": 1,
                        "causes": causes,
                    }
                )
        prev = verdict
    return out


def _long_run_line(rows: list[dict[str, Any]]) -> list[str]:
    """Each long healthy run's false-alarm bound, measured on the held-out engine itself."""
    out = []
    for r in rows:
        if not r["scenario"]["name"].endswith(("-long", "-xl")) or r.get("false_alarm_upper95") is None:
            continue
        bound = r["false_alarm_upper95"]
        out.append(
            f"{r['scenario']['name']} (design {r.get('design', 'r1')}) runs the held-out engine itself that "
            f"long: {r['false_alarms']} false alarm(s) in {r['judged_steps']:,} judged steps, 95 % bound "
            f"{bound:.1e} per step ({'within' if bound <= 1e-5 else 'above'} the 1e-5 target). Judged "
            f"from calibration, at step {r['calibrated_by_step']:,}: the demo's warm-up window grows "
            "with the run's length."
        )
    return out


def latest_held_out(names: Any) -> str:
    """The newest held-out set among ``names`` (the one no design was built on)."""
    held = [n for n in names if str(n).startswith("held_out_")]
    return max(held, key=lambda n: int(str(n).rsplit("_", 1)[1]), default="")


def _poisson_upper(k: int, n: int) -> float | None:
    if n <= 0:
        return None
    from scipy.stats import chi2

    return float(chi2.ppf(0.95, 2 * (k + 1)) / 2 / n)


def run_all(scenarios: list[Scenario], jobs: int, partial: Path | None = None) -> list[dict[str, Any]]:
    """Run ``scenarios`` ``jobs`` at a time; each finished row is appended to ``partial`` (JSON
    lines) so a long matrix interrupted keeps what it measured."""

    def one(s: Scenario) -> dict[str, Any]:
        print(f"  running {s.name} ...", file=sys.stderr, flush=True)
        r = run_scenario(s)
        row = summarise(s, r)
        if partial is not None:
            with partial.open("a") as f:
                f.write(json.dumps(row, default=str) + "\n")
        print(f"  {s.name}: {row['final']} ({row.get('wall_seconds') or 0:.0f} s)", file=sys.stderr)
        return row

    with ThreadPoolExecutor(max_workers=jobs) as pool:
        return list(pool.map(one, scenarios))


# -- the document ---------------------------------------------------------------------------


def outcome(row: dict[str, Any]) -> tuple[bool, str]:
    """Whether the row meets its target, and why not."""
    s = row["scenario"]
    if row["final"] == "ERROR":
        return False, "run failed"
    if s["expect"] == "healthy":
        if row["final"] != "GO":
            return False, f"ended {row['final']}"
        if row["pages_after_first_go"]:
            return False, f"{row['pages_after_first_go']} NO_GO evaluations after the first GO"
        return True, ""
    if row.get("fault_unfired"):  # the whole run was a healthy engine: a page there is the news
        pages = row.get("pages_after_first_go") or 0
        lead = f"{pages} NO_GO evaluations after the first GO on the healthy engine; " if pages else ""
        return (
            False,
            f"{lead}not a test: the gate never said GO from step {s['fault_step']} on (the armed fault never fired)",
        )
    at = fault_at(row)
    # A fault row that ends GO says so first, test or not: the gate vouched for a faulty engine.
    lead = "ended GO with the fault in force; " if row["final"] == "GO" else ""
    if row.get("first_go_step") is None or row["first_go_step"] >= at:
        return False, f"{lead}not a test: the gate was never GO before the fault"
    spanning = [e for e in row.get("episodes") or [] if e["first_step"] < at <= e["last_step"]]
    if spanning:  # GO once, but not when the fault began: what follows is not the fault's doing
        e = spanning[0]
        return (
            False,
            f"{lead}not a test: the gate was {e['verdict']} from step {e['first_step']}, before the fault",
        )
    inj = (s["injects"] or [""])[0]
    if inj.startswith("tenant:"):
        name = inj.split(":", 1)[1].split("=", 1)[0]
        ran = row.get("tenants_run")
        sampled = ((row.get("truth") or {}).get("llmvisor") or {}).get("per_tenant")
        if ran is not None and name not in ran:
            return False, f"not a test: tenant {name!r} never ran a step"
        if ran is None and sampled is not None and name not in sampled:
            return False, f"not a test: tenant {name!r} is in none of the steps sampled after calibration"
    if row["final"] == "GO":
        return False, "ended GO"
    if inj.startswith("step-slowdown:0.08") and (
        row["drift_delay_steps"] is None or row["drift_delay_steps"] > 500
    ):
        return False, "8 % slowdown: no drift event within 500 steps"
    return True, ""


def fault_at(row: dict[str, Any]) -> int | None:
    """The engine step the row's fault began (rows stored before held-out 32: the scenario's)."""
    return row["fault_at"] if "fault_at" in row else row["scenario"].get("fault_step")


def _fault_cell(row: dict[str, Any]) -> str:
    at, armed = fault_at(row), row["scenario"].get("fault_step")
    if row.get("fault_unfired"):
        return f"never (armed from {armed})"
    if any("@go:" in i for i in row["scenario"].get("injects") or ()):
        return f"{_f(at)} (armed from {armed})"
    return _f(at)


def share_error(split: dict[str, Any] | None) -> float | None:
    """Largest |attributed - Shapley| of a tenant, as a fraction of the Shapley total."""
    per = (split or {}).get("per_tenant") or {}
    total = sum(v["shapley_ms"] for v in per.values())
    if not per or total <= 0:
        return None
    return max(abs(v["attributed_ms"] - v["shapley_ms"]) for v in per.values()) / total


def _f(x: Any, nd: int = 0) -> str:
    if x is None or (isinstance(x, float) and math.isnan(x)):
        return "–"
    if isinstance(x, float):
        return f"{x:.{nd}f}" if nd else f"{x:.0f}"
    return str(x)


def _pct(x: Any) -> str:
    return "–" if x is None else f"{100 * x:.1f}%"


def _episodes(row: dict[str, Any]) -> str:
    eps = row.get("episodes") or []
    if not eps:
        return "none"
    return "<br>".join(
        f"{e['verdict']} {e['first_step']}–{e['last_step']} ({e['evaluations']}): "
        + (", ".join(e["causes"]) or "held")
        for e in eps
    )


CAUSES = {
    "stability": "share stability (compare the share error vs Shapley in the next table)",
    "coverage.extrapolation": "traffic beyond the calibrated envelope (INCONCLUSIVE; way out: recalibrate)",
    "drift": "drift (residual detectors fired, or were blind: most recent steps of a required class "
    "outside the batch compositions calibration saw)",
    "accuracy": "accuracy beyond its limits on a step class",
    "coverage.new_tenants": "tenants calibration never saw carrying a real share of the recent time",
    "evidence": "evidence minimums not yet met (too few steps of a class to judge, shadow time, tenants)",
    "platform": "platform mismatch",
}


def _kind(check: str, verdict: str) -> str:
    """The kind of a check behind an episode; an accuracy check that is inconclusive lacks steps."""
    if check.startswith("accuracy") and verdict == "INCONCLUSIVE":
        return "evidence"
    return next((k for k in CAUSES if check == k or check.startswith(k + ".")), check.split(".")[0])


_CHECK_IN_REASON = re.compile(r"(?:(?<=: )|(?<=; ))([a-z_]+(?:\.[a-z0-9_]+)*) \(")
BLOCKERS = (
    "share stability",
    "beyond the envelope",
    "new tenants",
    "drift: detectors too dull",
    "drift: detectors blind",
    "drift: events",
    "evidence minimums",
    "accuracy",
    "platform",
)


def blockers(reason: str) -> set[str]:
    """What a final reason names as keeping the gate from GO, in ``BLOCKERS``' words (a reason
    names at most four checks, then says how many more).

    >>> sorted(blockers("inconclusive: stability (effect CI ...); drift (no unresolved drift "
    ...                 "events, but the detectors would not raise a real slowdown in time (...))"))
    ['drift: detectors too dull', 'share stability']
    """
    found = list(_CHECK_IN_REASON.finditer(reason))
    out = set()
    for m, nxt in zip(found, found[1:] + [None]):
        name, detail = m.group(1), reason[m.end() : nxt.start() if nxt else len(reason)]
        if name == "stability":
            out.add("share stability")
        elif name == "coverage.extrapolation":
            out.add("beyond the envelope")
        elif name == "coverage.new_tenants":
            out.add("new tenants")
        elif name == "drift":
            out.add(
                "drift: detectors too dull"
                if "would not raise" in detail
                else "drift: detectors blind"
                if "blind" in detail
                else "drift: events"
            )
        elif name.startswith("evidence."):
            out.add("evidence minimums")
        elif name.startswith("accuracy."):
            out.add("accuracy")
        elif name == "platform":
            out.add("platform")
    return out


def blocker_table(rows: list[dict[str, Any]]) -> list[str]:
    """Per design, the healthy held-out rows that did not end GO, counted by what their last
    evaluation named as keeping the gate from GO: where the work on GO reach lies."""
    lines = [
        "| design | healthy held-out rows | ended GO | not GO | " + " | ".join(BLOCKERS) + " |",
        "|---|---:|---:|---:|" + "---:|" * len(BLOCKERS),
    ]
    for design in sorted({r.get("design", "r1") for r in rows}, key=lambda d: int(d[1:])):
        mine = [
            r
            for r in rows
            if r.get("design", "r1") == design
            and r["scenario"]["expect"] == "healthy"
            and r["scenario"]["set"].startswith("held_out")
        ]
        if not mine:
            continue
        stuck = [blockers(r["final_reason"]) for r in mine if r["final"] != "GO"]
        counts = [sum(1 for b in stuck if name in b) for name in BLOCKERS]
        lines.append(
            f"| {design} | {len(mine)} | {len(mine) - len(stuck)} | {len(stuck)} | "
            + " | ".join(str(c) for c in counts)
            + " |"
        )
    return lines


def findings(rows: list[dict[str, Any]]) -> list[str]:
    """Per missed row, the kinds of checks behind its non-GO episodes (computed, not written)."""
    out = []
    for r in rows:
        ok, why = outcome(r)
        if ok:
            continue
        kinds = sorted(
            {
                _kind(c, e["verdict"])
                for e in r.get("episodes") or []
                if fault_at(r) is None or e["first_step"] < fault_at(r)
                for c in e["causes"]
            }
        )
        what = "; ".join(CAUSES.get(k, k) for k in kinds) or "no non-GO episode"
        when = " before the fault" if r["scenario"].get("fault_step") else ""
        out.append(
            f"- {r['scenario']['name']} ({r.get('design', 'r1')}): {why}. Non-GO{when}: {what}.{_newcomer_note(r)}"
        )
    if not out:
        out.append("- none: every scenario met its target.")
    return out


def _newcomer_note(row: dict[str, Any]) -> str:
    """For a new-tenant fault that ran: how much of the truth sample's time the newcomer carried,
    against the gate's new-tenant limit, or that it is in none of the sampled steps (it ran, but
    too little to be sampled)."""
    inj = (row["scenario"]["injects"] or [""])[0]
    sampled = ((row.get("truth") or {}).get("llmvisor") or {}).get("per_tenant")
    if not inj.startswith("tenant:") or sampled is None:
        return ""
    name = inj.split(":", 1)[1].split("=", 1)[0]
    ran = row.get("tenants_run")
    if ran is not None and name not in ran:  # the outcome already says it never ran
        return ""
    if name in sampled:  # how much of the time it carried, against the new-tenant limit
        total = sum(float(t.get("shapley_ms") or 0.0) for t in sampled.values())
        share = float(sampled[name].get("shapley_ms") or 0.0) / total if total > 0 else 0.0
        return (
            f" Tenant {name!r} carried {share:.1%} of the Shapley time of the steps sampled after "
            f"calibration (the gate's new-tenant limit is {GatePolicy().max_new_tenant_share:.0%} of "
            "recent attributed time)."
        )
    return (
        f" Tenant {name!r} ran, but is in none of the steps sampled for the Shapley truth: it barely arrived."
    )


def _parallelism(command: str) -> str:
    """How many scenarios the last command ran at once (``--jobs``, default 2).

    >>> _parallelism("python -m benchmarks.gate_matrix --only X --jobs 1"), _parallelism("x")
    ('scenarios one at a time', 'scenarios two at a time')
    """
    words = command.split()
    jobs = words[words.index("--jobs") + 1] if "--jobs" in words[:-1] else "2"
    return f"scenarios {dict(zip('1234', ('one', 'two', 'three', 'four'))).get(jobs, jobs)} at a time"


def _host(m: dict[str, Any]) -> str:
    return f"{m.get('nproc')} CPUs ({m.get('cpu_model')}), vLLM {m.get('versions', {}).get('vllm')}"


def markdown(res: dict[str, Any]) -> str:
    rows = res["rows"]
    lines = [
        "# Validation: the gate on held-out traffic",
        "",
        "Generated by `benchmarks/gate_matrix.py` from `docs/validation.json` (re-render: `--from-json",
        "docs/validation.json`); do not edit by hand. Last command:",
        "",
        f"    {res['command']}",
        "",
        f"Last run {res['finished_at']} on {_host(res['machine'])}, {res['total_wall_seconds']:.0f} s "
        f"wall ({_parallelism(res['command'])}); rows of earlier runs are kept by `--merge` (the full matrix:",
        "`.venv/bin/python -m benchmarks.gate_matrix`), and each row's own demo command is listed at",
        "the end.",
        "",
        "## Protocol (declared before the held-out runs)",
        "",
    ]
    for name, p in res["protocol"].items():
        lines.append(f"**{name.replace('_', ' ')}** — {p['note']}")
        lines.append("")
        for key in ("platforms", "models", "tenants", "regimes"):
            lines.append(f"- {key}: {', '.join(p[key])}")
        lines.append(f"- seeds: {p['seeds']}")
        if p.get("long_run"):
            lines.append(f"- long run: {p['long_run']}")
        lines.append("")
    lines += [
        "Each scenario is one `shadowd demo` run: the real vLLM scheduler (CPU) forms the batches on",
        "simulated time, the reference engine (kernel tables) times them with jitter, the tap sends",
        "every step to a real daemon, which calibrates after a settle and warm-up window (widened",
        "until each common step class has held-out steps, up to 60 % of the run), attributes,",
        "watches for drift and runs the gate every 200 engine steps. The gate's evidence minimums",
        "are scaled to the run's length (the policy note of each run says by how much). Healthy",
        'scenarios inject nothing; fault scenarios inject after the gate could reach GO. "Steady"',
        "means no load profile: each ServeGen client's own rate changes (its trace, time-compressed to",
        "the stated mean rate) remain, and can take the engine from light to saturated by themselves",
        "(the regime table shows the range each run went through).",
        "",
        "The daemon takes the tap's frames in slices cut at fixed steps (`shadowd/demo/step_slices.py`:",
        f"every {SLICE_STEPS} steps and at each gate evaluation), so a row is the same run when repeated: rows",
        "stored with `ingest: steps` in `docs/validation.json` ran so. Earlier rows ran on the",
        "receiver's timed batches, where the step a model came into force at moved with thread",
        "timing, and so did every later decision counted from it (when a re-fit may start, above",
        "all); rows re-run since are listed as superseded at the end.",
        "",
        f"## The gate as validated here (design {DESIGN_REVISION}; r1 differed from r2 only in the "
        "stability check; r3 and r6 added the points named after them; r4, r25, r30, r33 and r39 were withdrawn; r5 "
        "was never run on a held-out set)",
        "",
        *(f"- {d}" for d in DESIGN),
        "",
        "## Confusion matrix (final verdict)",
        "",
        "| set | expected | GO | NO_GO | INCONCLUSIVE | meets target |",
        "|---|---|---|---|---|---|",
    ]
    newest = latest_held_out(r["scenario"]["set"] for r in rows)
    groups = sorted(
        {(r["scenario"]["set"], r.get("design", "r1")) for r in rows},
        key=lambda g: (g[0] != newest, g[0], g[1]),
    )
    for set_, design in groups:
        for expect in ("healthy", "fault"):
            mine = [
                r
                for r in rows
                if r["scenario"]["set"] == set_
                and r.get("design", "r1") == design
                and r["scenario"]["expect"] == expect
            ]
            if not mine:
                continue
            count = {v: sum(1 for r in mine if r["final"] == v) for v in ("GO", "NO_GO", "INCONCLUSIVE")}
            met = sum(1 for r in mine if outcome(r)[0])
            lines.append(
                f"| {set_.replace('_', ' ')}, design {design} | {expect} "
                f"({'GO' if expect == 'healthy' else 'not GO'}) | "
                f"{count['GO']} | {count['NO_GO']} | {count['INCONCLUSIVE']} | {met} of {len(mine)} |"
            )
    lines += [
        "",
        "Targets: a healthy scenario ends GO and raises no NO_GO (page) after its first GO; a fault",
        "scenario is a test only if the gate was GO when the fault began (since held-out 9: GO at the",
        "last evaluation before it, not only once), and then must end not GO; an 8 % whole-step",
        "slowdown must also raise a residual drift event within 500 engine steps. From held-out 32",
        "the faults are armed (`--inject ...@go:7000`): each fires at the first GO verdict from step",
        "7000 on, so it lands on a gate vouching for the engine; the 'fault at' column gives the step",
        "it fired at, and a row whose gate never said GO from 7000 on is not a test.",
        "",
        "## Per scenario",
        "",
        "| scenario | set (design) | what | final | target | first GO (step) | pages after GO | drift events before fault / judged steps (95 % upper rate) | fault at | drift event after (steps) | not GO after (steps) |",
        "|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for r in rows:
        s = r["scenario"]
        ok, why = outcome(r)
        rate = r.get("false_alarm_upper95")
        lines.append(
            f"| {s['name']} | {s['set'].replace('_', ' ')} ({r.get('design', 'r1')}) | {s['what']} | {r['final']} | "
            f"{'met' if ok else 'missed: ' + why} | {_f(r.get('first_go_step'))} | "
            f"{_f(r.get('pages_after_first_go'))} | {_f(r.get('false_alarms'))} / {_f(r.get('judged_steps'))} "
            f"({'–' if rate is None else f'{rate:.1e}'}) | {_fault_cell(r)} | "
            f"{_f(r.get('drift_delay_steps'))} | {_f(r.get('not_go_delay_steps'))} |"
        )
    lines += [
        "",
        "False alarms: residual drift events (Page-Hinkley, ADWIN, coefficient) before the fault, over",
        "the engine steps judged since calibration; a few thousand steps can only bound a rate of 1e-5",
        "from above (the 95 % Poisson bound beside it), not show it. docs/checks.md measures the rate",
        "on long resampled streams.",
        *_long_run_line(rows),
        "",
        "## Episodes (non-GO runs of evaluations: engine steps, evaluations, checks behind them)",
        "",
        "| scenario | episodes | final reason |",
        "|---|---|---|",
    ]
    for r in rows:
        reason = (r.get("final_reason") or "").replace("|", "/")
        lines.append(f"| {r['scenario']['name']} | {_episodes(r)} | {reason[:300]} |")
    refitted = [r for r in rows if _revision(r) >= 3]
    if refitted:
        lines += [
            "",
            "## Re-fits (design r3: installed, or refused by the guard)",
            "",
            "| scenario | engine step | parent → new version | steps in window | why |",
            "|---|---|---|---|---|",
        ]
        for r in refitted:
            for x in r.get("refits") or []:
                why = (x.get("why") or "").replace("|", "/")
                lines.append(
                    f"| {r['scenario']['name']} | {_f(x.get('step'))} | {x.get('parent')} → "
                    f"{x.get('version') or 'refused'} | {_f(x.get('steps'))} | {why[:400]} |"
                )
            if not r.get("refits"):
                lines.append(f"| {r['scenario']['name']} | – | none considered | – | – |")
    lines += [
        "",
        "## Regime, accuracy and advantage as run",
        "",
        "Requests per step: the lowest and highest 500-step block mean (light vs saturated). Accuracy:",
        "LLMVisor's out-of-sample relative step-latency error over the run's attributed steps (all",
        "classes). Advantage: token-baseline p90 / LLMVisor p90 per class, reported, not judged.",
        "Share error: per-tenant totals of attributed time against Monte Carlo Shapley values of the",
        "noiseless engine on sampled steps after calibration (`shadowd.sim.truth.tenant_truth_errors`),",
        "as the largest difference of a tenant's share of the sampled total (points of the total);",
        "all sampled steps, not only multi-request ones.",
        "",
        "| scenario | requests/step (min–max block) | steps attributed | LLMVisor p90 / p99 | tokens p90 / p99 | advantage | share error vs Shapley (points of total), max over tenants: LLMVisor / token split | wall s |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for r in rows:
        reg = r.get("regime") or {}
        acc = (r.get("accuracy") or {}).get("all") or {}
        lv, tb = acc.get("llmvisor") or {}, acc.get("token_baseline") or {}
        adv = ", ".join(f"{k} {v['ratio']:.2f}" for k, v in sorted((r.get("advantage") or {}).items()))
        truth = share_error((r.get("truth") or {}).get("llmvisor"))
        token = share_error((r.get("truth") or {}).get("token_baseline"))
        lines.append(
            f"| {r['scenario']['name']} | {_f(reg.get('min_block_requests'), 1)}–"
            f"{_f(reg.get('max_block_requests'), 1)} | {_f(acc.get('steps'))} | "
            f"{_pct(lv.get('p90'))} / {_pct(lv.get('p99'))} | {_pct(tb.get('p90'))} / {_pct(tb.get('p99'))} | "
            f"{adv or '–'} | {_pct(truth)} / {_pct(token)} | {_f(r.get('wall_seconds'))} |"
        )
    lines += [
        "",
        "CI: `tests/demo/test_gate_held_out.py` runs two held-out 36 scenarios as declared (H36-steady",
        "and F36-step8, the same runs as their rows) and asserts their targets: the healthy run reaches",
        "GO without a page or a residual drift event; the 8 % slowdown (armed: it fires at the first GO",
        "from step 7000) comes after a GO, ends not GO with a drift event within 500 steps, and no",
        "re-fit takes it in. Held-out 21's H21-steady and F21-step5 ran in CI under r23 to r37,",
        "held-out 18's under r19 to r22, held-out 9's before r19; shortened runs are scenarios nobody",
        "declared (shortened, H6-steady ends NO_GO on decode accuracy, its calibration window being",
        "shorter).",
    ]
    lines += [
        "",
        "## What keeps healthy held-out runs from GO (their last evaluation)",
        "",
        "Per design, the healthy rows of every held-out set it ran (the sets it was built on among",
        "them: development evidence for it, marked so in the DESIGN notes above) that did not end GO,",
        "counted by what their last evaluation named (`blockers`; a row may name several, a reason at",
        "most four). A row that ended NO_GO counts under what paged.",
        "",
    ]
    lines += blocker_table(rows)
    lines += ["", "## What the misses say", ""]
    lines += findings(rows)
    old = res.get("superseded_rows") or []
    if old:
        lines += ["", "## Superseded runs (kept, not counted above)", ""]
        lines += [
            "| scenario | design | fault at | final | target | replaced by |",
            "|---|---|---|---|---|---|",
        ]
        for r in old:
            ok, why = outcome(r)
            lines.append(
                f"| {r['scenario']['name']} | {r.get('design', 'r1')} | {_fault_cell(r)} | "
                f"{r['final']} | {'met' if ok else 'missed: ' + why} | "
                f"{r.get('superseded_by') or 'a re-run with the scenario changed (fault step or run length)'} |"
            )
    lines += ["", "## Commands", ""]
    for r in rows:
        lines.append(f"- {r['scenario']['name']}: `{r['command']}`")
    lines.append("")
    return "\n".join(lines)


def _superseded(out: Path, rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Stored rows that ``rows`` replace (the very same row stored already aside), plus the
    stored document's own superseded rows: what a re-run replaced stays on record."""
    if not out.with_suffix(".json").exists():
        return []
    stored = json.loads(out.with_suffix(".json").read_text())
    # As stored (tuples read back as lists): a row stored already (``--from-partial`` while its
    # run went on) is the same row, not one it replaced; any other stored row a re-run replaces
    # stays on record, and says whether its scenario had changed.
    rows = json.loads(json.dumps(rows, default=str))
    new = {(r["scenario"]["name"], r.get("design", "r1")): r for r in rows}
    kept = [
        r
        for r in stored.get("superseded_rows") or []
        if new.get((r["scenario"]["name"], r.get("design", "r1"))) != r
    ]
    for r in stored["rows"]:
        n = new.get((r["scenario"]["name"], r.get("design", "r1")))
        if n is None or n == r:
            continue
        if n["scenario"] == r["scenario"] and not r.get("superseded_by"):
            again = "a re-run of the same scenario"
            if n.get("ingest") != r.get("ingest"):
                again += ", its ingest cut at fixed steps (repeatable)"
            r = {**r, "superseded_by": again}
        kept.append(r)
    return kept


def _merged(out: Path, rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """``rows`` plus the stored rows of (scenario, design) pairs they do not replace."""
    if not out.with_suffix(".json").exists():
        return rows
    old = json.loads(out.with_suffix(".json").read_text())["rows"]
    ran = {(r["scenario"]["name"], r.get("design", "r1")) for r in rows}
    return [r for r in old if (r["scenario"]["name"], r.get("design", "r1")) not in ran] + rows


def _document(rows: list[dict[str, Any]], args: str, wall: float) -> dict[str, Any]:
    from benchmarks.machine import machine

    order = {s.name: i for i, s in enumerate(SCENARIOS)}
    rows = sorted(rows, key=lambda r: (_revision(r), order.get(r["scenario"]["name"], 99)))
    return {
        "command": f".venv/bin/python -m benchmarks.gate_matrix {args}".strip(),
        "finished_at": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
        "machine": machine(),
        "total_wall_seconds": wall,
        "protocol": PROTOCOL,
        "rows": rows,
    }


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--set", choices=("all", *PROTOCOL), default="all")
    ap.add_argument("--only", help="comma-separated scenario names")
    ap.add_argument("--jobs", type=int, default=2)
    ap.add_argument("--out", default="docs/validation", help="writes OUT.json and OUT.md")
    ap.add_argument("--merge", action="store_true", help="keep stored rows of scenarios not re-run")
    ap.add_argument("--from-json", help="re-render OUT.md from a stored OUT.json (no runs)")
    ap.add_argument("--from-partial", help="store and render the rows an interrupted run left (JSON lines)")
    a = ap.parse_args(argv)
    out = Path(a.out)
    if a.from_json:
        res = json.loads(Path(a.from_json).read_text())
    elif a.from_partial:
        rows = [json.loads(x) for x in Path(a.from_partial).read_text().splitlines() if x.strip()]
        wall = sum(r.get("wall_seconds") or 0 for r in rows) / max(a.jobs, 1)
        if a.merge:
            rows = _merged(out, rows)
        res = _document(rows, " ".join(argv or sys.argv[1:]) + " (rows saved as they finished)", wall)
        res["superseded_rows"] = _superseded(out, rows)  # what was on record stays on record
        out.with_suffix(".json").write_text(json.dumps(res, indent=1, default=str) + "\n")
    else:
        chosen = [s for s in SCENARIOS if a.set in ("all", s.set)]
        if a.only:
            names = set(a.only.split(","))
            unknown = names - {s.name for s in SCENARIOS}
            if unknown:
                ap.error(f"unknown scenario(s) {sorted(unknown)}; known: {[s.name for s in SCENARIOS]}")
            chosen = [s for s in chosen if s.name in names]
        newest = latest_held_out(PROTOCOL)
        chosen.sort(key=lambda s: (s.set != newest, s.set))  # the unseen set first
        t0 = time.perf_counter()
        rows = run_all(chosen, a.jobs, out.with_suffix(".partial.jsonl"))
        if a.merge:
            rows = _merged(out, rows)
        res = _document(rows, " ".join(argv or sys.argv[1:]), time.perf_counter() - t0)
        res["superseded_rows"] = _superseded(out, rows)
        out.with_suffix(".json").write_text(json.dumps(res, indent=1, default=str) + "\n")
    out.with_suffix(".md").write_text(markdown(res))
    print(f"wrote {out.with_suffix('.md')}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
