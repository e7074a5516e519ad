"""The ONNX op table: each standard-domain op written once, onto uopc's Tensor API.

`OPS[op_type](node, *inputs)` builds one ONNX node's outputs from its inputs: `Tensor`s,
or None for an omitted optional input. It returns a Tensor, a tuple of them (one per
output the op has, in order), or a numpy array for a value that is known on the host
from shapes alone (`Shape`, `Size`, `Constant`): those never reach the compiled graph
as computations. `node` (a `Node`) gives the attributes with ONNX's defaults, the
opset, and `node.static(k)`: input k's value as a numpy array, for the inputs that ONNX
passes as tensors but that decide shapes (Reshape's shape, Slice's starts, TopK's k).
Such a value is usually an initializer or comes from `Shape`; when it is computed from
a graph input, the importer compiles the model for that input's value
(`uopc.onnx.importer`).

The table is written for opset 13 and newer (older models are upgraded first,
`uopc.onnx.reader`); where an attribute became an input in a later opset (axes of the
reductions at 18, Split's sizes at 13) both forms are read. An attribute value or input
the table does not implement raises `OnnxError` naming the op, what it found and what
it supports; so does an op missing from the table (`UNSUPPORTED` below says why the
well-known ones are absent).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
import onnx
from onnx import helper

from uopc.frontend.dtypes import lowest
from uopc.frontend.tensor import Tensor
from uopc.onnx.reader import OnnxError, numpy_dtype
from uopc.uopdialect.dtypes import BY_NUMPY, DTYPES

_REQUIRED = object()


class Node:
    """One ONNX node while its outputs are built: attributes, opset, static inputs."""

    def __init__(self, proto: onnx.NodeProto, opset: int,
                 static: Callable[[int], np.ndarray], attrs: dict[str, Any],
                 run_graph: Callable[[onnx.GraphProto, Sequence[Any]], list[Any]]):
        self.proto = proto
        self.op_type = proto.op_type
        self.opset = opset
        self._static = static
        self.attrs = attrs
        self.outputs = len(proto.output)
        #: run a subgraph (a branch or loop body) in this node's scope: its inputs bound
        #: to the given Tensors (or numpy arrays, known on the host); its outputs, numpy
        #: arrays where they are known on the host
        self.run_graph = run_graph

    @property
    def label(self) -> str:
        return f"node {self.proto.name or self.proto.output[0]!r} ({self.op_type})"

    def attr(self, name: str, default: Any = _REQUIRED) -> Any:
        if name in self.attrs:
            return self.attrs[name]
        if default is _REQUIRED:
            raise OnnxError(f"{self.label}: the required attribute {name!r} is missing")
        return default

    def static(self, k: int) -> np.ndarray | None:
        """Input k's value on the host (None when the input is omitted)."""
        if k >= len(self.proto.input) or not self.proto.input[k]:
            return None
        return self._static(k)

    def ints(self, k: int) -> list[int] | None:
        value = self.static(k)
        return None if value is None else [int(v) for v in np.asarray(value).reshape(-1)]

    def axes(self, k: int, name: str = "axes") -> list[int] | None:
        """Axes given as input k (newer opsets) or as the attribute `name` (older)."""
        from_input = self.ints(k)
        if from_input is not None:
            return from_input
        found = self.attrs.get(name)
        return None if found is None else [int(a) for a in found]

    def unsupported(self, what: str) -> OnnxError:
        return OnnxError(f"{self.label}: {what} is not supported by uopc")


def _axis(axis: int, rank: int, node: Node) -> int:
    if not -rank <= axis < max(rank, 1):
        raise OnnxError(f"{node.label}: axis {axis} is out of range for rank {rank}")
    return axis % rank if rank else 0


def _result_like(x: Tensor, ref: Tensor) -> Tensor:
    return x.cast(ref.dtype)


# ---- elementwise -----------------------------------------------------------------------
def _div(n: Node, a: Tensor, b: Tensor) -> Tensor:
    if a.is_floating_point():
        return a / b
    return a.div(b, rounding_mode="trunc").cast(a.dtype)


def _mod(n: Node, a: Tensor, b: Tensor) -> Tensor:
    return a.fmod(b) if n.attr("fmod", 0) else a % b


def _variadic(combine: Callable[[Tensor, Tensor], Tensor]) -> Callable[..., Tensor]:
    def apply(n: Node, *xs: Tensor) -> Tensor:
        out = xs[0]
        for x in xs[1:]:
            out = combine(out, x)
        return out
    return apply


def _mean(n: Node, *xs: Tensor) -> Tensor:
    return _variadic(lambda a, b: a + b)(n, *xs) / len(xs)


def _pow(n: Node, a: Tensor, b: Tensor) -> Tensor:
    if a.is_floating_point() and not b.is_floating_point():
        b = b.cast(a.dtype)
    return (a ** b).cast(a.dtype)


def _clip(n: Node, x: Tensor, lo: Tensor | None = None, hi: Tensor | None = None) -> Tensor:
    if lo is not None:
        x = (x < lo).where(lo.cast(x.dtype), x)
    if hi is not None:
        x = (x > hi).where(hi.cast(x.dtype), x)
    return x


def _is_inf(n: Node, x: Tensor) -> Tensor:
    neg, pos = n.attr("detect_negative", 1), n.attr("detect_positive", 1)
    inf = x.isinf()
    if neg and pos:
        return inf
    if not neg and not pos:
        return inf & False
    return inf & (x > 0 if pos else x < 0)


def _bit_shift(n: Node, x: Tensor, s: Tensor) -> Tensor:
    """Shifts by a negative amount or by the width or more give 0 (a right shift of a
    negative signed value: -1), as ONNX's reference does; C leaves them undefined."""
    bits = 8 * np.dtype(_numpy(x.dtype)).itemsize
    outside = (s < 0) | (s >= bits)
    inside = outside.where(0, s).cast(s.dtype)
    if n.attr("direction") == "LEFT":
        return outside.where(0, x << inside).cast(x.dtype)
    return outside.where((x < 0).where(-1, 0), x >> inside).cast(x.dtype)


def _gelu(n: Node, x: Tensor) -> Tensor:
    approximate = n.attr("approximate", "none")
    return x.gelu(approximate.decode() if isinstance(approximate, bytes) else approximate)


def _hard_sigmoid(n: Node, x: Tensor) -> Tensor:
    y = x * n.attr("alpha", 0.2) + n.attr("beta", 0.5)
    return y.clamp(0.0, 1.0)


def _selu(n: Node, x: Tensor) -> Tensor:
    alpha, gamma = n.attr("alpha", 1.67326319217681884765625), n.attr("gamma", 1.05070102214813232421875)
    return (x > 0).where(x, (x.exp() - 1) * alpha) * gamma


def _shrink(n: Node, x: Tensor) -> Tensor:
    bias, lambd = n.attr("bias", 0.0), n.attr("lambd", 0.5)
    zero = x * 0
    return (x < -lambd).where(x + bias, (x > lambd).where(x - bias, zero)).cast(x.dtype)


def _prelu(n: Node, x: Tensor, slope: Tensor) -> Tensor:
    if slope.ndim == 1 and x.ndim > 2 and slope.shape[0] == x.shape[1] != x.shape[-1]:
        slope = _channel(slope, x.ndim)  # opset 6's per-channel slope, which the version
        # converter keeps as it is
    return (x < 0).where(x * slope, x)


def _uop_dtype(elem_type: int, what: str) -> str:
    """The Tensor dtype (IR name) of ONNX element type `elem_type`."""
    return BY_NUMPY[numpy_dtype(elem_type, what)].name


def _numpy(dtype: str) -> np.dtype:
    return np.dtype(DTYPES[dtype].numpy)


def _cast(n: Node, x: Tensor) -> Tensor:
    return x.cast(_uop_dtype(n.attr("to"), f"{n.label}'s target type"))


# ---- shapes ---------------------------------------------------------------------------
def _shape(n: Node, x: Tensor) -> np.ndarray:
    dims = x.shape[n.attr("start", 0):n.attr("end", len(x.shape))] \
        if "end" in n.attrs else x.shape[n.attr("start", 0):]
    return np.array(dims, dtype=np.int64)


def _constant(n: Node) -> np.ndarray:
    tensors = {"value_float": np.float32, "value_int": np.int64,
               "value_floats": np.float32, "value_ints": np.int64}
    for name, dtype in tensors.items():
        if name in n.attrs:
            return np.array(n.attrs[name], dtype=dtype)
    if "value" in n.attrs:
        return n.attrs["value"]
    raise n.unsupported(f"a Constant with attributes {sorted(n.attrs)} (strings, sparse)")


