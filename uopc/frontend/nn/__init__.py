"""Neural-network layers on the lazy Tensor, and `parameters(obj)`.

Layers are plain Python objects holding requires_grad Tensors; calling one traces its
forward pass. Weights are initialized on the host (see `uopc.frontend.tensor.manual_seed`).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import numpy as np

from uopc.frontend.spatial import pair
from uopc.frontend.tensor import Tensor

__all__ = ["Linear", "Conv2d", "LayerNorm", "Embedding", "parameters"]


def _uniform_init(shape: Sequence[int], fan_in: int) -> Tensor:
    # PyTorch's default for Linear and Conv2d: U(-1/sqrt(fan_in), 1/sqrt(fan_in))
    bound = 1.0 / math.sqrt(max(fan_in, 1))
    return Tensor.uniform(*shape, low=-bound, high=bound, requires_grad=True)


class Linear:
    """y = x @ weight + bias with weight of shape (n_in, n_out)."""

    def __init__(self, n_in: int, n_out: int, bias: bool = True):
        self.weight = _uniform_init((n_in, n_out), n_in)
        self.bias = _uniform_init((n_out,), n_in) if bias else None

    def __call__(self, x: Tensor) -> Tensor:
        return x.linear(self.weight, self.bias)


class Conv2d:
    """2-D convolution of (N, C, H, W) inputs; weight of shape (out, in, KH, KW)."""

    def __init__(self, in_channels: int, out_channels: int, kernel_size: int | Sequence[int],
                 stride: int | Sequence[int] = 1, padding: int | Sequence[int] = 0,
                 bias: bool = True):
        kh, kw = pair(kernel_size, "Conv2d kernel_size")
        fan_in = in_channels * kh * kw
        self.weight = _uniform_init((out_channels, in_channels, kh, kw), fan_in)
        self.bias = _uniform_init((out_channels,), fan_in) if bias else None
        self.stride, self.padding = stride, padding

    def __call__(self, x: Tensor) -> Tensor:
        return x.conv2d(self.weight, self.bias, self.stride, self.padding)


class LayerNorm:
    """Normalize over the trailing `normalized_shape` axes, then scale and shift."""

    def __init__(self, normalized_shape: int | Sequence[int], eps: float = 1e-5,
                 elementwise_affine: bool = True):
        self.shape = ((normalized_shape,) if isinstance(normalized_shape, int)
                      else tuple(normalized_shape))
        self.eps = eps
        self.weight = self.bias = None
        if elementwise_affine:
            self.weight = Tensor(np.ones(self.shape, np.float32), requires_grad=True)
            self.bias = Tensor(np.zeros(self.shape, np.float32), requires_grad=True)

    def __call__(self, x: Tensor) -> Tensor:
        if x.shape[x.ndim - len(self.shape):] != self.shape:
            raise ValueError(f"LayerNorm over {self.shape} applied to a tensor of shape "
                             f"{x.shape}: its trailing axes must match")
        axes = tuple(range(x.ndim - len(self.shape), x.ndim))
        centered = x - x.mean(axes, keepdim=True)
        variance = (centered * centered).mean(axes, keepdim=True)
        y = centered * (variance + self.eps).rsqrt()
        return y if self.weight is None else y * self.weight + self.bias


class Embedding:
    """Rows of a (vocab_size, dim) table picked by integer ids (a one-hot matmul)."""

    def __init__(self, vocab_size: int, dim: int):
        self.vocab_size = vocab_size
        self.weight = Tensor.randn(vocab_size, dim, requires_grad=True)

    def __call__(self, ids: Any) -> Tensor:
        """Rows for integer `ids` (a Tensor, array or list); an id outside
        [0, vocab_size) raises where the ids are known on the host."""
        ids = ids if isinstance(ids, Tensor) else Tensor(np.asarray(ids), "i32")
        return ids.one_hot(self.vocab_size, what="Embedding") @ self.weight


def parameters(obj: Any) -> list[Tensor]:
    """Every requires_grad Tensor reachable from `obj` through attributes, lists,
    tuples and dicts, each once, in discovery order."""
    found: list[Tensor] = []
    seen: set[int] = set()
    stack = [obj]
    while stack:
        item = stack.pop()
        if id(item) in seen:
            continue
        seen.add(id(item))
        if isinstance(item, Tensor):
            if item.requires_grad:
                found.append(item)
        elif isinstance(item, dict):
            stack.extend(reversed(list(item.values())))
        elif isinstance(item, (list, tuple)):
            stack.extend(reversed(item))
        elif hasattr(item, "__dict__") and not isinstance(item, type):
            stack.extend(reversed(list(vars(item).values())))
    return found
