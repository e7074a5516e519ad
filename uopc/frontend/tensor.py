"""The lazy, PyTorch-like `Tensor` of uopc.

A Tensor holds a node of the light uop graph (`uopc.uopdialect.graph.UOp`). Every method records
new nodes built only from the uop ops (arithmetic, IEEE compares, div, pow, the math
library functions, cast, where, movement ops, reduce): `a - b` is `a + (-1 * b)`,
`min` is `max` through an exact order reversal, and so on. Nothing runs until
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
raised while tracing, at the line that applied the op, and name both shapes. `==` and
`!=` compare elementwise, as in PyTorch; hashing stays by identity (Tensors are dict keys
in optimizers). Data that does not fit its element type raises instead of wrapping.

The methods are grouped by theme: this module has the core (construction, arithmetic,
movement, reductions); `activations`, `functional` (normalization, attention, resizing),
`indexing` (`t[...]`), `losses`, `shaping` (selection, scans, sorting, einsum) and
`spatial` (convolution, pooling) are mixin classes that `Tensor` inherits. The element
type rules are in `dtypes`, those of shape and axis arguments in `shape_args`. None of
these modules imports this one: they build tensors from `Tensor._tensor_class()`.

Tracing builds no xDSL IR (graph nodes hold the ops' records, `uopc.uopdialect.ops.OP`):
a step of a training loop on a cached plan costs only the trace, the structural lookup in
the engine, and one native call.
"""

from __future__ import annotations

import math
import operator
import weakref
from collections.abc import Callable, Iterable, Sequence
from typing import Any, Union, cast

import numpy as np

from uopc import settings
from uopc.frontend.activations import Activations
from uopc.frontend.dtypes import (
    DEFAULT_FLOAT,
    DEFAULT_INT,
    ElementType,
    Rank,
    Scalar,
    as_python,
    data_dtype,
    element_type,
    fit_data,
    is_scalar,
    promote,
    result_type,
    scalar_dtype,
    to_dtype,
)
from uopc.frontend.functional import Functional
from uopc.frontend.indexing import Indexing
from uopc.frontend.losses import Losses
from uopc.frontend.shape_args import Dims, axis_or_dim, broadcast_shape, normalize_axis, pad_pairs, shape_arg
from uopc.frontend.shaping import Shaping
from uopc.frontend.spatial import Spatial
from uopc.runtime.backend import check_device
from uopc.uopdialect.dtypes import BY_NUMPY, DTYPES, FLOAT_DTYPES
from uopc.uopdialect.graph import UOp, result_sig
from uopc.uopdialect.opinfo import OpInfo
from uopc.uopdialect.ops import OP
from uopc.uopdialect.shapes import ShapeError, Sig, fmt_shape

TensorLike = Union["Tensor", Scalar, np.ndarray, list, tuple]
#: a TensorLike operand of a comparison or of a reflected product, declared Any: numpy's
#: and list's stubs give `array < t` and `[1] * t` their own result types, while numpy
#: hands these to Tensor (`__array_ufunc__`), so a precise type would "overlap unsafely"
Operand = Any

_rng = np.random.default_rng()


#: state tensors assigned during tracing (BatchNorm's running statistics) that the next
#: realize computes in the same plan; see `defer_realize`
_DEFERRED: list[Tensor] = []


def defer_realize(*tensors: Tensor) -> None:
    """Have the next `Tensor.realize_all` (an optimizer step, `numpy()`, ...) compute
    these tensors too, so that state updated while tracing never chains from one step's
    graph into the next."""
    _DEFERRED.extend(tensors)


def manual_seed(seed: int) -> None:
    """Make `randn`, `uniform` and `kaiming` reproducible."""
    global _rng
    _rng = np.random.default_rng(seed)


def from_numpy(array: np.ndarray) -> Tensor:
    """A tensor on `array`'s memory, without a copy (torch.from_numpy): for inputs too
    big to copy on every call. The graph is lazy, so a realize reads `array` as it is
    then: write to it only while no tensor computed from it is waiting to be realized.
    `array` must be C-contiguous and of a uopc element type (float64, float32, bfloat16,
    float16, int64, int32, int16, int8, uint8, bool); `Tensor(array)` says why others
    cannot be used."""
    if not isinstance(array, np.ndarray):
        raise TypeError(f"from_numpy takes a numpy array, not {type(array).__name__}: "
                        f"use Tensor(data)")
    found = BY_NUMPY.get(array.dtype)
    if found is None:
        raise TypeError(f"from_numpy shares the array's memory, so it cannot convert its "
                        f"dtype {array.dtype}: convert a copy, e.g. "
                        f"Tensor(array.astype(np.int64)) or Tensor(array.astype(np.float32))")
    dt = found.name
    if not array.flags.c_contiguous:
        raise ValueError(f"from_numpy needs a C-contiguous array, this one of shape "
                         f"{array.shape} has strides {array.strides}: use "
                         f"np.ascontiguousarray(array) or Tensor(array)")
    return Tensor._wrap(UOp.buffer(array, Sig(array.shape, dt)), False)


#: float sums over more elements than this are summed in blocks (see `Tensor._float_sum`)
SUM_BLOCK = 4096


#: called after every realize with the tensors that received values and the values
#: (set while `uopc.capture` records a step)
realize_observer: Callable[[list[Tensor], list[np.ndarray]], None] | None = None
#: called with the data and the private copy every new Tensor's buffer holds (idem)
buffer_observer: Callable[[Any, np.ndarray], None] | None = None


