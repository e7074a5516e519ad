"""Element types of the `Tensor`: the public dtype objects, data conversion, and PyTorch's
type promotion.

A Tensor's `dtype` is an `ElementType`: a `str` whose value is the IR name ("i64", "f32",
...), so that code keying tables by it keeps working, which also compares equal to
PyTorch's names ("int64", "long", "float", ...), to numpy dtypes and prints as
`uopc.int64`. `uopc.float32`, `uopc.long` and the rest are these objects.

PyTorch's defaults and rules, which uopc follows (README, "Element types"):
- Data: a Python int list becomes i64, a float list f32, a bool list bool; a numpy array
  keeps its dtype (float64 stays f64). Values that do not fit a requested type raise
  (PyTorch wraps integers), and so does a numpy dtype uopc has no type for.
- Promotion is `torch.result_type`: operands are ranked dimensioned tensors > zero-dim
  tensors > Python scalars, and a lower rank decides the type only when it is of a higher
  category (bool < integer < float); a Python float counts as the default float, f32.
These rules are the Tensor's and the mixins' shared vocabulary, kept apart from
`tensor.py` so that neither has to import the other for them.
"""

from __future__ import annotations

import functools
from typing import Any, Literal, TypeGuard

import numpy as np

from uopc.uopdialect.dtypes import BY_NUMPY, DTYPES

Scalar = bool | int | float

#: PyTorch's name of each element type, which is its numpy dtype's name (ml_dtypes names
#: bf16 "bfloat16"), and PyTorch's aliases
TORCH_NAMES = {name: d.numpy.name for name, d in DTYPES.items()}
ALIASES = {"short": "i16", "int": "i32", "long": "i64", "half": "f16", "float": "f32",
           "double": "f64"}
_BY_NAME = {**{n: n for n in DTYPES}, **{t: n for n, t in TORCH_NAMES.items()}, **ALIASES}

#: the default float (PyTorch's `get_default_dtype()`) and integer
DEFAULT_FLOAT = "f32"
DEFAULT_INT = "i64"
_SUPPORTED = ", ".join(TORCH_NAMES.values())


class ElementType(str):
    """A Tensor's element type (`uopc.dtype`): the IR name as a `str`, equal also to the
    PyTorch names and numpy dtypes of the same type."""

    __slots__ = ()

    def __new__(cls, name: str) -> ElementType:
        return _INSTANCES[name] if name in _INSTANCES else super().__new__(cls, name)

    def __repr__(self) -> str:
        return f"uopc.{TORCH_NAMES[str(self)]}"

    def __eq__(self, other: object) -> bool:
        if isinstance(other, str):  # the IR name itself first: the common, cheap case
            return str.__eq__(self, other) or str.__eq__(
                self, _BY_NAME.get(other.removeprefix("torch."), other))
        if isinstance(other, (np.dtype, type)):
            return _numpy_name(other) == str(self)
        return NotImplemented

    def __ne__(self, other: object) -> bool:
        equal = self.__eq__(other)
        return equal if equal is NotImplemented else not equal

    __hash__ = str.__hash__

    @property
    def itemsize(self) -> int:
        """Bytes per element in a buffer (bool takes one)."""
        return DTYPES[self].itemsize

    @property
    def is_floating_point(self) -> bool:
        return DTYPES[self].kind == "float"

    @property
    def is_signed(self) -> bool:
        """As torch.dtype.is_signed: floats and the signed integers (not bool, uint8)."""
        return DTYPES[self].kind == "float" or DTYPES[self].signed


_INSTANCES: dict[str, ElementType] = {}
_INSTANCES.update({n: ElementType(n) for n in DTYPES})


def element_type(name: str) -> ElementType:
    """The dtype object of an IR name."""
    return _INSTANCES[name]


def _numpy_name(dtype: Any) -> str | None:
    try:
        found = BY_NUMPY.get(np.dtype(dtype))
    except TypeError:
        return None
    return None if found is None else found.name


