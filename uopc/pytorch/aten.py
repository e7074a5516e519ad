"""The ATen table: each PyTorch core ATen op that uopc compiles, mapped once onto uopc's
`Tensor` API.

`TABLE` maps an op overload's name as PyTorch prints it ("aten.addmm.default") to a
function that takes the node's arguments with uopc Tensors in place of torch tensors
(and torch dtypes as they are) and returns what the ATen op returns: a Tensor, or a
tuple for the ops with several results. The arguments follow the op's ATen schema
(`torch.ops.aten.addmm.default._schema`), positional first, then keywords.

An entry may refuse a particular use of its op by raising `Unsupported` (a random op
with p > 0, a result only the backward pass reads); the runner then leaves the graph to
PyTorch (see `uopc.pytorch.runner`). Results that PyTorch gives and uopc cannot (the
unused mean and variance of an inference batch norm) are `Missing`: a graph that reads
one is refused the same way. `coverage()` lists what is compiled, what PyTorch's
core decompositions rewrite first and what falls back, for the README
(`python -m uopc.pytorch` prints it).
"""

from __future__ import annotations

import math
import operator
import sys
from collections.abc import Callable, Sequence
from typing import Any

import torch
from torch._decomp import core_aten_decompositions

from uopc.frontend.tensor import Tensor
from uopc.uopdialect.dtypes import DTYPES

Op = Callable[..., Any]

#: the table: ATen overload name -> uopc function of the node's arguments
TABLE: dict[str, Op] = {}

#: torch dtypes -> uopc's element type names; a tensor of any other dtype is not compiled
DTYPE_NAMES: dict[torch.dtype, str] = {
    getattr(torch, d.numpy.name): name for name, d in DTYPES.items()}


class Unsupported(Exception):
    """uopc does not compile this use of an op; the message says why (one line)."""


class Missing:
    """A result uopc does not compute (an op's secondary output that only a backward
    pass or nobody reads): reading it refuses the graph."""

    def __init__(self, why: str):
        self.why = why


def aten(*names: str) -> Callable[[Op], Op]:
    """Register `fn` for the named overloads (without the "aten." prefix)."""
    def register(fn: Op) -> Op:
        for name in names:
            assert f"aten.{name}" not in TABLE, f"aten.{name} mapped twice"
            TABLE[f"aten.{name}"] = fn
        return fn
    return register


def dtype_name(dtype: torch.dtype | None) -> str | None:
    """uopc's name of a torch dtype (None stays None); Unsupported for the others."""
    if dtype is None:
        return None
    found = DTYPE_NAMES.get(dtype)
    if found is None:
        raise Unsupported(f"dtype {dtype} has no uopc element type "
                          f"(uopc has {', '.join(str(d) for d in DTYPE_NAMES)})")
    return found


def _dims(dims: int | Sequence[int] | None) -> tuple[int, ...] | None:
    """A reduction's dims: ATen's None and [] both mean every axis."""
    if dims is None:
        return None
    if isinstance(dims, int):
        return (dims,)
    return tuple(dims) or None


# ---- elementwise ---------------------------------------------------------------------
def _binary(method: str) -> Op:
    def apply(a: Any, b: Any) -> Tensor:
        if isinstance(a, Tensor):
            return getattr(a, method)(b)
        return getattr(Tensor.full((), a, _scalar_type(a, b)), method)(b)
    return apply


def _scalar_type(value: Any, other: Any) -> str:
    """The type of a scalar first operand: `other`'s when `other` is a tensor of the same
    category or higher (weak scalars), else the default one."""
    kind = "i1" if isinstance(value, bool) else "i64" if isinstance(value, int) else "f32"
    if isinstance(other, Tensor):
        rank = {"i1": 0, "i64": 1, "f32": 2}
        mine = rank[kind]
        theirs = 0 if other.dtype == "i1" else 2 if other.is_floating_point() else 1
        return other.dtype if theirs >= mine else kind
    return kind


