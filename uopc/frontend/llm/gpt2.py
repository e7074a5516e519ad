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
from uopc.frontend.llm.causal_lm import CausalLM
from uopc.frontend.llm.checkpoints import read_config, read_state_dict
from uopc.frontend.llm.config_fields import Fields, ModelFileError
from uopc.frontend.llm.kv_cache import KVCache, Step, pad_ids, select_last
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


class GPT2(CausalLM):
    """Token ids (B, T) -> next-token logits (B, T, vocab), from a Hugging Face GPT-2
    config (n_layer, n_embd, n_head, n_positions, vocab_size, layer_norm_epsilon)."""

    def __init__(self, config: dict[str, Any], state: dict[str, np.ndarray]):
        fields = Fields(config)
        act = fields.text("activation_function", "gelu_new")
        if act not in ("gelu_new", "gelu_pytorch_tanh"):
            raise ModelFileError(f"{fields.source}: GPT-2 with activation {act!r}: uopc's "
                                 f"GPT-2 has the tanh GELU (gelu_new) only")
        self.layers, self.dim = fields.count("n_layer"), fields.count("n_embd")
        self.heads, self.context = fields.count("n_head"), fields.count("n_positions")
        fields.divides("n_head", self.heads, "n_embd", self.dim)
        self.vocab = fields.count("vocab_size")
        eps = fields.epsilon("layer_norm_epsilon", 1e-5)
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
    def random(cls, layers: int = 8, dim: int = 64, heads: int = 16, vocab: int = 50257,
               positions: int = 1024, seed: int = 0) -> GPT2:
        """A GPT-2 with N(0, 0.02) weights and unit LayerNorms (no checkpoint needed)."""
        return cls(*cls.random_checkpoint(layers, dim, heads, vocab, positions, seed))

    @staticmethod
    def random_checkpoint(layers: int = 8, dim: int = 64, heads: int = 16, vocab: int = 50257,
                          positions: int = 1024, seed: int = 0
                          ) -> tuple[dict[str, Any], dict[str, np.ndarray]]:
        """The config and state dict of `random`'s model (to write as files)."""
        config = {"n_layer": layers, "n_embd": dim, "n_head": heads, "n_positions": positions,
                  "vocab_size": vocab}
        rng = np.random.default_rng(seed)
        shapes: dict[str, tuple[int, ...]] = {"wte.weight": (vocab, dim), "wpe.weight": (positions, dim)}
        for i in range(layers):
            p = f"h.{i}."
            shapes |= {p + "attn.c_attn.weight": (dim, 3 * dim), p + "attn.c_attn.bias": (3 * dim,),
                       p + "attn.c_proj.weight": (dim, dim), p + "attn.c_proj.bias": (dim,),
                       p + "mlp.c_fc.weight": (dim, 4 * dim), p + "mlp.c_fc.bias": (4 * dim,),
                       p + "mlp.c_proj.weight": (4 * dim, dim), p + "mlp.c_proj.bias": (dim,)}
        state = {k: (0.02 * rng.standard_normal(s)).astype(np.float32) for k, s in shapes.items()}
        for name in [f"h.{i}.ln_{j}" for i in range(layers) for j in (1, 2)] + ["ln_f"]:
            state[name + ".weight"] = np.ones(dim, np.float32)
            state[name + ".bias"] = np.zeros(dim, np.float32)
        return config, state

    @classmethod
    def from_pretrained(cls, directory: str | Path) -> GPT2:
        """From a Hugging Face model directory (config.json and its weights)."""
        return cls(read_config(directory), read_state_dict(directory))

    def new_cache(self, max_length: int | None = None, batch: int = 1) -> KVCache:
        size = self.context if max_length is None else min(max_length, self.context)
        return KVCache(self.layers, batch, self.heads, self.dim // self.heads, size)

    def step_inputs(self, ids: np.ndarray, cache: KVCache,
                    width: int | None = None) -> tuple[np.ndarray, ...]:
        data = cache.begin(ids.shape[1], width)
        inputs = (ids if width is None else pad_ids(ids, width), data.positions,
                  data.placement, data.written, data.visible)
        return inputs if width is None else (*inputs, data.last)

    def forward(self, cache: KVCache, ids: np.ndarray, positions: np.ndarray,
                placement: np.ndarray, written: np.ndarray, visible: np.ndarray,
                last: np.ndarray | None = None, last_only: bool = False) -> Tensor:
        """The lazy logits of one step from its `step_inputs` (a graph that reads no
        Python data but these arrays, the weights and the cache)."""
        length = ids.shape[1]
        step = Step.of(placement, written, visible)
        x = self.wte[Tensor(ids)] + self.wpe[Tensor(positions)]
        for i, block in enumerate(self.blocks):
            x = block(x, i, cache, step)
        if last_only:
            x = select_last(x, last, length)
        return self.ln_f(x) @ self.head
