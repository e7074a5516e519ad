"""A key/value cache of fixed size, so that decoding does not compile per token.

The engine keys a plan by the graph's structure and shapes, never by buffer contents.
So every buffer here has a size fixed when the cache is made (`max_length` positions),
and everything that moves from step to step is data (`StepData`, host arrays): which
cache rows a step writes (`placement`, a one-hot (S, T) matrix, and `written`, its
rows), which keys each query may see (`visible`, causal over the positions filled so
far) and the step's positions.
A decode step (T = 1) is then the same graph at every position: one compiled plan for
the whole generation.

A prefill is padded to a bucket of `width` positions (`prefill_width`: the next power of
two, at least 8), so that prompts of different lengths run one compiled plan per bucket
instead of one per length (a SmolLM2 prefill plan takes a minute or more to compile).
The padded positions are data like the rest: their columns of `placement` are zero (they
write no cache row), their queries see what the last real token sees (never a row
without a visible key, so nothing becomes NaN), their position repeats the last real
one (in range for learned position tables), and the step's logits are read at `last`,
the row of the last real token, by a gather. Every real position computes what it
computes unpadded: each op works per position, and the cache update adds exact zeros.

Per layer the cache holds keys and values of shape (batch, kv_heads, max_length,
head_dim). A step computes its T new keys and values, writes them at rows
`length .. length+T-1` (`where(written, placement @ new, old)`, exact), attends over all
`max_length` rows with the invisible ones masked, and `commit` realizes the step's
outputs together with the new cache contents in one engine call. Because a step's
changing inputs are arrays and its cache update rebinds the cache's tensors, a decode
step can be captured (`uopc.capture`) and replayed without tracing (see `generate`).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import cast

import numpy as np

from uopc.frontend.tensor import Tensor


@dataclass(frozen=True)
class StepData:
    """The host data of one step over T new tokens starting at position `start`: what
    changes from step to step, as arrays, so that it can be a captured step's argument."""

    start: int
    count: int  # the real tokens; the arrays have room for T >= count (padding after them)
    positions: np.ndarray  # (T,) int32: start .. start+count-1, then the last one repeated
    placement: np.ndarray  # (S, T) f32: placement[start + t, t] = 1 for t < count
    written: np.ndarray  # (S, 1) bool: the rows this step writes
    visible: np.ndarray  # (T, S) bool: query t sees keys 0 .. positions[t]
    last: np.ndarray  # (1,) int32: count - 1, the row whose logits a padded step returns


@dataclass(frozen=True)
class Step:
    """A step's cache placement and attention mask as graph inputs."""

    placement: Tensor
    written: Tensor
    visible: Tensor

    @classmethod
    def of(cls, placement: np.ndarray, written: np.ndarray, visible: np.ndarray) -> Step:
        return cls(Tensor(placement), Tensor(written), Tensor(visible))


def prefill_width(count: int, max_length: int) -> int:
    """The padded width of a prefill of `count` tokens: the next power of two, at least
    8, and at most the cache's `max_length` (never less than `count`). Powers of two
    waste at most half of a prefill's work on padding, and a new bucket (a compile of
    a minute or more for SmolLM2) comes only when the prompt doubles."""
    return max(count, min(max(8, 1 << (count - 1).bit_length()), max_length))


def pad_ids(ids: np.ndarray, width: int) -> np.ndarray:
    """(B, T) token ids padded to (B, width) by repeating the last column (valid ids)."""
    return np.concatenate([ids, np.repeat(ids[:, -1:], width - ids.shape[1], axis=1)], axis=1)


def select_last(x: Tensor, last: np.ndarray | None, length: int) -> Tensor:
    """The (B, 1, D) rows of (B, T, D) `x` a step returns logits for: row `last` (a
    padded step's last real token, read by a gather so that it is data), else row T-1."""
    if last is None:
        return x[:, length - 1:]
    return x.transpose(0, 1)[Tensor(last)].transpose(0, 1)


class KVCache:
    """Keys and values of every layer, for up to `max_length` positions."""

    def __init__(self, layers: int, batch: int, kv_heads: int, head_dim: int, max_length: int):
        shape = (batch, kv_heads, max_length, head_dim)
        self.max_length = max_length
        self.keys = [Tensor(np.zeros(shape, np.float32)) for _ in range(layers)]
        self.values = [Tensor(np.zeros(shape, np.float32)) for _ in range(layers)]
        self.length = 0  # positions filled
        self._pending: StepData | None = None

    def begin(self, count: int, width: int | None = None) -> StepData:
        """The data of a step that adds `count` tokens after the ones held, padded to
        `width` positions (default `count`: no padding)."""
        start, size = self.length, self.max_length
        width = count if width is None else width
        if start + count > size:
            raise ValueError(f"KV cache of {size} positions is full: {start} held, a step "
                             f"of {count} more does not fit; make the cache with a larger "
                             f"max_length")
        if not 1 <= count <= width:
            raise ValueError(f"a step of {count} tokens padded to {width} positions: need "
                             f"1 <= count <= width")
        real = np.arange(start, start + count, dtype=np.int32)
        positions = np.concatenate([real, np.full(width - count, real[-1], np.int32)])
        placement = np.zeros((size, width), np.float32)
        placement[real, np.arange(count)] = 1.0
        visible = np.arange(size)[None, :] <= positions[:, None]
        written = cast(np.ndarray, placement.any(axis=1, keepdims=True))  # keepdims: an array
        self._pending = StepData(start, count, positions, placement, written, visible,
                                 np.array([count - 1], np.int32))
        return self._pending

    def update(self, layer: int, keys: Tensor, values: Tensor, step: Step) -> tuple[Tensor, Tensor]:
        """Write a step's (batch, kv_heads, T, head_dim) keys and values into layer
        `layer`; returns the layer's whole (lazy) keys and values to attend over."""
        self.keys[layer] = step.written.where(step.placement @ keys, self.keys[layer])
        self.values[layer] = step.written.where(step.placement @ values, self.values[layer])
        return self.keys[layer], self.values[layer]

    def realize(self, *outputs: Tensor) -> None:
        """Realize `outputs` and the updated cache in one engine call."""
        Tensor.realize_all(*outputs, *self.keys, *self.values)

    def advance(self) -> None:
        """Count the begun step's tokens as held (after its outputs are realized)."""
        if self._pending is None:
            raise RuntimeError("KVCache.advance() without a step: call begin() first")
        self.length += self._pending.count
        self._pending = None

    def commit(self, *outputs: Tensor) -> None:
        """`realize(*outputs)`, then `advance()`."""
        if self._pending is None:
            raise RuntimeError("KVCache.commit() without a step: call begin() first")
        self.realize(*outputs)
        self.advance()