for _name in ["mul", "eq", "ne", "lt", "le", "gt", "ge", "bitwise_and", "bitwise_or",
              "bitwise_xor", "remainder", "fmod"]:
    aten(f"{_name}.Tensor", f"{_name}.Scalar")(_binary(_name))
aten("maximum.default")(_binary("maximum"))
aten("minimum.default")(_binary("minimum"))
aten("pow.Scalar", "pow.Tensor_Scalar", "pow.Tensor_Tensor")(_binary("pow"))


@aten("add.Tensor", "add.Scalar")
def add(a: Any, b: Any, alpha: Any = 1) -> Tensor:
    return _binary("add")(a, b if alpha == 1 else b * alpha)


@aten("sub.Tensor", "sub.Scalar")
def sub(a: Any, b: Any, alpha: Any = 1) -> Tensor:
    return _binary("sub")(a, b if alpha == 1 else b * alpha)


@aten("rsub.Tensor", "rsub.Scalar")
def rsub(a: Any, b: Any, alpha: Any = 1) -> Tensor:
    return sub(b, a, alpha)


@aten("div.Tensor", "div.Scalar")
def div(a: Any, b: Any) -> Tensor:
    return _binary("div")(a, b)


@aten("div.Tensor_mode", "div.Scalar_mode")
def div_mode(a: Any, b: Any, *, rounding_mode: str | None = None) -> Tensor:
    return a.div(b, rounding_mode=rounding_mode)


def _logical(method: str) -> Op:
    def apply(a: Tensor, b: Tensor) -> Tensor:
        return getattr(a.cast("i1"), method)(b.cast("i1"))
    return apply


for _name in ("and", "or", "xor"):
    aten(f"logical_{_name}.default")(_logical(f"bitwise_{_name}"))


@aten("where.self")
def where(cond: Tensor, a: Any, b: Any) -> Tensor:
    return cond.where(a, b)


@aten("where.ScalarSelf", "where.ScalarOther", "where.Scalar")
def where_scalar(cond: Tensor, a: Any, b: Any) -> Tensor:
    return cond.where(a, b)


def _unary(method: str) -> Op:
    return lambda x: getattr(x, method)()


for _name in ["neg", "exp", "exp2", "log", "log2", "log10", "log1p", "expm1", "sqrt", "rsqrt",
              "abs", "sin", "cos", "tan", "asin", "acos", "atan", "sinh", "cosh", "asinh",
              "tanh", "erf", "sigmoid", "relu", "reciprocal", "floor", "ceil", "trunc",
              "round", "sign", "bitwise_not", "logical_not", "isnan", "isinf", "silu", "mish",
              "hardsigmoid", "hardswish", "clone", "alias"]:
    aten(f"{_name}.default")(_unary(_name) if _name not in ("clone", "alias")
                             else (lambda x, **_: x))


@aten("gelu.default")
def gelu(x: Tensor, *, approximate: str = "none") -> Tensor:
    return x.gelu(approximate)


@aten("leaky_relu.default")
def leaky_relu(x: Tensor, negative_slope: float = 0.01) -> Tensor:
    return x.leaky_relu(negative_slope)


@aten("elu.default")
def elu(x: Tensor, alpha: float = 1.0, scale: float = 1.0, input_scale: float = 1.0) -> Tensor:
    if scale != 1.0 or input_scale != 1.0:
        raise Unsupported("elu with scale or input_scale other than 1")
    return x.elu(alpha)


@aten("hardtanh.default")
def hardtanh(x: Tensor, min_val: float = -1.0, max_val: float = 1.0) -> Tensor:
    return x.hardtanh(min_val, max_val)


@aten("softplus.default")
def softplus(x: Tensor, beta: float = 1.0, threshold: float = 20.0) -> Tensor:
    return x.softplus(beta, threshold)


@aten("clamp.default", "clamp.Tensor")
def clamp(x: Tensor, min: Any = None, max: Any = None) -> Tensor:
    if min is None and max is None:
        return x
    return x.clamp(min, max)


@aten("clamp_min.default", "clamp_min.Tensor")
def clamp_min(x: Tensor, min: Any) -> Tensor:
    return x.clamp(min=min)