def _constant_of_shape(n: Node, shape: Tensor) -> Tensor:
    value = n.attr("value", np.zeros(1, np.float32))
    dims = tuple(n.ints(0) or ())
    return Tensor.full(dims, value.reshape(-1)[0].item(), BY_NUMPY[value.dtype].name)


def _reshape(n: Node, x: Tensor, shape: Tensor) -> Tensor:
    dims = n.ints(1) or []
    if not n.attr("allowzero", 0):
        dims = [x.shape[k] if d == 0 else d for k, d in enumerate(dims)]
    return x.reshape(tuple(dims))


def _flatten(n: Node, x: Tensor) -> Tensor:
    axis = n.attr("axis", 1)
    axis = axis + x.ndim if axis < 0 else axis
    return x.reshape((math.prod(x.shape[:axis]), math.prod(x.shape[axis:])))


def _squeeze(n: Node, x: Tensor, axes: Tensor | None = None) -> Tensor:
    found = n.axes(1)
    if found is None:
        found = [k for k, d in enumerate(x.shape) if d == 1]
    drop = {_axis(a, x.ndim, n) for a in found}
    return x.reshape(tuple(d for k, d in enumerate(x.shape) if k not in drop))


def _unsqueeze(n: Node, x: Tensor, axes: Tensor | None = None) -> Tensor:
    found = n.axes(1) or []
    rank = x.ndim + len(found)
    new = {_axis(a, rank, n) for a in found}
    dims = iter(x.shape)
    return x.reshape(tuple(1 if k in new else next(dims) for k in range(rank)))


def _transpose(n: Node, x: Tensor) -> Tensor:
    perm = n.attr("perm", list(range(x.ndim))[::-1])
    return x.permute(*perm) if x.ndim else x


def _concat(n: Node, *xs: Tensor) -> Tensor:
    return Tensor.cat(list(xs), dim=_axis(n.attr("axis"), xs[0].ndim, n))


