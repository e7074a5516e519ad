"""The element types of uop: one record per type holding every fact of it.

A type's IR name, xDSL type, numpy dtype, size in a buffer, C and CUDA spellings and kind
live in one record each; every lookup the stages need (by name, by xDSL type, by numpy
dtype, the float and integer names) is derived from `DTYPES`. A new element type is one
more record, plus whatever semantics of it are genuinely new (its SPEC §5 rules, the
emitters' helpers).

The ten types are MLIR's spellings: `i1` (bool), `i8`, `ui8`, `i16`, `i32`, `i64`, `f16`,
`bf16`, `f32`, `f64`. Signedness is part of the tensor type, as in PyTorch's dtypes: `i8`
is signed, `ui8` unsigned, and the other integers are signed (MLIR's signless integers
read as two's complement, which is what every frontend that prints them means). Below the
tensor level, `arith` admits signless integers only, so a loop nest stores `ui8` as
signless `i8` (`DType.loop`) and the lowering picks the unsigned form of each op
(`arith.divui`, `arith.cmpi ult`, `arith.extui`, `arith.uitofp`, ...).

`f16` and `bf16` have no arithmetic of their own on the CPU: every op computes in f32 and
rounds the result back once (`widened_to`), as PyTorch does on CPU. In C, f16 is the
compiler's `_Float16`; bf16 is its 16 bits (`uop_bf16`, converted by the prelude's
`uop_bf16_to_f32`/`uop_f32_to_bf16`, round to nearest even), because gcc before 13 has no
bf16 arithmetic type; CUDA has `__nv_bfloat16`.

This module sits at the bottom of the package: it imports xDSL, numpy and ml_dtypes only.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property
from typing import Literal

import ml_dtypes
import numpy as np
from xdsl.dialects.builtin import (
    BFloat16Type,
    Float16Type,
    Float32Type,
    Float64Type,
    IntegerType,
    Signedness,
)
from xdsl.ir import Attribute


@dataclass(frozen=True)
class DType:
    """One element type of the uop dialect."""

    #: the IR spelling, as in `tensor<4xf32>`
    name: str
    #: the xDSL element type of tensors
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
    #: integers: whether values are two's complement (False: unsigned, and i1)
    signed: bool = True
    #: a float type whose arithmetic runs in this wider type, the result rounded back
    #: after every op; None when it computes as itself
    widened_to: str | None = None
    #: C expressions converting a value of this type to `widened_to` and back, with `{}`
    #: for the operand (f16 converts by a cast, bf16 by the prelude's helpers)
    c_widen: str | None = None
    c_narrow: str | None = None
    #: whether C holds the type as its bits (`c` is an integer typedef, bf16): its
    #: conversions are helper calls rather than casts and its constants bit patterns
    c_bits: bool = False
    #: the loop-level (memref/arith) type: `arith` takes signless integers only, so ui8
    #: is stored as i8 there and its ops are chosen unsigned by the lowering
    loop_xdsl: Attribute | None = None
    #: the dtype name in a safetensors header (checkpoints and model files)
    safetensors: str = ""

    @property
    def itemsize(self) -> int:
        """Bytes per element in a buffer (i1 takes one byte)."""
        return self.numpy.itemsize

    @property
    def is_float(self) -> bool:
        return self.kind == "float"

    @property
    def is_int(self) -> bool:
        """An integer type (not i1)."""
        return self.kind == "int"

    @property
    def loop(self) -> Attribute:
        """The element type of this type's buffers and scalars below the tensor level."""
        return self.loop_xdsl if self.loop_xdsl is not None else self.xdsl

    @cached_property  # np.iinfo costs microseconds, and tracing asks on every scalar
    def min(self) -> int | float:
        """The least value (integers: two's complement or 0; floats: -inf)."""
        if self.kind == "float":
            return -np.inf
        if self.kind == "bool":
            return 0
        return int(np.iinfo(self.numpy).min)

    @cached_property
    def max(self) -> int | float:
        """The greatest value (floats: inf)."""
        if self.kind == "float":
            return np.inf
        if self.kind == "bool":
            return 1
        return int(np.iinfo(self.numpy).max)

    def fits(self, value: int) -> bool:
        """Whether the integer `value` is one of this integer type's values."""
        return self.min <= value <= self.max


#: the element types by IR name, in the order error messages list them
DTYPES: dict[str, DType] = {d.name: d for d in (
    DType("i1", IntegerType(1), np.dtype(np.bool_), "bool", "bool", "bool", 1, signed=False,
          safetensors="BOOL"),
    DType("i8", IntegerType(8), np.dtype(np.int8), "int8_t", "int8_t", "int", 8,
          safetensors="I8"),
    DType("ui8", IntegerType(8, Signedness.UNSIGNED), np.dtype(np.uint8), "uint8_t",
          "uint8_t", "int", 8, signed=False, loop_xdsl=IntegerType(8), safetensors="U8"),
    DType("i16", IntegerType(16), np.dtype(np.int16), "int16_t", "int16_t", "int", 16,
          safetensors="I16"),
    DType("i32", IntegerType(32), np.dtype(np.int32), "int32_t", "int32_t", "int", 32,
          safetensors="I32"),
    DType("i64", IntegerType(64), np.dtype(np.int64), "int64_t", "int64_t", "int", 64,
          safetensors="I64"),
    DType("f16", Float16Type(), np.dtype(np.float16), "_Float16", "__half", "float", 16,
          safetensors="F16", widened_to="f32", c_widen="(float)({})",
          c_narrow="(_Float16)({})"),
    DType("bf16", BFloat16Type(), np.dtype(ml_dtypes.bfloat16), "uop_bf16",
          "__nv_bfloat16", "float", 16, safetensors="BF16", widened_to="f32",
          c_widen="uop_bf16_to_f32({})", c_narrow="uop_f32_to_bf16({})", c_bits=True),
    DType("f32", Float32Type(), np.dtype(np.float32), "float", "float", "float", 32,
          safetensors="F32"),
    DType("f64", Float64Type(), np.dtype(np.float64), "double", "double", "float", 64,
          safetensors="F64"),
)}
FLOAT_DTYPES = frozenset(d.name for d in DTYPES.values() if d.kind == "float")
INT_DTYPES = frozenset(d.name for d in DTYPES.values() if d.kind == "int")
#: the record of an xDSL element type (tensor level; the loop level's signless i8 is i8)
BY_XDSL: dict[Attribute, DType] = {d.xdsl: d for d in DTYPES.values()}
#: the record of a numpy dtype
BY_NUMPY: dict[np.dtype, DType] = {d.numpy: d for d in DTYPES.values()}