@aten("clamp_max.default", "clamp_max.Tensor")
def clamp_max(x: Tensor, max: Any) -> Tensor:
    return x.clamp(max=max)


@aten("_to_copy.default")
def to_copy(x: Tensor, *, dtype: torch.dtype | None = None, layout: Any = None,
            device: Any = None, pin_memory: Any = None, non_blocking: bool = False,
            memory_format: Any = None) -> Tensor:
    if device is not None and torch.device(device).type != "cpu":
        raise Unsupported(f"_to_copy to device {device}: the uopc door runs on the CPU")
    name = dtype_name(dtype)
    return x if name is None else x.cast(name)


# ---- reductions ----------------------------------------------------------------------
@aten("sum.dim_IntList")
def sum_dims(x: Tensor, dim: Any = None, keepdim: bool = False, *,
             dtype: torch.dtype | None = None) -> Tensor:
    return x.sum(_dims(dim), keepdim, dtype=dtype_name(dtype))


@aten("sum.default")
def sum_all(x: Tensor, *, dtype: torch.dtype | None = None) -> Tensor:
    return x.sum(dtype=dtype_name(dtype))


@aten("mean.dim")
def mean_dims(x: Tensor, dim: Any = None, keepdim: bool = False, *,
              dtype: torch.dtype | None = None) -> Tensor:
    return x.mean(_dims(dim), keepdim, dtype=dtype_name(dtype))


@aten("mean.default")
def mean_all(x: Tensor, *, dtype: torch.dtype | None = None) -> Tensor:
    return x.mean(dtype=dtype_name(dtype))


@aten("prod.dim_int")
def prod_dim(x: Tensor, dim: int, keepdim: bool = False, *,
             dtype: torch.dtype | None = None) -> Tensor:
    return x.prod(dim, keepdim, dtype=dtype_name(dtype))


@aten("prod.default")
def prod_all(x: Tensor, *, dtype: torch.dtype | None = None) -> Tensor:
    return x.prod(dtype=dtype_name(dtype))


@aten("amax.default")
def amax(x: Tensor, dim: Any = (), keepdim: bool = False) -> Tensor:
    return x.max(_dims(dim), keepdim)


@aten("amin.default")
def amin(x: Tensor, dim: Any = (), keepdim: bool = False) -> Tensor:
    return x.min(_dims(dim), keepdim)


@aten("max.default")
def max_all(x: Tensor) -> Tensor:
    return x.max()


@aten("min.default")
def min_all(x: Tensor) -> Tensor:
    return x.min()


@aten("max.dim")
def max_dim(x: Tensor, dim: int, keepdim: bool = False) -> tuple[Tensor, Tensor]:
    return x.max(dim, keepdim), x.argmax(dim, keepdim)


@aten("min.dim")
def min_dim(x: Tensor, dim: int, keepdim: bool = False) -> tuple[Tensor, Tensor]:
    return x.min(dim, keepdim), x.argmin(dim, keepdim)


@aten("argmax.default")
def argmax(x: Tensor, dim: int | None = None, keepdim: bool = False) -> Tensor:
    return x.argmax(dim, keepdim)


@aten("argmin.default")
def argmin(x: Tensor, dim: int | None = None, keepdim: bool = False) -> Tensor:
    return x.argmin(dim, keepdim)


@aten("any.default", "any.dim", "any.dims")
def any_(x: Tensor, dim: Any = None, keepdim: bool = False) -> Tensor:
    return x.any(_dims(dim), keepdim)


@aten("all.default", "all.dim", "all.dims")
def all_(x: Tensor, dim: Any = None, keepdim: bool = False) -> Tensor:
    return x.all(_dims(dim), keepdim)


@aten("var.correction")
def var(x: Tensor, dim: Any = None, *, correction: float | None = None,
        keepdim: bool = False) -> Tensor:
    if correction is not None and correction != int(correction):
        raise Unsupported(f"var with a fractional correction {correction}")
    return x.var(_dims(dim), keepdim, 1 if correction is None else int(correction))


