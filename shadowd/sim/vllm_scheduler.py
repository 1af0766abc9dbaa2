"""Build a real vLLM scheduler on a CPU-only machine.

The scheduler needs no GPU and no weights: a model directory with only a
``config.json`` (``../shared/models``), ``skip_tokenizer_init`` and a
``KVCacheConfig`` sized by hand are enough (the recipe of vLLM's own
``tests/v1/core/utils.py``, in its sdist).
The tap's classes are used, so whatever this builds records frames exactly
as it would inside ``vllm serve``.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("VLLM_LOGGING_LEVEL", "WARNING")


@dataclass(frozen=True)
class SchedulerSpec:
    """What the simulated engine looks like to vLLM's scheduler."""

    model_dir: str
    async_scheduling: bool = True
    max_num_seqs: int = 256
    max_num_batched_tokens: int = 2048
    max_model_len: int = 32768
    num_blocks: int = 8192  # KV capacity = num_blocks * block_size tokens
    block_size: int = 16
    enable_prefix_caching: bool = True
    long_prefill_token_threshold: int = 0


def build_scheduler(spec: SchedulerSpec, scheduler_cls: type | None = None) -> Any:
    """A real (tapped, by default) vLLM scheduler instance for ``spec``."""
    import torch
    from vllm.config import CacheConfig, DeviceConfig, ModelConfig, SchedulerConfig, VllmConfig
    from vllm.v1.kv_cache_interface import FullAttentionSpec, KVCacheConfig, KVCacheGroupSpec
    from vllm.v1.structured_output import StructuredOutputManager

    if scheduler_cls is None:
        from shadowd.tap.vllm import TapAsyncScheduler, TapScheduler

        scheduler_cls = TapAsyncScheduler if spec.async_scheduling else TapScheduler
    model_config = ModelConfig(
        model=str(Path(spec.model_dir)),
        skip_tokenizer_init=True,
        max_model_len=spec.max_model_len,
        dtype="bfloat16",
        seed=0,
    )
    scheduler_config = SchedulerConfig(
        max_num_seqs=spec.max_num_seqs,
        max_num_batched_tokens=spec.max_num_batched_tokens,
        max_model_len=spec.max_model_len,
        enable_chunked_prefill=True,
        long_prefill_token_threshold=spec.long_prefill_token_threshold,
        async_scheduling=spec.async_scheduling,
        is_encoder_decoder=False,
    )
    cache_config = CacheConfig(block_size=spec.block_size, enable_prefix_caching=spec.enable_prefix_caching)
    vllm_config = VllmConfig(
        scheduler_config=scheduler_config,
        model_config=model_config,
        cache_config=cache_config,
        device_config=DeviceConfig(device="cpu"),
    )
    _register_kv_specs(vllm_config)
    kv_cache_config = KVCacheConfig(
        num_blocks=spec.num_blocks,
        kv_cache_tensors=[],
        kv_cache_groups=[
            KVCacheGroupSpec(
                ["layer"],
                FullAttentionSpec(
                    block_size=spec.block_size, num_kv_heads=1, head_size=1, dtype=torch.float32
                ),
            )
        ],
    )
    cache_config.num_gpu_blocks = spec.num_blocks
    return scheduler_cls(
        vllm_config=vllm_config,
        kv_cache_config=kv_cache_config,
        log_stats=False,
        structured_output_manager=StructuredOutputManager(vllm_config),
        block_size=spec.block_size,
    )


def _register_kv_specs(vllm_config: Any) -> None:
    try:
        from vllm.v1.core.single_type_kv_cache_manager import register_all_kvcache_specs
    except ImportError:  # older/newer vLLM without the registry
        return
    register_all_kvcache_specs(vllm_config)
