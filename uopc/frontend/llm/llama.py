"""The Llama architecture (Touvron et al. 2023) on the Tensor API, with Hugging Face's
weight names: RMSNorm, rotary position embeddings, SwiGLU MLPs, grouped-query attention.

Rotary embeddings follow transformers' convention (the head's two halves are rotated as
pairs, `x * cos + rotate_half(x) * sin`); the cos/sin tables of a step's positions are
computed on the host in float32 as transformers does and come in as data, so decoding at
a new position reuses the compiled plan.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numpy as np

from uopc.frontend.llm.attention import attend
from uopc.frontend.llm.causal_lm import CausalLM
from uopc.frontend.llm.checkpoints import read_config, read_state_dict
from uopc.frontend.llm.config_fields import Fields, ModelFileError
from uopc.frontend.llm.gguf_file import read_gguf
from uopc.frontend.llm.kv_cache import KVCache, Step, pad_ids, select_last
from uopc.frontend.llm.weights import Weights
from uopc.frontend.tensor import Tensor
from uopc.uopdialect.quant_formats import Packed


class RMSNorm:
    """x / sqrt(mean(x²) + eps) * weight over the last axis."""

    def __init__(self, weight: Tensor, eps: float):
        self.weight, self.eps = weight, eps

    def __call__(self, x: Tensor) -> Tensor:
        return x * ((x * x).mean(-1, keepdim=True) + self.eps).rsqrt() * self.weight


def rotary_tables(positions: np.ndarray, head_dim: int, theta: float) -> tuple[np.ndarray, np.ndarray]:
    """cos and sin, (T, head_dim) float32, of the rotation angles of `positions`: pair
    (i, i + head_dim/2) turns by position * theta^(-2i/head_dim)."""
    inv_freq = (1.0 / (np.float32(theta) ** (np.arange(0, head_dim, 2, dtype=np.float32)
                                              / np.float32(head_dim)))).astype(np.float32)
    angles = positions.astype(np.float32)[:, None] * inv_freq[None, :]
    angles = np.concatenate([angles, angles], axis=-1)
    return np.cos(angles).astype(np.float32), np.sin(angles).astype(np.float32)


def rotate(x: Tensor, cos: Tensor, sin: Tensor) -> Tensor:
    """Rotary embedding of (B, heads, T, hd) queries or keys."""
    half = x.shape[-1] // 2
    rotated = (-x[..., half:]).cat(x[..., :half], dim=-1)
    return x * cos + rotated * sin


class LlamaBlock:
    def __init__(self, w: Weights, i: int, cfg: LlamaShape, eps: float):
        p = f"layers.{i}"
        d, hd, inter = cfg.dim, cfg.head_dim, cfg.intermediate
        self.cfg = cfg
        self.attn_norm = RMSNorm(w.tensor(f"{p}.input_layernorm.weight", (d,)), eps)
        self.mlp_norm = RMSNorm(w.tensor(f"{p}.post_attention_layernorm.weight", (d,)), eps)
        self.q = w.linear(f"{p}.self_attn.q_proj.weight", cfg.heads * hd, d)
        self.k = w.linear(f"{p}.self_attn.k_proj.weight", cfg.kv_heads * hd, d)
        self.v = w.linear(f"{p}.self_attn.v_proj.weight", cfg.kv_heads * hd, d)
        self.o = w.linear(f"{p}.self_attn.o_proj.weight", d, cfg.heads * hd)
        self.gate = w.linear(f"{p}.mlp.gate_proj.weight", inter, d)
        self.up = w.linear(f"{p}.mlp.up_proj.weight", inter, d)
        self.down = w.linear(f"{p}.mlp.down_proj.weight", d, inter)

    def __call__(self, x: Tensor, layer: int, cache: KVCache, step: Step,
                 cos: Tensor, sin: Tensor) -> Tensor:
        c = self.cfg
        batch, length, _ = x.shape
        h = self.attn_norm(x)

        def heads(w: Tensor, n: int) -> Tensor:
            return (h @ w).reshape(batch, length, n, c.head_dim).transpose(1, 2)

        q = rotate(heads(self.q, c.heads), cos, sin)
        k = rotate(heads(self.k, c.kv_heads), cos, sin)
        k, v = cache.update(layer, k, heads(self.v, c.kv_heads), step)
        y = attend(q, k, v, step.visible).transpose(1, 2).reshape(batch, length, c.heads * c.head_dim)
        x = x + y @ self.o
        h = self.mlp_norm(x)
        return x + ((h @ self.gate).silu() * (h @ self.up)) @ self.down


class LlamaShape:
    """The sizes of a Llama model, from a Hugging Face LlamaConfig dict."""

    def __init__(self, config: dict[str, Any]):
        fields = Fields(config)
        act = fields.text("hidden_act", "silu")
        if act != "silu":
            raise ModelFileError(f"{fields.source}: Llama with activation {act!r}: only silu "
                                 f"(SwiGLU)")
        rope = config.get("rope_parameters") or {}
        if not isinstance(rope, dict):
            raise fields.error("rope_parameters", f"is a {type(rope).__name__}, expected an "
                                                  f"object")
        if (rope.get("rope_type") or "default") != "default" or config.get("rope_scaling"):
            raise ModelFileError(f"{fields.source}: Llama with rope scaling "
                                 f"{rope or config.get('rope_scaling')}: only plain rotary "
                                 f"embeddings are implemented")
        self.layers = fields.count("num_hidden_layers")
        self.dim = fields.count("hidden_size")
        self.heads = fields.count("num_attention_heads")
        self.kv_heads = fields.count("num_key_value_heads", self.heads)
        fields.divides("num_key_value_heads", self.kv_heads, "num_attention_heads", self.heads)
        if config.get("head_dim") is None:
            fields.divides("num_attention_heads", self.heads, "hidden_size", self.dim)
        self.head_dim = fields.count("head_dim", self.dim // self.heads)
        if self.head_dim % 2:
            raise fields.error("head_dim", f"is {self.head_dim}: rotary embeddings rotate "
                                           f"pairs, so it must be even")
        self.intermediate = fields.count("intermediate_size")
        self.vocab = fields.count("vocab_size")
        self.context = fields.count("max_position_embeddings", 2048)
        theta_fields = Fields(rope, fields.source) if "rope_theta" in rope else fields
        self.theta = theta_fields.number("rope_theta", 10000.0, above=True)
        self.eps = fields.epsilon("rms_norm_eps", 1e-6)
        self.tied = fields.flag("tie_word_embeddings", False)


class Llama(CausalLM):
    """Token ids (B, T) -> next-token logits (B, T, vocab)."""

    def __init__(self, config: dict[str, Any], state: Mapping[str, np.ndarray | Packed]):
        if config.get("attention_bias") or config.get("mlp_bias"):
            raise ValueError("Llama with attention or MLP biases is not implemented")
        self.cfg = c = LlamaShape(config)
        self.vocab = c.vocab
        w = Weights(state, prefix="model.", what="Llama")
        self.embed = w.tensor("embed_tokens.weight", (c.vocab, c.dim))
        self.blocks = [LlamaBlock(w, i, c, c.eps) for i in range(c.layers)]
        self.norm = RMSNorm(w.tensor("norm.weight", (c.dim,)), c.eps)
        if c.tied or "lm_head.weight" not in w:
            self.head = self.embed.T
        else:
            self.head = w.linear("lm_head.weight", c.vocab, c.dim)

    @classmethod
    def from_pretrained(cls, directory: str | Path) -> Llama:
        return cls(read_config(directory), read_state_dict(directory))

    @classmethod
    def from_gguf(cls, path: str | Path, packed: bool = False) -> Llama:
        """From a llama GGUF file, its weights dequantized to float32; with `packed`, its
        Q8_0/Q4_0/Q4_1 matrices stay in their blocks (`QuantizedTensor`s, decoded to the
        same float32 values inside the kernels that read them)."""
        checkpoint = read_gguf(path)
        return cls(checkpoint.config, checkpoint.quantized_state() if packed
                   else checkpoint.state)

    def new_cache(self, max_length: int | None = None, batch: int = 1) -> KVCache:
        c = self.cfg
        size = c.context if max_length is None else min(max_length, c.context)
        return KVCache(c.layers, batch, c.kv_heads, c.head_dim, size)

    def step_inputs(self, ids: np.ndarray, cache: KVCache,
                    width: int | None = None) -> tuple[np.ndarray, ...]:
        data = cache.begin(ids.shape[1], width)
        cos, sin = rotary_tables(data.positions, self.cfg.head_dim, self.cfg.theta)
        inputs = (ids if width is None else pad_ids(ids, width), cos, sin,
                  data.placement, data.written, data.visible)
        return inputs if width is None else (*inputs, data.last)

    def forward(self, cache: KVCache, ids: np.ndarray, cos: np.ndarray, sin: np.ndarray,
                placement: np.ndarray, written: np.ndarray, visible: np.ndarray,
                last: np.ndarray | None = None, last_only: bool = False) -> Tensor:
        """The lazy logits of one step from its `step_inputs`; see GPT2.forward."""
        length = ids.shape[1]
        step = Step.of(placement, written, visible)
        cos_t, sin_t = Tensor(cos), Tensor(sin)
        x = self.embed[Tensor(ids)]
        for i, block in enumerate(self.blocks):
            x = block(x, i, cache, step, cos_t, sin_t)
        if last_only:
            x = select_last(x, last, length)
        return self.norm(x) @ self.head