@aten("_softmax.default")
def softmax(x: Tensor, dim: int, half_to_float: bool) -> Tensor:
    return x.softmax(dim, "f32" if half_to_float else None)


@aten("_log_softmax.default")
def log_softmax(x: Tensor, dim: int, half_to_float: bool) -> Tensor:
    return x.log_softmax(dim, "f32" if half_to_float else None)


@aten("logsumexp.default")
def logsumexp(x: Tensor, dim: Any, keepdim: bool = False) -> Tensor:
    dims = _dims(dim)
    if dims is None or len(dims) != 1:
        raise Unsupported(f"logsumexp over dims {dim}: uopc takes one dim")
    return x.logsumexp(dims[0], keepdim)


# ---- matrix products -----------------------------------------------------------------
@aten("mm.default", "bmm.default", "matmul.default")
def mm(a: Tensor, b: Tensor) -> Tensor:
    return a @ b


@aten("addmm.default")
def addmm(bias: Tensor, a: Tensor, b: Tensor, *, beta: Any = 1, alpha: Any = 1) -> Tensor:
    product = a @ b
    if alpha != 1:
        product = product * alpha
    return product + (bias if beta == 1 else bias * beta)


@aten("convolution.default")
def convolution(x: Tensor, weight: Tensor, bias: Tensor | None, stride: Sequence[int],
                padding: Sequence[int], dilation: Sequence[int], transposed: bool,
                output_padding: Sequence[int], groups: int) -> Tensor:
    if x.ndim == 3 and not transposed:
        return x.conv1d(weight, bias, stride[0], padding[0], dilation[0], groups)
    if x.ndim != 4:
        raise Unsupported(f"convolution of a {x.ndim}-d input: uopc has 1-d and 2-d")
    if transposed:
        return x.conv_transpose2d(weight, bias, tuple(stride), tuple(padding),
                                  tuple(output_padding), groups, tuple(dilation))
    return x.conv2d(weight, bias, tuple(stride), tuple(padding), tuple(dilation), groups)


# ---- pooling and normalization -------------------------------------------------------
@aten("max_pool2d_with_indices.default")
def max_pool2d(x: Tensor, kernel_size: Sequence[int], stride: Sequence[int] = (),
               padding: Any = 0, dilation: Any = 1, ceil_mode: bool = False) -> tuple:
    values, indices = x.max_pool2d(tuple(kernel_size), tuple(stride) or None,
                                   _pair_arg(padding), _pair_arg(dilation), ceil_mode,
                                   return_indices=True)
    return values, indices


def _pair_arg(v: int | Sequence[int]) -> int | tuple[int, ...]:
    return v if isinstance(v, int) else tuple(v) if len(v) > 1 else v[0]


@aten("avg_pool2d.default")
def avg_pool2d(x: Tensor, kernel_size: Sequence[int], stride: Sequence[int] = (),
               padding: Any = 0, ceil_mode: bool = False, count_include_pad: bool = True,
               divisor_override: int | None = None) -> Tensor:
    if divisor_override is not None:
        raise Unsupported("avg_pool2d with divisor_override")
    return x.avg_pool2d(tuple(kernel_size), tuple(stride) or None, _pair_arg(padding),
                        ceil_mode, count_include_pad)


