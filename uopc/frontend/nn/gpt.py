"""A small decoder-only transformer (GPT): pre-LayerNorm blocks, causal self-attention,
GELU MLP. Used by examples/gpt.py, the training tests and the benchmarks."""

from __future__ import annotations

import math

import numpy as np

from uopc.frontend.nn import Embedding, LayerNorm, Linear
from uopc.frontend.tensor import Tensor


def causal_mask(length: int) -> Tensor:
    """(T, T) booleans: query position i may attend to key positions <= i."""
    return Tensor(np.tril(np.ones((length, length), np.bool_)))


class CausalSelfAttention:
    def __init__(self, dim: int, heads: int):
        if dim % heads:
            raise ValueError(f"model width {dim} is not divisible by {heads} heads")
        self.heads = heads
        self.qkv = Linear(dim, 3 * dim)
        self.proj = Linear(dim, dim)

    def __call__(self, x: Tensor) -> Tensor:
        batch, length, dim = x.shape
        head_dim = dim // self.heads
        # (B, T, 3D) -> (3, B, H, T, hd)
        qkv = self.qkv(x).reshape(batch, length, 3, self.heads, head_dim).permute(2, 0, 3, 1, 4)
        q, k, v = qkv[0], qkv[1], qkv[2]
        scores = (q @ k.transpose(-1, -2)) * (1.0 / math.sqrt(head_dim))
        scores = causal_mask(length).where(scores, -math.inf)
        y = scores.softmax(-1) @ v  # (B, H, T, hd)
        return self.proj(y.permute(0, 2, 1, 3).reshape(batch, length, dim))


class Block:
    def __init__(self, dim: int, heads: int):
        self.ln1, self.ln2 = LayerNorm(dim), LayerNorm(dim)
        self.attn = CausalSelfAttention(dim, heads)
        self.fc, self.out = Linear(dim, 4 * dim), Linear(4 * dim, dim)

    def __call__(self, x: Tensor) -> Tensor:
        x = x + self.attn(self.ln1(x))
        return x + self.out(self.fc(self.ln2(x)).gelu(approximate="tanh"))


class GPT:
    """Token ids (B, T) -> next-token logits (B, T, vocab)."""

    def __init__(self, vocab: int, context: int, dim: int, heads: int, layers: int):
        self.vocab, self.context = vocab, context
        self.tokens = Embedding(vocab, dim)
        self.positions = Tensor(Tensor.randn(context, dim).numpy() * 0.02, requires_grad=True)
        self.blocks = [Block(dim, heads) for _ in range(layers)]
        self.ln_f = LayerNorm(dim)
        self.head = Linear(dim, vocab)

    def __call__(self, ids: Tensor) -> Tensor:
        length = ids.shape[-1]
        if length > self.context:
            raise ValueError(f"sequence of {length} tokens exceeds the context of {self.context}")
        x = self.tokens(ids) + self.positions[:length]
        for block in self.blocks:
            x = block(x)
        return self.head(self.ln_f(x))

    def loss(self, ids: Tensor, targets: Tensor) -> Tensor:
        logits = self(ids)
        return logits.reshape(-1, self.vocab).cross_entropy(targets.reshape(-1))
