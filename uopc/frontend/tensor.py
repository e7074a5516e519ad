"""The lazy, PyTorch-like `Tensor` of uopc.

A Tensor holds a node of the light uop graph (`uopc.uopdialect.graph.UOp`). Every method records
new nodes built only from the core uop ops (add, mul, max, compares, recip, exp2, log2,
sqrt, sin, cast, where, movement ops, reduce): `a - b` is `a + (-1 * b)`, `a / b` is
`a * recip(b)`, `exp(x)` is `exp2(x * log2(e))`, and so on. Nothing runs until
`realize()`, `numpy()` or `item()`: those hand the graph to the realize engine
(`uopc.runtime.engine.realize`), which compiles it once per graph structure and reuses the plan,
and then the Tensor's node is replaced by a `buffer` node holding the result, so that later
graphs start from data instead of recomputing history.

Two nodes per Tensor:
    uop     the node that gives the Tensor's value (a buffer once realized)
    _trace  the node gradients flow through. A realized tensor whose value depends on
            tensors that require gradients keeps its traced history here, so that
            `loss.item()` before `loss.backward()` still has the whole graph.

Broadcasting follows numpy; Python scalars take the tensor's element type, except that a
float scalar with an integer tensor promotes the computation to f32. Shape errors are
raised while tracing, at the line that applied the op, and name both shapes. `==` is
object identity (Tensors are dict keys in optimizers); `eq`/`ne` compare elementwise.

Tracing builds no xDSL IR (graph nodes hold the ops' records, `uopc.uopdialect.ops.OP`):
a step of a training loop on a cached plan costs only the trace, the structural lookup in
the engine, and one native call.
"""

from __future__ import annotations

import math
import weakref
from collections.abc import Callable, Iterable, Sequence
from typing import Any, Union

import numpy as np

from uopc.uopdialect.graph import UOp, result_sig
from uopc.uopdialect.opinfo import OpInfo
from uopc.uopdialect.ops import OP
from uopc.uopdialect.shapes import FLOAT_DTYPES, ShapeError, Sig, fmt_shape

Scalar = Union[bool, int, float]
TensorLike = Union["Tensor", Scalar, np.ndarray, list, tuple]

LOG2_E = 1.0 / math.log(2.0)
LN_2 = math.log(2.0)
_NUMPY_OF = {"f32": np.float32, "f16": np.float16, "i32": np.int32, "i1": np.bool_}
_RANK = {"i1": 0, "i32": 1, "f16": 2, "f32": 3}


_rng = np.random.default_rng()


def manual_seed(seed: int) -> None:
    """Make `randn`, `uniform` and `kaiming` reproducible."""
    global _rng
    _rng = np.random.default_rng(seed)


def to_dtype(dtype: Any) -> str:
    """An element type name ("f32", "f16", "i32", "i1") from a name, numpy dtype or Python type."""
    if isinstance(dtype, str) and dtype in _NUMPY_OF:
        return dtype
    if dtype is float:
        return "f32"
    if dtype is int:
        return "i32"
    if dtype is bool:
        return "i1"
    np_dtype = np.dtype(dtype)
    if np_dtype.kind == "f":
        return "f16" if np_dtype.itemsize == 2 else "f32"
    if np_dtype.kind in "iu":
        return "i32"
    if np_dtype.kind == "b":
        return "i1"
    raise TypeError(f"unsupported dtype {dtype!r}: use f32, f16, i32 or i1")


def numpy_dtype(dtype: str) -> type:
    return _NUMPY_OF[dtype]


def _scalar_dtype(value: Scalar) -> str:
    if isinstance(value, (bool, np.bool_)):
        return "i1"
    if isinstance(value, (int, np.integer)):
        return "i32"
    return "f32"


def _promote(a: str, b: str) -> str:
    return a if _RANK[a] >= _RANK[b] else b


def _is_scalar(x: Any) -> bool:
    return isinstance(x, (bool, int, float, np.bool_, np.integer, np.floating))


#: broadcast results by (shape, shape): tracing a step broadcasts the same pairs each time
_BROADCASTS: dict[tuple[tuple[int, ...], tuple[int, ...]], tuple[int, ...]] = {}
_BROADCAST_MEMO_LIMIT = 1 << 14


def broadcast_shape(a: Sequence[int], b: Sequence[int], what: str) -> tuple[int, ...]:
    """The numpy broadcast of two shapes; a ShapeError naming both when they do not fit."""
    pair = (tuple(a), tuple(b))
    shape = _BROADCASTS.get(pair)
    if shape is None:
        shape = _broadcast(a, b, what)
        if len(_BROADCASTS) >= _BROADCAST_MEMO_LIMIT:
            _BROADCASTS.clear()
        _BROADCASTS[pair] = shape
    return shape


def _broadcast(a: Sequence[int], b: Sequence[int], what: str) -> tuple[int, ...]:
    rank = max(len(a), len(b))
    a1 = (1,) * (rank - len(a)) + tuple(a)
    b1 = (1,) * (rank - len(b)) + tuple(b)
    out = []
    for x, y in zip(a1, b1):
        if x != y and x != 1 and y != 1:
            raise ShapeError(
                f"{what}: shapes {fmt_shape(a)} and {fmt_shape(b)} do not broadcast "
                f"(sizes {x} and {y} differ and neither is 1)"
            )
        out.append(y if x == 1 else x)
    return tuple(out)


def _normalize_axis(axis: int, ndim: int, what: str) -> int:
    if not -ndim <= axis < max(ndim, 1):
        raise ShapeError(f"{what}: axis {axis} is out of range for a tensor of rank {ndim}")
    return axis % ndim if ndim else 0


