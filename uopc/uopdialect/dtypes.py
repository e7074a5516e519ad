"""The element types of uop: one record per type holding every fact of it.

A type's IR name, xDSL type, numpy dtype, size in a buffer, C and CUDA spellings and kind
were spread over a dozen tables in as many modules; each record here holds them together,
and every lookup the stages need (by name, by xDSL type, by numpy dtype, the float and
integer names) is derived from `DTYPES`. A new element type is one more record, plus
whatever semantics of it are genuinely new (its SPEC §5 rules, the emitters' helpers).

This module sits at the bottom of the package: it imports xDSL and numpy only.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

import numpy as np
from xdsl.dialects.builtin import Float16Type, Float32Type, IntegerType
from xdsl.ir import Attribute


@dataclass(frozen=True)
class DType:
    """One element type of the uop dialect."""

    #: the IR spelling, as in `tensor<4xf32>`
    name: str
    #: the xDSL element type
    xdsl: Attribute
    #: the numpy dtype of its values in arrays and buffers
    numpy: np.dtype
    #: the C spelling in emitted code
    c: str
    #: the CUDA spelling (where it differs from `c`, the CUDA prelude typedefs `c` to it)
    cuda: str
    kind: Literal["bool", "int", "float"]
    #: bits of a value in the IR (i1: 1); a buffer element takes `itemsize` bytes
    bits: int
    #: a float type whose C arithmetic runs in this wider type, the result rounded back
    #: after every op (f16: C promotes `_Float16` to float); None when it computes as itself
    widened_to: str | None = None

    @property
    def itemsize(self) -> int:
        """Bytes per element in a buffer (i1 takes one byte)."""
        return self.numpy.itemsize

    @property
    def is_float(self) -> bool:
        return self.kind == "float"

    @property
    def rank(self) -> tuple[int, int]:
        """Where the type stands in promotion (PyTorch's order): bool, then integers, then
        floats, each by width; two operands compute in the higher-ranked type."""
        return ("bool", "int", "float").index(self.kind), self.bits


#: the element types by IR name, in the order error messages list them
DTYPES: dict[str, DType] = {d.name: d for d in (
    DType("i1", IntegerType(1), np.dtype(np.bool_), "bool", "bool", "bool", 1),
    DType("i32", IntegerType(32), np.dtype(np.int32), "int32_t", "int32_t", "int", 32),
    DType("f32", Float32Type(), np.dtype(np.float32), "float", "float", "float", 32),
    DType("f16", Float16Type(), np.dtype(np.float16), "_Float16", "__half", "float", 16,
          widened_to="f32"),
)}
FLOAT_DTYPES = frozenset(d.name for d in DTYPES.values() if d.kind == "float")
INT_DTYPES = frozenset(d.name for d in DTYPES.values() if d.kind == "int")
#: the record of an xDSL element type
BY_XDSL: dict[Attribute, DType] = {d.xdsl: d for d in DTYPES.values()}
#: the record of a numpy dtype
BY_NUMPY: dict[np.dtype, DType] = {d.numpy: d for d in DTYPES.values()}
