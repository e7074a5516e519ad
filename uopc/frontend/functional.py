"""Normalization, attention, dropout and resizing of the `Tensor` (a mixin class;
`Tensor` inherits it), named and defaulted as in `torch.nn.functional`.

Each is a composition of Tensor methods. Attention is written as softmax(q k^T) v; the
compiler turns it into one fused kernel once reduce fusion lands (SPEC §8). Resizing is a
matmul with a constant (out, in) interpolation matrix per axis, built on the host with
PyTorch's coordinate rules.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Sequence
from typing import Any

import numpy as np

from uopc.frontend.tensor_protocol import TensorMixin
from uopc.uopdialect.dtypes import DTYPES
from uopc.uopdialect.shapes import ShapeError, fmt_shape


def _resize_matrix(n_in: int, n_out: int, mode: str, align_corners: bool,
                   scale: float | None) -> np.ndarray:
    """The (n_out, n_in) matrix whose rows interpolate one output position."""
    m = np.zeros((n_out, n_in), np.float32)
    rows = np.arange(n_out)
    if mode == "nearest":
        ratio = (1.0 / scale) if scale else n_in / n_out
        src = np.minimum(np.floor(rows * np.float32(ratio)).astype(np.int64), n_in - 1)
        m[rows, src] = 1.0
        return m
    if align_corners:
        pos = rows * ((n_in - 1) / (n_out - 1)) if n_out > 1 else np.zeros(n_out)
    else:
        ratio = (1.0 / scale) if scale else n_in / n_out
        pos = np.maximum((rows + 0.5) * ratio - 0.5, 0.0)
    lo = np.minimum(np.floor(pos).astype(np.int64), n_in - 1)
    hi = np.minimum(lo + 1, n_in - 1)
    frac = (pos - lo).astype(np.float32)
    np.add.at(m, (rows, lo), 1.0 - frac)
    np.add.at(m, (rows, hi), frac)
    return m


class Functional(TensorMixin):
    """layer_norm, rms_norm, scaled_dot_product_attention, dropout, interpolate."""

    __slots__ = ()

    def layer_norm(self, normalized_shape: int | Sequence[int], weight: Any = None,
                   bias: Any = None, eps: float = 1e-5) -> Any:
        shape = (normalized_shape,) if isinstance(normalized_shape, int) else \
            tuple(normalized_shape)
        if self.shape[self.ndim - len(shape):] != shape:
            raise ShapeError(f"layer_norm over {fmt_shape(shape)} of a tensor of shape "
                             f"{fmt_shape(self.shape)}: its trailing axes must match")
        y = self.layernorm(tuple(range(self.ndim - len(shape), self.ndim)), eps)
        if weight is not None:
            y = y * weight
        return y if bias is None else y + bias

    def layernorm(self, axis: int | Sequence[int] = -1, eps: float = 1e-5) -> Any:
        """(x - mean) / sqrt(var + eps) over `axis` (the biased variance), no affine."""
        x = self._floating()
        centered = x - x.mean(axis, keepdim=True)
        variance = (centered * centered).mean(axis, keepdim=True)
        return centered * (variance + eps).rsqrt()

    def rms_norm(self, normalized_shape: int | Sequence[int], weight: Any = None,
                 eps: float | None = None) -> Any:
        """x / sqrt(mean(x^2) + eps) over the trailing axes; eps defaults to the
        element type's machine epsilon, as in PyTorch."""
        shape = (normalized_shape,) if isinstance(normalized_shape, int) else \
            tuple(normalized_shape)
        x = self._floating()
        axes = tuple(range(x.ndim - len(shape), x.ndim))
        if eps is None:
            eps = float(np.finfo(DTYPES[x.dtype].numpy).eps)
        y = x * ((x * x).mean(axes, keepdim=True) + eps).rsqrt()
        return y if weight is None else y * weight

    def scaled_dot_product_attention(self, key: Any, value: Any, attn_mask: Any = None,
                                     dropout_p: float = 0.0, is_causal: bool = False,
                                     scale: float | None = None) -> Any:
        """softmax(q k^T * scale + mask) v for queries (..., L, E), keys (..., S, E) and
        values (..., S, Ev); a bool mask keeps the True places, a float mask is added;
        `is_causal` keeps j <= i."""
        q = self._floating()
        e = q.shape[-1]
        scores = (q @ key.transpose(-2, -1)) * (1.0 / math.sqrt(e) if scale is None else scale)
        l_len, s_len = scores.shape[-2:]
        Tensor = self._tensor_class()
        if is_causal:
            keep = Tensor(_causal_keep(l_len, s_len))
            scores = keep.where(scores, -math.inf)
        if attn_mask is not None:
            mask = attn_mask if isinstance(attn_mask, Tensor) else Tensor(np.asarray(attn_mask))
            scores = mask.where(scores, -math.inf) if mask.dtype == "i1" else scores + mask
        weights = scores.softmax(-1)
        if dropout_p:
            weights = weights.dropout(dropout_p)
        return weights @ value

    def dropout(self, p: float = 0.5, training: bool = True) -> Any:
        """Zero each element with probability p (drawn on the host from the seeded
        generator, see manual_seed) and scale the rest by 1/(1-p)."""
        if not 0.0 <= p <= 1.0:
            raise ValueError(f"dropout probability must be in [0, 1], got {p}")
        if not training or p == 0.0:
            return self
        Tensor = self._tensor_class()
        if p == 1.0:
            return self * 0.0
        keep = Tensor.uniform(*self.shape) >= p
        return keep.where(self._floating() * (1.0 / (1.0 - p)), 0.0)

    def interpolate(self, size: int | Sequence[int] | None = None,
                    scale_factor: float | Sequence[float] | None = None,
                    mode: str = "nearest", align_corners: bool | None = None) -> Any:
        """Resize the spatial axes (all but N and C): mode nearest (PyTorch's, which is
        floor(i * in / out)), linear or bilinear."""
        if mode not in ("nearest", "linear", "bilinear"):
            raise ValueError(f"interpolate: mode must be nearest, linear or bilinear, got {mode!r}")
        if mode == "nearest" and align_corners is not None:
            raise ValueError("interpolate: align_corners only applies to linear modes")
        spatial = self.shape[2:]
        if not spatial:
            raise ShapeError(f"interpolate takes (N, C, ...) inputs with spatial axes, got "
                             f"{fmt_shape(self.shape)}: add the batch and channel axes")
        if (size is None) == (scale_factor is None):
            raise ValueError("interpolate: give exactly one of size and scale_factor")
        if size is not None:
            sizes = (size,) * len(spatial) if isinstance(size, int) else tuple(size)
            scales: tuple = (None,) * len(spatial)
        else:
            scales = (scale_factor,) * len(spatial) if not isinstance(scale_factor, Sequence) \
                else tuple(scale_factor)
            sizes = tuple(int(math.floor(n * f)) for n, f in zip(spatial, scales))
        if len(sizes) != len(spatial):
            raise ShapeError(f"interpolate of {fmt_shape(self.shape)}: {len(spatial)} spatial "
                             f"sizes needed, got {sizes}")
        Tensor = self._tensor_class()
        x = self._floating()
        for k, (n_in, n_out, sc) in enumerate(zip(spatial, sizes, scales)):
            m = Tensor(_resize_matrix(n_in, n_out, mode, bool(align_corners), sc)).cast(x.dtype)
            axis = 2 + k
            moved = x.transpose(axis, -1)
            x = (moved @ m.T).transpose(axis, -1)
        return x


@functools.lru_cache(maxsize=16)
def _causal_keep(l_len: int, s_len: int) -> np.ndarray:
    """The places j <= i of an (l_len, s_len) score matrix, made once per shape and shared
    read-only (np.tril took 2.3 ms at 1024 x 1024, a fifth of a causal attention's
    training step)."""
    keep = np.tril(np.ones((l_len, s_len), np.bool_))
    keep.flags.writeable = False
    return keep