class Tensor(Activations, Functional, Indexing, Losses, Shaping, Spatial):
    """A lazily evaluated n-dimensional array; see the module docstring."""

    __slots__ = ("uop", "_trace", "_leaf", "_requires_grad", "grad", "_device", "_siblings",
                 "__weakref__")
    uop: UOp
    _trace: UOp
    _leaf: bool
    _requires_grad: bool
    grad: Tensor | None
    _device: str | None
    #: tensors computed together with this one whenever it is realized (the gradients one
    #: `backward()` set; see `realize_all`), or None
    _siblings: list[weakref.ref[Tensor]] | None

    def __init__(self, data: Any, dtype: Any = None, requires_grad: bool = False,
                 device: str | None = None):
        # the device a realize of this tensor (or of anything computed from it) runs on;
        # None: the default (UOPC_DEVICE, else "cpu")
        self._device = None if device is None else check_device(device)
        if isinstance(data, Tensor):
            if device is None:
                self._device = data._device
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
        self.grad = None
        self._siblings = None

    @staticmethod
    def _wrap(node: UOp, requires_grad: bool) -> Tensor:
        t = Tensor.__new__(Tensor)
        t.uop = node
        t._trace = node
        t._leaf = not requires_grad
        t._requires_grad = requires_grad
        t.grad = None
        t._device = None
        t._siblings = None
        return t

    @staticmethod
    def _tensor_class() -> type:
        """`Tensor`, for the mixins and helper modules that build tensors or test for them
        without importing this module. Not `type(self)`: a subclass such as
        `QuantizedTensor` has a constructor of its own, and its results are plain Tensors."""
        return Tensor

    def _operand(self, x: TensorLike) -> Tensor:
        """`x` as a Tensor to compute with this one (see `_as_tensor`)."""
        return _as_tensor(x, self)

    @property
    def device(self) -> str:
        """Where realizes of this tensor run: "cpu" or "cuda" (SPEC §9)."""
        return self._device or settings.DEVICE.get()

    def on_device(self, device: str) -> Tensor:
        """This value (gradients flow back to this tensor) realized on `device`; a device
        uopc has no backend for is a ValueError naming the ones it has."""
        out = Tensor._wrap(self.uop, self._requires_grad)
        out._trace = self._trace
        out._device = check_device(device)
        return out

    @property
    def requires_grad(self) -> bool:
        return self._requires_grad

    @requires_grad.setter
    def requires_grad(self, flag: bool) -> None:
        self._requires_grad = bool(flag)
        self._mark_leaf()

    def requires_grad_(self, requires_grad: bool = True) -> Tensor:
        """Set `requires_grad` in place and return this tensor (PyTorch's spelling for
        `from_numpy(a).requires_grad_()`)."""
        self.requires_grad = requires_grad
        return self

    def _mark_leaf(self) -> None:
        """Record on the node that this tensor is a requires_grad leaf of that value, which
        is how `backward()` without a parameter list finds the tensors it fills."""
        if self._requires_grad and self._leaf:
            self._trace.leaves += (weakref.ref(self),)

    def _apply(self, op: OpInfo, *others: Tensor, arg: Any = None) -> Tensor:
        # the hot path of tracing: kept to plain attribute reads
        grad = self._requires_grad
        device = self._device
        if others:
            listed = [self._trace if grad else self.uop]
            for o in others:
                listed.append(o._trace if o._requires_grad else o.uop)
                grad = grad or o._requires_grad
                device = device or o._device  # the first operand that names one
            srcs = tuple(listed)
        else:
            srcs = (self._trace if grad else self.uop,)
        node = UOp(op, srcs, arg, result_sig(op, srcs, arg))
        out = Tensor.__new__(Tensor)  # `_wrap`, inlined
        out.uop = node
        out._trace = node
        out._leaf = not grad
        out._requires_grad = grad
        out.grad = None
        out._device = device
        out._siblings = None
        return out

    # ------------------------------------------------------------------ construction
    @staticmethod
    def full(shape: Sequence[int] | int, value: Scalar, dtype: Any = None,
             requires_grad: bool = False) -> Tensor:
        shape = (shape,) if isinstance(shape, int) else tuple(shape)
        dt = to_dtype(dtype) if dtype is not None else scalar_dtype(value)
        t = Tensor(UOp.const(as_python(value, dt), Sig(shape, dt)))
        t.requires_grad = requires_grad
        return t

    @staticmethod
    def zeros(*shape: Dims, dtype: Any = "f32", requires_grad: bool = False) -> Tensor:
        return Tensor.full(shape_arg(shape), 0, dtype, requires_grad)

    @staticmethod
    def ones(*shape: Dims, dtype: Any = "f32", requires_grad: bool = False) -> Tensor:
        return Tensor.full(shape_arg(shape), 1, dtype, requires_grad)

    def full_like(self, value: Scalar, dtype: Any = None) -> Tensor:
        return Tensor.full(self.shape, value, self.dtype if dtype is None else dtype)

    def zeros_like(self, dtype: Any = None) -> Tensor:
        return self.full_like(0, dtype)

    def ones_like(self, dtype: Any = None) -> Tensor:
        return self.full_like(1, dtype)

    def rand_like(self, dtype: Any = None) -> Tensor:
        return Tensor.uniform(*self.shape, dtype=dtype or self._floating().dtype)

    def randn_like(self, dtype: Any = None) -> Tensor:
        return Tensor.randn(*self.shape, dtype=dtype or self._floating().dtype)

    @staticmethod
    def eye(n: int, m: int | None = None, dtype: Any = "f32") -> Tensor:
        return Tensor(np.eye(n, n if m is None else m), dtype=dtype)

    @staticmethod
    def linspace(start: float, end: float, steps: int, dtype: Any = "f32") -> Tensor:
        return Tensor(np.linspace(start, end, steps), dtype=dtype)

    def meshgrid(self: Tensor | Sequence[Tensor], *others: Tensor,
                 indexing: str = "ij") -> tuple[Tensor, ...]:
        """Grids of 1-D tensors, "ij" (matrix) or "xy" (Cartesian) indexing:
        `Tensor.meshgrid(a, b)`, `Tensor.meshgrid([a, b])` or `a.meshgrid(b)`."""
        tensors = _parts(self, others, "meshgrid")
        if indexing not in ("ij", "xy"):
            raise ValueError(f"meshgrid: indexing must be 'ij' or 'xy', got {indexing!r}")
        sizes = [t.numel() for t in tensors]
        if indexing == "xy" and len(tensors) >= 2:
            sizes[0], sizes[1] = sizes[1], sizes[0]
        grids = []
        for i, t in enumerate(tensors):
            axis = i if indexing == "ij" or len(tensors) < 2 else (1 - i if i < 2 else i)
            shape = [1] * len(tensors)
            shape[axis] = t.numel()
            grids.append(t.reshape(shape).expand(tuple(sizes)))
        return tuple(grids)

    manual_seed = staticmethod(manual_seed)

    @staticmethod
    def arange(start: int | float, stop: int | float | None = None, step: int | float = 1,
               dtype: Any = None) -> Tensor:
        """Python ints give int64, as in PyTorch; any float argument the default float."""
        if stop is None:
            start, stop = 0, start
        values = np.arange(start, stop, step)
        if dtype is None and values.dtype.kind == "f":
            dtype = DEFAULT_FLOAT
        return Tensor(values, dtype=dtype)

    @staticmethod
    def randn(*shape: Dims, dtype: Any = "f32", requires_grad: bool = False) -> Tensor:
        """Standard normal samples, drawn on the host (see `manual_seed`): in float64 for
        a float64 tensor, else in float32 and rounded to `dtype`."""
        dt = _random_dtype(dtype, "randn")
        data = _rng.standard_normal(shape_arg(shape), dtype=np.float64 if dt == "f64" else np.float32)
        return Tensor(data, dtype=dt, requires_grad=requires_grad)

    @staticmethod
    def uniform(*shape: Dims, low: float = 0.0, high: float = 1.0, dtype: Any = "f32",
                requires_grad: bool = False) -> Tensor:
        dt = _random_dtype(dtype, "uniform")
        data = _rng.uniform(low, high, shape_arg(shape))
        return Tensor(data if dt == "f64" else data.astype(np.float32), dtype=dt,
                      requires_grad=requires_grad)

    @staticmethod
    def rand(*shape: Dims, dtype: Any = "f32", requires_grad: bool = False) -> Tensor:
        """Uniform samples in [0, 1), as torch.rand."""
        return Tensor.uniform(*shape, dtype=dtype, requires_grad=requires_grad)

    @staticmethod
    def kaiming(*shape: Dims, fan_in: int | None = None, requires_grad: bool = False) -> Tensor:
        """He-uniform initialization: U(-b, b) with b = sqrt(6 / fan_in).

        `fan_in` defaults to the product of all axes but the first (PyTorch's layout
        (out, in, ...)); pass it when the inputs run along another axis, as for a
        `uopc.frontend.nn.Linear` weight of shape (n_in, n_out)."""
        shape = shape_arg(shape)
        fan = fan_in if fan_in is not None else math.prod(shape[1:])
        bound = math.sqrt(6.0 / max(fan, 1))
        return Tensor.uniform(*shape, low=-bound, high=bound, requires_grad=requires_grad)

    # ------------------------------------------------------------------ properties
    @property
    def shape(self) -> tuple[int, ...]:
        return self.uop.sig.shape

    @property
    def dtype(self) -> ElementType:
        """The element type: `uopc.float32`, ... (equal to "f32", "float32", np.float32)."""
        return element_type(self.uop.sig.dtype)

    def element_size(self) -> int:
        """Bytes per element (bool: 1)."""
        return DTYPES[self.uop.sig.dtype].itemsize

    def is_floating_point(self) -> bool:
        return self.uop.sig.dtype in FLOAT_DTYPES

    def _rank(self) -> Rank:
        """How this tensor takes part in type promotion (see `dtypes.result_type`)."""
        return "dim" if self.uop.sig.shape else "zero"

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
        """The values, as PyTorch prints them (this realizes the tensor)."""
        body = np.array2string(self.numpy(), separator=", ", prefix="tensor(")
        # PyTorch leaves out the types a Tensor of such values gets by default
        dtype = "" if self.dtype in ("f32", "i64", "i1") else f", dtype={self.dtype!r}"
        grad = ", requires_grad=True" if self.requires_grad else ""
        return f"tensor({body}{dtype}{grad})"

    def size(self, dim: int | None = None) -> tuple[int, ...] | int:
        return self.shape if dim is None else self.shape[normalize_axis(dim, self.ndim, "size")]

    def __bool__(self) -> bool:
        if self.numel() != 1:
            raise RuntimeError(f"the truth value of a tensor of shape {fmt_shape(self.shape)} "
                               f"is ambiguous: use .any() or .all()")
        return bool(self.item())

    def __float__(self) -> float:
        return float(self.item())

    def __int__(self) -> int:
        return int(self.item())

    def __index__(self) -> int:
        if self.dtype in FLOAT_DTYPES:
            raise TypeError(f"only integer tensors can be used as an index, this one is "
                            f"{self.dtype}")
        return int(self.item())

    # numpy defers to Tensor: `np_array + t`, `np.float32(2) * t` and `np.exp(t)` compute
    # Tensors, and `np.asarray(t)` realizes the tensor
    __array_priority__ = 1000

    def __array__(self, dtype: Any = None, copy: bool | None = None) -> np.ndarray:
        values = self.numpy()
        if dtype is not None:
            return values.astype(dtype)
        return values.copy() if copy else values

    def __array_ufunc__(self, ufunc: np.ufunc, method: str, *inputs: Any, **kwargs: Any) -> Any:
        rule = _UFUNCS.get(ufunc.__name__)
        if method != "__call__" or rule is None or kwargs:
            return NotImplemented
        return rule(*inputs)

    # ------------------------------------------------------------------ running
    def realize(self) -> Tensor:
        Tensor.realize_all(self)
        return self

    @staticmethod
    def realize_all(*tensors: Tensor) -> None:
        """Compute all the tensors in one engine call (one compiled plan), with their
        siblings: reading one gradient after `backward()` computes every gradient that
        call set, so that reading each `p.grad` in turn costs one plan, not one each."""
        pending: dict[int, Tensor] = {}
        deferred = list(_DEFERRED)
        _DEFERRED.clear()
        for t in (*tensors, *deferred):
            if t.uop.op is not OP.buffer:
                pending.setdefault(id(t), t)
                siblings = t._siblings
                if siblings:
                    for ref in siblings:
                        sibling = ref()
                        if sibling is not None and sibling.uop.op is not OP.buffer:
                            pending.setdefault(id(sibling), sibling)
                    siblings.clear()  # shared by the group: each is realized now
        if not pending:
            return
        from uopc.runtime.engine import realize

        todo = list(pending.values())
        devices = {t._device for t in todo if t._device is not None}
        if len(devices) > 1:
            raise ValueError(f"realize of tensors on different devices ({', '.join(sorted(devices))}): "
                             f"realize them separately, or make them on one device")
        results = realize([t.uop for t in todo], devices.pop() if devices else None)
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
        """The value as a numpy array that shares the tensor's memory (no copy, like
        torch), read-only: a tensor's value never changes, so writing to it raises
        (`t.numpy().copy()` is a writable array of one's own)."""
        self.realize()
        view = np.asarray(self.uop.arg).view()
        view.flags.writeable = False
        return view

    def item(self) -> Scalar:
        if self.numel() != 1:
            raise ValueError(f"item() needs a tensor with one element, this one has shape "
                             f"{fmt_shape(self.shape)}")
        self.realize()
        return self.uop.arg.reshape(()).item()

    def tolist(self) -> Any:
        return self.numpy().tolist()

    def detach(self) -> Tensor:
        """The same value, cut off from gradient flow."""
        node = self.uop
        if node.op is OP.buffer:
            copy = UOp.buffer(node.arg, node.sig)
        else:
            copy = UOp(node.op, node.srcs, node.arg, node.sig)
            copy.detached = True
        return Tensor(copy)

    def assign(self, value: TensorLike) -> Tensor:
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

    def contiguous(self) -> Tensor:
        return self._apply(OP.contiguous)

    def backward(self, gradient: Tensor | Iterable[Tensor] | None = None, *,
                 inputs: Iterable[Tensor] | None = None) -> None:
        """Reverse-mode gradients of this tensor into `p.grad` of every parameter (those
        of `inputs`, else every requires_grad leaf the graph reads), as PyTorch's
        backward: a tensor with more than one element needs `gradient`, the vector the
        product is taken with. A list or tuple in first place is read as `inputs`, as
        earlier uopc took it."""
        from uopc.frontend.autograd import backward

        if gradient is not None and not isinstance(gradient, Tensor):
            if inputs is not None:
                raise TypeError("backward: give the parameters once, as inputs=")
            gradient, inputs = None, gradient
        root = self
        if gradient is not None:
            if gradient.shape != self.shape:
                raise ShapeError(f"backward: gradient of shape {fmt_shape(gradient.shape)} for a "
                                 f"tensor of shape {fmt_shape(self.shape)}: give one of the "
                                 f"tensor's shape")
            root = (self * gradient.detach()).sum()
        elif self.numel() != 1:
            raise RuntimeError(f"backward of a tensor of shape {fmt_shape(self.shape)}: "
                               f"gradients are implicitly created only for one-element "
                               f"outputs, as in PyTorch; reduce it (.sum()) or pass "
                               f"gradient=")
        backward(root, None if inputs is None else list(inputs))

    # ------------------------------------------------------------------ elementwise core
    def _broadcast_to(self, shape: tuple[int, ...]) -> Tensor:
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
                what: str | None = None) -> Tensor:
        if isinstance(other, Tensor):  # most operands: no scalar test
            if other.uop.sig == self.uop.sig:
                return other._apply(op, self) if reflected else self._apply(op, other)
        elif is_scalar(other):
            # a splat constant of the full shape: no reshape/expand nodes to trace
            dt = result_type((self.uop.sig.dtype, self._rank()), (scalar_dtype(other), "scalar"))
            a = self.cast(dt)
            b = Tensor._wrap(UOp.const(as_python(other, dt), a.uop.sig), False)
            return b._apply(op, a) if reflected else a._apply(op, b)
        a, b = _operands(self, other)
        if reflected:
            a, b = b, a
        shape = broadcast_shape(a.shape, b.shape, what or op.name)
        return a._broadcast_to(shape)._apply(op, b._broadcast_to(shape))

    def add(self, other: TensorLike) -> Tensor:
        return self._binary(OP.add, other)

    def mul(self, other: TensorLike) -> Tensor:
        return self._binary(OP.mul, other)

    def __add__(self, other: TensorLike) -> Tensor:
        return self._binary(OP.add, other)

    def __radd__(self, other: TensorLike) -> Tensor:
        return self._binary(OP.add, other, reflected=True)

    def __mul__(self, other: TensorLike) -> Tensor:
        return self._binary(OP.mul, other)

    def __rmul__(self, other: Operand) -> Tensor:
        return self._binary(OP.mul, other, reflected=True)

    def __neg__(self) -> Tensor:
        if self.dtype == "i1":
            raise TypeError("negation of a bool tensor: use logical_not()")
        return self * self._minus_one()

    def _minus_one(self) -> int:
        """-1 in this tensor's type: 255 for uint8, where it wraps to the same products."""
        record = DTYPES[self.uop.sig.dtype]
        return -1 if record.kind == "float" or record.signed else int(record.max)

    def __sub__(self, other: TensorLike) -> Tensor:
        a, b = _operands(self, other)
        broadcast_shape(a.shape, b.shape, "sub")
        return a + (-b)

    def __rsub__(self, other: TensorLike) -> Tensor:
        if is_scalar(other):
            return (-self)._binary(OP.add, other, reflected=True)
        a, b = _operands(self, other)
        return b + (-a)

    def sub(self, other: TensorLike) -> Tensor:
        return self - other

    def _float_result(self, other: TensorLike) -> Tensor:
        """This tensor cast to the type of a float op with `other` (true division, pow):
        the promoted type, or the default float where that is bool or integer."""
        dt = _promoted(self, other)
        return self.cast(dt if dt in FLOAT_DTYPES else DEFAULT_FLOAT)

    def __truediv__(self, other: TensorLike) -> Tensor:
        return self._float_result(other)._binary(OP.div, other, what="div")

    def __rtruediv__(self, other: TensorLike) -> Tensor:
        return self._float_result(other)._binary(OP.div, other, reflected=True, what="div")

    def div(self, other: TensorLike, rounding_mode: str | None = None) -> Tensor:
        """True division (correctly rounded; integers divide as f32); `rounding_mode`
        "trunc" or "floor" rounds the quotient (integers stay integers), as in PyTorch."""
        if rounding_mode is None:
            return self / other
        if rounding_mode not in ("trunc", "floor"):
            raise ValueError(f"div: rounding_mode must be None, 'trunc' or 'floor', got "
                             f"{rounding_mode!r}")
        a, b = _operands(self, other)
        if a.dtype == "i1":
            a, b = a.cast("i32"), b.cast("i32")
        if a.dtype in FLOAT_DTYPES:
            q = a / b
            return q.floor() if rounding_mode == "floor" else q.trunc()
        floor = a // b
        if rounding_mode == "floor":
            return floor
        # truncation differs from the floor where the quotient is negative and inexact
        inexact = (a - floor * b).ne(0) * ((a < 0).ne(b < 0))
        return floor + inexact.cast(a.dtype)

    def __floordiv__(self, other: TensorLike) -> Tensor:
        return self._intdiv(other, OP.floordiv, "//", reflected=False)

    def __rfloordiv__(self, other: TensorLike) -> Tensor:
        return self._intdiv(other, OP.floordiv, "//", reflected=True)

    def __mod__(self, other: TensorLike) -> Tensor:
        return self._intdiv(other, OP.floormod, "%", reflected=False)

    def __rmod__(self, other: TensorLike) -> Tensor:
        return self._intdiv(other, OP.floormod, "%", reflected=True)

    def _intdiv(self, other: TensorLike, op: OpInfo, what: str, reflected: bool) -> Tensor:
        """Python's // and % (rounding toward -inf; % has the divisor's sign) on any type.
        An integer division by zero is undefined (SPEC §5): it is rejected here where the
        divisor is a Python number."""
        a, b = _operands(self, other)
        if reflected:
            a, b = b, a
        if a.dtype == "i1":
            a, b = a.cast("i32"), b.cast("i32")
        if a.dtype in FLOAT_DTYPES:
            q = (a / b).floor()
            return q if op is OP.floordiv else a - q * b
        if is_scalar(other) and int(other) == 0 and not reflected:
            raise ZeroDivisionError(f"integer {what} by zero: the result is undefined; "
                                    f"divide floats for inf/nan")
        return a._binary(op, b, what=what)

    # bitwise operators: bools directly (and, or, xor, not); integers through their bits
    # (two's complement, read with floor division by powers of two), which the compiler
    # fuses into one kernel: exact, but some 200 ops each for & | ^ on i32
    def _bitwise(self, other: TensorLike, what: str, reflected: bool = False) -> Tensor:
        a, b = _operands(self, other)
        if reflected:
            a, b = b, a
        if a.dtype in FLOAT_DTYPES:
            raise TypeError(f"{what} takes integer or bool tensors, got {a.dtype}")
        if a.dtype == "i1":
            return {"&": a * b, "|": a + b, "^": a.ne(b)}[what]
        record = DTYPES[a.dtype]
        out = None
        for k in range(record.bits):
            sign = record.signed and k == record.bits - 1
            bit_a = (a < 0) if sign else ((a // (1 << k)) % 2).ne(0)
            bit_b = (b < 0) if sign else ((b // (1 << k)) % 2).ne(0)
            bit = {"&": bit_a * bit_b, "|": bit_a + bit_b, "^": bit_a.ne(bit_b)}[what]
            term = bit.where(Tensor.full((), record.min if sign else 1 << k, a.dtype), 0)
            out = term if out is None else out + term
        assert out is not None  # one term per bit was added
        return out

    def __and__(self, other: TensorLike) -> Tensor:
        return self._bitwise(other, "&")

    def __rand__(self, other: TensorLike) -> Tensor:
        return self._bitwise(other, "&", reflected=True)

    def __or__(self, other: TensorLike) -> Tensor:
        return self._bitwise(other, "|")

    def __ror__(self, other: TensorLike) -> Tensor:
        return self._bitwise(other, "|", reflected=True)

    def __xor__(self, other: TensorLike) -> Tensor:
        return self._bitwise(other, "^")

    def __rxor__(self, other: TensorLike) -> Tensor:
        return self._bitwise(other, "^", reflected=True)

    def __invert__(self) -> Tensor:
        """Bitwise not: logical not of bools, -x - 1 of integers."""
        if self.dtype in FLOAT_DTYPES:
            raise TypeError(f"~ takes integer or bool tensors, got {self.dtype}")
        return self._reversed_order()

    def bitwise_and(self, other: TensorLike) -> Tensor:
        return self & other

    def bitwise_or(self, other: TensorLike) -> Tensor:
        return self | other

    def bitwise_xor(self, other: TensorLike) -> Tensor:
        return self ^ other

    def bitwise_not(self) -> Tensor:
        return ~self

    def _shift(self, amount: TensorLike, left: bool) -> Tensor:
        """x << k = x * 2**k (wrapping) and x >> k = floor(x / 2**k) (arithmetic), for
        shift amounts 0..bits-1 (a Python int, or a tensor of them), in the promoted type
        of the two, as PyTorch."""
        dt = _promoted(self, amount)
        x = self.cast(dt)
        record = DTYPES[dt]
        if record.kind != "int":
            raise TypeError(f"{'<<' if left else '>>'} takes integer tensors, got {x.dtype}")
        sign = record.bits - 1 if record.signed else None  # the shift that reaches the sign

        def by(k: int) -> Tensor:
            if left:
                return x * (record.min if k == sign else 1 << k)
            return (x < 0).where(-1, 0).cast(x.dtype) if k == sign else x // (1 << k)

        if is_scalar(amount):
            k = int(amount)
            if not 0 <= k < record.bits:
                raise ValueError(f"shift by {k}: shift amounts of {x.dtype} are "
                                 f"0..{record.bits - 1}")
            return by(k)
        amounts = _as_tensor(amount, x).cast("i32")
        out = x * 0
        for s in range(record.bits):
            out = amounts.eq(s).where(by(s), out)
        return out

    def __lshift__(self, amount: TensorLike) -> Tensor:
        return self._shift(amount, left=True)

    def __rshift__(self, amount: TensorLike) -> Tensor:
        return self._shift(amount, left=False)

    def __rlshift__(self, value: TensorLike) -> Tensor:
        return _as_tensor(value, self)._shift(self, left=True)

    def __rrshift__(self, value: TensorLike) -> Tensor:
        return _as_tensor(value, self)._shift(self, left=False)

    def pow(self, exponent: TensorLike) -> Tensor:
        return self ** exponent

    def __pow__(self, exponent: TensorLike) -> Tensor:
        """x ** n: a whole number n by repeated squaring in the promoted type (exact for
        any sign of x; integer tensors with an int stay integers, bools become int64);
        other exponents (floats, tensors) with the pow op, C's powf: NaN for a negative
        base and a non-integer exponent. An integer tensor exponent computes in float."""
        if is_scalar(exponent) and float(exponent).is_integer() and abs(exponent) <= 64 \
                and not (exponent < 0 and _promoted(self, exponent) not in FLOAT_DTYPES):
            n = int(exponent)
            k, result, base = abs(n), None, self.cast(_promoted(self, exponent))
            while k:
                if k & 1:
                    result = base if result is None else result * base
                k >>= 1
                if k:
                    base = base * base
            result = base.ones_like() if result is None else result
            return result.reciprocal() if n < 0 else result
        if is_scalar(exponent) and exponent == 0.5:
            return self.sqrt()
        return self._float_result(exponent)._binary(OP.pow, exponent, what="pow")

    def __rpow__(self, base: TensorLike) -> Tensor:
        return self._float_result(base)._binary(OP.pow, base, reflected=True, what="pow")

    def __lt__(self, other: Operand) -> Tensor:
        return self._binary(OP.cmplt, other, what="<")

    def __gt__(self, other: Operand) -> Tensor:
        return self._binary(OP.cmplt, other, reflected=True, what=">")

    def __le__(self, other: Operand) -> Tensor:
        return self._binary(OP.cmple, other, what="<=")

    def __ge__(self, other: Operand) -> Tensor:
        return self._binary(OP.cmple, other, reflected=True, what=">=")

    def __eq__(self, other: TensorLike) -> Tensor:  # type: ignore[override]
        """Elementwise, as in PyTorch (hashing stays by identity)."""
        return self.eq(other)

    def __ne__(self, other: TensorLike) -> Tensor:  # type: ignore[override]
        return self.ne(other)

    __hash__ = object.__hash__

    def lt(self, other: TensorLike) -> Tensor:
        return self < other

    def gt(self, other: TensorLike) -> Tensor:
        return self > other

    def le(self, other: TensorLike) -> Tensor:
        return self <= other

    def ge(self, other: TensorLike) -> Tensor:
        return self >= other

    def ne(self, other: TensorLike) -> Tensor:
        return self._binary(OP.cmpne, other, what="ne")

    def eq(self, other: TensorLike) -> Tensor:
        return self._binary(OP.cmpeq, other, what="eq")

    def logical_not(self) -> Tensor:
        return self.cast("i1")._apply(OP.cmpne, Tensor.full(self.shape, True, "i1"))

    def maximum(self, other: TensorLike) -> Tensor:
        return self._binary(OP.max, other, what="maximum")

    def minimum(self, other: TensorLike) -> Tensor:
        a, b = _operands(self, other)
        return a._reversed_order().maximum(b._reversed_order())._reversed_order()

    def _reversed_order(self) -> Tensor:
        """An exact order-reversing map, its own inverse: -x on floats (NaN stays NaN),
        the bitwise complement on integers (-x - 1, so INT_MIN <-> INT_MAX with no
        overflow), not on bools. min is max through it."""
        if self.dtype == "i1":
            return self.logical_not()
        if self.dtype in FLOAT_DTYPES:
            return -self
        return self * self._minus_one() + self._minus_one()

    def where(self, a: TensorLike, b: TensorLike) -> Tensor:
        """`a` where this condition is true (nonzero), else `b`; all three broadcast.
        The branches promote as the operands of arithmetic (`dtypes.result_type`)."""
        cond = self.cast("i1")
        branches: list[Tensor | Scalar] = [v if is_scalar(v) else _as_tensor(v, cond)
                                           for v in (a, b)]
        tensors = [v for v in branches if isinstance(v, Tensor)]
        dtype = result_type(*(_promotion_operand(v) for v in branches))
        shape = cond.shape
        for v in tensors:
            shape = broadcast_shape(shape, v.shape, "where")

        def branch(v: Any) -> Tensor:
            if isinstance(v, Tensor):
                return v.cast(dtype)._broadcast_to(shape)
            return Tensor._wrap(UOp.const(as_python(v, dtype), Sig(shape, dtype)), False)

        return cond._broadcast_to(shape)._apply(OP.where, branch(branches[0]), branch(branches[1]))

    def cast(self, dtype: Any) -> Tensor:
        own = self.uop.sig.dtype
        if dtype is own or isinstance(dtype, str) and str.__eq__(dtype, own):
            return self  # this type's own IR name: no lookup (most casts while tracing)
        dt = to_dtype(dtype)
        return self if dt == own else self._apply(OP.cast, arg=dt)

    def view(self, *shape: Any) -> Tensor:
        """As torch.Tensor.view: `view(shape)` is reshape (a lazy Tensor has no storage
        to share); `view(dtype)` reinterprets the bits as a type of the same width
        (`uop.bitcast`; PyTorch also allows other widths, which reshape the last axis)."""
        if len(shape) == 1 and not isinstance(shape[0], (int, np.integer, tuple, list)):
            dtype = to_dtype(shape[0])
            if "i1" in (self.dtype, dtype) and {self.dtype, dtype} <= {"i1", "i8", "ui8"}:
                return self.cast(dtype)  # a bool is the byte 0 or 1, as PyTorch stores it
            return self._apply(OP.bitcast, arg=dtype)
        return self.reshape(*shape)

    def _floating(self) -> Tensor:
        """This tensor if it is float (f16 stays f16), else its f32 cast: what float math
        computes on."""
        return self if self.dtype in FLOAT_DTYPES else self.cast("f32")

    # ------------------------------------------------------------------ elementwise math
    def _unary(self, op: OpInfo) -> Tensor:
        return self._floating()._apply(op)

    def reciprocal(self) -> Tensor:
        return self._unary(OP.recip)

    def exp2(self) -> Tensor:
        return self._unary(OP.exp2)

    def log2(self) -> Tensor:
        return self._unary(OP.log2)

    def sqrt(self) -> Tensor:
        return self._unary(OP.sqrt)

    def sin(self) -> Tensor:
        return self._unary(OP.sin)

    def cos(self) -> Tensor:
        return self._unary(OP.cos)

    def tan(self) -> Tensor:
        return self._unary(OP.tan)

    def asin(self) -> Tensor:
        return self._unary(OP.asin)

    def acos(self) -> Tensor:
        return self._unary(OP.acos)

    def atan(self) -> Tensor:
        return self._unary(OP.atan)

    def sinh(self) -> Tensor:
        return self._unary(OP.sinh)

    def cosh(self) -> Tensor:
        return self._unary(OP.cosh)

    def asinh(self) -> Tensor:
        return self._unary(OP.asinh)

    def tanh(self) -> Tensor:
        return self._unary(OP.tanh)

    def erf(self) -> Tensor:
        return self._unary(OP.erf)

    def exp(self) -> Tensor:
        return self._unary(OP.exp)

    def expm1(self) -> Tensor:
        return self._unary(OP.expm1)

    def log(self) -> Tensor:
        return self._unary(OP.log)

    def log10(self) -> Tensor:
        return self._unary(OP.log10)

    def log1p(self) -> Tensor:
        return self._unary(OP.log1p)

    def _rounded(self, op: OpInfo) -> Tensor:
        """floor/ceil/trunc/round: integers and bools are already whole."""
        return self if self.dtype not in FLOAT_DTYPES else self._apply(op)

    def floor(self) -> Tensor:
        return self._rounded(OP.floor)

    def ceil(self) -> Tensor:
        return self._rounded(OP.ceil)

    def trunc(self) -> Tensor:
        return self._rounded(OP.trunc)

    def round(self) -> Tensor:
        """Round to the nearest integer value, halves to even (as torch.round)."""
        return self._rounded(OP.round)

    def rsqrt(self) -> Tensor:
        return self.sqrt().reciprocal()

    def square(self) -> Tensor:
        return self * self

    def neg(self) -> Tensor:
        return -self

    def abs(self) -> Tensor:
        if self._minus_one() != -1:  # uint8: every value is its own absolute value
            return self
        return self.maximum(-self)

    def sign(self) -> Tensor:
        """-1, 0 or 1 (NaN stays NaN), in this tensor's type."""
        if self.dtype == "i1":
            return self
        s = (self > 0).cast(self.dtype) - (self < 0).cast(self.dtype)
        return self.isnan().where(self, s) if self.dtype in FLOAT_DTYPES else s

    def copysign(self, other: TensorLike) -> Tensor:
        """|self| with the sign of `other` (also of -0.0)."""
        a, b = _operands(self._floating(), other)
        negative = (b < 0) + (b.eq(0) * (b.reciprocal() < 0))
        return negative.where(-a.abs(), a.abs())

    def fmod(self, other: TensorLike) -> Tensor:
        """C's fmod: the remainder with the dividend's sign (integers exactly; floats as
        a - trunc(a/b)*b, exact while the quotient is below 2**24)."""
        a, b = _operands(self, other)
        if a.dtype in FLOAT_DTYPES:
            return a - (a / b).trunc() * b
        return a - a.div(b, rounding_mode="trunc") * b

    def remainder(self, other: TensorLike) -> Tensor:
        return self % other

    def logaddexp(self, other: TensorLike) -> Tensor:
        a, b = _operands(self._floating(), other)
        top = a.maximum(b)
        low = a.minimum(b)
        gap = (low - top).exp().log1p()
        return top.eq(-math.inf).where(top, top + gap)

    def lerp(self, end: TensorLike, weight: TensorLike) -> Tensor:
        return self + (end - self) * weight

    def isinf(self) -> Tensor:
        if self.dtype not in FLOAT_DTYPES:
            return Tensor.full(self.shape, False)
        return self.abs().eq(math.inf)

    def isfinite(self) -> Tensor:
        if self.dtype not in FLOAT_DTYPES:
            return Tensor.full(self.shape, True)
        return (self - self).eq(0)

    def isclose(self, other: TensorLike, rtol: float = 1e-05, atol: float = 1e-08,
                equal_nan: bool = False) -> Tensor:
        a, b = _operands(self, other)
        if a.dtype not in FLOAT_DTYPES:
            a, b = a.float(), b.float()
        close = ((a - b).abs() <= atol + rtol * b.abs()) + a.eq(b)
        return close + (a.isnan() * b.isnan()) if equal_nan else close

    def allclose(self, other: TensorLike, rtol: float = 1e-05, atol: float = 1e-08,
                 equal_nan: bool = False) -> bool:
        return bool(self.isclose(other, rtol, atol, equal_nan).all().item())

    def clamp(self, min: TensorLike | None = None, max: TensorLike | None = None) -> Tensor:
        """Limit to [min, max]; NaN stays NaN; the gradient is 1 inside [min, max]
        (bounds included) and 0 outside, as in PyTorch."""
        if min is None and max is None:
            raise ValueError("clamp: give min, max or both")
        out = self
        if min is not None:
            out = (out < min).where(min, out)
        if max is not None:
            out = (out > max).where(max, out)
        return out

    def clip(self, min: TensorLike | None = None, max: TensorLike | None = None) -> Tensor:
        return self.clamp(min, max)

    # ------------------------------------------------------------------ movement
    def reshape(self, *shape: Dims) -> Tensor:
        shape = shape_arg(shape)
        if -1 in shape:
            if shape.count(-1) > 1:
                raise ShapeError(f"reshape to {fmt_shape(shape)}: at most one size may be -1")
            known = math.prod(d for d in shape if d != -1)
            if known == 0 or self.numel() % known:
                raise ShapeError(f"reshape from {fmt_shape(self.shape)} to {fmt_shape(shape)}: "
                                 f"{self.numel()} elements do not divide into that shape")
            shape = tuple(self.numel() // known if d == -1 else d for d in shape)
        if shape == self.uop.sig.shape:
            return self
        return self._apply(OP.reshape, arg=shape)

    def permute(self, *order: Dims) -> Tensor:
        ndim = len(self.uop.sig.shape)
        order = tuple([normalize_axis(a, ndim, "permute") for a in shape_arg(order)])
        if order == tuple(range(ndim)):
            return self
        return self._apply(OP.permute, arg=order)

    def transpose(self, dim0: int = -2, dim1: int = -1) -> Tensor:
        ndim = len(self.uop.sig.shape)
        a = normalize_axis(dim0, ndim, "transpose")
        b = normalize_axis(dim1, ndim, "transpose")
        order = list(range(ndim))
        order[a], order[b] = order[b], order[a]
        return self.permute(order)

    @property
    def T(self) -> Tensor:
        return self.permute(tuple(reversed(range(self.ndim))))

    def expand(self, *shape: Dims) -> Tensor:
        """Broadcast to `shape`; -1 keeps a size; new leading axes may be added."""
        shape = shape_arg(shape)
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

    def flatten(self, start_dim: int = 0, end_dim: int = -1) -> Tensor:
        if self.ndim == 0:
            return self.reshape(1)
        s = normalize_axis(start_dim, self.ndim, "flatten")
        e = normalize_axis(end_dim, self.ndim, "flatten")
        return self.reshape(self.shape[:s] + (-1,) + self.shape[e + 1:])

    def unsqueeze(self, dim: int) -> Tensor:
        d = normalize_axis(dim, self.ndim + 1, "unsqueeze")
        return self.reshape(self.shape[:d] + (1,) + self.shape[d:])

    def squeeze(self, dim: int | None = None) -> Tensor:
        if dim is None:
            return self.reshape(tuple(d for d in self.shape if d != 1))
        d = normalize_axis(dim, self.ndim, "squeeze")
        if not self.ndim or self.shape[d] != 1:  # a 0-d tensor takes dim 0 or -1 and stays
            return self
        return self.reshape(self.shape[:d] + self.shape[d + 1:])

    def shrink(self, ranges: Sequence[tuple[int, int] | None]) -> Tensor:
        """Keep [begin, end) on each axis (None keeps the whole axis)."""
        if len(ranges) != self.ndim:
            raise ShapeError(f"shrink of {fmt_shape(self.shape)} needs {self.ndim} ranges, "
                             f"got {len(ranges)}")
        begin = tuple(0 if r is None else r[0] for r in ranges)
        end = tuple(n if r is None else r[1] for r, n in zip(ranges, self.shape))
        if begin == (0,) * self.ndim and end == self.shape:
            return self
        return self._apply(OP.shrink, arg=(begin, end))

    def pad(self, widths: Sequence[Any] | None = None, value: Scalar = 0, mode: str = "constant",
            *, pad: Sequence[Any] | None = None) -> Tensor:
        """Pad each axis: `widths` (or `pad=`, torch.nn.functional.pad's name) holds one
        (before, after) pair (or None) per axis, or PyTorch's flat (left, right, top,
        bottom, ...) that starts at the last axis. `mode` constant (fill with `value`),
        reflect, replicate or circular."""
        given = pad if widths is None else widths
        if given is None or (widths is not None and pad is not None):
            raise TypeError("pad: give the widths once, positionally or as pad=")
        widths = pad_pairs(given, self.shape)
        if mode != "constant":
            return self._pad_from_edges(widths, mode)
        before = tuple(0 if w is None else w[0] for w in widths)
        after = tuple(0 if w is None else w[1] for w in widths)
        if any(p < 0 for p in (*before, *after)):  # negative padding cuts, as in PyTorch
            cut = [(max(-b, 0), n - max(-a, 0)) for b, a, n in zip(before, after, self.shape)]
            grown = [(max(b, 0), max(a, 0)) for b, a in zip(before, after)]
            return self.shrink(cut).pad(grown, value)
        if not any(before) and not any(after):
            return self
        padded = self._apply(OP.pad, arg=(before, after))
        if value == 0:
            return padded
        inside = Tensor.full(self.shape, True, "i1")._apply(OP.pad, arg=(before, after))
        return inside.where(padded, value)

    def _pad_from_edges(self, widths: list, mode: str) -> Tensor:
        """reflect / replicate / circular padding, one axis at a time, from slices."""
        if mode not in ("reflect", "replicate", "circular"):
            raise ValueError(f"pad: mode must be constant, reflect, replicate or circular, "
                             f"got {mode!r}")
        out = self
        for axis, w in enumerate(widths):
            if w is None or w == (0, 0):
                continue
            lo, hi = w
            n = out.shape[axis]
            limit = n - 1 if mode == "reflect" else n
            if lo > limit or hi > limit or min(lo, hi) < 0:
                raise ShapeError(f"pad: {mode} padding ({lo}, {hi}) of axis {axis} needs "
                                 f"amounts in [0, {limit}] for size {n}")

            def part(start: int, stop: int, step: int = 1, out: Tensor = out,
                     axis: int = axis) -> Tensor:
                index = [slice(None)] * out.ndim
                # a stop before element 0 of a backward slice is None, not -1 (the end)
                index[axis] = slice(start, None if stop < 0 else stop, step)
                return out[tuple(index)]

            if mode == "reflect":
                left = part(lo, 0, -1) if lo else None
                right = part(n - 2, n - 2 - hi, -1) if hi else None
            elif mode == "circular":
                left = part(n - lo, n) if lo else None
                right = part(0, hi) if hi else None
            else:
                edge = list(out.shape)
                left = part(0, 1).expand(tuple(edge[:axis] + [lo] + edge[axis + 1:])) if lo else None
                right = part(n - 1, n).expand(tuple(edge[:axis] + [hi] + edge[axis + 1:])) \
                    if hi else None
            out = Tensor.cat([p for p in (left, out, right) if p is not None], dim=axis)
        return out

    def flip(self, *axes: Dims) -> Tensor:
        axes = tuple(sorted({normalize_axis(a, self.ndim, "flip") for a in shape_arg(axes)}))
        return self._apply(OP.flip, arg=axes) if axes else self

    def __setitem__(self, index: Any, value: TensorLike) -> None:
        """`t[index] = value` as a functional update: this Tensor becomes the old value
        with the selected elements replaced (broadcast and cast to this type); gradients
        flow to `value` and to the elements kept. Indices are those of `t[index]`, each
        element selected at most once."""
        if self._requires_grad and self._leaf:
            raise RuntimeError("item assignment to a leaf tensor that requires grad: assign "
                               "to a copy (t = t.clone(); t[i] = v) as in PyTorch")
        if isinstance(index, Tensor) and index.dtype == "i1" and index.shape == self.shape \
                and (is_scalar(value) or not np.shape(value)):
            new = index.where(value, self)  # t[mask] = v with a mask of t's shape: static
            self.uop, self._trace, self._requires_grad = new.uop, new._trace, new._requires_grad
            return
        new = self._put(index, value, False, "item assignment")
        self.uop, self._trace, self._requires_grad = new.uop, new._trace, new._requires_grad

    def index_put(self, indices: tuple, values: TensorLike, accumulate: bool = False) -> Tensor:
        """A new tensor: self with `values` (broadcast, cast to this type) at the places
        `self[indices]` selects, as torch.Tensor.index_put; `accumulate=True` adds them to
        what is there, repeated places adding up. Without accumulate, repeated places
        get the sum of their values (PyTorch leaves that case unspecified)."""
        return self._put(tuple(indices), values, accumulate, "index_put")

    def _put(self, index: Any, values: TensorLike, accumulate: bool, what: str) -> Tensor:
        from uopc.frontend.autograd import scatter_into

        selected = Tensor.zeros(*self.shape)[index]
        v = _as_tensor(values, self)
        if v.shape != selected.shape:
            v = v._broadcast_to(broadcast_shape(v.shape, selected.shape, what))
        placed, mask = scatter_into(self.shape, index, v.cast(self.dtype))
        return self + placed if accumulate else mask.where(placed, self)

    def cat(self: Tensor | Sequence[Tensor], *others: Tensor, dim: int = 0) -> Tensor:
        """Concatenate along `dim` (also `Tensor.cat(a, b, c, dim=...)` and
        `Tensor.cat([a, b, c], dim=...)`)."""
        parts = _parts(self, others, "cat")
        self = parts[0]
        d = normalize_axis(dim, self.ndim, "cat")
        dtype: str = parts[0].dtype
        for p in parts[1:]:
            dtype = promote(dtype, p.dtype)
            if p.ndim != self.ndim or any(
                    a != b for i, (a, b) in enumerate(zip(p.shape, self.shape)) if i != d):
                raise ShapeError(f"cat along axis {d}: shapes {fmt_shape(self.shape)} and "
                                 f"{fmt_shape(p.shape)} differ off that axis")
        total = sum(p.shape[d] for p in parts)
        out: Tensor | None = None
        offset = 0
        for p in parts:
            widths: list[tuple[int, int] | None] = [None] * self.ndim
            widths[d] = (offset, total - offset - p.shape[d])
            offset += p.shape[d]
            piece = p.cast(dtype).pad(widths)
            out = piece if out is None else out + piece
        assert out is not None  # _parts gives at least one part
        return out

    def stack(self: Tensor | Sequence[Tensor], *others: Tensor, dim: int = 0) -> Tensor:
        """Stack along a new axis `dim` (also `Tensor.stack(a, b, c, dim=...)` and
        `Tensor.stack([a, b, c], dim=...)`)."""
        parts = _parts(self, others, "stack")
        self = parts[0]
        dtype: str = parts[0].dtype
        for p in parts[1:]:
            dtype = promote(dtype, p.dtype)
            if p.shape != self.shape:
                raise ShapeError(f"stack: shapes {fmt_shape(self.shape)} and "
                                 f"{fmt_shape(p.shape)} differ")
        d = normalize_axis(dim, self.ndim + 1, "stack")
        parts = [p.cast(dtype) for p in parts]
        out = parts[0]._apply(OP.stack, *parts[1:])
        order = list(range(1, self.ndim + 1))
        order.insert(d, 0)
        return out.permute(order)

    # ------------------------------------------------------------------ reductions
    def _axes(self, axis: int | Sequence[int] | None, what: str) -> tuple[int, ...]:
        """Sorted reduce axes; a 0-d tensor accepts axis 0 or -1 and has none to reduce."""
        ndim = len(self.uop.sig.shape)
        if axis is None:
            return tuple(range(ndim))
        if isinstance(axis, int):  # the common case: no set to build and sort
            found = normalize_axis(axis, ndim, what)
            return (found,) if ndim else ()
        found_axes = sorted({normalize_axis(a, ndim, what) for a in axis})
        return tuple(found_axes) if ndim else ()

    def _reduce(self, kind: str, axis: Any, keepdim: bool, what: str) -> Tensor:
        axes = self._axes(axis, what)
        x = self.cast("i32") if self.uop.sig.dtype == "i1" else self
        if not axes:
            return x
        if kind == "add" and x.uop.sig.dtype in FLOAT_DTYPES:
            out = x._float_sum(axes)
        else:
            out = x._apply(OP.reduce, arg=(kind, axes))
        if keepdim:
            out = out.reshape(tuple(1 if i in axes else n for i, n in enumerate(self.shape)))
        return out

    def _float_sum(self, axes: tuple[int, ...]) -> Tensor:
        """A float sum over `axes` with PyTorch's accuracy: f16 and bf16 accumulate in f32
        (the result is rounded back once), and more than SUM_BLOCK elements are summed
        in blocks of SUM_BLOCK whose partial sums are summed in turn, so that the rounding
        error grows with SUM_BLOCK + n / SUM_BLOCK instead of n (a sequential f32 sum of
        2**25 ones stops at 2**24)."""
        dtype = self.uop.sig.dtype
        x = self.cast(DTYPES[dtype].widened_to or dtype)
        count = math.prod(self.shape[a] for a in axes)
        if count <= SUM_BLOCK:
            out = x._apply(OP.reduce, arg=("add", axes))
        else:
            kept = [i for i in range(self.ndim) if i not in axes]
            x = x.permute(kept + list(axes)).reshape([self.shape[i] for i in kept] + [count])
            while count > SUM_BLOCK:
                blocks = -(-count // SUM_BLOCK)
                if blocks * SUM_BLOCK != count:
                    x = x.pad([None] * len(kept) + [(0, blocks * SUM_BLOCK - count)])
                x = x.reshape(x.shape[:-1] + (blocks, SUM_BLOCK))._apply(
                    OP.reduce, arg=("add", (len(kept) + 1,)))
                count = blocks
            out = x._apply(OP.reduce, arg=("add", (len(kept),)))
        return out.cast(dtype)

    def sum(self, axis: Any = None, keepdim: bool = False, dtype: Any = None, *,
            dim: Any = None) -> Tensor:
        """Sum over `axis` (or `dim`); `dtype` casts the input first, as in PyTorch. Bools
        and integers sum as int64 (PyTorch's rule); f16 and bf16 accumulate in f32."""
        return self._accumulated(dtype)._reduce("add", axis_or_dim(axis, dim, "sum"),
                                                keepdim, "sum")

    def _accumulated(self, dtype: Any) -> Tensor:
        """The input of a sum or product: cast to `dtype` when given, else integers and
        bools widened to int64, as PyTorch does."""
        if dtype is not None:
            return self.cast(dtype)
        return self if self.uop.sig.dtype in FLOAT_DTYPES else self.cast(DEFAULT_INT)

    def max(self, axis: Any = None, keepdim: bool = False, *, dim: Any = None) -> Tensor:
        """The maximum over `axis` (or `dim`): the values only (PyTorch's max(dim) also
        returns indices; use argmax for those). NaN propagates; bools give a bool."""
        out = self._reduce("max", axis_or_dim(axis, dim, "max"), keepdim, "max")
        return out.cast("i1") if self.dtype == "i1" else out

    def min(self, axis: Any = None, keepdim: bool = False, *, dim: Any = None) -> Tensor:
        x = self.cast("i32") if self.dtype == "i1" else self
        out = x._reversed_order().max(axis_or_dim(axis, dim, "min"), keepdim)._reversed_order()
        return out.cast("i1") if self.dtype == "i1" else out

    def mean(self, axis: Any = None, keepdim: bool = False, dtype: Any = None, *,
             dim: Any = None) -> Tensor:
        """The mean over `axis`, of a float tensor (or one cast to a float `dtype`);
        f16 and bf16 accumulate in f32."""
        axis = axis_or_dim(axis, dim, "mean")
        count = math.prod(self.shape[a] for a in self._axes(axis, "mean"))
        x = self._float_input("mean", dtype)
        total = x.cast(DTYPES[x.dtype].widened_to or x.dtype).sum(axis, keepdim)
        return (total / count).cast(x.dtype)  # 0 elements: 0/0 = NaN, as in PyTorch

    def _float_input(self, what: str, dtype: Any = None) -> Tensor:
        """The input of a reduction defined on floats only (mean, var): PyTorch cannot
        infer a float result type for integers, and raises; so does uopc."""
        x = self if dtype is None else self.cast(dtype)
        if x.dtype not in FLOAT_DTYPES:
            raise TypeError(f"{what} of a {x.dtype!r} tensor: {what} needs a floating point "
                            f"input, as in PyTorch; pass dtype=uopc.float32 or call .float()")
        return x

    def var(self, axis: Any = None, keepdim: bool = False, correction: int = 1, *,
            dim: Any = None, unbiased: bool | None = None) -> Tensor:
        """Variance with Bessel's `correction` (1 by default, as in PyTorch; numpy's ddof);
        NaN where there are no more elements than the correction."""
        axis = axis_or_dim(axis, dim, "var")
        if unbiased is not None:
            correction = int(unbiased)
        count = math.prod(self.shape[a] for a in self._axes(axis, "var"))
        x = self._float_input("var")
        centered = x - x.mean(axis, keepdim=True)
        return (centered * centered).sum(axis, keepdim) / max(count - correction, 0)

    def std(self, axis: Any = None, keepdim: bool = False, correction: int = 1, *,
            dim: Any = None, unbiased: bool | None = None) -> Tensor:
        return self.var(axis, keepdim, correction, dim=dim, unbiased=unbiased).sqrt()

    def std_mean(self, axis: Any = None, keepdim: bool = False, correction: int = 1, *,
                 dim: Any = None) -> tuple[Tensor, Tensor]:
        return (self.std(axis, keepdim, correction, dim=dim),
                self.mean(axis, keepdim, dim=dim))

    def var_mean(self, axis: Any = None, keepdim: bool = False, correction: int = 1, *,
                 dim: Any = None) -> tuple[Tensor, Tensor]:
        return (self.var(axis, keepdim, correction, dim=dim),
                self.mean(axis, keepdim, dim=dim))

    def prod(self, axis: Any = None, keepdim: bool = False, dtype: Any = None, *,
             dim: Any = None) -> Tensor:
        """Product over `axis`: a binary tree of elementwise products (no reduce op
        multiplies), log2(n) levels, exact for integers (wrapping); integers and bools
        multiply as int64, as in PyTorch."""
        axes = self._axes(axis_or_dim(axis, dim, "prod"), "prod")
        x = self._accumulated(dtype)
        if not axes:
            return x
        kept = [i for i in range(self.ndim) if i not in axes]
        count = math.prod(self.shape[a] for a in axes)
        x = x.permute(kept + list(axes)).reshape([self.shape[i] for i in kept] + [count])
        while x.shape[-1] > 1:
            n = x.shape[-1]
            if n % 2:
                x = x.pad([None] * len(kept) + [(0, 1)], value=1)
                n += 1
            x = x.reshape(x.shape[:-1] + (n // 2, 2))
            x = x[..., 0] * x[..., 1]
        out = x.reshape(x.shape[:-1]) if count else Tensor.full(x.shape[:-1], 1, x.dtype)
        if keepdim:
            out = out.reshape(tuple(1 if i in axes else n for i, n in enumerate(self.shape)))
        return out

    def all(self, axis: Any = None, keepdim: bool = False, *, dim: Any = None) -> Tensor:
        return self.eq(0).any(axis, keepdim, dim=dim).logical_not()

    def any(self, axis: Any = None, keepdim: bool = False, *, dim: Any = None) -> Tensor:
        return self.ne(0).cast("i32").max(axis, keepdim, dim=dim).cast("i1")

    def _shifted(self, axis: int) -> tuple[Tensor, Tensor]:
        # The shift by the maximum only keeps exp2 in range; it does not change the value,
        # so it is detached and costs no gradient work.
        x = self._floating()
        m = x.max(axis, keepdim=True).detach()
        m = m.eq(-math.inf).where(0.0, m)  # a row of -inf: no shift, not -inf - -inf = NaN
        return x - m, m

    def softmax(self, axis: int = -1, dtype: Any = None, *, dim: int | None = None) -> Tensor:
        """`dtype` casts the input first, as in PyTorch."""
        x = self if dtype is None else self.cast(dtype)
        axis = axis_or_dim(axis if dim is None else None, dim, "softmax")
        z, _ = x._shifted(axis)
        e = z.exp()
        return e / e.sum(axis, keepdim=True)

    def softmin(self, axis: int = -1, *, dim: int | None = None) -> Tensor:
        return (-self._floating()).softmax(axis, dim=dim)

    def log_softmax(self, axis: int = -1, dtype: Any = None, *,
                    dim: int | None = None) -> Tensor:
        x = self if dtype is None else self.cast(dtype)
        axis = axis_or_dim(axis if dim is None else None, dim, "log_softmax")
        z, _ = x._shifted(axis)
        return z - z.exp().sum(axis, keepdim=True).log()

    def logsumexp(self, axis: int = -1, keepdim: bool = False, *,
                  dim: int | None = None) -> Tensor:
        axis = axis_or_dim(axis if dim is None else None, dim, "logsumexp")
        z, m = self._shifted(axis)
        out = z.exp().sum(axis, keepdim=True).log() + m
        out = m.eq(math.inf).where(m, out)  # an infinite term: inf, as in PyTorch
        return out if keepdim else out.squeeze(axis)

    def argmax(self, axis: int | None = None, keepdim: bool = False, *,
               dim: int | None = None) -> Tensor:
        """Index of the first maximum along `axis` (of the flattened tensor when None), i64;
        a NaN is the maximum (the first NaN's index), as in PyTorch."""
        axis = axis_or_dim(axis, dim, "argmax")
        if axis is None:
            out = self.flatten().argmax(0)
            return out.reshape((1,) * self.ndim) if keepdim else out
        x = self.cast("i32") if self.dtype == "i1" else self
        ax = normalize_axis(axis, x.ndim, "argmax")
        if x.ndim == 0:
            return Tensor.full((), 0, "i64")
        n = x.shape[ax]
        if n == 0:
            raise ShapeError(f"argmax/argmin along axis {ax} of a tensor of shape "
                             f"{fmt_shape(self.shape)}: the axis is empty, so there is no "
                             f"index to return (PyTorch raises too)")
        shape = [1] * x.ndim
        shape[ax] = n
        # n - i for position i, so that the largest candidate is the first maximum.
        countdown = Tensor(np.arange(n, 0, -1, dtype=np.int32).reshape(shape))
        hit = x.eq(x.max(ax, keepdim=True))
        if x.dtype in FLOAT_DTYPES:
            hit = hit + x.isnan()  # the max of a row with a NaN is NaN, equal to nothing
        first = hit.where(countdown, 0).max(ax, keepdim=keepdim)
        return (n - first).cast("i64")  # index arithmetic in i32, the result PyTorch's type

    def argmin(self, axis: int | None = None, keepdim: bool = False, *,
               dim: int | None = None) -> Tensor:
        x = self.cast("i32") if self.dtype == "i1" else self
        return x._reversed_order().argmax(axis_or_dim(axis, dim, "argmin"), keepdim)

    def isnan(self) -> Tensor:
        return self.ne(self) if self.dtype in FLOAT_DTYPES else Tensor.full(self.shape, False)

    # ------------------------------------------------------------------ linear algebra
    def matmul(self, other: Tensor) -> Tensor:
        a, b = _operands(self, other)
        a_rank, b_rank = len(a.uop.sig.shape), len(b.uop.sig.shape)
        if a_rank == 0 or b_rank == 0:
            raise ShapeError(f"matmul of {fmt_shape(a.shape)} and {fmt_shape(b.shape)}: both "
                             f"operands need at least one axis; use * for scalars")
        vec_a, vec_b = a_rank == 1, b_rank == 1
        if vec_a:
            a = a.reshape(1, -1)
        if vec_b:
            b = b.reshape(-1, 1)
        if a.shape[-1] != b.shape[-2]:
            raise ShapeError(f"matmul of {fmt_shape(self.shape)} and {fmt_shape(other.shape)}: "
                             f"inner sizes {a.shape[-1]} and {b.shape[-2]} differ")
        n, k, m = a.shape[-2], a.shape[-1], b.shape[-1]
        dtype = a.uop.sig.dtype
        wide = DTYPES[dtype].widened_to
        if wide is not None:
            # f16/bf16: products and sums in f32, rounded once at the end, as PyTorch's
            # half matmuls (and the tensor cores) compute them
            a, b = a.cast(wide), b.cast(wide)
        # the nodes reshape and transpose would make (each changes the shape or the
        # order), without their argument handling: a matmul is traced every step
        a3 = a._apply(OP.reshape, arg=a.shape[:-2] + (n, 1, k))
        rank = len(b.shape)
        bt = b._apply(OP.permute, arg=(*range(rank - 2), rank - 1, rank - 2))
        b3 = bt._apply(OP.reshape, arg=b.shape[:-2] + (1, m, k))
        # integers keep their type, as in PyTorch
        out = (a3 * b3).sum(-1, dtype=a.uop.sig.dtype)
        if wide is not None:
            out = out.cast(dtype)
        if vec_a:
            out = out.squeeze(-2)
        if vec_b:
            out = out.squeeze(-1)
        return out

    def __matmul__(self, other: Tensor) -> Tensor:
        return self.matmul(other)

    def __rmatmul__(self, other: TensorLike) -> Tensor:
        return _as_tensor(other, self).matmul(self)

    def linear(self, weight: Tensor, bias: Tensor | None = None) -> Tensor:
        """x @ weight (+ bias); weight has shape (n_in, n_out)."""
        out = self @ weight
        return out if bias is None else out + bias

    # ------------------------------------------------------------------ casts
    # last in the class: below them, `float`, `bool` and `int` in annotations would name
    # these methods instead of the types
    def float(self) -> Tensor:
        """The f32 cast (from f16 too, as in PyTorch)."""
        return self.cast("f32")

    def double(self) -> Tensor:
        return self.cast("f64")

    def half(self) -> Tensor:
        return self.cast("f16")

    def bfloat16(self) -> Tensor:
        return self.cast("bf16")

    def bool(self) -> Tensor:
        return self.cast("i1")

    def long(self) -> Tensor:
        return self.cast("i64")

    def int(self) -> Tensor:
        return self.cast("i32")

    def short(self) -> Tensor:
        return self.cast("i16")

    def char(self) -> Tensor:
        return self.cast("i8")

    def byte(self) -> Tensor:
        return self.cast("ui8")

    def type(self, dtype: Any = None) -> Any:
        """`type(dtype)` casts; `type()` names the type, as PyTorch's "torch.FloatTensor"
        does, here the dtype's name ("uopc.float32")."""
        return repr(self.dtype) if dtype is None else self.cast(dtype)

# ---------------------------------------------------------------------- helpers


def _ufunc_binary(method: str, reflected: str):
    """A numpy binary ufunc on operands of which at least one is a Tensor."""
    def apply(a: Any, b: Any) -> Tensor:
        if isinstance(a, Tensor):
            return getattr(a, method)(b)
        return getattr(b, reflected)(a)
    return apply


#: numpy ufuncs (by name) that Tensor computes when numpy hands it the operation
_UFUNCS = {
    "add": _ufunc_binary("__add__", "__radd__"),
    "subtract": _ufunc_binary("__sub__", "__rsub__"),
    "multiply": _ufunc_binary("__mul__", "__rmul__"),
    "true_divide": _ufunc_binary("__truediv__", "__rtruediv__"),
    "divide": _ufunc_binary("__truediv__", "__rtruediv__"),
    "floor_divide": _ufunc_binary("__floordiv__", "__rfloordiv__"),
    "remainder": _ufunc_binary("__mod__", "__rmod__"),
    "power": _ufunc_binary("__pow__", "__rpow__"),
    "matmul": _ufunc_binary("__matmul__", "__rmatmul__"),
    "less": _ufunc_binary("__lt__", "__gt__"),
    "greater": _ufunc_binary("__gt__", "__lt__"),
    "less_equal": _ufunc_binary("__le__", "__ge__"),
    "greater_equal": _ufunc_binary("__ge__", "__le__"),
    "equal": _ufunc_binary("__eq__", "__eq__"),
    "not_equal": _ufunc_binary("__ne__", "__ne__"),
    "maximum": lambda a, b: _operands(a, b)[0].maximum(_operands(a, b)[1]),
    "minimum": lambda a, b: _operands(a, b)[0].minimum(_operands(a, b)[1]),
    **{name: operator.methodcaller(method) for name, method in {
        "negative": "__neg__", "exp": "exp", "exp2": "exp2", "log": "log", "log2": "log2",
        "log10": "log10", "log1p": "log1p", "expm1": "expm1", "sqrt": "sqrt", "sin": "sin",
        "cos": "cos", "tan": "tan", "arcsin": "asin", "arccos": "acos", "arctan": "atan",
        "sinh": "sinh", "cosh": "cosh", "tanh": "tanh", "arcsinh": "asinh", "absolute": "abs",
        "floor": "floor", "ceil": "ceil", "trunc": "trunc", "rint": "round", "sign": "sign",
        "isnan": "isnan", "isinf": "isinf", "isfinite": "isfinite", "square": "square",
        "reciprocal": "reciprocal", "logical_not": "logical_not"}.items()},
}


def _random_dtype(dtype: Any, what: str) -> str:
    """The float type random samples are drawn for; PyTorch has no integer ones either."""
    dt = to_dtype(dtype)
    if dt not in FLOAT_DTYPES:
        raise TypeError(f"{what} draws floats, not {element_type(dt)!r}: ask for a float "
                        f"dtype, or cast the samples (e.g. .round().long())")
    return dt


def _buffer_node(data: Any, dtype: Any) -> UOp:
    if isinstance(data, (list, tuple)) and any(isinstance(d, Tensor) for d in data):
        raise TypeError("Tensor of a list of Tensors: use Tensor.stack(tensors)")
    array = np.asarray(data)
    dt = to_dtype(dtype) if dtype is not None else data_dtype(data)
    # a private copy: the graph is evaluated later, after the caller may have changed `data`
    array = fit_data(array, dt)
    if buffer_observer is not None:
        buffer_observer(data, array)
    return UOp.buffer(array, Sig(tuple(array.shape), dt))


def _as_tensor(x: TensorLike, like: Tensor) -> Tensor:
    """A Tensor for an operand: a Python scalar becomes a constant of the type it
    computes in with `like` (PyTorch's weak scalar rule)."""
    if isinstance(x, Tensor):
        return x
    if is_scalar(x):
        return Tensor.full((), x, _promoted(like, x))
    return Tensor(x)


def _promotion_operand(x: Tensor | Scalar) -> tuple[str, Rank]:
    if isinstance(x, Tensor):
        return x.uop.sig.dtype, x._rank()
    return scalar_dtype(x), "scalar"


def _promoted(a: Tensor, b: TensorLike) -> str:
    """The type `a` and the operand `b` compute in (`torch.result_type`)."""
    other = b if isinstance(b, Tensor) or is_scalar(b) else Tensor(b)
    return result_type(_promotion_operand(a), _promotion_operand(other))


def _operands(a: TensorLike, b: TensorLike) -> tuple[Tensor, Tensor]:
    """Both operands as Tensors of the type they compute in (`torch.result_type`)."""
    if isinstance(a, Tensor):
        b = _as_tensor(b, a)
    else:
        b = cast(Tensor, b)  # one of the two operands is a Tensor
        a = _as_tensor(a, b)
    if a.uop.sig.dtype != b.uop.sig.dtype:
        dt = result_type(_promotion_operand(a), _promotion_operand(b))
        a, b = a.cast(dt), b.cast(dt)
    return a, b


def _parts(first: Any, others: tuple, what: str) -> list[Tensor]:
    """The tensors of cat/stack: listed as arguments, or as one list or tuple."""
    parts = list(first) + list(others) if isinstance(first, (list, tuple)) else [first, *others]
    if not parts or not all(isinstance(p, Tensor) for p in parts):
        raise TypeError(f"{what} takes Tensors (as arguments or one list), got "
                        f"{[type(p).__name__ for p in parts]}")
    return parts
