"""The members of `Tensor` that its mixin classes and the autodiff walk build on, as a
typing Protocol.

The mixins (activations, functional, shaping, spatial, indexing, losses) and `autograd`
compute with `Tensor` methods but cannot import `tensor.py`, which imports them. For the type checker
each mixin derives from `TensorMixin`, which is `TensorProtocol` there, so `self.shape`,
`self.reshape(...)` and the rest are known in the mixin; at run time `TensorMixin` is
plain `object`, so `Tensor`'s bases, method resolution and `isinstance` speed stay as
they were. Results are `Any`: they are Tensors, whose full type only `tensor.py` knows.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, Protocol

from uopc.uopdialect.graph import UOp


class TensorProtocol(Protocol):
    """The core `Tensor` members used outside `tensor.py`: shape facts, constructors,
    movement ops, casts and the operators the mixins apply to `self`."""

    uop: UOp

    @property
    def shape(self) -> tuple[int, ...]: ...

    @property
    def dtype(self) -> str: ...

    @property
    def ndim(self) -> int: ...

    @property
    def requires_grad(self) -> bool: ...

    @staticmethod
    def _tensor_class() -> Any: ...

    @staticmethod
    def _wrap(node: UOp, requires_grad: bool) -> Any: ...

    @staticmethod
    def full(shape: Sequence[int] | int, value: Any, dtype: Any = None,
             requires_grad: bool = False) -> Any: ...

    @staticmethod
    def zeros(*shape: int, dtype: Any = "f32", requires_grad: bool = False) -> Any: ...

    @staticmethod
    def ones(*shape: int, dtype: Any = "f32", requires_grad: bool = False) -> Any: ...

    @staticmethod
    def arange(start: int | float, stop: int | float | None = None, step: int | float = 1,
               dtype: Any = None) -> Any: ...

    def reshape(self, *shape: Any) -> Any: ...

    def permute(self, *order: Any) -> Any: ...

    def transpose(self, dim0: int = -2, dim1: int = -1) -> Any: ...

    def flatten(self, start_dim: int = 0, end_dim: int = -1) -> Any: ...

    def unsqueeze(self, dim: int) -> Any: ...

    def pad(self, widths: Sequence[Any] | None = None, value: Any = 0, mode: str = "constant",
            *, pad: Sequence[Any] | None = None) -> Any: ...

    def contiguous(self) -> Any: ...

    def cast(self, dtype: Any) -> Any: ...

    def numpy(self) -> Any: ...

    def log_softmax(self, axis: int) -> Any: ...

    def _floating(self) -> Any: ...

    def _accumulated(self, dtype: Any) -> Any: ...

    def _reversed_order(self) -> Any: ...

    def maximum(self, other: Any) -> Any: ...

    def detach(self) -> Any: ...

    def on_device(self, device: str) -> Any: ...

    def __le__(self, other: Any) -> Any: ...

    def __getitem__(self, index: Any) -> Any: ...

    def __mul__(self, other: Any) -> Any: ...


if TYPE_CHECKING:
    TensorMixin = TensorProtocol
else:
    TensorMixin = object
