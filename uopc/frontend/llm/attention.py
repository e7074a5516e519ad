"""Scaled dot-product attention with grouped-query heads, on the Tensor API."""

from __future__ import annotations

import math

from uopc.frontend.tensor import Tensor


def attend(q: Tensor, k: Tensor, v: Tensor, visible: Tensor) -> Tensor:
    """softmax(q kᵀ / sqrt(head_dim), keys not `visible` excluded) v.

    q is (B, H, T, hd); k and v are (B, KV, S, hd) with H a multiple of KV: query head h
    reads key/value head h // (H // KV) (grouped-query attention; KV = H is plain
    multi-head). `visible` is (T, S) booleans. Returns (B, H, T, hd)."""
    batch, heads, length, head_dim = q.shape
    kv_heads = k.shape[1]
    if heads % kv_heads:
        raise ValueError(f"attention with {heads} query heads and {kv_heads} key/value "
                         f"heads: query heads must be a multiple of key/value heads")
    group = heads // kv_heads
    q = q.reshape(batch, kv_heads, group, length, head_dim)
    scores = (q @ k.unsqueeze(2).transpose(-1, -2)) * (1.0 / math.sqrt(head_dim))
    scores = visible.where(scores, -math.inf)  # (B, KV, group, T, S)
    out = scores.softmax(-1) @ v.unsqueeze(2)
    return out.reshape(batch, heads, length, head_dim)