def _pair(v: int | Sequence[int]) -> tuple[int, int]:
    return (v, v) if isinstance(v, int) else (int(v[0]), int(v[1]))


def _shape_arg(shape: tuple) -> tuple:
    """Accept both f(2, 3) and f((2, 3))."""
    if len(shape) == 1 and isinstance(shape[0], (tuple, list)):
        return tuple(shape[0])
    return tuple(shape)


#: called after every realize with the tensors that received values and the values
#: (set while `uopc.capture` records a step)
realize_observer: Callable[[list["Tensor"], list[np.ndarray]], None] | None = None
#: called with the data and the private copy every new Tensor's buffer holds (idem)
buffer_observer: Callable[[Any, np.ndarray], None] | None = None


class Tensor:
    """A lazily evaluated n-dimensional array; see the module docstring."""

    __slots__ = ("uop", "_trace", "_leaf", "_requires_grad", "grad", "__weakref__")

    def __init__(self, data: Any, dtype: Any = None, requires_grad: bool = False):
        if isinstance(data, Tensor):
            node = data.uop if dtype is None else data.cast(to_dtype(dtype)).uop
        elif isinstance(data, UOp):
            node = data
        else:
            node = _buffer_node(data, dtype)
        self.uop = node
        self._trace = node
        self._leaf = True
        self._requires_grad = False
        self.requires_grad = requires_grad
        self.grad: Tensor | None = None

    @staticmethod
    def _wrap(node: UOp, requires_grad: bool) -> "Tensor":
        t = Tensor.__new__(Tensor)
        t.uop = node
        t._trace = node
        t._leaf = not requires_grad
        t._requires_grad = requires_grad
        t.grad = None
        return t

    @property
    def requires_grad(self) -> bool:
        return self._requires_grad

    @requires_grad.setter
    def requires_grad(self, flag: bool) -> None:
        self._requires_grad = bool(flag)
        self._mark_leaf()

    def _mark_leaf(self) -> None:
        """Record on the node that this tensor is a requires_grad leaf of that value, which
        is how `backward()` without a parameter list finds the tensors it fills."""
        if self._requires_grad and self._leaf:
            self._trace.leaves += (weakref.ref(self),)

    def _src(self) -> UOp:
        """The node new ops read: the history when gradients may flow, else the value."""
        return self._trace if self._requires_grad else self.uop

    def _apply(self, op: OpInfo, *others: "Tensor", arg: Any = None) -> "Tensor":
        # the hot path of tracing: kept to plain attribute reads
        grad = self._requires_grad
        if others:
            listed = [self._trace if grad else self.uop]
            for o in others:
                listed.append(o._trace if o._requires_grad else o.uop)
                grad = grad or o._requires_grad
            srcs = tuple(listed)
        else:
            srcs = (self._trace if grad else self.uop,)
        return Tensor._wrap(UOp(op, srcs, arg, result_sig(op, srcs, arg)), grad)

    # ------------------------------------------------------------------ construction
    @staticmethod
    def full(shape: Sequence[int] | int, value: Scalar, dtype: Any = None,
             requires_grad: bool = False) -> "Tensor":
        shape = (shape,) if isinstance(shape, int) else tuple(shape)
        dt = to_dtype(dtype) if dtype is not None else _scalar_dtype(value)
        t = Tensor(UOp.const(_as_python(value, dt), Sig(shape, dt)))
        t.requires_grad = requires_grad
        return t

    @staticmethod
    def zeros(*shape: int, dtype: Any = "f32", requires_grad: bool = False) -> "Tensor":
        return Tensor.full(_shape_arg(shape), 0, dtype, requires_grad)

    @staticmethod
    def ones(*shape: int, dtype: Any = "f32", requires_grad: bool = False) -> "Tensor":
        return Tensor.full(_shape_arg(shape), 1, dtype, requires_grad)

    def zeros_like(self) -> "Tensor":
        return Tensor.full(self.shape, 0, self.dtype)

    def ones_like(self) -> "Tensor":
        return Tensor.full(self.shape, 1, self.dtype)

    @staticmethod
    def arange(start: int | float, stop: int | float | None = None, step: int | float = 1,
               dtype: Any = None) -> "Tensor":
        if stop is None:
            start, stop = 0, start
        values = np.arange(start, stop, step)
        return Tensor(values, dtype=dtype)

    @staticmethod
    def randn(*shape: int, dtype: Any = "f32", requires_grad: bool = False) -> "Tensor":
        """Standard normal samples, drawn on the host (see `manual_seed`)."""
        data = _rng.standard_normal(_shape_arg(shape), dtype=np.float32)
        return Tensor(data, dtype=dtype, requires_grad=requires_grad)

    @staticmethod
    def uniform(*shape: int, low: float = 0.0, high: float = 1.0, dtype: Any = "f32",
                requires_grad: bool = False) -> "Tensor":
        data = _rng.uniform(low, high, _shape_arg(shape)).astype(np.float32)
        return Tensor(data, dtype=dtype, requires_grad=requires_grad)

    @staticmethod
    def kaiming(*shape: int, fan_in: int | None = None, requires_grad: bool = False) -> "Tensor":
        """He-uniform initialization: U(-b, b) with b = sqrt(6 / fan_in).

        `fan_in` defaults to the product of all axes but the first (PyTorch's layout
        (out, in, ...)); pass it when the inputs run along another axis, as for a
        `uopc.frontend.nn.Linear` weight of shape (n_in, n_out)."""
        shape = _shape_arg(shape)
        fan = fan_in if fan_in is not None else math.prod(shape[1:])
        bound = math.sqrt(6.0 / max(fan, 1))
        return Tensor.uniform(*shape, low=-bound, high=bound, requires_grad=requires_grad)

    # ------------------------------------------------------------------ properties
    @property
    def shape(self) -> tuple[int, ...]:
        return self.uop.sig.shape

    @property
    def dtype(self) -> str:
        return self.uop.sig.dtype

    @property
    def ndim(self) -> int:
        return len(self.uop.sig.shape)

    def numel(self) -> int:
        return math.prod(self.uop.sig.shape)

    def __len__(self) -> int:
        if not self.shape:
            raise TypeError("len() of a 0-d tensor")
        return self.shape[0]

    def __repr__(self) -> str:
        state = "realized" if self.uop.op is OP.buffer else f"lazy {self.uop.op.name}"
        grad = ", requires_grad=True" if self.requires_grad else ""
        return f"<Tensor {fmt_shape(self.shape)} {self.dtype} {state}{grad}>"

    # ------------------------------------------------------------------ running
    def realize(self) -> "Tensor":
        Tensor.realize_all(self)
        return self

    @staticmethod
    def realize_all(*tensors: "Tensor") -> None:
        """Compute all the tensors in one engine call (one compiled plan)."""
        pending: dict[int, Tensor] = {}
        for t in tensors:
            if t.uop.op is not OP.buffer:
                pending.setdefault(id(t), t)
        if not pending:
            return
        from uopc.runtime.engine import realize

        todo = list(pending.values())
        results = realize([t.uop for t in todo])
        for t, array in zip(todo, results):
            t._set_value(array)
        if realize_observer is not None:
            realize_observer(todo, results)

    def _set_value(self, array: np.ndarray) -> None:
        node = UOp.buffer(array, self.uop.sig)
        if self._leaf or not self._requires_grad:
            self._trace = node
            self._mark_leaf()
        self.uop = node

    def numpy(self) -> np.ndarray:
        self.realize()
        return np.array(self.uop.arg, copy=True)

    def item(self) -> Scalar:
        if self.numel() != 1:
            raise ValueError(f"item() needs a tensor with one element, this one has shape "
                             f"{fmt_shape(self.shape)}")
        self.realize()
        return self.uop.arg.reshape(()).item()

    def tolist(self) -> Any:
        return self.numpy().tolist()

    def detach(self) -> "Tensor":
        """The same value, cut off from gradient flow."""
        node = self.uop
        if node.op is OP.buffer:
            copy = UOp.buffer(node.arg, node.sig)
        else:
            copy = UOp(node.op, node.srcs, node.arg, node.sig)
            copy.detached = True
        return Tensor(copy)

    def assign(self, value: TensorLike) -> "Tensor":
        """Make `value` (broadcast and cast to this tensor's type) this tensor's new value.

        The tensor becomes a leaf again: gradients are taken with respect to it, not
        through `value`. Realize it (or pass it to an optimizer step) to compute it."""
        v = _as_tensor(value, self)
        if v.shape != self.shape:
            if broadcast_shape(v.shape, self.shape, "assign") != self.shape:
                raise ShapeError(f"assign: a value of shape {fmt_shape(v.shape)} cannot "
                                 f"replace a tensor of shape {fmt_shape(self.shape)}")
            v = v._broadcast_to(self.shape)
        v = v.cast(self.dtype)
        self.uop = v.uop
        self._trace = v.uop
        self._leaf = True
        self._mark_leaf()
        return self

    def contiguous(self) -> "Tensor":
        return self._apply(OP.contiguous)

    def backward(self, params: Iterable["Tensor"] | None = None) -> None:
        """Reverse-mode gradients of this tensor into `p.grad` of every parameter
        (the listed ones, else every requires_grad leaf the graph reads)."""
        from uopc.frontend.autograd import backward

        backward(self, None if params is None else list(params))

    # ------------------------------------------------------------------ elementwise core
    def _broadcast_to(self, shape: tuple[int, ...]) -> "Tensor":
        """`shape` must be a broadcast of this tensor's shape (see `broadcast_shape`)."""
        own = self.uop.sig.shape
        if own == shape:
            return self
        t = self
        if len(own) < len(shape):
            own = (1,) * (len(shape) - len(own)) + own
            t = t._apply(OP.reshape, arg=own)
        return t._apply(OP.expand, arg=tuple(shape)) if own != shape else t

    def _binary(self, op: OpInfo, other: TensorLike, reflected: bool = False,
                what: str | None = None) -> "Tensor":
        if isinstance(other, Tensor) and other.uop.sig == self.uop.sig:
            return other._apply(op, self) if reflected else self._apply(op, other)
        if _is_scalar(other):
            # a splat constant of the full shape: no reshape/expand nodes to trace
            dt = _scalar_operand_dtype(other, self.uop.sig.dtype)
            a = self.cast(dt)
            b = Tensor._wrap(UOp.const(_as_python(other, dt), a.uop.sig), False)
            return b._apply(op, a) if reflected else a._apply(op, b)
        a, b = _operands(self, other)
        if reflected:
            a, b = b, a
        shape = broadcast_shape(a.shape, b.shape, what or op.name)
        return a._broadcast_to(shape)._apply(op, b._broadcast_to(shape))

    def add(self, other: TensorLike) -> "Tensor":
        return self._binary(OP.add, other)

    def mul(self, other: TensorLike) -> "Tensor":
        return self._binary(OP.mul, other)

    def __add__(self, other: TensorLike) -> "Tensor":
        return self._binary(OP.add, other)

    def __radd__(self, other: TensorLike) -> "Tensor":
        return self._binary(OP.add, other, reflected=True)

    def __mul__(self, other: TensorLike) -> "Tensor":
        return self._binary(OP.mul, other)

    def __rmul__(self, other: TensorLike) -> "Tensor":
        return self._binary(OP.mul, other, reflected=True)

    def __neg__(self) -> "Tensor":
        if self.dtype == "i1":
            raise TypeError("negation of a bool tensor: use logical_not()")
        return self * -1

    def __sub__(self, other: TensorLike) -> "Tensor":
        a, b = _operands(self, other)
        broadcast_shape(a.shape, b.shape, "sub")
        return a + (-b)

    def __rsub__(self, other: TensorLike) -> "Tensor":
        if _is_scalar(other):
            return (-self)._binary(OP.add, other, reflected=True)
        a, b = _operands(self, other)
        return b + (-a)

    def sub(self, other: TensorLike) -> "Tensor":
        return self - other

    def __truediv__(self, other: TensorLike) -> "Tensor":
        if _is_scalar(other):
            return self.float() * (1.0 / float(other))
        a, b = _operands(self.float(), other)
        broadcast_shape(a.shape, b.shape, "div")
        return a * b.float().reciprocal()

    def __rtruediv__(self, other: TensorLike) -> "Tensor":
        if _is_scalar(other):
            return self.reciprocal()._binary(OP.mul, other, reflected=True)
        a, b = _operands(self.float(), other)
        return b.float() * a.reciprocal()

    def div(self, other: TensorLike) -> "Tensor":
        return self / other

    def __pow__(self, exponent: Scalar) -> "Tensor":
        """x ** n: integer n by repeated squaring (any sign of x); other exponents as
        exp2(n * log2(x)), defined for x > 0."""
        if not _is_scalar(exponent):
            raise TypeError("pow takes a Python number exponent")
        if exponent == 0.5:
            return self.sqrt()
        if float(exponent).is_integer():
            n = int(exponent)
            k, result, base = abs(n), None, self
            while k:
                if k & 1:
                    result = base if result is None else result * base
                k >>= 1
                if k:
                    base = base * base
            result = self.ones_like() if result is None else result
            return result.reciprocal() if n < 0 else result
        return (self.log2() * float(exponent)).exp2()

    def __lt__(self, other: TensorLike) -> "Tensor":
        return self._binary(OP.cmplt, other, what="<")

    def __gt__(self, other: TensorLike) -> "Tensor":
        return self._binary(OP.cmplt, other, reflected=True, what=">")

    def __le__(self, other: TensorLike) -> "Tensor":
        return (self > other).logical_not()

    def __ge__(self, other: TensorLike) -> "Tensor":
        return (self < other).logical_not()

    def ne(self, other: TensorLike) -> "Tensor":
        return self._binary(OP.cmpne, other, what="ne")

    def eq(self, other: TensorLike) -> "Tensor":
        return self.ne(other).logical_not()

    def logical_not(self) -> "Tensor":
        return self.cast("i1")._apply(OP.cmpne, Tensor.full(self.shape, True, "i1"))

    def maximum(self, other: TensorLike) -> "Tensor":
        return self._binary(OP.max, other, what="maximum")

    def minimum(self, other: TensorLike) -> "Tensor":
        a, b = _operands(self, other)
        return -((-a).maximum(-b))

    def where(self, a: TensorLike, b: TensorLike) -> "Tensor":
        """`a` where this condition is true (nonzero), else `b`; all three broadcast.
        A Python scalar branch takes the other branch's type (as in arithmetic)."""
        cond = self.cast("i1")
        branches = [v if _is_scalar(v) else _as_tensor(v, cond) for v in (a, b)]
        tensors = [v for v in branches if isinstance(v, Tensor)]
        if tensors:
            dtype = tensors[0].dtype
            for v in branches:
                dtype = _promote(dtype, v.dtype) if isinstance(v, Tensor) else \
                    _scalar_operand_dtype(v, dtype)
        else:
            dtype = _promote(_scalar_dtype(a), _scalar_dtype(b))
        shape = cond.shape
        for v in tensors:
            shape = broadcast_shape(shape, v.shape, "where")

        def branch(v: Any) -> Tensor:
            if isinstance(v, Tensor):
                return v.cast(dtype)._broadcast_to(shape)
            return Tensor._wrap(UOp.const(_as_python(v, dtype), Sig(shape, dtype)), False)

        return cond._broadcast_to(shape)._apply(OP.where, branch(branches[0]), branch(branches[1]))

    def cast(self, dtype: Any) -> "Tensor":
        dt = to_dtype(dtype)
        return self if dt == self.dtype else self._apply(OP.cast, arg=dt)

    def float(self) -> "Tensor":
        return self if self.dtype in FLOAT_DTYPES else self.cast("f32")

    def int(self) -> "Tensor":
        return self.cast("i32")

    # ------------------------------------------------------------------ elementwise math
    def reciprocal(self) -> "Tensor":
        return self.float()._apply(OP.recip)

    def exp2(self) -> "Tensor":
        return self.float()._apply(OP.exp2)

    def log2(self) -> "Tensor":
        return self.float()._apply(OP.log2)

    def sqrt(self) -> "Tensor":
        return self.float()._apply(OP.sqrt)

    def sin(self) -> "Tensor":
        return self.float()._apply(OP.sin)

    def exp(self) -> "Tensor":
        return (self.float() * LOG2_E).exp2()

    def log(self) -> "Tensor":
        return self.log2() * LN_2

    def rsqrt(self) -> "Tensor":
        return self.sqrt().reciprocal()

    def cos(self) -> "Tensor":
        return (self.float() + math.pi / 2).sin()

    def square(self) -> "Tensor":
        return self * self

    def abs(self) -> "Tensor":
        return self.maximum(-self)

    def relu(self) -> "Tensor":
        return self.maximum(0)

    def sigmoid(self) -> "Tensor":
        return ((self.float() * -LOG2_E).exp2() + 1.0).reciprocal()

    def tanh(self) -> "Tensor":
        return 2.0 * (2.0 * self.float()).sigmoid() - 1.0

    def gelu(self) -> "Tensor":
        """GELU, tanh approximation."""
        x = self.float()
        return 0.5 * x * (1.0 + (math.sqrt(2.0 / math.pi) * (x + 0.044715 * x * x * x)).tanh())

    def silu(self) -> "Tensor":
        return self * self.sigmoid()

    # ------------------------------------------------------------------ movement
    def reshape(self, *shape: int) -> "Tensor":
        shape = _shape_arg(shape)
        if shape.count(-1) > 1:
            raise ShapeError(f"reshape to {fmt_shape(shape)}: at most one size may be -1")
        if -1 in shape:
            known = math.prod(d for d in shape if d != -1)
            if known == 0 or self.numel() % known:
                raise ShapeError(f"reshape from {fmt_shape(self.shape)} to {fmt_shape(shape)}: "
                                 f"{self.numel()} elements do not divide into that shape")
            shape = tuple(self.numel() // known if d == -1 else d for d in shape)
        if shape == self.shape:
            return self
        return self._apply(OP.reshape, arg=shape)

    def permute(self, *order: int) -> "Tensor":
        order = tuple(_normalize_axis(a, self.ndim, "permute") for a in _shape_arg(order))
        if order == tuple(range(self.ndim)):
            return self
        return self._apply(OP.permute, arg=order)

    def transpose(self, dim0: int = -2, dim1: int = -1) -> "Tensor":
        a = _normalize_axis(dim0, self.ndim, "transpose")
        b = _normalize_axis(dim1, self.ndim, "transpose")
        order = list(range(self.ndim))
        order[a], order[b] = order[b], order[a]
        return self.permute(order)

    @property
    def T(self) -> "Tensor":
        return self.permute(tuple(reversed(range(self.ndim))))

    def expand(self, *shape: int) -> "Tensor":
        """Broadcast to `shape`; -1 keeps a size; new leading axes may be added."""
        shape = _shape_arg(shape)
        if len(shape) < self.ndim:
            raise ShapeError(f"expand from {fmt_shape(self.shape)} to {fmt_shape(shape)}: "
                             f"the target has fewer axes")
        lead = len(shape) - self.ndim
        if -1 in shape[:lead]:
            raise ShapeError(f"expand from {fmt_shape(self.shape)} to {fmt_shape(shape)}: "
                             f"a new leading axis needs a size, not -1")
        full = tuple(self.shape[i - lead] if d == -1 else d for i, d in enumerate(shape))
        t = self.reshape((1,) * lead + self.shape) if lead else self
        return t if t.shape == full else t._apply(OP.expand, arg=full)

    def flatten(self, start_dim: int = 0, end_dim: int = -1) -> "Tensor":
        if self.ndim == 0:
            return self.reshape(1)
        s = _normalize_axis(start_dim, self.ndim, "flatten")
        e = _normalize_axis(end_dim, self.ndim, "flatten")
        return self.reshape(self.shape[:s] + (-1,) + self.shape[e + 1:])

    def unsqueeze(self, dim: int) -> "Tensor":
        d = _normalize_axis(dim, self.ndim + 1, "unsqueeze")
        return self.reshape(self.shape[:d] + (1,) + self.shape[d:])

    def squeeze(self, dim: int | None = None) -> "Tensor":
        if dim is None:
            return self.reshape(tuple(d for d in self.shape if d != 1))
        d = _normalize_axis(dim, self.ndim, "squeeze")
        if self.shape[d] != 1:
            return self
        return self.reshape(self.shape[:d] + self.shape[d + 1:])

    def shrink(self, ranges: Sequence[tuple[int, int] | None]) -> "Tensor":
        """Keep [begin, end) on each axis (None keeps the whole axis)."""
        if len(ranges) != self.ndim:
            raise ShapeError(f"shrink of {fmt_shape(self.shape)} needs {self.ndim} ranges, "
                             f"got {len(ranges)}")
        begin = tuple(0 if r is None else r[0] for r in ranges)
        end = tuple(n if r is None else r[1] for r, n in zip(ranges, self.shape))
        if begin == (0,) * self.ndim and end == self.shape:
            return self
        return self._apply(OP.shrink, arg=(begin, end))

    def pad(self, widths: Sequence[tuple[int, int] | None], value: Scalar = 0) -> "Tensor":
        """Pad (before, after) on each axis (None leaves it) with `value`."""
        if len(widths) != self.ndim:
            raise ShapeError(f"pad of {fmt_shape(self.shape)} needs {self.ndim} (before, after) "
                             f"pairs, got {len(widths)}")
        before = tuple(0 if w is None else w[0] for w in widths)
        after = tuple(0 if w is None else w[1] for w in widths)
        if not any(before) and not any(after):
            return self
        padded = self._apply(OP.pad, arg=(before, after))
        if value == 0:
            return padded
        inside = Tensor.full(self.shape, True, "i1")._apply(OP.pad, arg=(before, after))
        return inside.where(padded, value)

    def flip(self, *axes: int) -> "Tensor":
        axes = tuple(sorted({_normalize_axis(a, self.ndim, "flip") for a in _shape_arg(axes)}))
        return self._apply(OP.flip, arg=axes) if axes else self

    def __getitem__(self, index: Any) -> "Tensor":
        return _getitem(self, index)

    def cat(self, *others: "Tensor", dim: int = 0) -> "Tensor":
        """Concatenate along `dim` (also `Tensor.cat(a, b, c, dim=...)`)."""
        parts = [self, *others]
        d = _normalize_axis(dim, self.ndim, "cat")
        dtype = parts[0].dtype
        for p in parts[1:]:
            dtype = _promote(dtype, p.dtype)
            if p.ndim != self.ndim or any(
                    a != b for i, (a, b) in enumerate(zip(p.shape, self.shape)) if i != d):
                raise ShapeError(f"cat along axis {d}: shapes {fmt_shape(self.shape)} and "
                                 f"{fmt_shape(p.shape)} differ off that axis")
        total = sum(p.shape[d] for p in parts)
        out, offset = None, 0
        for p in parts:
            widths = [None] * self.ndim
            widths[d] = (offset, total - offset - p.shape[d])
            offset += p.shape[d]
            piece = p.cast(dtype).pad(widths)
            out = piece if out is None else out + piece
        return out

    def stack(self, *others: "Tensor", dim: int = 0) -> "Tensor":
        """Stack along a new axis `dim` (also `Tensor.stack(a, b, c, dim=...)`)."""
        parts = [self, *others]
        dtype = parts[0].dtype
        for p in parts[1:]:
            dtype = _promote(dtype, p.dtype)
            if p.shape != self.shape:
                raise ShapeError(f"stack: shapes {fmt_shape(self.shape)} and "
                                 f"{fmt_shape(p.shape)} differ")
        d = _normalize_axis(dim, self.ndim + 1, "stack")
        parts = [p.cast(dtype) for p in parts]
        out = parts[0]._apply(OP.stack, *parts[1:])
        order = list(range(1, self.ndim + 1))
        order.insert(d, 0)
        return out.permute(order)

    # ------------------------------------------------------------------ reductions
    def _axes(self, axis: int | Sequence[int] | None, what: str) -> tuple[int, ...]:
        if axis is None:
            return tuple(range(self.ndim))
        axes = (axis,) if isinstance(axis, int) else tuple(axis)
        return tuple(sorted({_normalize_axis(a, self.ndim, what) for a in axes}))

    def _reduce(self, kind: str, axis: Any, keepdim: bool, what: str) -> "Tensor":
        axes = self._axes(axis, what)
        x = self.cast("i32") if self.dtype == "i1" else self
        if not axes:
            return x
        out = x._apply(OP.reduce, arg=(kind, axes))
        if keepdim:
            out = out.reshape(tuple(1 if i in axes else n for i, n in enumerate(self.shape)))
        return out

    def sum(self, axis: Any = None, keepdim: bool = False) -> "Tensor":
        return self._reduce("add", axis, keepdim, "sum")

    def max(self, axis: Any = None, keepdim: bool = False) -> "Tensor":
        return self._reduce("max", axis, keepdim, "max")

    def min(self, axis: Any = None, keepdim: bool = False) -> "Tensor":
        return -((-self).max(axis, keepdim))

    def mean(self, axis: Any = None, keepdim: bool = False) -> "Tensor":
        count = math.prod(self.shape[a] for a in self._axes(axis, "mean"))
        return self.float().sum(axis, keepdim) * (1.0 / max(count, 1))

    def var(self, axis: Any = None, keepdim: bool = False, correction: int = 1) -> "Tensor":
        """Variance with Bessel's `correction` (1 by default, as in PyTorch; numpy's ddof)."""
        count = math.prod(self.shape[a] for a in self._axes(axis, "var"))
        centered = self.float() - self.float().mean(axis, keepdim=True)
        return (centered * centered).sum(axis, keepdim) * (1.0 / max(count - correction, 1))

    def std(self, axis: Any = None, keepdim: bool = False, correction: int = 1) -> "Tensor":
        return self.var(axis, keepdim, correction).sqrt()

    def _shifted(self, axis: int) -> tuple["Tensor", "Tensor"]:
        # The shift by the maximum only keeps exp2 in range; it does not change the value,
        # so it is detached and costs no gradient work.
        x = self.float()
        m = x.max(axis, keepdim=True).detach()
        return x - m, m

    def softmax(self, axis: int = -1) -> "Tensor":
        z, _ = self._shifted(axis)
        e = z.exp()
        return e / e.sum(axis, keepdim=True)

    def log_softmax(self, axis: int = -1) -> "Tensor":
        z, _ = self._shifted(axis)
        return z - z.exp().sum(axis, keepdim=True).log()

    def logsumexp(self, axis: int = -1, keepdim: bool = False) -> "Tensor":
        z, m = self._shifted(axis)
        out = z.exp().sum(axis, keepdim=True).log() + m
        return out if keepdim else out.squeeze(axis)

    def argmax(self, axis: int | None = None, keepdim: bool = False) -> "Tensor":
        """Index of the first maximum along `axis` (of the flattened tensor when None), i32."""
        if axis is None:
            out = self.flatten().argmax(0)
            return out.reshape((1,) * self.ndim) if keepdim else out
        ax = _normalize_axis(axis, self.ndim, "argmax")
        n = self.shape[ax]
        shape = [1] * self.ndim
        shape[ax] = n
        # n - i for position i, so that the largest candidate is the first maximum.
        countdown = Tensor(np.arange(n, 0, -1, dtype=np.int32).reshape(shape))
        hit = self.eq(self.max(ax, keepdim=True))
        first = hit.where(countdown, 0).max(ax, keepdim=keepdim)
        return n - first

    def argmin(self, axis: int | None = None, keepdim: bool = False) -> "Tensor":
        return (-self).argmax(axis, keepdim)

    # ------------------------------------------------------------------ linear algebra
    def matmul(self, other: "Tensor") -> "Tensor":
        a, b = _operands(self, other)
        if a.ndim == 0 or b.ndim == 0:
            raise ShapeError(f"matmul of {fmt_shape(a.shape)} and {fmt_shape(b.shape)}: both "
                             f"operands need at least one axis; use * for scalars")
        vec_a, vec_b = a.ndim == 1, b.ndim == 1
        if vec_a:
            a = a.reshape(1, -1)
        if vec_b:
            b = b.reshape(-1, 1)
        if a.shape[-1] != b.shape[-2]:
            raise ShapeError(f"matmul of {fmt_shape(self.shape)} and {fmt_shape(other.shape)}: "
                             f"inner sizes {a.shape[-1]} and {b.shape[-2]} differ")
        n, k, m = a.shape[-2], a.shape[-1], b.shape[-1]
        a3 = a.reshape(a.shape[:-2] + (n, 1, k))
        b3 = b.transpose(-1, -2).reshape(b.shape[:-2] + (1, m, k))
        out = (a3 * b3).sum(-1)
        if vec_a:
            out = out.squeeze(-2)
        if vec_b:
            out = out.squeeze(-1)
        return out

    def __matmul__(self, other: "Tensor") -> "Tensor":
        return self.matmul(other)

    def __rmatmul__(self, other: TensorLike) -> "Tensor":
        return _as_tensor(other, self).matmul(self)

    def linear(self, weight: "Tensor", bias: "Tensor | None" = None) -> "Tensor":
        """x @ weight (+ bias); weight has shape (n_in, n_out)."""
        out = self @ weight
        return out if bias is None else out + bias

    def _patches(self, kernel: tuple[int, int], stride: tuple[int, int],
                 padding: tuple[int, int], fill: Scalar, what: str) -> "Tensor":
        """The (KH*KW, N, C, OH, OW) windows of an (N, C, H, W) input, built from movement ops."""
        if self.ndim != 4:
            raise ShapeError(f"{what} takes an (N, C, H, W) input, got {fmt_shape(self.shape)}")
        (kh, kw), (sh, sw), (ph, pw) = kernel, stride, padding
        x = self.pad((None, None, (ph, ph), (pw, pw)), value=fill)
        oh = (x.shape[2] - kh) // sh + 1
        ow = (x.shape[3] - kw) // sw + 1
        if oh <= 0 or ow <= 0:
            raise ShapeError(f"{what}: a {kh}x{kw} window does not fit the padded input "
                             f"{fmt_shape(x.shape)}")
        views = [x[:, :, i:i + sh * (oh - 1) + 1:sh, j:j + sw * (ow - 1) + 1:sw]
                 for i in range(kh) for j in range(kw)]
        return views[0].stack(*views[1:])

    def conv2d(self, weight: "Tensor", bias: "Tensor | None" = None,
               stride: int | Sequence[int] = 1, padding: int | Sequence[int] = 0) -> "Tensor":
        """2-D convolution (cross-correlation) of (N, C, H, W) with (O, C, KH, KW) weights."""
        if weight.ndim != 4 or self.ndim != 4 or weight.shape[1] != self.shape[1]:
            raise ShapeError(f"conv2d of input {fmt_shape(self.shape)} with weight "
                             f"{fmt_shape(weight.shape)}: expected (N, C, H, W) and (O, C, KH, KW) "
                             f"with the same C")
        n, c = self.shape[:2]
        o, _, kh, kw = weight.shape
        cols = self._patches((kh, kw), _pair(stride), _pair(padding), 0, "conv2d")
        oh, ow = cols.shape[3], cols.shape[4]
        # (KH*KW, N, C, OH, OW) -> (N, OH*OW, C*KH*KW) so that one matmul does the rest
        cols = cols.permute(1, 3, 4, 2, 0).reshape(n, oh * ow, c * kh * kw)
        out = cols @ weight.reshape(o, c * kh * kw).T
        out = out.permute(0, 2, 1).reshape(n, o, oh, ow)
        return out if bias is None else out + bias.reshape(1, o, 1, 1)

    def max_pool2d(self, kernel_size: int | Sequence[int] = 2,
                   stride: int | Sequence[int] | None = None,
                   padding: int | Sequence[int] = 0) -> "Tensor":
        kernel = _pair(kernel_size)
        cols = self._patches(kernel, kernel if stride is None else _pair(stride),
                             _pair(padding), -math.inf, "max_pool2d")
        return cols.max(0)

    # ------------------------------------------------------------------ losses
    def one_hot(self, num_classes: int) -> "Tensor":
        """(..., num_classes) f32 rows with a 1 at each integer label."""
        classes = Tensor(np.arange(num_classes, dtype=np.int32))
        return self.cast("i32").unsqueeze(-1).eq(classes).cast("f32")

    def cross_entropy(self, labels: TensorLike) -> "Tensor":
        """Mean negative log-likelihood of integer `labels` under these (N, C) logits."""
        target = labels if isinstance(labels, Tensor) else Tensor(np.asarray(labels), "i32")
        if target.shape != self.shape[:-1]:
            raise ShapeError(f"cross_entropy: logits {fmt_shape(self.shape)} need labels of "
                             f"shape {fmt_shape(self.shape[:-1])}, got {fmt_shape(target.shape)}")
        picked = (self.log_softmax(-1) * target.one_hot(self.shape[-1])).sum(-1)
        return -picked.mean()


# ---------------------------------------------------------------------- helpers


def _as_python(value: Scalar, dtype: str) -> Scalar:
    if dtype == "i1":
        return bool(value)
    if dtype == "i32":
        return int(value)
    return float(value)


def _buffer_node(data: Any, dtype: Any) -> UOp:
    array = np.asarray(data)
    dt = to_dtype(dtype) if dtype is not None else to_dtype(array.dtype)
    # a private copy: the graph is evaluated later, after the caller may have changed `data`
    array = np.array(array, dtype=_NUMPY_OF[dt], order="C", copy=True)
    if buffer_observer is not None:
        buffer_observer(data, array)
    return UOp.buffer(array, Sig(tuple(array.shape), dt))


def _as_tensor(x: TensorLike, like: "Tensor") -> "Tensor":
    """A Tensor for an operand: Python scalars become constants typed after `like`."""
    if isinstance(x, Tensor):
        return x
    if _is_scalar(x):
        return Tensor.full((), x, _scalar_operand_dtype(x, like.dtype))
    return Tensor(x)


def _scalar_operand_dtype(value: Scalar, tensor_dtype: str) -> str:
    """The type of a computation between a tensor and a Python scalar: the tensor's,
    unless the scalar is of a higher kind (a float with an integer tensor gives f32)."""
    dt = _scalar_dtype(value)
    if _RANK[dt] <= _RANK[tensor_dtype] or (dt == "f32" and tensor_dtype in FLOAT_DTYPES):
        return tensor_dtype
    return dt


def _operands(a: TensorLike, b: TensorLike) -> tuple["Tensor", "Tensor"]:
    """Both operands as Tensors of one element type (numpy-like promotion)."""
    if isinstance(a, Tensor):
        b = _as_tensor(b, a)
    else:
        a = _as_tensor(a, b)
    if a.dtype != b.dtype:
        dt = _promote(a.dtype, b.dtype)
        a, b = a.cast(dt), b.cast(dt)
    return a, b


def _gather_rows(t: Tensor, ids: Tensor) -> Tensor:
    """t[ids] for an integer tensor `ids`: rows of the first axis, shape ids.shape + t.shape[1:].

    Built from a comparison with the row numbers and a masked sum (no data-dependent
    addressing), so it differentiates like any other expression. Out-of-range ids give
    rows of zeros."""
    if ids.dtype != "i32":
        raise TypeError(f"tensor indices must be i32, got {ids.dtype}")
    if t.ndim == 0:
        raise IndexError("a 0-d tensor cannot be indexed by a tensor")
    n, rest = t.shape[0], t.shape[1:]
    hit = ids.unsqueeze(-1).eq(Tensor(np.arange(n, dtype=np.int32)))  # ids.shape + (n,)
    hit = hit.reshape(ids.shape + (n,) + (1,) * len(rest))
    picked = hit.where(t, 0)
    return picked.sum(ids.ndim)


def _getitem(t: Tensor, index: Any) -> Tensor:
    """Basic numpy indexing (ints, slices with any step, None, Ellipsis), or one integer
    tensor/array selecting rows of the first axis."""
    if isinstance(index, (Tensor, np.ndarray, list)):
        ids = index if isinstance(index, Tensor) else Tensor(np.asarray(index), "i32")
        return _gather_rows(t, ids)
    items = index if isinstance(index, tuple) else (index,)
    if any(isinstance(i, (Tensor, np.ndarray, list)) for i in items):
        raise TypeError("a tensor index must be the only index (it selects rows of the "
                        "first axis); combine it with slicing in two steps")
    n_axes = sum(1 for i in items if i is not None and i is not Ellipsis)
    if n_axes > t.ndim:
        raise IndexError(f"too many indices ({n_axes}) for a tensor of shape "
                         f"{fmt_shape(t.shape)}")
    fill = (slice(None),) * (t.ndim - n_axes)
    if any(i is Ellipsis for i in items):
        at = items.index(Ellipsis)
        items = items[:at] + fill + items[at + 1:]
    else:
        items = items + fill

    flips, begin, count, steps, out_shape = [], [], [], [], []
    axis = 0
    for item in items:
        if item is None:
            out_shape.append(1)
            continue
        n = t.shape[axis]
        if isinstance(item, slice):
            start, stop, step = item.indices(n)
            length = len(range(start, stop, step))
            if step < 0:
                flips.append(axis)
                start, step = n - 1 - start, -step
            begin.append(start)
            count.append(length)
            steps.append(step)
            out_shape.append(length)
        else:
            i = int(item)
            if not -n <= i < n:
                raise IndexError(f"index {i} is out of range for axis {axis} of size {n}")
            begin.append(i % n)
            count.append(1)
            steps.append(1)
        axis += 1

    x = t.flip(*flips) if flips else t
    ranges = [(b, b + (c - 1) * s + 1 if c else b) for b, c, s in zip(begin, count, steps)]
    x = x.shrink(ranges)
    if any(s > 1 and c > 1 for s, c in zip(steps, count)):
        # strided axes: pad to count*step, split into (count, step), keep index 0 of step
        widths = [(0, c * s - x.shape[i]) if s > 1 and c > 1 else None
                  for i, (c, s) in enumerate(zip(count, steps))]
        x = x.pad(widths)
        split: list[int] = []
        keep: list[tuple[int, int] | None] = []
        for i, (c, s) in enumerate(zip(count, steps)):
            if s > 1 and c > 1:
                split += [c, s]
                keep += [None, (0, 1)]
            else:
                split.append(x.shape[i])
                keep.append(None)
        x = x.reshape(split).shrink(keep)
    return x.reshape(tuple(out_shape))
