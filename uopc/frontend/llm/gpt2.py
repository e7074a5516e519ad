"""GPT-2 (Radford et al. 2019) on the Tensor API, with Hugging Face's weight names.

Learned token and position embeddings, pre-LayerNorm blocks of causal self-attention and
a GELU (tanh approximation) MLP, a final LayerNorm and a head tied to the token
embedding. The checkpoint's Conv1D weights are stored (in, out), which is the layout
`Tensor.linear` takes, so they load as they are.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np

from uopc.frontend.llm.attention import attend
from uopc.frontend.llm.checkpoints import read_config, read_state_dict
from uopc.frontend.llm.kv_cache import KVCache, Step
from uopc.frontend.llm.weights import Weights
from uopc.frontend.nn import LayerNorm
from uopc.frontend.tensor import Tensor


def _layer_norm(weights: Weights, name: str, dim: int, eps: float) -> LayerNorm:
    norm = LayerNorm(dim, eps)
    norm.weight = weights.tensor(f"{name}.weight", (dim,))
    norm.bias = weights.tensor(f"{name}.bias", (dim,))
    return norm


class GPT2Block:
    def __init__(self, w: Weights, i: int, dim: int, heads: int, eps: float):
        p = f"h.{i}"
        self.heads = heads
        self.ln_1 = _layer_norm(w, f"{p}.ln_1", dim, eps)
        self.ln_2 = _layer_norm(w, f"{p}.ln_2", dim, eps)
        self.qkv = (w.tensor(f"{p}.attn.c_attn.weight", (dim, 3 * dim)),
                    w.tensor(f"{p}.attn.c_attn.bias", (3 * dim,)))
        self.proj = (w.tensor(f"{p}.attn.c_proj.weight", (dim, dim)),
                     w.tensor(f"{p}.attn.c_proj.bias", (dim,)))
        self.fc = (w.tensor(f"{p}.mlp.c_fc.weight", (dim, 4 * dim)),
                   w.tensor(f"{p}.mlp.c_fc.bias", (4 * dim,)))
        self.out = (w.tensor(f"{p}.mlp.c_proj.weight", (4 * dim, dim)),
                    w.tensor(f"{p}.mlp.c_proj.bias", (dim,)))

    def __call__(self, x: Tensor, layer: int, cache: KVCache, step: Step) -> Tensor:
        batch, length, dim = x.shape
        head_dim = dim // self.heads
        qkv = self.ln_1(x).linear(*self.qkv).reshape(batch, length, 3, self.heads, head_dim)
        q, k, v = (qkv[:, :, i].transpose(1, 2) for i in range(3))  # (B, H, T, hd)
        k, v = cache.update(layer, k, v, step)
        y = attend(q, k, v, step.visible).transpose(1, 2).reshape(batch, length, dim)
        x = x + y.linear(*self.proj)
        return x + self.ln_2(x).linear(*self.fc).gelu().linear(*self.out)


class GPT2:
    """Token ids (B, T) -> next-token logits (B, T, vocab), from a Hugging Face GPT-2
    config (n_layer, n_embd, n_head, n_positions, vocab_size, layer_norm_epsilon)."""

    def __init__(self, config: dict[str, Any], state: dict[str, np.ndarray]):
        act = config.get("activation_function", "gelu_new")
        if act not in ("gelu_new", "gelu_pytorch_tanh"):
            raise ValueError(f"GPT-2 with activation {act!r}: uopc's GPT-2 has the tanh "
                             f"GELU (gelu_new) only")
        self.layers, self.dim = config["n_layer"], config["n_embd"]
        self.heads, self.context = config["n_head"], config["n_positions"]
        self.vocab = config["vocab_size"]
        eps = config.get("layer_norm_epsilon", 1e-5)
        w = Weights(state, prefix="transformer.", what="GPT-2")
        self.wte = w.tensor("wte.weight", (self.vocab, self.dim))
        self.wpe = w.tensor("wpe.weight", (self.context, self.dim))
        self.blocks = [GPT2Block(w, i, self.dim, self.heads, eps) for i in range(self.layers)]
        self.ln_f = _layer_norm(w, "ln_f", self.dim, eps)
        # tied head: lm_head.weight is wte when present (pytorch_model.bin) or absent
        if "lm_head.weight" in w and not np.array_equal(
                w.array("lm_head.weight", (self.vocab, self.dim)), self.wte.numpy()):
            self.head = w.tensor("lm_head.weight", (self.vocab, self.dim)).T
        else:
            self.head = self.wte.T

    @classmethod
    def from_pretrained(cls, directory: str | Path) -> "GPT2":
        """From a Hugging Face model directory (config.json and its weights)."""
        return cls(read_config(directory), read_state_dict(directory))

    def new_cache(self, max_length: int | None = None, batch: int = 1) -> KVCache:
        size = self.context if max_length is None else min(max_length, self.context)
        return KVCache(self.layers, batch, self.heads, self.dim // self.heads, size)

    def __call__(self, ids: Any, cache: KVCache | None = None, last_only: bool = False) -> Tensor:
        """Logits of the tokens `ids` (B, T) following those already in `cache` (a fresh
        cache of T positions when None). Lazy; with a cache, `cache.commit(logits)`
        realizes the step."""
        ids = np.asarray(ids, np.int32)
        cache = cache if cache is not None else self.new_cache(ids.shape[1], ids.shape[0])
        return self.forward(cache, *self.step_inputs(ids, cache), last_only=last_only)

    def step_inputs(self, ids: Any, cache: KVCache) -> tuple[np.ndarray, ...]:
        """Begin a step of `ids` (B, T) on `cache`: the arrays `forward` reads."""
        ids = np.asarray(ids, np.int32)
        data = cache.begin(ids.shape[1])
        return ids, data.positions, data.placement, data.written, data.visible

    def forward(self, cache: KVCache, ids: np.ndarray, positions: np.ndarray,
                placement: np.ndarray, written: np.ndarray, visible: np.ndarray,
                last_only: bool = False) -> Tensor:
        """The lazy logits of one step from its `step_inputs` (a graph that reads no
        Python data but these arrays, the weights and the cache)."""
        length = ids.shape[1]
        step = Step.of(placement, written, visible)
        x = self.wte[Tensor(ids)] + self.wpe[Tensor(positions)]
        for i, block in enumerate(self.blocks):
            x = block(x, i, cache, step)
        if last_only:
            x = x[:, length - 1:]
        return self.ln_f(x) @ self.head
