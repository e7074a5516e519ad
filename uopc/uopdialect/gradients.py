"""Gradient rules of the uop operations (the `gradient` hook of each op's record).

Every Tensor method lowers to the uop ops, so one rule per op covers the whole frontend.
A rule receives the autodiff walk's context, the graph node, the gradient of the node's
result and which sources need a gradient, and returns one gradient (or None) per source.
Gradients are the frontend's lazy tensors: a rule computes with their methods (named as in
PyTorch) and reaches graph nodes through the context (`ctx.tensor(node)`), so this module
imports nothing of the frontend (see `opinfo.GradientContext`).

Conventions:
- max (binary and reduce) splits the gradient evenly between tied maxima, as PyTorch's
  `maximum` and `amax` do, so `abs` at 0 has gradient 0 (the frontend's relu routes its
  gradient through a select, to get PyTorch's 0 at exactly 0).
- integer and boolean values carry no gradient; cast passes gradients between float types
  only. Compares and integer-only ops have no rule: their results are never float.
"""

from __future__ import annotations

import math
from typing import Any

# the op records hold these rules, so `ops` imports this module: find records by name
# (`op_named`) when a rule runs
from uopc.uopdialect.dtypes import FLOAT_DTYPES
from uopc.uopdialect.opinfo import GradientContext, op_named

LN_2 = math.log(2.0)

Grads = list[Any | None]


def _keepdim_shape(node: Any) -> tuple[int, ...]:
    """The shape of a reduce's result with its reduced axes kept as size 1."""
    axes = node.arg[1]
    return tuple(1 if i in axes else n for i, n in enumerate(node.srcs[0].sig.shape))


def add(ctx: GradientContext, node: Any, g: Any, need: list[bool]) -> Grads:
    return [g, g]


def mul(ctx: GradientContext, node: Any, g: Any, need: list[bool]) -> Grads:
    a, b = node.srcs
    return [g * ctx.tensor(b) if need[0] else None, g * ctx.tensor(a) if need[1] else None]


def div(ctx: GradientContext, node: Any, g: Any, need: list[bool]) -> Grads:
    """d(a/b) = g/b and -g*(a/b)/b (the quotient itself, so b*b never overflows)."""
    b = ctx.tensor(node.srcs[1])
    return [g / b if need[0] else None, -(g * ctx.tensor(node)) / b if need[1] else None]


def power(ctx: GradientContext, node: Any, g: Any, need: list[bool]) -> Grads:
    """d(a**b) = g*b*a**(b-1) and g*a**b*log(a); the exponent's gradient is 0 where a is 0
    and b >= 0 (PyTorch's rule: 0**b is 0 or 1 there, whatever b does)."""
    a, b = ctx.tensor(node.srcs[0]), ctx.tensor(node.srcs[1])
    grad_a = g * b * a.pow(b - 1.0) if need[0] else None
    grad_b = None
    if need[1]:
        flat = a.eq(0.0) * (b >= 0.0)
        grad_b = flat.where(0.0, g * ctx.tensor(node) * a.log())
    return [grad_a, grad_b]


def maximum(ctx: GradientContext, node: Any, g: Any, need: list[bool]) -> Grads:
    a, b = ctx.tensor(node.srcs[0]), ctx.tensor(node.srcs[1])
    share_a = (b < a).where(1.0, a.eq(b).where(0.5, 0.0)).cast(g.dtype)
    grad_a = g * share_a
    return [grad_a, g - grad_a]


def where(ctx: GradientContext, node: Any, g: Any, need: list[bool]) -> Grads:
    cond = ctx.tensor(node.srcs[0])
    return [None, cond.where(g, 0.0) if need[1] else None,
            cond.where(0.0, g) if need[2] else None]


def cast(ctx: GradientContext, node: Any, g: Any, need: list[bool]) -> Grads:
    src_dtype = node.srcs[0].sig.dtype
    return [g.cast(src_dtype) if src_dtype in FLOAT_DTYPES else None]


def no_gradient(ctx: GradientContext, node: Any, g: Any, need: list[bool]) -> Grads:
    """Ops whose result is not a differentiable function of their operand (bitcast
    reinterprets bits): no gradient flows back, as through PyTorch's `view(dtype)`."""
    return [None] * len(node.srcs)


