"""Conversions between xDSL types and the plain `Sig` values of the shape rules.

The shape rules (`shapes`) work on `Sig` values so that the Tensor frontend can apply them
without building xDSL types; this module is the one crossing between the two.
"""

from __future__ import annotations

from functools import lru_cache

from xdsl.dialects.builtin import Float16Type, Float32Type, IntegerType, TensorType
from xdsl.ir import Attribute

from uopc.uopdialect.shapes import DTYPES, ShapeError, Sig

ELEMENT_TYPES: dict[str, Attribute] = {
    "i1": IntegerType(1),
    "i32": IntegerType(32),
    "f32": Float32Type(),
    "f16": Float16Type(),
}
_DTYPE_OF = {v: k for k, v in ELEMENT_TYPES.items()}

#: numpy dtype names of the element types
NUMPY_DTYPES = {"i1": "bool", "i32": "int32", "f32": "float32", "f16": "float16"}


def dtype_of(element_type: Attribute) -> str:
    """The dtype name of an xDSL element type; ShapeError when uop has no such type."""
    try:
        return _DTYPE_OF[element_type]
    except KeyError:
        raise ShapeError(
            f"unsupported element type {element_type}: expected one of {', '.join(DTYPES)}"
        ) from None


def sig_of(t: Attribute) -> Sig:
    """The Sig of a ranked tensor type; ShapeError for anything else."""
    if not isinstance(t, TensorType):
        raise ShapeError(f"expected a ranked tensor type, found {t}")
    shape = t.get_shape()
    if any(d < 0 for d in shape):
        raise ShapeError(f"dynamic sizes are not supported, found {t}: give static sizes")
    return Sig(tuple(shape), dtype_of(t.get_element_type()))


@lru_cache(maxsize=4096)
def tensor_type(sig: Sig) -> TensorType:
    """The xDSL tensor type of a Sig (cached: building types costs ~20 µs each)."""
    return TensorType(ELEMENT_TYPES[sig.dtype], sig.shape)