@aten("_adaptive_avg_pool2d.default")
def adaptive_avg_pool2d(x: Tensor, output_size: Sequence[int]) -> Tensor:
    (h, w), (oh, ow) = x.shape[-2:], tuple(output_size)
    if h % oh or w % ow:
        raise Unsupported(f"_adaptive_avg_pool2d from {h}x{w} to {oh}x{ow}: uopc takes "
                          f"output sizes that divide the input's (equal windows)")
    return x.avg_pool2d((h // oh, w // ow))


@aten("_native_batch_norm_legit_no_training.default")
def batch_norm_inference(x: Tensor, weight: Tensor | None, bias: Tensor | None,
                         running_mean: Tensor, running_var: Tensor, momentum: float,
                         eps: float) -> tuple:
    shape = (1, -1) + (1,) * (x.ndim - 2)
    scale = (running_var + eps).rsqrt()
    if weight is not None:
        scale = scale * weight
    out = (x - running_mean.reshape(shape)) * scale.reshape(shape)
    if bias is not None:
        out = out + bias.reshape(shape)
    unused = Missing("the saved mean/invstd of an inference batch norm (empty in PyTorch)")
    return out, unused, unused


@aten("native_layer_norm.default")
def layer_norm(x: Tensor, normalized_shape: Sequence[int], weight: Tensor | None,
               bias: Tensor | None, eps: float) -> tuple[Tensor, Tensor, Tensor]:
    axes = tuple(range(x.ndim - len(normalized_shape), x.ndim))
    mean = x.mean(axes, keepdim=True)
    centered = x - mean
    rstd = ((centered * centered).mean(axes, keepdim=True) + eps).rsqrt()
    out = centered * rstd
    if weight is not None:
        out = out * weight
    if bias is not None:
        out = out + bias
    return out, mean, rstd


@aten("native_dropout.default")
def dropout(x: Tensor, p: float, train: bool | None) -> tuple[Tensor, Tensor]:
    if train and p > 0:
        raise Unsupported(f"native_dropout with p={p} in training: its random mask must "
                          f"come from PyTorch's generator")
    return x, x.full_like(True, "i1")


# ---- movement ------------------------------------------------------------------------
@aten("view.default", "_unsafe_view.default", "reshape.default")
def view(x: Tensor, size: Sequence[int]) -> Tensor:
    return x.reshape(tuple(size))


@aten("view.dtype")
def view_dtype(x: Tensor, dtype: torch.dtype) -> Tensor:
    return x.view(dtype_name(dtype))


@aten("permute.default")
def permute(x: Tensor, dims: Sequence[int]) -> Tensor:
    return x.permute(tuple(dims))


@aten("t.default")
def t(x: Tensor) -> Tensor:
    return x.t()


@aten("transpose.int")
def transpose(x: Tensor, dim0: int, dim1: int) -> Tensor:
    return x.transpose(dim0, dim1) if x.ndim else x


@aten("expand.default")
def expand(x: Tensor, size: Sequence[int], *, implicit: bool = False) -> Tensor:
    return x.expand(tuple(size))


@aten("unsqueeze.default")
def unsqueeze(x: Tensor, dim: int) -> Tensor:
    return x.unsqueeze(dim)


@aten("squeeze.dims", "squeeze.dim", "squeeze.default")
def squeeze(x: Tensor, dim: Any = None) -> Tensor:
    if dim is None:
        return x.squeeze()
    for d in sorted({d % max(x.ndim, 1) for d in ((dim,) if isinstance(dim, int) else dim)},
                    reverse=True):
        x = x.squeeze(d)
    return x


@aten("slice.Tensor")
def slice_(x: Tensor, dim: int = 0, start: int | None = None, end: int | None = None,
           step: int = 1) -> Tensor:
    d = dim % x.ndim
    index = [slice(None)] * x.ndim
    index[d] = slice(start, None if end is not None and end >= sys.maxsize else end, step)
    return x[tuple(index)]


@aten("select.int")
def select(x: Tensor, dim: int, index: int) -> Tensor:
    d = dim % x.ndim
    return x[(slice(None),) * d + (index,)]


@aten("cat.default")
def cat(tensors: Sequence[Tensor], dim: int = 0) -> Tensor:
    # PyTorch's legacy rule: 1-d empty tensors are skipped
    parts = [p for p in tensors if not (p.ndim == 1 and p.shape[0] == 0)]
    return Tensor.cat(parts, dim=dim)


@aten("split_with_sizes.default")
def split_with_sizes(x: Tensor, split_sizes: Sequence[int], dim: int = 0) -> tuple:
    return tuple(x.split(list(split_sizes), dim))


@aten("split.Tensor")
def split(x: Tensor, split_size: int, dim: int = 0) -> tuple:
    return tuple(x.split(split_size, dim))


@aten("unbind.int")
def unbind(x: Tensor, dim: int = 0) -> tuple:
    return tuple(select(x, dim, i) for i in range(x.shape[dim]))


@aten("constant_pad_nd.default")
def constant_pad_nd(x: Tensor, pad: Sequence[int], value: float = 0) -> Tensor:
    # the schema's value is a float even for integer tensors, which keep their type
    fill = value if x.is_floating_point() else bool(value) if x.dtype == "i1" else int(value)
    return x.pad(tuple(pad), value=fill)


@aten("flip.default")
def flip(x: Tensor, dims: Sequence[int]) -> Tensor:
    return x.flip(tuple(dims))


@aten("repeat.default")
def repeat(x: Tensor, repeats: Sequence[int]) -> Tensor:
    return x.repeat(*repeats)


@aten("cumsum.default")
def cumsum(x: Tensor, dim: int, *, dtype: torch.dtype | None = None) -> Tensor:
    return x.cumsum(dim, dtype=dtype_name(dtype))


@aten("tril.default")
def tril(x: Tensor, diagonal: int = 0) -> Tensor:
    return x.tril(diagonal)


@aten("triu.default")
def triu(x: Tensor, diagonal: int = 0) -> Tensor:
    return x.triu(diagonal)


# ---- indexing ------------------------------------------------------------------------
@aten("embedding.default")
def embedding(weight: Tensor, indices: Tensor, padding_idx: int = -1,
              scale_grad_by_freq: bool = False, sparse: bool = False) -> Tensor:
    return weight[indices]


@aten("index.Tensor")
def index(x: Tensor, indices: Sequence[Tensor | None]) -> Tensor:
    if any(i is not None and i.dtype == "i1" for i in indices):
        raise Unsupported("index.Tensor with a boolean mask: its result's shape depends "
                          "on the mask's values")
    return x[tuple(slice(None) if i is None else i for i in indices)]


@aten("gather.default")
def gather(x: Tensor, dim: int, index: Tensor, *, sparse_grad: bool = False) -> Tensor:
    return x.gather(dim, index)


@aten("index_select.default")
def index_select(x: Tensor, dim: int, index: Tensor) -> Tensor:
    return x[(slice(None),) * (dim % x.ndim) + (index,)]


@aten("index_put.default")
def index_put(x: Tensor, indices: Sequence[Tensor | None], values: Tensor,
              accumulate: bool = False) -> Tensor:
    if any(i is not None and i.dtype == "i1" for i in indices):
        raise Unsupported("index_put with a boolean mask: its places depend on the mask's "
                          "values")
    index = tuple(slice(None) if i is None else i for i in indices)
    return x.index_put(index, values, accumulate)


@aten("index_add.default")
def index_add(x: Tensor, dim: int, index: Tensor, source: Tensor, *, alpha: Any = 1) -> Tensor:
    return x.index_add(dim, index, source, alpha=alpha)


@aten("scatter_add.default")
def scatter_add(x: Tensor, dim: int, index: Tensor, src: Tensor) -> Tensor:
    return x.scatter_add(dim, index, src)


@aten("scatter.value", "scatter.src")
def scatter(x: Tensor, dim: int, index: Tensor, src: Any) -> Tensor:
    return x.scatter(dim, index, src)


# ---- creation ------------------------------------------------------------------------
def _creation_args(dtype: torch.dtype | None, device: Any, default: str) -> str:
    if device is not None and torch.device(device).type != "cpu":
        raise Unsupported(f"a tensor made on device {device}: the uopc door runs on the CPU")
    return dtype_name(dtype) or default


@aten("full.default")
def full(size: Sequence[int], fill_value: Any, *, dtype: torch.dtype | None = None,
         layout: Any = None, device: Any = None, pin_memory: Any = None) -> Tensor:
    default = ("i1" if isinstance(fill_value, bool) else
               "i64" if isinstance(fill_value, int) else "f32")
    return Tensor.full(tuple(size), fill_value, _creation_args(dtype, device, default))


@aten("scalar_tensor.default")
def scalar_tensor(s: Any, *, dtype: torch.dtype | None = None, layout: Any = None,
                  device: Any = None, pin_memory: Any = None) -> Tensor:
    return Tensor.full((), s, _creation_args(dtype, device, "f32"))


@aten("full_like.default")
def full_like(x: Tensor, fill_value: Any, *, dtype: torch.dtype | None = None,
              layout: Any = None, device: Any = None, pin_memory: Any = None,
              memory_format: Any = None) -> Tensor:
    return Tensor.full(x.shape, fill_value, _creation_args(dtype, device, x.dtype))


aten("zeros_like.default")(lambda x, **kw: full_like(x, 0, **kw))
aten("ones_like.default")(lambda x, **kw: full_like(x, 1, **kw))


@aten("empty.memory_format")
def empty(size: Sequence[int], *, dtype: torch.dtype | None = None, layout: Any = None,
          device: Any = None, pin_memory: Any = None, memory_format: Any = None) -> Tensor:
    return Tensor.full(tuple(size), 0, _creation_args(dtype, device, "f32"))  # any value will do


@aten("copy.default")
def copy(x: Tensor, src: Tensor, non_blocking: bool = False) -> Tensor:
    return src.cast(x.dtype).expand(x.shape)


@aten("diagonal.default")
def diagonal(x: Tensor, offset: int = 0, dim1: int = 0, dim2: int = 1) -> Tensor:
    return x.diagonal(offset, dim1, dim2)


@aten("arange.start_step")
def arange(start: Any, end: Any, step: Any = 1, *, dtype: torch.dtype | None = None,
           layout: Any = None, device: Any = None, pin_memory: Any = None) -> Tensor:
    floats = any(isinstance(v, float) for v in (start, end, step))
    return Tensor.arange(start, end, step,
                         dtype=_creation_args(dtype, device, "f32" if floats else "i64"))


@aten("arange.default")
def arange_end(end: Any, *, dtype: torch.dtype | None = None, layout: Any = None,
               device: Any = None, pin_memory: Any = None) -> Tensor:
    return arange(0, end, 1, dtype=dtype, device=device)


@aten("lift_fresh_copy.default")
def lift_fresh_copy(x: Tensor) -> Tensor:
    return x


#: Python functions a graph calls on sizes and tuples (symbolic shapes, multi-output ops)
PYTHON_FUNCTIONS: dict[Any, Op] = {
    operator.getitem: operator.getitem, operator.add: operator.add,
    operator.sub: operator.sub, operator.mul: operator.mul,
    operator.floordiv: operator.floordiv, operator.neg: operator.neg,
    math.ceil: math.ceil, math.floor: math.floor,
    torch.sym_int: int, torch.sym_float: float, torch.sym_max: max, torch.sym_min: min,
}


@aten("sym_size.int")
def sym_size(x: Tensor, dim: int) -> int:
    return x.shape[dim]


@aten("sym_numel.default")
def sym_numel(x: Tensor) -> int:
    return x.numel()


def core_ops() -> list[str]:
    """The overloads PyTorch tags as its core ATen opset (`torch.Tag.core`)."""
    found = []
    for packet_name in dir(torch.ops.aten):
        packet = getattr(torch.ops.aten, packet_name, None)
        if not isinstance(packet, torch._ops.OpOverloadPacket):
            continue
        for overload in packet.overloads():
            op = getattr(packet, overload)
            if torch.Tag.core in op.tags:
                found.append(str(op))
    return sorted(found)


def coverage() -> dict[str, list[str]]:
    """The README's coverage lists, generated from the table: the overloads uopc compiles,
    those PyTorch's core decompositions rewrite into others before uopc sees a graph, and
    the core ATen ops left, which run in PyTorch (a graph break)."""
    decomposed = {str(op) for op in core_aten_decompositions()
                  if str(op).startswith("aten.") and not str(op).endswith(".out")}
    compiled = sorted(TABLE)
    return {"compiled": compiled,
            "decomposed": sorted(decomposed - set(TABLE)),
            "falls back": [op for op in core_ops() if op not in TABLE and op not in decomposed]}
