"""Convolution and pooling of the `Tensor` (a mixin class; `Tensor` inherits it).

Every op here is a window view built from movement ops (pad, strided slices, stack)
followed by a matmul (convolution) or a reduction (pooling): the compiler sees only core
uop ops and fuses the views into the kernels that read them. Keywords and defaults follow
`torch.nn.functional`; padding also takes the flat (left, right, top, bottom) form.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from uopc.frontend.dtypes import lowest
from uopc.frontend.tensor_protocol import TensorMixin
from uopc.uopdialect.shapes import ShapeError, fmt_shape


def pair(v: int | Sequence[int], what: str) -> tuple[int, int]:
    """An int or a pair of ints as a pair (kernel sizes, strides, dilations)."""
    if isinstance(v, int):
        return (v, v)
    if len(v) != 2:
        raise ShapeError(f"{what} takes an int or a pair (height, width), got {tuple(v)}")
    return (int(v[0]), int(v[1]))


def padding_of(padding: int | Sequence[int], what: str) -> tuple[tuple[int, int], tuple[int, int]]:
    """((top, bottom), (left, right)) from an int, a (height, width) pair, or the flat
    (left, right, top, bottom) of `pad`."""
    if isinstance(padding, int):
        padding = (padding, padding)
    p = tuple(int(v) for v in padding)
    if len(p) == 2:
        return (p[0], p[0]), (p[1], p[1])
    if len(p) == 4:
        return (p[2], p[3]), (p[0], p[1])
    raise ShapeError(f"{what}: padding takes an int, (height, width) or (left, right, top, "
                     f"bottom), got {p}")


class Spatial(TensorMixin):
    """conv2d, max_pool2d, avg_pool2d on (N, C, H, W) tensors."""

    __slots__ = ()

    def _patches(self, kernel: tuple[int, int], stride: tuple[int, int],
                 padding: tuple[tuple[int, int], tuple[int, int]], fill: Any, what: str,
                 dilation: tuple[int, int] = (1, 1), ceil_mode: bool = False) -> Any:
        """The (KH*KW, N, C, OH, OW) windows of an (N, C, H, W) input. `ceil_mode` adds
        the last partial window of each axis when it starts inside the input or its
        leading padding (PyTorch's rule), padding with `fill` as far as it reaches."""
        if self.ndim != 4:
            raise ShapeError(f"{what} takes an (N, C, H, W) input, got {fmt_shape(self.shape)}")
        (kh, kw), (sh, sw), (dh, dw) = kernel, stride, dilation
        if min(kh, kw, sh, sw, dh, dw) <= 0 or min(*padding[0], *padding[1]) < 0:
            raise ShapeError(f"{what}: kernel size, stride and dilation must be positive and "
                             f"padding non-negative")
        spans = (dh * (kh - 1) + 1, dw * (kw - 1) + 1)
        extra, outs = [], []
        for size, (lo, hi), span, step in zip(self.shape[2:], padding, spans, (sh, sw)):
            room = size + lo + hi - span
            out = (-(-room // step) if ceil_mode else room // step) + 1
            if ceil_mode and (out - 1) * step >= size + lo:
                out -= 1
            if room < 0 or out <= 0:
                raise ShapeError(f"{what}: a {kh}x{kw} window (dilation {dh}x{dw}) does not "
                                 f"fit the input {fmt_shape(self.shape)} padded by {padding}")
            extra.append(max(0, (out - 1) * step + span - (size + lo + hi)))
            outs.append(out)
        (pt, pb), (pl, pr) = padding
        x = self.pad((None, None, (pt, pb + extra[0]), (pl, pr + extra[1])), value=fill)
        oh, ow = outs
        views = [x[:, :, i * dh:i * dh + sh * (oh - 1) + 1:sh, j * dw:j * dw + sw * (ow - 1) + 1:sw]
                 for i in range(kh) for j in range(kw)]
        return views[0].stack(*views[1:])

    def conv2d(self, weight: Any, bias: Any = None, stride: int | Sequence[int] = 1,
               padding: int | Sequence[int] = 0, dilation: int | Sequence[int] = 1,
               groups: int = 1) -> Any:
        """2-D convolution (cross-correlation) of (N, C, H, W) with (O, C/groups, KH, KW)
        weights, as torch.nn.functional.conv2d."""
        if weight.ndim != 4 or self.ndim != 4 or groups <= 0 or self.shape[1] % groups or \
                weight.shape[0] % groups or weight.shape[1] * groups != self.shape[1]:
            raise ShapeError(f"conv2d of input {fmt_shape(self.shape)} with weight "
                             f"{fmt_shape(weight.shape)} and groups={groups}: expected "
                             f"(N, C, H, W) and (O, C/groups, KH, KW), C and O divisible "
                             f"by groups")
        n, c = self.shape[:2]
        o, cg, kh, kw = weight.shape
        cols = self._patches((kh, kw), pair(stride, "conv2d stride"),
                             padding_of(padding, "conv2d"), 0, "conv2d",
                             pair(dilation, "conv2d dilation"))
        oh, ow = cols.shape[3], cols.shape[4]
        # (KH*KW, N, C, OH, OW) -> (N, groups, OH*OW, C/groups*KH*KW): one batched matmul
        cols = cols.permute(1, 3, 4, 2, 0).reshape(n, oh * ow, groups, cg * kh * kw)
        cols = cols.permute(0, 2, 1, 3)
        w = weight.reshape(groups, o // groups, cg * kh * kw).transpose(-1, -2)
        out = (cols @ w).permute(0, 1, 3, 2).reshape(n, o, oh, ow)
        return out if bias is None else out + bias.reshape(1, o, 1, 1)

    def conv1d(self, weight: Any, bias: Any = None, stride: int = 1, padding: int = 0,
               dilation: int = 1, groups: int = 1) -> Any:
        """1-D convolution of (N, C, L) with (O, C/groups, K) weights: conv2d on H = 1."""
        if self.ndim != 3 or weight.ndim != 3:
            raise ShapeError(f"conv1d of input {fmt_shape(self.shape)} with weight "
                             f"{fmt_shape(weight.shape)}: expected (N, C, L) and (O, C/groups, K)")
        pads = (padding, padding) if isinstance(padding, int) else tuple(padding)
        out = self.unsqueeze(2).conv2d(weight.unsqueeze(2), bias, (1, stride),
                                       (pads[0], pads[1], 0, 0), (1, dilation), groups)
        return out.squeeze(2)

    def max_pool2d(self, kernel_size: int | Sequence[int] = 2,
                   stride: int | Sequence[int] | None = None,
                   padding: int | Sequence[int] = 0, dilation: int | Sequence[int] = 1,
                   ceil_mode: bool = False, return_indices: bool = False) -> Any:
        """The maximum of each window; padding never wins (it is -inf, or INT_MIN for
        integers, which keep their type). `return_indices` also gives each maximum's
        flat index h * W + w in its input plane (int64), as PyTorch does."""
        kernel = pair(kernel_size, "max_pool2d kernel_size")
        strides = kernel if stride is None else pair(stride, "max_pool2d stride")
        pads = padding_of(padding, "max_pool2d")
        if isinstance(padding, Sequence) and len(padding) != 2:
            raise ShapeError(f"max_pool2d: padding takes an int or (height, width), got "
                             f"{tuple(padding)}")
        fill = lowest(self.dtype)
        x = self.cast("i32") if self.dtype == "i1" else self
        args = (kernel, strides, pads, fill, "max_pool2d",
                pair(dilation, "max_pool2d dilation"), ceil_mode)
        cols = x._patches(*args)
        out = cols.max(0)
        if self.dtype == "i1":
            out = out.cast("i1")
        if not return_indices:
            return out
        h, w = self.shape[2:]
        flat = self.arange(h * w, dtype="i32").reshape(1, 1, h, w)  # index arithmetic in i32
        where = flat._patches(*args[:3], -1, *args[4:])  # (K, 1, 1, OH, OW)
        which = cols.argmax(0)  # first maximum's window position, (N, C, OH, OW)
        k = cols.shape[0]
        pick = which.unsqueeze(0).eq(self.arange(k).reshape(k, 1, 1, 1, 1))
        return out, pick.where(where, 0).sum(0, dtype="i32").cast("i64")

    def avg_pool2d(self, kernel_size: int | Sequence[int] = 2,
                   stride: int | Sequence[int] | None = None,
                   padding: int | Sequence[int] = 0, ceil_mode: bool = False,
                   count_include_pad: bool = True) -> Any:
        """The mean of each window (the zero padding counted, unless `count_include_pad`
        is False; the extra cells of `ceil_mode` never count), as PyTorch."""
        kernel = pair(kernel_size, "avg_pool2d kernel_size")
        strides = kernel if stride is None else pair(stride, "avg_pool2d stride")
        pads = padding_of(padding, "avg_pool2d")
        x = self._floating()
        args = (kernel, strides, pads, 0, "avg_pool2d", (1, 1), ceil_mode)
        total = x._patches(*args).sum(0)
        if count_include_pad and not ceil_mode:
            return total / (kernel[0] * kernel[1])
        (pt, pb), (pl, pr) = pads
        h, w = self.shape[2:]
        counted = self.ones(1, 1, h, w)
        if count_include_pad:
            counted = counted.pad((None, None, (pt, pb), (pl, pr)), value=1)
            args = (kernel, strides, ((0, 0), (0, 0)), 0, "avg_pool2d", (1, 1), ceil_mode)
        count = counted._patches(*args).sum(0)
        return total / count

    def conv_transpose2d(self, weight: Any, bias: Any = None, stride: int | Sequence[int] = 1,
                         padding: int | Sequence[int] = 0,
                         output_padding: int | Sequence[int] = 0, groups: int = 1,
                         dilation: int | Sequence[int] = 1) -> Any:
        """The transpose of conv2d (the gradient of its input), weights (C_in, C_out/groups,
        KH, KW), as torch.nn.functional.conv_transpose2d: the input with stride - 1 zeros
        between its elements, padded by dilation * (K - 1) - padding (+ output_padding
        after), convolved with the flipped, transposed weights."""
        if weight.ndim != 4 or self.ndim != 4 or weight.shape[0] != self.shape[1] or \
                groups <= 0 or self.shape[1] % groups:
            raise ShapeError(f"conv_transpose2d of input {fmt_shape(self.shape)} with weight "
                             f"{fmt_shape(weight.shape)} and groups={groups}: expected "
                             f"(N, C, H, W) and (C, C_out/groups, KH, KW)")
        (sh, sw), (dh, dw) = pair(stride, "stride"), pair(dilation, "dilation")
        (ph, pw), (oh, ow) = pair(padding, "padding"), pair(output_padding, "output_padding")
        n, c, h, w = self.shape
        _, og, kh, kw = weight.shape
        x = self.reshape(n, c, h, 1, w, 1).pad((None, None, None, (0, sh - 1), None, (0, sw - 1)))
        x = x.reshape(n, c, h * sh, w * sw)[:, :, :(h - 1) * sh + 1, :(w - 1) * sw + 1]
        top, left = dh * (kh - 1) - ph, dw * (kw - 1) - pw
        x = x.pad((left, left + ow, top, top + oh))
        flipped = weight.reshape(groups, c // groups, og, kh, kw).transpose(1, 2)
        flipped = flipped.reshape(groups * og, c // groups, kh, kw).flip(2, 3)
        return x.conv2d(flipped, bias, dilation=(dh, dw), groups=groups)