def recip(ctx: GradientContext, node: Any, g: Any, need: list[bool]) -> Grads:
    out = ctx.tensor(node)
    return [-(g * out * out)]


def exp2(ctx: GradientContext, node: Any, g: Any, need: list[bool]) -> Grads:
    return [g * ctx.tensor(node) * LN_2]


def log2(ctx: GradientContext, node: Any, g: Any, need: list[bool]) -> Grads:
    return [g * ctx.tensor(node.srcs[0]).reciprocal() * (1.0 / LN_2)]


def sqrt(ctx: GradientContext, node: Any, g: Any, need: list[bool]) -> Grads:
    return [g * ctx.tensor(node).reciprocal() * 0.5]


def sin(ctx: GradientContext, node: Any, g: Any, need: list[bool]) -> Grads:
    return [g * ctx.tensor(node.srcs[0]).cos()]


def tanh(ctx: GradientContext, node: Any, g: Any, need: list[bool]) -> Grads:
    out = ctx.tensor(node)
    return [g * (1.0 - out * out)]


def erf(ctx: GradientContext, node: Any, g: Any, need: list[bool]) -> Grads:
    x = ctx.tensor(node.srcs[0])
    return [g * (x * x * -1.0).exp() * (2.0 / math.sqrt(math.pi))]


def exp(ctx: GradientContext, node: Any, g: Any, need: list[bool]) -> Grads:
    return [g * ctx.tensor(node)]


def log(ctx: GradientContext, node: Any, g: Any, need: list[bool]) -> Grads:
    return [g / ctx.tensor(node.srcs[0])]


def cos(ctx: GradientContext, node: Any, g: Any, need: list[bool]) -> Grads:
    return [-(g * ctx.tensor(node.srcs[0]).sin())]


def tan(ctx: GradientContext, node: Any, g: Any, need: list[bool]) -> Grads:
    out = ctx.tensor(node)
    return [g * (out * out + 1.0)]


def _one_minus_square(ctx: GradientContext, node: Any) -> Any:
    x = ctx.tensor(node.srcs[0])
    return 1.0 - x * x


def asin(ctx: GradientContext, node: Any, g: Any, need: list[bool]) -> Grads:
    return [g * _one_minus_square(ctx, node).rsqrt()]


def acos(ctx: GradientContext, node: Any, g: Any, need: list[bool]) -> Grads:
    return [-(g * _one_minus_square(ctx, node).rsqrt())]


def atan(ctx: GradientContext, node: Any, g: Any, need: list[bool]) -> Grads:
    x = ctx.tensor(node.srcs[0])
    return [g / (x * x + 1.0)]


def sinh(ctx: GradientContext, node: Any, g: Any, need: list[bool]) -> Grads:
    return [g * ctx.tensor(node.srcs[0]).cosh()]


def cosh(ctx: GradientContext, node: Any, g: Any, need: list[bool]) -> Grads:
    return [g * ctx.tensor(node.srcs[0]).sinh()]


def asinh(ctx: GradientContext, node: Any, g: Any, need: list[bool]) -> Grads:
    x = ctx.tensor(node.srcs[0])
    return [g * (x * x + 1.0).rsqrt()]


def log10(ctx: GradientContext, node: Any, g: Any, need: list[bool]) -> Grads:
    return [g / (ctx.tensor(node.srcs[0]) * math.log(10.0))]


def log1p(ctx: GradientContext, node: Any, g: Any, need: list[bool]) -> Grads:
    return [g / (ctx.tensor(node.srcs[0]) + 1.0)]


def expm1(ctx: GradientContext, node: Any, g: Any, need: list[bool]) -> Grads:
    return [g * (ctx.tensor(node) + 1.0)]


def step(ctx: GradientContext, node: Any, g: Any, need: list[bool]) -> Grads:
    """floor, ceil, trunc, round: piecewise constant, gradient 0 (as in PyTorch)."""
    return [g * 0.0]