def _split(n: Node, x: Tensor, split: Tensor | None = None) -> tuple:
    axis = _axis(n.attr("axis", 0), x.ndim, n)
    sizes = n.ints(1) if split is not None else n.attrs.get("split")
    if sizes is None:
        parts = n.attr("num_outputs", n.outputs)
        size = -(-x.shape[axis] // parts)
        sizes = [min(size, x.shape[axis] - size * k) for k in range(parts)]
    return tuple(x.split([int(s) for s in sizes], dim=axis))


def _slice(n: Node, x: Tensor, *_: Tensor | None) -> Tensor:
    starts, ends = n.ints(1) or [], n.ints(2) or []
    axes = n.ints(3) or list(range(len(starts)))
    steps = n.ints(4) or [1] * len(starts)
    index: list[slice] = [slice(None)] * x.ndim
    for start, end, axis, step in zip(starts, ends, axes, steps):
        axis = _axis(axis, x.ndim, n)
        size = x.shape[axis]
        if step == 0:
            raise OnnxError(f"{n.label}: a step of 0 on axis {axis}")
        start = start + size if start < 0 else start
        end = end + size if end < 0 else end
        if step > 0:
            start, end = min(max(start, 0), size), min(max(end, 0), size)
            index[axis] = slice(start, max(end, start), step)
        else:
            start, end = min(max(start, 0), size - 1), min(max(end, -1), size - 1)
            index[axis] = slice(start, end if end >= 0 else None, step) if start > end \
                else slice(0, 0)
    return x[tuple(index)]


def _wrapped(index: Tensor, size: int) -> Tensor:
    index = index.cast("i64")
    return (index < 0).where(index + size, index)


def _gather(n: Node, x: Tensor, index: Tensor) -> Tensor:
    return _take(x, _wrapped(index, x.shape[_axis(n.attr("axis", 0), x.ndim, n)]),
                 _axis(n.attr("axis", 0), x.ndim, n))


def _take(x: Tensor, index: Tensor, axis: int) -> Tensor:
    """x indexed along `axis` by `index` (numpy's take): the indexed axis moved first,
    indexed, and the index's axes moved back to where `axis` was."""
    if axis == 0:
        return x[index]
    rest = [k for k in range(x.ndim) if k != axis]
    taken = x.permute(axis, *rest)[index]
    m = index.ndim
    order = [m + k for k in range(axis)] + list(range(m)) + [m + k for k in range(axis, x.ndim - 1)]
    return taken.permute(*order) if taken.ndim else taken


def _gather_elements(n: Node, x: Tensor, index: Tensor) -> Tensor:
    axis = _axis(n.attr("axis", 0), x.ndim, n)
    return x.gather(axis, _wrapped(index, x.shape[axis]))


def _gather_nd(n: Node, x: Tensor, index: Tensor) -> Tensor:
    if n.attr("batch_dims", 0):
        raise n.unsupported("batch_dims > 0")
    k = index.shape[-1]
    flat = x.reshape((math.prod(x.shape[:k]),) + tuple(x.shape[k:]))
    linear = None
    for axis in range(k):
        part = _wrapped(index[..., axis], x.shape[axis]) * math.prod(x.shape[axis + 1:k])
        linear = part if linear is None else linear + part
    assert linear is not None
    return flat[linear]


def _expand(n: Node, x: Tensor, shape: Tensor) -> Tensor:
    dims = tuple(np.broadcast_shapes(tuple(x.shape), tuple(n.ints(1) or ())))
    return x.expand(dims)


def _tile(n: Node, x: Tensor, repeats: Tensor) -> Tensor:
    return x.repeat(*(n.ints(1) or ()))


def _range(n: Node, start: Tensor, limit: Tensor, delta: Tensor) -> Tensor:
    first, last, step = (n.static(k).item() for k in range(3))  # type: ignore[union-attr]
    count = max(int(math.ceil((last - first) / step)), 0)
    steps = Tensor.arange(count, dtype="i64").cast(start.dtype)
    return (steps * step + first).cast(start.dtype)


_PAD_MODES = {"constant": "constant", "reflect": "reflect", "edge": "replicate",
              "wrap": "circular"}


def _pad(n: Node, x: Tensor, pads: Tensor, value: Tensor | None = None,
         axes: Tensor | None = None) -> Tensor:
    mode = n.attr("mode", "constant")
    mode = mode.decode() if isinstance(mode, bytes) else mode
    amounts = n.ints(1) or []
    chosen = [_axis(a, x.ndim, n) for a in (n.ints(3) or range(x.ndim))]
    widths: list[Any] = [None] * x.ndim
    for k, axis in enumerate(chosen):
        widths[axis] = (amounts[k], amounts[k + len(chosen)])
    fill = 0 if value is None or n.static(2).size == 0 else n.static(2).reshape(-1)[0].item()  # type: ignore[union-attr]
    return x.pad(widths, fill, mode=_PAD_MODES[mode])


def _trilu(n: Node, x: Tensor, k: Tensor | None = None) -> Tensor:
    diagonal = (n.ints(1) or [0])[0]
    return x.triu(diagonal) if n.attr("upper", 1) else x.tril(diagonal)


def _eye_like(n: Node, x: Tensor) -> Tensor:
    dtype = _uop_dtype(n.attr("dtype"), n.label) if "dtype" in n.attrs else x.dtype
    rows, cols = x.shape
    ids = Tensor.arange(rows, dtype="i64").reshape((rows, 1)) + n.attr("k", 0)
    return ids.eq(Tensor.arange(cols, dtype="i64").reshape((1, cols))).cast(dtype)


def _one_hot(n: Node, index: Tensor, depth: Tensor, values: Tensor) -> Tensor:
    size = int(n.static(1).reshape(-1)[0])  # type: ignore[union-attr]
    rank = index.ndim + 1
    axis = _axis(n.attr("axis", -1), rank, n)
    index = _wrapped(index, size).unsqueeze(axis)
    positions = Tensor.arange(size, dtype="i64").reshape(
        tuple(size if k == axis else 1 for k in range(rank)))
    return index.eq(positions).where(values[1], values[0])


def _depth_to_space(n: Node, x: Tensor) -> Tensor:
    b = n.attr("blocksize")
    N, C, H, W = x.shape
    if n.attr("mode", "DCR") in ("CRD", b"CRD"):
        y = x.reshape((N, C // (b * b), b, b, H, W)).permute(0, 1, 4, 2, 5, 3)
    else:
        y = x.reshape((N, b, b, C // (b * b), H, W)).permute(0, 3, 4, 1, 5, 2)
    return y.reshape((N, C // (b * b), H * b, W * b))


def _space_to_depth(n: Node, x: Tensor) -> Tensor:
    b = n.attr("blocksize")
    N, C, H, W = x.shape
    y = x.reshape((N, C, H // b, b, W // b, b))
    y = y.permute(0, 1, 3, 5, 2, 4) if n.attr("mode", "DCR") == "CRD" else \
        y.permute(0, 3, 5, 1, 2, 4)
    return y.reshape((N, C * b * b, H // b, W // b))


# ---- reductions ------------------------------------------------------------------------
def _reduction(kind: str) -> Callable[..., Tensor]:
    def apply(n: Node, x: Tensor, axes: Tensor | None = None) -> Tensor:
        found = n.axes(1)
        keep = bool(n.attr("keepdims", 1))
        if not found:
            if n.attr("noop_with_empty_axes", 0):
                return x
            found = list(range(x.ndim))
        dims = tuple(_axis(a, x.ndim, n) for a in found)
        if kind == "sum":
            return x.sum(dims, keepdim=keep, dtype=x.dtype)
        if kind == "mean":
            return x.mean(dims, keepdim=keep)
        if kind == "max":
            return x.max(dims, keepdim=keep)
        if kind == "min":
            return x.min(dims, keepdim=keep)
        if kind == "prod":
            return x.prod(dims, keepdim=keep, dtype=x.dtype)
        if kind == "l1":
            return x.abs().sum(dims, keepdim=keep, dtype=x.dtype)
        if kind == "l2":
            return (x * x).sum(dims, keepdim=keep, dtype=x.dtype).sqrt().cast(x.dtype)
        if kind == "sum_square":
            return (x * x).sum(dims, keepdim=keep, dtype=x.dtype)
        if kind == "log_sum":
            return x.sum(dims, keepdim=keep, dtype=x.dtype).log()
        top = x.max(dims, keepdim=True)
        top = top.isinf().where(0, top).cast(x.dtype)  # all -inf (or inf): no shift
        out = (x - top).exp().sum(dims, keepdim=True).log() + top
        return out if keep else out.reshape(tuple(d for k, d in enumerate(x.shape)
                                                  if k not in dims))
    return apply


def _arg(kind: str) -> Callable[..., Tensor]:
    def apply(n: Node, x: Tensor) -> Tensor:
        axis = _axis(n.attr("axis", 0), x.ndim, n)
        keep = bool(n.attr("keepdims", 1))
        if n.attr("select_last_index", 0):
            flipped = x.flip(axis)
            found = getattr(flipped, kind)(axis, keepdim=keep)
            return (x.shape[axis] - 1 - found).cast("i64")
        return getattr(x, kind)(axis, keepdim=keep).cast("i64")
    return apply


def _softmax(kind: str) -> Callable[..., Tensor]:
    def apply(n: Node, x: Tensor) -> Tensor:
        axis = _axis(n.attr("axis", -1), x.ndim, n)
        if kind == "softmax":
            return x.softmax(axis)
        if kind == "log_softmax":
            return x.log_softmax(axis)
        size = x.shape[axis]
        first = x.argmax(axis, keepdim=True)
        positions = Tensor.arange(size, dtype="i64").reshape(
            tuple(size if k == axis else 1 for k in range(x.ndim)))
        return first.eq(positions).cast(x.dtype)
    return apply


def _scan(kind: str) -> Callable[..., Tensor]:
    def apply(n: Node, x: Tensor, axis: Tensor) -> Tensor:
        dim = _axis((n.ints(1) or [0])[0], x.ndim, n)
        y = x.flip(dim) if n.attr("reverse", 0) else x
        out = getattr(y, kind)(dim).cast(x.dtype)
        if n.attr("exclusive", 0):  # shifted by one: the first is the empty sum (product)
            widths: list[Any] = [None] * x.ndim
            widths[dim] = (1, 0)
            out = out.pad(widths, 0 if kind == "cumsum" else 1)[
                tuple(slice(0, s) for s in x.shape)]
        return out.flip(dim) if n.attr("reverse", 0) else out
    return apply


def _topk(n: Node, x: Tensor, k: Tensor) -> tuple[Tensor, Tensor]:
    count = (n.ints(1) or [0])[0]
    axis = _axis(n.attr("axis", -1), x.ndim, n)
    values, indices = x.topk(count, axis, largest=bool(n.attr("largest", 1)))
    return values, indices.cast("i64")


# ---- linear algebra, convolution, pooling ------------------------------------------------
def _gemm(n: Node, a: Tensor, b: Tensor, c: Tensor | None = None) -> Tensor:
    a = a.transpose(0, 1) if n.attr("transA", 0) else a
    b = b.transpose(0, 1) if n.attr("transB", 0) else b
    y = a @ b
    alpha, beta = n.attr("alpha", 1.0), n.attr("beta", 1.0)
    if alpha != 1.0:
        y = y * alpha
    if c is not None:
        y = y + (c * beta if beta != 1.0 else c)
    return y.cast(a.dtype)


def _spatial_pads(n: Node, x: Tensor, kernel: Sequence[int], strides: Sequence[int],
                  dilations: Sequence[int]) -> list[tuple[int, int]]:
    """(begin, end) padding of each spatial axis from `pads` or `auto_pad`."""
    spatial = x.shape[2:]
    auto = n.attr("auto_pad", "NOTSET")
    auto = auto.decode() if isinstance(auto, bytes) else auto
    if auto in ("SAME_UPPER", "SAME_LOWER"):
        pairs = []
        for size, k, s, d in zip(spatial, kernel, strides, dilations):
            total = max((-(-size // s) - 1) * s + (k - 1) * d + 1 - size, 0)
            small = total // 2
            pairs.append((small, total - small) if auto == "SAME_UPPER" else (total - small, small))
        return pairs
    if auto == "VALID":
        return [(0, 0)] * len(spatial)
    pads = n.attr("pads", [0] * (2 * len(spatial)))
    return [(pads[k], pads[k + len(spatial)]) for k in range(len(spatial))]


def _spatial(n: Node, x: Tensor, kernel: Sequence[int] | None = None) -> tuple:
    """kernel, strides, dilations and pads of a conv or pool on 1-D or 2-D input."""
    if x.ndim not in (3, 4):
        raise n.unsupported(f"a {x.ndim - 2}-D input (uopc has 1-D, 2-D and, for Conv, "
                            f"AveragePool, 3-D {n.op_type})")
    rank = x.ndim - 2
    kernel = list(n.attr("kernel_shape", kernel))
    strides = list(n.attr("strides", [1] * rank))
    dilations = list(n.attr("dilations", [1] * rank))
    return kernel, strides, dilations, _spatial_pads(n, x, kernel, strides, dilations)


def _over_depth(op2d: Callable[..., Tensor], combine: str) -> Callable[..., Tensor]:
    """A 3-D conv or pool from its 2-D table entry: the input padded along depth, one
    strided depth slice per kernel tap, each slice's depth folded into the batch and run
    through the 2-D op (with the node's height and width attributes), and the taps
    combined (conv: summed; average pool: averaged). 1-D and 2-D
    inputs go to the 2-D entry directly."""
    def apply(n: Node, x: Tensor, w: Tensor | None = None, b: Tensor | None = None) -> Tensor:
        if x.ndim != 5:
            return op2d(n, x, w, b) if w is not None else op2d(n, x)
        kernel = list(n.attr("kernel_shape", w.shape[2:] if w is not None else None))
        strides = list(n.attr("strides", [1] * 3))
        dilations = list(n.attr("dilations", [1] * 3))
        pads = _spatial_pads(n, x, kernel, strides, dilations)
        attrs = dict(n.attrs, kernel_shape=kernel[1:], strides=strides[1:],
                     dilations=dilations[1:], auto_pad="NOTSET",
                     pads=[pads[1][0], pads[2][0], pads[1][1], pads[2][1]])
        flat = Node(n.proto, n.opset, n._static, attrs, n.run_graph)
        (k, s, d), (p0, p1) = (kernel[0], strides[0], dilations[0]), pads[0]
        span = d * (k - 1) + 1
        size = x.shape[2] + p0 + p1
        ceil = bool(n.attr("ceil_mode", 0)) and w is None
        steps = (-(-(size - span) // s) if ceil else (size - span) // s) + 1
        extra = max((steps - 1) * s + span - size, 0)

        def taps(t: Tensor, value: Any, before: int = p0, after: int = p1) -> list[Tensor]:
            padded = t.pad([None, None, (before, after + extra), None, None], value)
            return [padded[:, :, j * d:j * d + s * (steps - 1) + 1:s] for j in range(k)]

        def through_2d(piece: Tensor, weight: Tensor | None) -> Tensor:
            N, C, D, H, W = piece.shape
            folded = piece.permute(0, 2, 1, 3, 4).reshape((N * D, C, H, W))
            out = op2d(flat, folded, weight) if weight is not None else op2d(flat, folded)
            return out.reshape((N, D) + tuple(out.shape[1:])).permute(0, 2, 1, 3, 4)

        if combine == "sum":
            assert w is not None
            parts = [through_2d(piece, w[:, :, j]) for j, piece in enumerate(taps(x, 0))]
            out = parts[0]
            for part in parts[1:]:
                out = out + part
            return out if b is None else out + _channel(b, 5)
        include = bool(n.attr("count_include_pad", 0))
        attrs_sum = dict(flat.attrs, count_include_pad=1)
        summing = Node(n.proto, n.opset, n._static, attrs_sum, n.run_graph)

        def window_sum(t: Tensor, before: int = p0, after: int = p1) -> Tensor:
            out = None
            for piece in taps(t, 0, before, after):
                N, C, D, H, W = piece.shape
                folded = piece.permute(0, 2, 1, 3, 4).reshape((N * D, C, H, W))
                part = op2d(summing, folded)
                part = part.reshape((N, D) + tuple(part.shape[1:])).permute(0, 2, 1, 3, 4)
                out = part if out is None else out + part
            assert out is not None
            return out

        total = window_sum(x)
        if include and not extra:
            return total / k
        ones = Tensor.ones(x.shape[2:], dtype=x.dtype).reshape((1, 1) + tuple(x.shape[2:]))
        if include:  # the padding counts, the cells ceil_mode adds do not
            return total / window_sum(ones.pad([None, None, (p0, p1), None, None], 1), 0, 0)
        return total / window_sum(ones)
    return apply


def _as_2d(x: Tensor) -> Tensor:
    return x.unsqueeze(2) if x.ndim == 3 else x


def _pairs_2d(values: Sequence[Any], fill: Any) -> list[Any]:
    return [fill, *values] if len(values) == 1 else list(values)


def _conv(n: Node, x: Tensor, w: Tensor, b: Tensor | None = None) -> Tensor:
    kernel, strides, dilations, pads = _spatial(n, x, w.shape[2:])
    one_d = x.ndim == 3
    pads2 = _pairs_2d(pads, (0, 0))
    y = _as_2d(x).conv2d(_as_2d(w), b, tuple(_pairs_2d(strides, 1)),
                         (pads2[1][0], pads2[1][1], pads2[0][0], pads2[0][1]),
                         tuple(_pairs_2d(dilations, 1)), n.attr("group", 1))
    return y.squeeze(2) if one_d else y


def _conv_transpose(n: Node, x: Tensor, w: Tensor, b: Tensor | None = None) -> Tensor:
    kernel, strides, dilations, _ = _spatial(n, x, w.shape[2:])
    rank = x.ndim - 2
    out_pad = list(n.attr("output_padding", [0] * rank))
    group = n.attr("group", 1)
    full = [(x.shape[2 + k] - 1) * strides[k] + (kernel[k] - 1) * dilations[k] + 1 + out_pad[k]
            for k in range(rank)]
    if "output_shape" in n.attrs:
        want = list(n.attrs["output_shape"])[-rank:]
        auto = n.attr("auto_pad", "NOTSET")
        lower = auto in ("SAME_LOWER", b"SAME_LOWER")
        pads = []
        for k in range(rank):
            total = full[k] - want[k]
            pads.append((total - total // 2, total // 2) if lower else (total // 2, total - total // 2))
    else:
        auto = n.attr("auto_pad", "NOTSET")
        if auto in ("SAME_UPPER", b"SAME_UPPER", "SAME_LOWER", b"SAME_LOWER"):
            pads = []
            for k in range(rank):
                total = max(full[k] - x.shape[2 + k] * strides[k], 0)
                upper = auto in ("SAME_UPPER", b"SAME_UPPER")
                pads.append((total // 2, total - total // 2) if upper else
                            (total - total // 2, total // 2))
        else:
            pads = _spatial_pads(n, x, kernel, strides, dilations) if auto == "NOTSET" or \
                auto == b"NOTSET" else [(0, 0)] * rank
    y = _as_2d(x).conv_transpose2d(_as_2d(w), b, tuple(_pairs_2d(strides, 1)), 0,
                                   tuple(_pairs_2d(out_pad, 0)), group,
                                   tuple(_pairs_2d(dilations, 1)))
    crop = [(p0, y.shape[2 + k + (2 - rank)] - p1) for k, (p0, p1) in
            enumerate(pads)]
    index = (slice(None), slice(None)) + ((slice(None),) if rank == 1 else ()) + \
        tuple(slice(a, e) for a, e in crop)
    y = y[index]
    return y.squeeze(2) if rank == 1 else y


def _pool_steps(size: int, k: int, s: int, d: int, p0: int, p1: int, ceil: bool) -> int:
    """Output positions of one pooled axis; with ceil_mode a last window that would start
    in the trailing padding is dropped (ONNX's rule since opset 19, and PyTorch's)."""
    span = d * (k - 1) + 1
    steps = (-(-(size + p0 + p1 - span) // s) if ceil else (size + p0 + p1 - span) // s) + 1
    if ceil and (steps - 1) * s >= size + p0:
        steps -= 1
    return steps


def _max_pool(n: Node, x: Tensor) -> Tensor:
    """The maximum of each window, one spatial axis at a time (a window's maximum is the
    maximum over one axis of the maxima over the others): k strided slices per axis, so
    large kernels (60 x 80) stay small graphs; the padding is the type's lowest value."""
    if n.outputs > 1 and n.proto.output[1]:
        raise n.unsupported("MaxPool's Indices output")
    rank = x.ndim - 2
    kernel = list(n.attr("kernel_shape"))
    strides = list(n.attr("strides", [1] * rank))
    dilations = list(n.attr("dilations", [1] * rank))
    pads = _spatial_pads(n, x, kernel, strides, dilations)
    ceil = bool(n.attr("ceil_mode", 0))
    y = x
    for axis, (k, s, d, (p0, p1)) in enumerate(zip(kernel, strides, dilations, pads), 2):
        size = x.shape[axis]
        steps = _pool_steps(size, k, s, d, p0, p1, ceil)
        extra = max((steps - 1) * s + d * (k - 1) + 1 - (size + p0 + p1), 0)
        widths: list[Any] = [None] * x.ndim
        widths[axis] = (p0, p1 + extra)
        padded = y.pad(widths, lowest(x.dtype))
        out = None
        for j in range(k):
            index = [slice(None)] * x.ndim
            index[axis] = slice(j * d, j * d + s * (steps - 1) + 1, s)
            tap = padded[tuple(index)]
            out = tap if out is None else out.maximum(tap)
        assert out is not None
        y = out
    return y


def _average_pool(n: Node, x: Tensor) -> Tensor:
    kernel, strides, dilations, pads = _spatial(n, x)
    if any(d != 1 for d in dilations):
        raise n.unsupported("AveragePool with dilations")
    one_d = x.ndim == 3
    pads2 = _pairs_2d(pads, (0, 0))
    k2, s2 = tuple(_pairs_2d(kernel, 1)), tuple(_pairs_2d(strides, 1))
    ceil = bool(n.attr("ceil_mode", 0))
    x2 = _as_2d(x).pad([None, None, *pads2])
    total = x2.avg_pool2d(k2, s2, 0, ceil)
    if not n.attr("count_include_pad", 0):
        inside = Tensor.ones(_as_2d(x).shape[2:], dtype=x.dtype).pad(pads2)
        total = total / inside.reshape((1, 1) + inside.shape).avg_pool2d(k2, s2, 0, ceil)
    return total.squeeze(2) if one_d else total


def _global_pool(kind: str) -> Callable[..., Tensor]:
    def apply(n: Node, x: Tensor) -> Tensor:
        axes = tuple(range(2, x.ndim))
        return x.mean(axes, keepdim=True) if kind == "mean" else x.max(axes, keepdim=True)
    return apply


def _channel(v: Tensor, rank: int) -> Tensor:
    """A per-channel (C,) vector shaped to broadcast over (N, C, ...)."""
    return v.reshape((1, v.shape[0]) + (1,) * (rank - 2))


def _batch_norm(n: Node, x: Tensor, scale: Tensor, bias: Tensor, mean: Tensor,
                var: Tensor) -> Tensor:
    if n.attr("training_mode", 0):
        raise n.unsupported("training_mode=1")
    eps = n.attr("epsilon", 1e-5)
    r = x.ndim
    inv = (_channel(var, r) + eps).rsqrt()
    return ((x - _channel(mean, r)) * inv * _channel(scale, r) + _channel(bias, r)).cast(x.dtype)


def _instance_norm(n: Node, x: Tensor, scale: Tensor, bias: Tensor) -> Tensor:
    axes = tuple(range(2, x.ndim))
    y = x.layernorm(axes, n.attr("epsilon", 1e-5))
    return y * _channel(scale, x.ndim) + _channel(bias, x.ndim)


def _layer_norm(n: Node, x: Tensor, scale: Tensor, bias: Tensor | None = None) -> tuple:
    axis = _axis(n.attr("axis", -1), x.ndim, n)
    eps = n.attr("epsilon", 1e-5)
    axes = tuple(range(axis, x.ndim))
    mean = x.mean(axes, keepdim=True)
    centered = x - mean
    inv = ((centered * centered).mean(axes, keepdim=True) + eps).rsqrt()
    y = centered * inv * scale
    if bias is not None:
        y = y + bias
    return y.cast(x.dtype), mean, inv


def _group_norm(n: Node, x: Tensor, scale: Tensor, bias: Tensor) -> Tensor:
    groups = n.attr("num_groups")
    N, C = x.shape[:2]
    grouped = x.reshape((N, groups, -1)).layernorm(-1, n.attr("epsilon", 1e-5)).reshape(x.shape)
    if n.opset < 21 and scale.shape[0] == groups and groups != C:  # per-group (opset 18)
        scale = scale.repeat_interleave(C // groups)
        bias = bias.repeat_interleave(C // groups)
    return grouped * _channel(scale, x.ndim) + _channel(bias, x.ndim)


def _rms_norm(n: Node, x: Tensor, scale: Tensor) -> Tensor:
    axis = _axis(n.attr("axis", -1), x.ndim, n)
    axes = tuple(range(axis, x.ndim))
    inv = ((x * x).mean(axes, keepdim=True) + n.attr("epsilon", 1e-5)).rsqrt()
    return (x * inv * scale).cast(x.dtype)


def _lp_norm(n: Node, x: Tensor) -> Tensor:
    axis = _axis(n.attr("axis", -1), x.ndim, n)
    p = n.attr("p", 2)
    norm = x.abs().sum(axis, keepdim=True) if p == 1 else (x * x).sum(axis, keepdim=True).sqrt()
    return norm.eq(0).where(0, x / norm).cast(x.dtype)  # a zero vector stays zero


def _mvn(n: Node, x: Tensor) -> Tensor:
    axes = tuple(_axis(a, x.ndim, n) for a in n.attr("axes", [0, 2, 3]))
    mean = x.mean(axes, keepdim=True)
    centered = x - mean
    return centered / ((centered * centered).mean(axes, keepdim=True).sqrt() + 1e-9)


def _dropout(n: Node, x: Tensor, ratio: Tensor | None = None,
             training: Tensor | None = None) -> tuple:
    if training is not None and bool(n.static(2)):
        raise n.unsupported("Dropout with training_mode true (random masks)")
    return x, Tensor.full(x.shape, True, "i1")


def _einsum(n: Node, *xs: Tensor) -> Tensor:
    equation = n.attr("equation")
    equation = equation.decode() if isinstance(equation, bytes) else equation
    return Tensor.einsum(equation, *xs)


def _where(n: Node, c: Tensor, a: Tensor, b: Tensor) -> Tensor:
    return c.where(a, b)


# ---- Resize: one (out, in) matrix per resized axis, built from shapes alone ---------------
def _source_coordinate(mode: str, n_in: int, n_out: int, scale: float,
                       roi: tuple[float, float]) -> np.ndarray:
    """Where each output position samples the input axis (coordinate_transformation_mode)."""
    x = np.arange(n_out, dtype=np.float64)
    length = scale * n_in  # ONNX's output length before rounding
    if mode == "half_pixel":
        return (x + 0.5) / scale - 0.5
    if mode == "half_pixel_symmetric":
        adjustment = n_out / (scale * n_in)
        center = n_in / 2
        return center * (1 - adjustment) + (x + 0.5) / scale - 0.5
    if mode == "pytorch_half_pixel":
        return (x + 0.5) / scale - 0.5 if length > 1 else np.zeros(n_out)
    if mode == "align_corners":
        return x * (n_in - 1) / (length - 1) if length > 1 else np.zeros(n_out)
    if mode == "asymmetric":
        return x / scale
    if mode == "tf_crop_and_resize":
        start, end = roi
        if length > 1:
            return start * (n_in - 1) + x * (end - start) * (n_in - 1) / (length - 1)
        return np.full(n_out, 0.5 * (start + end) * (n_in - 1))
    raise ValueError(f"coordinate_transformation_mode {mode!r} is not one ONNX defines")


def _nearest(mode: str, x: np.ndarray) -> np.ndarray:
    if mode == "round_prefer_floor":
        return np.ceil(x - 0.5)
    if mode == "round_prefer_ceil":
        return np.floor(x + 0.5)
    if mode == "floor":
        return np.floor(x)
    if mode == "ceil":
        return np.ceil(x)
    raise ValueError(f"nearest_mode {mode!r} is not one ONNX defines")


def _cubic(t: np.ndarray, a: float) -> np.ndarray:
    t = np.abs(t)
    return np.where(t <= 1, ((a + 2) * t - (a + 3)) * t * t + 1,
                    np.where(t < 2, ((a * t - 5 * a) * t + 8 * a) * t - 4 * a, 0.0))


def _resize_matrix(n: Node, n_in: int, n_out: int, scale: float,
                   roi: tuple[float, float]) -> tuple[np.ndarray, np.ndarray]:
    """(out, in) interpolation weights of one axis and the output positions that fall
    outside the input (tf_crop_and_resize's extrapolation)."""
    mode = n.attr("mode", "nearest")
    coord = _source_coordinate(n.attr("coordinate_transformation_mode", "half_pixel"),
                               n_in, n_out, scale, roi)
    outside = (coord < 0) | (coord > n_in - 1)
    weights = np.zeros((n_out, n_in))
    rows = np.arange(n_out)
    if mode == "nearest":
        index = np.clip(_nearest(n.attr("nearest_mode", "round_prefer_floor"), coord),
                        0, n_in - 1).astype(np.int64)
        weights[rows, index] = 1.0
        return weights, outside
    if mode not in ("linear", "cubic"):
        raise ValueError(f"mode {mode!r} is not one ONNX defines")
    support = 1.0 if mode == "linear" else 2.0
    # antialiasing widens the filter by 1/scale when shrinking
    stretch = scale if n.attr("antialias", 0) and scale < 1 else 1.0
    reach = int(np.ceil(support / stretch))
    base = np.floor(coord).astype(np.int64)
    for offset in range(-reach + 1, reach + 1):
        tap = base + offset
        distance = (tap - coord) * stretch
        if mode == "linear":
            w = np.maximum(0.0, 1.0 - np.abs(distance))
        else:
            w = _cubic(distance, n.attr("cubic_coeff_a", -0.75))
        if n.attr("exclude_outside", 0):
            w = np.where((tap < 0) | (tap > n_in - 1), 0.0, w)
        np.add.at(weights, (rows, np.clip(tap, 0, n_in - 1)), w)
    total = weights.sum(axis=1, keepdims=True)
    if n.attr("antialias", 0) or n.attr("exclude_outside", 0):
        weights = weights / np.where(total == 0, 1, total)
    return weights, outside


def _resize(n: Node, x: Tensor, roi: Tensor | None = None, scales: Tensor | None = None,
            sizes: Tensor | None = None) -> Tensor:
    axes = [_axis(a, x.ndim, n) for a in n.attr("axes", range(x.ndim))]
    roi_values = n.static(1)
    scale_values = n.static(2)
    size_values = n.static(3)
    if size_values is not None and size_values.size:
        wanted = [int(v) for v in size_values.reshape(-1)]
        ratios = [w / x.shape[a] for w, a in zip(wanted, axes)]
        policy = n.attr("keep_aspect_ratio_policy", "stretch")
        if policy != "stretch":
            one = min(ratios) if policy == "not_larger" else max(ratios)
            ratios = [one] * len(axes)
            wanted = [int(np.floor(one * x.shape[a] + 0.5)) for a in axes]
    elif scale_values is not None and scale_values.size:
        ratios = [float(v) for v in scale_values.reshape(-1)]
        wanted = [int(np.floor(x.shape[a] * r)) for a, r in zip(axes, ratios)]
    else:
        raise OnnxError(f"{n.label}: give scales or sizes")
    starts_ends = [] if roi_values is None or not roi_values.size else \
        [float(v) for v in roi_values.reshape(-1)]
    extrapolate = n.attr("coordinate_transformation_mode", "half_pixel") == "tf_crop_and_resize"
    fill = float(n.attr("extrapolation_value", 0.0))
    y = x
    for k, (axis, size, ratio) in enumerate(zip(axes, wanted, ratios)):
        roi_k = (starts_ends[k], starts_ends[k + len(axes)]) if starts_ends else (0.0, 1.0)
        if size == x.shape[axis] and ratio == 1.0 and not extrapolate:
            continue
        weights, outside = _resize_matrix(n, x.shape[axis], size, ratio, roi_k)
        moved = y.transpose(axis, -1)
        if n.attr("mode", "nearest") == "nearest":
            picked = _take(moved, Tensor(weights.argmax(axis=1).astype(np.int64)), x.ndim - 1)
        else:
            picked = (moved.cast("f32") @ Tensor(weights.T.astype(np.float32))).cast(x.dtype) \
                if not x.is_floating_point() or x.dtype == "f32" else \
                moved @ Tensor(weights.T).cast(x.dtype)
        if extrapolate and outside.any():
            picked = Tensor(outside).where(fill, picked).cast(x.dtype)
        y = picked.transpose(axis, -1)
    return y


# ---- quantization ------------------------------------------------------------------------
def _per_axis(n: Node, v: Tensor, x: Tensor) -> Tensor:
    """A scale or zero point shaped to broadcast against `x`: a scalar, one value per
    index of `axis`, or (block_size > 0) one per block of `block_size` along `axis`."""
    if v.ndim == 0 or v.numel() == 1 and x.ndim <= 1:
        return v.reshape(())
    axis = _axis(n.attr("axis", 1), x.ndim, n)
    block = n.attr("block_size", 0)
    if block:
        v = v.repeat_interleave(block, dim=axis)[
            (slice(None),) * axis + (slice(0, x.shape[axis]),)]
        return v
    return v.reshape(tuple(x.shape[axis] if k == axis else 1 for k in range(x.ndim)))


def _quantize(n: Node, x: Tensor, scale: Tensor, zero: Tensor | None = None) -> Tensor:
    if "output_dtype" in n.attrs and n.attrs["output_dtype"]:
        dtype = _uop_dtype(n.attrs["output_dtype"], n.label)
    else:
        dtype = zero.dtype if zero is not None else "ui8"
    info = np.iinfo(_numpy(dtype))
    y = (x.cast("f32") / _per_axis(n, scale, x).cast("f32")).round()
    if zero is not None:
        y = y + _per_axis(n, zero, x).cast("f32")
    return y.clamp(float(info.min), float(info.max)).cast(dtype)


def _dequantize(n: Node, x: Tensor, scale: Tensor, zero: Tensor | None = None) -> Tensor:
    out = _uop_dtype(n.attrs["output_dtype"], n.label) if n.attrs.get("output_dtype") \
        else scale.dtype
    centered = x.cast("i32") if zero is None else \
        x.cast("i32") - _per_axis(n, zero, x).cast("i32")
    return (centered.cast("f32") * _per_axis(n, scale, x).cast("f32")).cast(out)


def _scatter_flat(n: Node, flat: Tensor, linear: Tensor, values: Tensor) -> Tensor:
    """`flat` (rows, R) with row linear[u] combined with values[u] (count, R) by the
    node's `reduction`, through a one-hot (count, rows) of the positions: fine for the
    small index sets models scatter into. Repeated positions without a reduction add."""
    reduction = n.attr("reduction", "none")
    rows = flat.shape[0]
    hit = linear.reshape((-1, 1)).eq(Tensor.arange(rows, dtype="i64").reshape((1, rows)))
    hit3 = hit.unsqueeze(-1)  # (count, rows, 1)
    spread = values.unsqueeze(1)  # (count, 1, R)
    written = hit.any(0).unsqueeze(-1)  # (rows, 1)
    if reduction in ("none", "add"):
        placed = hit3.where(spread, 0).sum(0, dtype=flat.dtype)
        return flat + placed if reduction == "add" else written.where(placed, flat)
    if reduction == "mul":
        return flat * hit3.where(spread, 1).prod(0, dtype=flat.dtype)
    if reduction in ("max", "min"):
        fill = lowest(flat.dtype) if reduction == "max" else DTYPES[flat.dtype].max
        picked = getattr(hit3.where(spread, fill).cast(flat.dtype), reduction)(0)
        both = flat.maximum(picked) if reduction == "max" else flat.minimum(picked)
        return written.where(both, flat)
    raise n.unsupported(f"reduction={reduction!r}")


def _scatter_nd(n: Node, x: Tensor, index: Tensor, updates: Tensor) -> Tensor:
    k = index.shape[-1]
    rest = tuple(x.shape[k:])
    linear = None
    for axis in range(k):
        part = _wrapped(index[..., axis], x.shape[axis]) * math.prod(x.shape[axis + 1:k])
        linear = part if linear is None else linear + part
    assert linear is not None
    flat = x.reshape((math.prod(x.shape[:k]), math.prod(rest)))
    out = _scatter_flat(n, flat, linear, updates.reshape((-1, math.prod(rest))))
    return out.reshape(x.shape)


def _scatter_elements(n: Node, x: Tensor, index: Tensor, updates: Tensor) -> Tensor:
    axis = _axis(n.attr("axis", 0), x.ndim, n)
    linear = None
    for d in range(x.ndim):
        if d == axis:
            coordinate = _wrapped(index, x.shape[axis])
        else:
            coordinate = Tensor.arange(index.shape[d], dtype="i64").reshape(
                tuple(index.shape[d] if k == d else 1 for k in range(x.ndim)))
        part = coordinate * math.prod(x.shape[d + 1:])
        linear = part if linear is None else linear + part
    assert linear is not None
    out = _scatter_flat(n, x.reshape((x.numel(), 1)), linear.expand(index.shape),
                        updates.reshape((-1, 1)))
    return out.reshape(x.shape)


def _reverse_sequence(n: Node, x: Tensor, lengths: Tensor) -> Tensor:
    """Each batch entry's first lengths[b] steps reversed: a gather along the time axis
    with index len - 1 - t inside the length and t outside."""
    time_axis, batch_axis = n.attr("time_axis", 0), n.attr("batch_axis", 1)
    steps, batch = x.shape[time_axis], x.shape[batch_axis]
    t = Tensor.arange(steps, dtype="i64").reshape(
        tuple(steps if k == time_axis else 1 for k in range(x.ndim)))
    size = lengths.cast("i64").reshape(tuple(batch if k == batch_axis else 1
                                             for k in range(x.ndim)))
    index = (t < size).where(size - 1 - t, t).expand(x.shape)
    return x.gather(time_axis, index)


def _lrn(n: Node, x: Tensor) -> Tensor:
    size = n.attr("size")
    alpha, beta, bias = n.attr("alpha", 1e-4), n.attr("beta", 0.75), n.attr("bias", 1.0)
    c = x.shape[1]
    squares = (x * x).pad([None, ((size - 1) // 2, size // 2)] + [None] * (x.ndim - 2))
    window = squares[:, 0:c]
    for k in range(1, size):
        window = window + squares[:, k:k + c]
    return x / (window * (alpha / size) + bias) ** beta


def _matmul_integer(n: Node, a: Tensor, b: Tensor, a_zero: Tensor | None = None,
                    b_zero: Tensor | None = None) -> Tensor:
    a32 = a.cast("i32") if a_zero is None else a.cast("i32") - _row_zero(a_zero, a)
    b32 = b.cast("i32") if b_zero is None else b.cast("i32") - b_zero.cast("i32")
    return a32 @ b32


def _row_zero(zero: Tensor, a: Tensor) -> Tensor:
    """MatMulInteger's a_zero_point: a scalar, or one per row of `a`."""
    zero = zero.cast("i32")
    return zero if zero.ndim == 0 or zero.numel() == 1 else zero.reshape((-1, 1))


def _qlinear_matmul(n: Node, a: Tensor, a_scale: Tensor, a_zero: Tensor, b: Tensor,
                    b_scale: Tensor, b_zero: Tensor, y_scale: Tensor, y_zero: Tensor) -> Tensor:
    real = ((a.cast("f32") - a_zero.cast("f32")) * a_scale.cast("f32")) @ \
        ((b.cast("f32") - b_zero.cast("f32")) * b_scale.cast("f32"))
    info = np.iinfo(_numpy(y_zero.dtype))
    y = (real / y_scale.cast("f32")).round() + y_zero.cast("f32")
    return y.clamp(float(info.min), float(info.max)).cast(y_zero.dtype)


def _conv_integer(n: Node, x: Tensor, w: Tensor, x_zero: Tensor | None = None,
                  w_zero: Tensor | None = None) -> Tensor:
    xf = x.cast("f32") - (0 if x_zero is None else x_zero.cast("f32"))
    wf = w.cast("f32") - (0 if w_zero is None else w_zero.cast("f32"))
    return _conv(n, xf, wf).round().cast("i32")  # exact: integer sums well below 2**24


def _qlinear_conv(n: Node, x: Tensor, x_scale: Tensor, x_zero: Tensor, w: Tensor,
                  w_scale: Tensor, w_zero: Tensor, y_scale: Tensor, y_zero: Tensor,
                  bias: Tensor | None = None) -> Tensor:
    xf = (x.cast("f32") - x_zero.cast("f32")) * x_scale.cast("f32")

    def per_out(v: Tensor) -> Tensor:  # a scalar, or one value per output channel
        return v.cast("f32") if v.ndim == 0 or v.numel() == 1 else \
            v.cast("f32").reshape((-1, 1, 1, 1))

    wf = (w.cast("f32") - per_out(w_zero)) * per_out(w_scale)
    real = _conv(n, xf, wf)
    if bias is not None:
        real = real + _channel(bias.cast("f32") * x_scale.cast("f32") *
                               w_scale.cast("f32").reshape(-1), real.ndim)
    info = np.iinfo(_numpy(y_zero.dtype))
    y = (real / y_scale.cast("f32")).round() + y_zero.cast("f32")
    return y.clamp(float(info.min), float(info.max)).cast(y_zero.dtype)


def _lp_pool(n: Node, x: Tensor) -> Tensor:
    kernel, strides, dilations, pads = _spatial(n, x)
    if any(d != 1 for d in dilations):
        raise n.unsupported("LpPool with dilations")
    p = n.attr("p", 2)
    one_d = x.ndim == 3
    pads2 = _pairs_2d(pads, (0, 0))
    k2 = tuple(_pairs_2d(kernel, 1))
    powered = _as_2d(x).abs() ** p
    mean = powered.pad([None, None, *pads2]).avg_pool2d(
        k2, tuple(_pairs_2d(strides, 1)), 0, bool(n.attr("ceil_mode", 0)))
    y = (mean * (k2[0] * k2[1])) ** (1.0 / p)
    return (y.squeeze(2) if one_d else y).cast(x.dtype)


# ---- control flow: decided on the host, unrolled ------------------------------------------
def _tensor(value: Any) -> Tensor:
    return value if isinstance(value, Tensor) else Tensor(value)


def _if(n: Node, cond: Tensor) -> tuple:
    """The branch the condition picks; the condition must be known when importing (a
    constant, or computed from shapes), since one plan runs one branch."""
    taken = bool(np.asarray(n.static(0)).reshape(-1)[0])
    return tuple(n.run_graph(n.attr("then_branch" if taken else "else_branch"), []))


def _loop(n: Node, trip: Tensor | None, cond: Tensor | None, *carried: Tensor) -> tuple:
    """The body unrolled: the trip count and the condition must be known when importing
    (each iteration's condition too); scan outputs are stacked along a new first axis."""
    body = n.attr("body")
    count = None if trip is None else int(np.asarray(n.static(0)).reshape(-1)[0])
    going = True if cond is None else bool(np.asarray(n.static(1)).reshape(-1)[0])
    state: list[Any] = list(carried)
    scans: list[list[Tensor]] = []
    step = 0
    while going and (count is None or step < count):
        if step >= 10_000:
            raise n.unsupported("a Loop of more than 10,000 iterations (it is unrolled)")
        outs = n.run_graph(body, [np.array(step, np.int64), np.array(going), *state])
        going = bool(np.asarray(outs[0] if isinstance(outs[0], np.ndarray)
                                else outs[0].numpy()).reshape(-1)[0])
        state = list(outs[1:1 + len(carried)])
        scans.append([_tensor(v) for v in outs[1 + len(carried):]])
        step += 1
    if not scans and len(body.output) > 1 + len(carried):
        raise n.unsupported("a Loop that runs no iteration and has scan outputs")
    stacked = [Tensor.stack([it[k] for it in scans]) for k in range(len(scans[0]))] \
        if scans else []
    return (*[_tensor(v) for v in state], *stacked)


def _scan_op(n: Node, *inputs: Tensor) -> tuple:
    """Scan (opset 9 on) unrolled over its scan axis."""
    body = n.attr("body")
    m = n.attr("num_scan_inputs")
    states, xs = list(inputs[:len(inputs) - m]), inputs[len(inputs) - m:]
    in_axes = n.attr("scan_input_axes", [0] * m)
    in_dirs = n.attr("scan_input_directions", [0] * m)
    axes = [_axis(a, x.ndim, n) for a, x in zip(in_axes, xs)]
    steps = xs[0].shape[axes[0]]
    per_step: list[list[Tensor]] = []
    for t in range(steps):
        slices = []
        for x, axis, direction in zip(xs, axes, in_dirs):
            at = steps - 1 - t if direction else t
            slices.append(x[(slice(None),) * axis + (at,)])
        outs = n.run_graph(body, [*states, *slices])
        states = [_tensor(v) for v in outs[:len(states)]]
        per_step.append([_tensor(v) for v in outs[len(states):]])
    k_out = len(body.output) - len(states)
    out_axes = n.attr("scan_output_axes", [0] * k_out)
    out_dirs = n.attr("scan_output_directions", [0] * k_out)
    stacked = []
    for k in range(k_out):
        items = [step[k] for step in per_step]
        if out_dirs[k]:
            items = items[::-1]
        axis = _axis(out_axes[k], items[0].ndim + 1, n)
        stacked.append(Tensor.stack(items, dim=axis))
    return (*states, *stacked)


OPS: dict[str, Callable[..., Any]] = {
    # elementwise, one input
    "Abs": lambda n, x: x.abs(),
    "Neg": lambda n, x: -x,
    "Exp": lambda n, x: x.exp(),
    "Log": lambda n, x: x.log(),
    "Sqrt": lambda n, x: x.sqrt(),
    "Reciprocal": lambda n, x: x.reciprocal(),
    "Floor": lambda n, x: x.floor(),
    "Ceil": lambda n, x: x.ceil(),
    "Round": lambda n, x: x.round(),
    "Sign": lambda n, x: x.sign(),
    "Sin": lambda n, x: x.sin(),
    "Cos": lambda n, x: x.cos(),
    "Tan": lambda n, x: x.tan(),
    "Asin": lambda n, x: x.asin(),
    "Acos": lambda n, x: x.acos(),
    "Atan": lambda n, x: x.atan(),
    "Sinh": lambda n, x: x.sinh(),
    "Cosh": lambda n, x: x.cosh(),
    "Asinh": lambda n, x: x.asinh(),
    "Acosh": lambda n, x: (x + (x * x - 1).sqrt()).log(),
    "Atanh": lambda n, x: ((1 + x) / (1 - x)).log() * 0.5,
    "Tanh": lambda n, x: x.tanh(),
    "Erf": lambda n, x: x.erf(),
    "Sigmoid": lambda n, x: x.sigmoid(),
    "Relu": lambda n, x: x.relu(),
    "Softplus": lambda n, x: (x.exp() + 1).log(),
    "Softsign": lambda n, x: x.softsign(),
    "Elu": lambda n, x: x.elu(n.attr("alpha", 1.0)),
    "Celu": lambda n, x: x.celu(n.attr("alpha", 1.0)),
    "Selu": _selu,
    "LeakyRelu": lambda n, x: x.leaky_relu(n.attr("alpha", 0.01)),
    "ThresholdedRelu": lambda n, x: (x > n.attr("alpha", 1.0)).where(x, 0.0).cast(x.dtype),
    "HardSigmoid": _hard_sigmoid,
    "HardSwish": lambda n, x: x * (x * (1 / 6) + 0.5).clamp(0.0, 1.0),
    "Mish": lambda n, x: x.mish(),
    "Gelu": _gelu,
    "Swish": lambda n, x: x * (x * n.attr("alpha", 1.0)).sigmoid(),
    "Shrink": _shrink,
    "Not": lambda n, x: x.logical_not(),
    "BitwiseNot": lambda n, x: x.bitwise_not(),
    "IsNaN": lambda n, x: x.isnan(),
    "IsInf": _is_inf,
    "Identity": lambda n, x: x,
    "Cast": _cast,
    "CastLike": lambda n, x, like: x.cast(like.dtype),
    "BitCast": lambda n, x: x.view(_uop_dtype(n.attr("to"), f"{n.label}'s target type")),
    # elementwise, two or more inputs (numpy broadcasting)
    "Add": lambda n, a, b: a + b,
    "Sub": lambda n, a, b: a - b,
    "Mul": lambda n, a, b: a * b,
    "Div": _div,
    "Mod": _mod,
    "Pow": _pow,
    "Equal": lambda n, a, b: a.eq(b),
    "Less": lambda n, a, b: a < b,
    "LessOrEqual": lambda n, a, b: a <= b,
    "Greater": lambda n, a, b: a > b,
    "GreaterOrEqual": lambda n, a, b: a >= b,
    "And": lambda n, a, b: a & b,
    "Or": lambda n, a, b: a | b,
    "Xor": lambda n, a, b: a ^ b,
    "BitwiseAnd": lambda n, a, b: a.bitwise_and(b),
    "BitwiseOr": lambda n, a, b: a.bitwise_or(b),
    "BitwiseXor": lambda n, a, b: a.bitwise_xor(b),
    "BitShift": _bit_shift,
    "PRelu": _prelu,
    "Max": _variadic(lambda a, b: a.maximum(b)),
    "Min": _variadic(lambda a, b: a.minimum(b)),
    "Sum": _variadic(lambda a, b: a + b),
    "Mean": _mean,
    "Where": _where,
    "Clip": _clip,
    # shapes and data movement
    "Shape": _shape,
    "Size": lambda n, x: np.array(math.prod(x.shape), dtype=np.int64),
    "Constant": _constant,
    "ConstantOfShape": _constant_of_shape,
    "Reshape": _reshape,
    "Flatten": _flatten,
    "Squeeze": _squeeze,
    "Unsqueeze": _unsqueeze,
    "Transpose": _transpose,
    "Concat": _concat,
    "Split": _split,
    "Slice": _slice,
    "Gather": _gather,
    "GatherElements": _gather_elements,
    "GatherND": _gather_nd,
    "ScatterElements": _scatter_elements,
    "Expand": _expand,
    "Tile": _tile,
    "Range": _range,
    "Pad": _pad,
    "Trilu": _trilu,
    "ReverseSequence": _reverse_sequence,
    "EyeLike": _eye_like,
    "OneHot": _one_hot,
    "DepthToSpace": _depth_to_space,
    "SpaceToDepth": _space_to_depth,
    "Resize": _resize,
    # reductions and scans
    "ReduceSum": _reduction("sum"),
    "ReduceMean": _reduction("mean"),
    "ReduceMax": _reduction("max"),
    "ReduceMin": _reduction("min"),
    "ReduceProd": _reduction("prod"),
    "ReduceL1": _reduction("l1"),
    "ReduceL2": _reduction("l2"),
    "ReduceSumSquare": _reduction("sum_square"),
    "ReduceLogSum": _reduction("log_sum"),
    "ReduceLogSumExp": _reduction("log_sum_exp"),
    "ArgMax": _arg("argmax"),
    "ArgMin": _arg("argmin"),
    "Softmax": _softmax("softmax"),
    "LogSoftmax": _softmax("log_softmax"),
    "Hardmax": _softmax("hardmax"),
    "CumSum": _scan("cumsum"),
    "CumProd": _scan("cumprod"),
    "TopK": _topk,
    # linear algebra, convolution, pooling, normalization
    "MatMul": lambda n, a, b: a @ b,
    "Gemm": _gemm,
    "Einsum": _einsum,
    "Conv": _over_depth(_conv, "sum"),
    "ConvTranspose": _conv_transpose,
    "MaxPool": _max_pool,
    "AveragePool": _over_depth(_average_pool, "mean"),
    "GlobalAveragePool": _global_pool("mean"),
    "GlobalMaxPool": _global_pool("max"),
    "BatchNormalization": _batch_norm,
    "InstanceNormalization": _instance_norm,
    "LayerNormalization": _layer_norm,
    "GroupNormalization": _group_norm,
    "RMSNormalization": _rms_norm,
    "LpNormalization": _lp_norm,
    "MeanVarianceNormalization": _mvn,
    "Dropout": _dropout,
    "LpPool": _lp_pool,
    "LRN": _lrn,
    # quantization
    "QuantizeLinear": _quantize,
    "DequantizeLinear": _dequantize,
    "ScatterND": _scatter_nd,
    "MatMulInteger": _matmul_integer,
    "QLinearMatMul": _qlinear_matmul,
    "ConvInteger": _conv_integer,
    "QLinearConv": _qlinear_conv,
    # control flow
    "If": _if,
    "Loop": _loop,
    "Scan": _scan_op,
}

#: ops of the standard domain that uopc does not import, and why (one home for the
#: reasons; the conformance suite's exclusions are derived from it)
UNSUPPORTED: dict[str, str] = {
    **dict.fromkeys(["SequenceAt", "SequenceConstruct", "SequenceEmpty", "SequenceErase",
                     "SequenceInsert", "SequenceLength", "SequenceMap", "SplitToSequence",
                     "ConcatFromSequence", "Optional", "OptionalGetElement",
                     "OptionalHasElement"], "sequences and optionals"),
    **dict.fromkeys(["StringConcat", "StringNormalizer", "StringSplit", "RegexFullMatch",
                     "TfIdfVectorizer", "LabelEncoder", "ImageDecoder"], "strings"),
    **dict.fromkeys(["NonZero", "Unique", "Compress", "NonMaxSuppression"],
                    "an output whose shape depends on input values"),
    **dict.fromkeys(["RandomNormal", "RandomNormalLike", "RandomUniform",
                     "RandomUniformLike", "Bernoulli", "Multinomial"], "random numbers"),
    **dict.fromkeys(["Gradient", "Momentum", "Adagrad", "Adam"], "training ops"),
}


def attributes(proto: onnx.NodeProto, node_name: str) -> dict[str, Any]:
    """The node's attributes as Python values (tensors as numpy arrays)."""
    from uopc.onnx.reader import ONNX_DTYPES

    found: dict[str, Any] = {}
    for attr in proto.attribute:
        if attr.type == onnx.AttributeProto.TENSOR:
            if attr.t.data_type not in ONNX_DTYPES:
                raise OnnxError(f"{node_name}: attribute {attr.name!r} holds a tensor of an "
                                f"unsupported element type")
            found[attr.name] = onnx.numpy_helper.to_array(attr.t)
        elif attr.type == onnx.AttributeProto.GRAPH:
            found[attr.name] = attr.g  # a branch or a loop body (If, Loop, Scan)
        elif attr.type == onnx.AttributeProto.GRAPHS:
            raise OnnxError(f"{node_name}: attribute {attr.name!r} is a list of subgraphs, "
                            f"which uopc does not import")
        elif attr.type in (onnx.AttributeProto.SPARSE_TENSOR,
                           onnx.AttributeProto.SPARSE_TENSORS):
            raise OnnxError(f"{node_name}: attribute {attr.name!r} is a sparse tensor, which "
                            f"uopc does not import")
        else:
            value = helper.get_attribute_value(attr)
            found[attr.name] = value.decode() if isinstance(value, bytes) else value
    return found


def supported_ops_text(width: int = 88) -> str:
    """The table's op names, sorted and wrapped: the README's list (a test keeps them
    equal)."""
    import textwrap

    return textwrap.fill(", ".join(sorted(OPS)), width)