def to_dtype(dtype: Any) -> str:
    """The IR name of a dtype argument: a dtype object, an IR or PyTorch name ("int64",
    "long", "torch.float16"), a numpy dtype, or a Python type as PyTorch reads it (float
    is float64, int is int64)."""
    if isinstance(dtype, str):
        name = _BY_NAME.get(dtype) or _BY_NAME.get(dtype.removeprefix("torch."))
        if name is None:
            raise TypeError(f"unknown dtype {dtype!r}: the element types are {_SUPPORTED} "
                            f"(or the IR names {', '.join(DTYPES)})")
        return name
    if dtype in (bool, int, float):
        return {bool: "i1", int: "i64", float: "f64"}[dtype]
    if type(dtype).__module__ == "torch":  # a torch.dtype: its name is torch.<name>
        return to_dtype(str(dtype))
    name = _numpy_name(dtype)
    if name is None:
        raise TypeError(f"unsupported dtype {dtype!r}: the element types are {_SUPPORTED}")
    return name


def unsupported_numpy(np_dtype: np.dtype) -> TypeError:
    """The error for data of a numpy dtype that has no element type, with the fix."""
    if np_dtype.kind == "u":
        fix = "convert it with .astype(np.int64) (values must fit int64)"
    elif np_dtype.kind == "c":
        fix = "uopc has no complex types: pass the real and imaginary parts as two tensors"
    elif np_dtype.kind == "f":
        fix = "convert it with .astype(np.float64)"
    else:
        fix = "give numbers (bool, int or float data)"
    return TypeError(f"Tensor data of numpy dtype {np_dtype} is not supported (the element "
                     f"types are {_SUPPORTED}): {fix}")


def data_dtype(data: Any) -> str:
    """The element type of Tensor `data` when none is asked for, as torch.tensor infers
    it: a numpy array's or scalar's own type; a Python bool, int or float is bool, int64
    or the default float; a list the promotion (`promote`) of its items' types (an empty
    one the default float)."""
    found = _item_dtype(data)
    return DEFAULT_FLOAT if found is None else found


def _item_dtype(data: Any) -> str | None:
    if isinstance(data, (list, tuple)):
        found: str | None = None
        for item in data:
            dt = _item_dtype(item)
            found = dt if found is None else found if dt is None else promote(found, dt)
        return found
    if isinstance(data, (np.ndarray, np.generic)):
        record = BY_NUMPY.get(data.dtype)
        if record is None:
            raise unsupported_numpy(data.dtype)
        return record.name
    if isinstance(data, bool):
        return "i1"
    if isinstance(data, (int, float)):
        return DEFAULT_INT if isinstance(data, int) else DEFAULT_FLOAT
    raise TypeError(f"Tensor data {_clip(data)} is not numbers: give nested lists of bool, "
                    f"int or float of a rectangular shape, or a numpy array")


def _clip(data: Any) -> str:
    text = repr(data)
    return text if len(text) <= 60 else text[:57] + "..."


def fit_data(array: np.ndarray, dt: str) -> np.ndarray:
    """A private C-ordered copy of `array` in element type `dt`. Integers that do not fit
    `dt` raise instead of wrapping, and finite floats that would become infinite raise
    instead of overflowing."""
    record = DTYPES[dt]
    if array.dtype == DTYPES["bf16"].numpy and dt != "bf16":
        array = array.astype(np.float32)  # exact; numpy's checks below know float32
    if array.dtype.kind == "O":  # Python ints beyond uint64, or numbers of mixed kinds
        for v in array.flat:
            if isinstance(v, int) and not DTYPES["i64"].fits(v):
                raise _not_fitting(v, "i64")
        array = array.astype(np.float64 if any(isinstance(v, float) for v in array.flat)
                             else np.int64)
    if record.kind == "int" and array.size and array.dtype.kind in "iuf":
        whole = np.trunc(array) if array.dtype.kind == "f" else array  # floats truncate
        bad = ~np.isfinite(whole) if array.dtype.kind == "f" else np.zeros(array.shape, bool)
        with np.errstate(invalid="ignore"):
            bad |= (whole < record.min) | (whole > record.max)
        if bad.any():
            raise _not_fitting(array[bad].flat[0], dt)
    if record.kind == "float" and array.dtype.kind in "fiu" and array.size and \
            array.dtype != record.numpy:  # the same type: nothing can overflow
        with np.errstate(over="ignore", invalid="ignore"):
            out: np.ndarray = _through_f32(array, dt).astype(record.numpy)
        grew = np.isinf(out.astype(np.float64)) & np.isfinite(array)
        if grew.any():
            raise OverflowError(f"Tensor data {array[grew].flat[0]} is beyond the range of "
                                f"{TORCH_NAMES[dt]}: it would become infinity; rescale it"
                                + ("" if dt == "f64" else " or use a wider float type"))
        return np.asarray(out, order="C")
    return np.array(array, dtype=record.numpy, order="C", copy=True)


