"""A key/value cache of fixed size, so that decoding does not compile per token.

The engine keys a plan by the graph's structure and shapes, never by buffer contents.
So every buffer here has a size fixed when the cache is made (`max_length` positions),
and everything that moves from step to step is data: which cache rows a step writes
(`placement`, a one-hot (S, T) matrix, and `written`, its rows), which keys each query
may see (`visible`, causal over the positions filled so far) and the step's positions.
A decode step (T = 1) is then the same graph at every position: one compiled plan for
the whole generation; a prefill of T tokens is one more plan per prompt length.

Per layer the cache holds keys and values of shape (batch, kv_heads, max_length,
head_dim). A step computes its T new keys and values, writes them at rows
`length .. length+T-1` (`where(written, placement @ new, old)`, exact), attends over all
`max_length` rows with the invisible ones masked, and `commit` realizes the step's
outputs together with the new cache contents in one engine call.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from uopc.frontend.tensor import Tensor


@dataclass
class Step:
    """The data of one step over T new tokens starting at position `start`."""

    start: int
    positions: np.ndarray  # (T,) int: start .. start+T-1
    placement: Tensor  # (S, T) f32: placement[start + t, t] = 1
    written: Tensor  # (S, 1) bool: the rows this step writes
    visible: Tensor  # (T, S) bool: query t sees keys 0 .. start+t


class KVCache:
    """Keys and values of every layer, for up to `max_length` positions."""

    def __init__(self, layers: int, batch: int, kv_heads: int, head_dim: int, max_length: int):
        shape = (batch, kv_heads, max_length, head_dim)
        self.max_length = max_length
        self.keys = [Tensor(np.zeros(shape, np.float32)) for _ in range(layers)]
        self.values = [Tensor(np.zeros(shape, np.float32)) for _ in range(layers)]
        self.length = 0  # positions filled
        self._pending: Step | None = None

    def begin(self, count: int) -> Step:
        """The inputs of a step that adds `count` tokens after the ones held."""
        start, size = self.length, self.max_length
        if start + count > size:
            raise ValueError(f"KV cache of {size} positions is full: {start} held, a step "
                             f"of {count} more does not fit; make the cache with a larger "
                             f"max_length")
        positions = np.arange(start, start + count)
        placement = np.zeros((size, count), np.float32)
        placement[positions, np.arange(count)] = 1.0
        visible = np.arange(size)[None, :] <= positions[:, None]
        self._pending = Step(start, positions, Tensor(placement),
                             Tensor(placement.any(axis=1, keepdims=True)), Tensor(visible))
        return self._pending

    def update(self, layer: int, keys: Tensor, values: Tensor, step: Step) -> tuple[Tensor, Tensor]:
        """Write a step's (batch, kv_heads, T, head_dim) keys and values into layer
        `layer`; returns the layer's whole (lazy) keys and values to attend over."""
        self.keys[layer] = step.written.where(step.placement @ keys, self.keys[layer])
        self.values[layer] = step.written.where(step.placement @ values, self.values[layer])
        return self.keys[layer], self.values[layer]

    def commit(self, *outputs: Tensor) -> None:
        """Realize `outputs` and the updated cache in one engine call; the step's tokens
        count as held from now on."""
        if self._pending is None:
            raise RuntimeError("KVCache.commit() without a step: call begin() first")
        Tensor.realize_all(*outputs, *self.keys, *self.values)
        self.length += len(self._pending.positions)
        self._pending = None
