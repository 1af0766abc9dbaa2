"""Transformer shapes from a Hugging Face ``config.json``, split for tensor parallelism.

The reference engine prices every kernel at the shape it really has on one GPU,
so it needs the per-GPU GEMM widths and head counts, not parameter counts.

>>> s = ModelShape.resolve("llama-3.1-8b")
>>> g = s.per_gpu(1)
>>> (g.qkv_out, g.gate_up_out, g.down_in, g.heads, g.kv_heads)
(6144, 28672, 14336, 32, 8)
>>> s.per_gpu(2).kv_heads, round(s.weight_bytes() / 2**30, 1)
(4, 15.0)
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

from shadowd.paths import models_dir


@dataclass(frozen=True)
class GpuShape:
    """One tensor-parallel rank's share of the model: the shapes its kernels run at."""

    tp: int
    layers: int
    hidden: int
    heads: int
    kv_heads: int
    head_dim: int
    qkv_out: int  # QKV projection: hidden -> qkv_out
    o_in: int  # O projection: o_in -> hidden
    gate_up_out: int  # fused gate+up: hidden -> gate_up_out
    down_in: int  # down projection: down_in -> hidden
    vocab_out: int  # LM head: hidden -> vocab_out


@dataclass(frozen=True)
class ModelShape:
    """The dimensions of a dense decoder-only transformer (Llama/Qwen2 family)."""

    name: str
    hidden: int
    layers: int
    heads: int
    kv_heads: int
    head_dim: int
    intermediate: int
    vocab: int
    max_context: int
    tie_embeddings: bool = False

    @classmethod
    def from_config(cls, path: str | Path, name: str | None = None) -> ModelShape:
        """Read ``config.json`` (or a directory holding one); honours ``head_dim`` and GQA."""
        p = Path(path)
        if p.is_dir():
            p = p / "config.json"
        cfg = json.loads(p.read_text())
        cfg = cfg.get("text_config", cfg)
        heads = int(cfg["num_attention_heads"])
        hidden = int(cfg["hidden_size"])
        return cls(
            name=name or p.parent.name,
            hidden=hidden,
            layers=int(cfg["num_hidden_layers"]),
            heads=heads,
            kv_heads=int(cfg.get("num_key_value_heads") or heads),
            head_dim=int(cfg.get("head_dim") or hidden // heads),
            intermediate=int(cfg["intermediate_size"]),
            vocab=int(cfg["vocab_size"]),
            max_context=int(cfg.get("max_position_embeddings", 8192)),
            tie_embeddings=bool(cfg.get("tie_word_embeddings", False)),
        )

    @classmethod
    def resolve(cls, model: str | Path) -> ModelShape:
        """A directory/config path, or a known name under the shared ``models/`` folder."""
        p = Path(model)
        if p.exists():
            return cls.from_config(p)
        candidate = models_dir() / str(model)
        if (candidate / "config.json").exists():
            return cls.from_config(candidate, name=str(model))
        known = sorted(d.name for d in models_dir().iterdir() if (d / "config.json").exists())
        raise FileNotFoundError(f"no model {model!r}: not a path, and not one of {known}")

    def per_gpu(self, tp: int) -> GpuShape:
        """Shapes on one of ``tp`` ranks; KV heads are replicated when ``tp > kv_heads`` (as vLLM)."""
        if tp < 1 or self.heads % tp:
            raise ValueError(f"tp={tp} does not divide {self.heads} attention heads")
        heads = self.heads // tp
        kv = max(1, self.kv_heads // tp)
        return GpuShape(
            tp=tp,
            layers=self.layers,
            hidden=self.hidden,
            heads=heads,
            kv_heads=kv,
            head_dim=self.head_dim,
            qkv_out=(heads + 2 * kv) * self.head_dim,
            o_in=heads * self.head_dim,
            gate_up_out=2 * -(-self.intermediate // tp),
            down_in=-(-self.intermediate // tp),
            vocab_out=-(-self.vocab // tp),
        )

    def weight_bytes(self, dtype_bytes: int = 2) -> int:
        """Bytes of weights (embeddings, attention, MLP, LM head) over all ranks."""
        attn = (
            self.hidden * (self.heads + 2 * self.kv_heads) * self.head_dim
            + self.heads * self.head_dim * self.hidden
        )
        mlp = 3 * self.hidden * self.intermediate
        embed = self.vocab * self.hidden * (1 if self.tie_embeddings else 2)
        return dtype_bytes * (self.layers * (attn + mlp) + embed)

    def kv_bytes_per_token(self, tp: int = 1, dtype_bytes: int = 2) -> int:
        """KV-cache bytes one token occupies on one rank (K and V, all layers)."""
        g = self.per_gpu(tp)
        return 2 * g.kv_heads * g.head_dim * self.layers * dtype_bytes

    def kv_capacity_tokens(
        self,
        memory_gib: float,
        tp: int = 1,
        *,
        gpu_memory_utilization: float = 0.9,
        activation_gib: float = 2.0,
    ) -> int:
        """KV-cache tokens per engine, sized the way vLLM does it.

        vLLM gives the KV cache ``utilization * memory - weights - peak activation
        (profiled) - non-torch memory``; ``activation_gib`` lumps the last two.  It is an
        assumed input: vLLM profiles them with a forward pass on the GPU, which cannot
        run here.
        """
        free = gpu_memory_utilization * memory_gib * 2**30 - self.weight_bytes() / tp - activation_gib * 2**30
        return max(0, int(free // self.kv_bytes_per_token(tp)))