def _through_f32(array: np.ndarray, dt: str) -> np.ndarray:
    """Integers and f64 become f16/bf16 through f32, as PyTorch converts them (SPEC §5
    casts)."""
    if DTYPES[dt].widened_to and array.dtype not in (np.float16, np.float32):
        return array.astype(np.float32)
    return array


def _not_fitting(value: Any, dt: str) -> OverflowError:
    record = DTYPES[dt]
    fix = ("integers beyond int64 have no element type: use a float (dtype=uopc.float64)"
           if dt == "i64" else "ask for a wider type (dtype=uopc.int64), or convert the data "
           "yourself (np.asarray(data).astype(...) wraps as PyTorch does)")
    return OverflowError(f"the value {value} does not fit {TORCH_NAMES[dt]} [{record.min}, "
                         f"{record.max}] (uopc raises where PyTorch would wrap): {fix}")


def numpy_dtype(dtype: str) -> type:
    return DTYPES[dtype].numpy.type


def lowest(dtype: str) -> float:
    """The identity of a running maximum in `dtype`: -inf for floats, the least value of
    an integer type (bools are counted as i32)."""
    return DTYPES["i32" if dtype == "i1" else dtype].min


def scalar_dtype(value: Scalar) -> str:
    """The type of a Python number as Tensor data: bool, int64 or the default float."""
    if isinstance(value, (bool, np.bool_)):
        return "i1"
    if isinstance(value, (int, np.integer)):
        return DEFAULT_INT
    return DEFAULT_FLOAT


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


#: how an operand takes part in promotion: a tensor with axes, a zero-dim tensor, or a
#: Python number (a "wrapped number" in PyTorch)
Rank = Literal["dim", "zero", "scalar"]


def _combine(higher: str | None, lower: str | None) -> str | None:
    """PyTorch's `combine_categories`: the higher-ranked operands' type, unless the lower
    ones are of a higher category."""
    if higher is None:
        return lower
    if lower is None or DTYPES[higher].kind == "float":
        return higher
    if DTYPES[higher].kind == "bool" or DTYPES[lower].kind == "float":
        return promote(higher, lower)
    return higher


@functools.lru_cache(maxsize=1024)  # a few dozen combinations; traced on every step
def result_type(*operands: tuple[str, Rank]) -> str:
    """`torch.result_type` of operands given as (element type, rank); a Python scalar's
    element type is `scalar_dtype`'s."""
    found: dict[Rank, str | None] = {"dim": None, "zero": None, "scalar": None}
    for dt, rank in operands:
        prev = found[rank]
        found[rank] = dt if prev is None else promote(prev, dt)
    out = _combine(found["dim"], _combine(found["zero"], found["scalar"]))
    assert out is not None, "result_type of no operands"
    return out


def is_scalar(x: Any) -> TypeGuard[Scalar]:
    """A Python or numpy number (numpy's count as the Python kind they convert to)."""
    return isinstance(x, (bool, int, float, np.bool_, np.integer, np.floating))


def as_python(value: Scalar, dtype: str) -> Scalar:
    """A Python number as a constant of `dtype`; an integer that does not fit raises."""
    record = DTYPES[dtype]
    if record.kind == "bool":
        return bool(value)
    if record.kind == "int":
        if isinstance(value, (float, np.floating)):
            value = int(value)  # a float scalar is truncated, as PyTorch casts
        v = int(value)
        if not record.fits(v):
            raise _not_fitting(v, dtype)
        return v
    if not isinstance(value, (float, np.floating)) and not DTYPES["i64"].fits(int(value)):
        raise _not_fitting(value, "i64")
    return float(value)
