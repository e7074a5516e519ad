"""Element types of the `Tensor`: names, data conversion, and promotion.

uopc has four element types, f32, f16, i32 and i1, and no 64-bit ones. Data given to a
Tensor is stored in the nearest of them and must fit it (values that would wrap or become
infinite raise instead). Two tensors compute in the higher-ranked of their types; a
Python scalar takes the tensor's type unless it is of a higher kind (a float with an
integer tensor computes in f32). These rules are the Tensor's and the mixins' shared
vocabulary, kept apart from `tensor.py` so that neither has to import the other for them.
"""

from __future__ import annotations

import math
from typing import Any, TypeGuard

import numpy as np

from uopc.uopdialect.dtypes import DTYPES, FLOAT_DTYPES

Scalar = bool | int | float

#: the numpy scalar type of each element type
NUMPY_OF = {name: d.numpy.type for name, d in DTYPES.items()}
INT32_MIN, INT32_MAX = (int(v) for v in (np.iinfo(np.int32).min, np.iinfo(np.int32).max))


def to_dtype(dtype: Any) -> str:
    """An element type name ("f32", "f16", "i32", "i1") from a name, numpy dtype or Python
    type. 64-bit types are refused: uopc has none, and narrowing is not what was asked."""
    if isinstance(dtype, str) and dtype in NUMPY_OF:
        return dtype
    if dtype is float:
        return "f32"
    if dtype is int:
        return "i32"
    if dtype is bool:
        return "i1"
    try:
        np_dtype = np.dtype(dtype)
    except TypeError:
        raise TypeError(f"unsupported dtype {dtype!r}: use f32, f16, i32 or i1") from None
    if np_dtype.kind == "f" and np_dtype.itemsize in (2, 4):
        return "f16" if np_dtype.itemsize == 2 else "f32"
    if np_dtype.kind == "i" and np_dtype.itemsize == 4:
        return "i32"
    if np_dtype.kind == "b":
        return "i1"
    raise TypeError(f"unsupported dtype {dtype!r}: uopc's element types are f32, f16, i32 "
                    f"and i1 (no 64-bit or unsigned types); ask for one of those")


def data_dtype(array: np.ndarray) -> str:
    """The element type data of this numpy dtype is stored in: integers as i32 and
    float64 as f32 (PyTorch's default float), checked by `fit_data` so that no value
    changes except by float rounding."""
    kind = array.dtype.kind
    if kind == "b":
        return "i1"
    if kind in "iu":
        return "i32"
    if kind == "f":
        return "f16" if array.dtype.itemsize == 2 else "f32"
    raise TypeError(f"Tensor data of numpy dtype {array.dtype} is not supported: give "
                    f"numbers (float, int or bool)")


def fit_data(array: np.ndarray, dt: str) -> np.ndarray:
    """`array` converted to element type `dt`; data that does not fit raises instead of
    wrapping (integers beyond i32) or overflowing (finite floats beyond the range)."""
    if dt == "i32" and array.dtype.kind in "iu" and array.size:
        low, high = int(array.min()), int(array.max())
        if low < INT32_MIN or high > INT32_MAX:
            bad = low if low < INT32_MIN else high
            raise OverflowError(f"Tensor data {bad} does not fit i32 [{INT32_MIN}, "
                                f"{INT32_MAX}] (uopc has no 64-bit integers): scale it, or "
                                f"store it as f32 with dtype='f32'")
    if dt in FLOAT_DTYPES and array.dtype.kind in "fiu" and array.size and (
            array.dtype != NUMPY_OF[dt]):  # the same type: nothing can overflow
        with np.errstate(over="ignore", invalid="ignore"):
            out: np.ndarray = array.astype(NUMPY_OF[dt])
        grew = np.isinf(out) & np.isfinite(array)
        if grew.any():
            raise OverflowError(f"Tensor data {array[grew].flat[0]} is beyond the range of "
                                f"{dt}: it would become infinity; rescale it"
                                + (" or use f32" if dt == "f16" else ""))
        return np.asarray(out, order="C")
    return np.array(array, dtype=NUMPY_OF[dt], order="C", copy=True)


def numpy_dtype(dtype: str) -> type:
    return NUMPY_OF[dtype]


def lowest(dtype: str) -> float:
    """The identity of a running maximum in `dtype`: -inf for floats, else i32's minimum
    (bools are counted as i32)."""
    return -math.inf if dtype in FLOAT_DTYPES else INT32_MIN


def scalar_dtype(value: Scalar) -> str:
    if isinstance(value, (bool, np.bool_)):
        return "i1"
    if isinstance(value, (int, np.integer)):
        return "i32"
    return "f32"


def promote(a: str, b: str) -> str:
    """PyTorch's `promote_types`: bool < integers < floats; within a kind the wider
    type, where ui8 with a signed type needs a signed type wider than 8 bits (i8 with ui8
    gives i16) and f16 with bf16 gives f32."""
    da, db = DTYPES[a], DTYPES[b]
    if a == b or db.kind == "bool":
        return a
    if da.kind == "bool":
        return b
    if da.kind != db.kind:
        return a if da.kind == "float" else b
    if da.bits == db.bits and (da.kind == "float" or da.signed != db.signed):
        return "f32" if da.kind == "float" else "i16"
    if da.kind == "int" and da.signed != db.signed:
        signed = da if da.signed else db
        return signed.name if signed.bits > 8 else "i16"
    return a if da.bits > db.bits else b


def is_scalar(x: Any) -> TypeGuard[Scalar]:
    """A Python or numpy number (numpy's count as the Python kind they convert to)."""
    return isinstance(x, (bool, int, float, np.bool_, np.integer, np.floating))


def as_python(value: Scalar, dtype: str) -> Scalar:
    if dtype == "i1":
        return bool(value)
    if dtype == "i32":
        v = int(value)
        if not INT32_MIN <= v <= INT32_MAX:
            raise OverflowError(f"the number {v} does not fit i32 (uopc has no 64-bit "
                                f"integers): use a float")
        return v
    return float(value)


def scalar_operand_dtype(value: Scalar, tensor_dtype: str) -> str:
    """The type of a computation between a tensor and a Python scalar: the tensor's,
    unless the scalar is of a higher kind (a float with an integer tensor gives f32)."""
    dt = scalar_dtype(value)
    if DTYPES[dt].kind == DTYPES[tensor_dtype].kind or promote(dt, tensor_dtype) == tensor_dtype:
        return tensor_dtype
    return dt