def _reshaped(ctx: GradientContext, g: Any, shape: tuple[int, ...]) -> Any:
    """`g.reshape(shape)`, reading through a reshape that made `g`: a gradient node is
    never a target or a stop, so skipping it changes no gradient, and the reshape pairs
    of keepdim reductions (reduce, reshape to keepdim, reshape back) vanish."""
    node = ctx.node(g)
    if node.op is op_named("reshape"):
        base = node.srcs[0]
        return ctx.tensor(base) if base.sig.shape == shape else ctx.tensor(base).reshape(shape)
    return g.reshape(shape)


def reshape(ctx: GradientContext, node: Any, g: Any, need: list[bool]) -> Grads:
    return [_reshaped(ctx, g, node.srcs[0].sig.shape)]


def expand(ctx: GradientContext, node: Any, g: Any, need: list[bool]) -> Grads:
    src_shape = node.srcs[0].sig.shape
    axes = tuple(i for i, (old, new) in enumerate(zip(src_shape, node.sig.shape)) if old != new)
    if not axes:
        return [g]
    # g.sum(axes, keepdim=True) built directly: g is a float gradient and the axes are
    # sorted and in range, and the kept shape is the source's
    summed = ctx.apply(op_named("reduce"), g, arg=("add", axes))
    return [ctx.apply(op_named("reshape"), summed, arg=src_shape)]


def permute(ctx: GradientContext, node: Any, g: Any, need: list[bool]) -> Grads:
    inverse = [0] * len(node.arg)
    for i, p in enumerate(node.arg):
        inverse[p] = i
    return [g.permute(inverse)]


def shrink(ctx: GradientContext, node: Any, g: Any, need: list[bool]) -> Grads:
    begin, end = node.arg
    shape = node.srcs[0].sig.shape
    return [g.pad([(b, n - e) for b, e, n in zip(begin, end, shape)])]


def pad(ctx: GradientContext, node: Any, g: Any, need: list[bool]) -> Grads:
    before, _ = node.arg
    shape = node.srcs[0].sig.shape
    return [g.shrink([(b, b + n) for b, n in zip(before, shape)])]


def flip(ctx: GradientContext, node: Any, g: Any, need: list[bool]) -> Grads:
    return [g.flip(*node.arg)]


def stack(ctx: GradientContext, node: Any, g: Any, need: list[bool]) -> Grads:
    return [g[i] if need[i] else None for i in range(len(node.srcs))]


def index(ctx: GradientContext, node: Any, g: Any, need: list[bool]) -> Grads:
    """Scatter g back to the (runtime) positions: compare an arange per indexed axis with
    the indices, and sum over the index shape (rows gathered twice get both gradients)."""
    src = node.srcs[0]
    k = len(node.srcs) - 1
    if k == 0:
        return [g]
    lead = node.srcs[1].sig.shape
    rank = len(lead)
    hit: Any = None
    for axis in range(k):
        n = src.sig.shape[axis]
        shape = [1] * (rank + k)
        shape[rank + axis] = n
        ids = ctx.tensor(node.srcs[1 + axis]).reshape(lead + (1,) * k)
        on_axis = ctx.arange(n).reshape(shape).eq(ids)
        hit = on_axis if hit is None else hit * on_axis.cast("i32")
    rest = src.sig.shape[k:]
    mask = hit.cast("i1").reshape(hit.shape + (1,) * len(rest))
    scattered = mask.where(g.reshape(lead + (1,) * k + rest), 0.0)
    return [scattered.sum(tuple(range(rank))) if rank else scattered, *([None] * k)]


def reduce(ctx: GradientContext, node: Any, g: Any, need: list[bool]) -> Grads:
    kind, axes = node.arg
    src = ctx.tensor(node.srcs[0])
    g_kept = _reshaped(ctx, g, _keepdim_shape(node))
    if kind == "add":
        return [g_kept.expand(src.shape)]
    hit = src.eq(ctx.tensor(node).reshape(_keepdim_shape(node))).cast(g.dtype)
    ties = hit.sum(axes, keepdim=True)
    return [g_kept * hit * ties.reciprocal()]


def identity(ctx: GradientContext, node: Any, g: Any, need: list[bool]) -> Grads:
    """contiguous: the gradient passes unchanged."""
    return [g]


def decode(ctx: GradientContext, node: Any, g: Any, need: list[bool]) -> Grads:
    """Packed codes and their positions are integers: no gradient reaches them (a
    quantized weight is a constant of inference, not a parameter)."""
    return [None, None]
