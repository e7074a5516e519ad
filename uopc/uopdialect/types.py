"""Conversions between xDSL types and the plain `Sig` values of the shape rules.

The shape rules (`shapes`) work on `Sig` values so that the Tensor frontend can apply them
without building xDSL types; this module is the one crossing between the two.
"""

from __future__ import annotations

from functools import lru_cache

from xdsl.dialects.builtin import TensorType
from xdsl.ir import Attribute

from uopc.uopdialect.dtypes import BY_XDSL, DTYPES
from uopc.uopdialect.shapes import ShapeError, Sig


def dtype_of(element_type: Attribute) -> str:
    """The dtype name of an xDSL element type; ShapeError when uop has no such type."""
    try:
        return BY_XDSL[element_type].name
    except KeyError:
        raise ShapeError(
            f"unsupported element type {element_type}: expected one of {', '.join(DTYPES)}"
        ) from None


#: the Sigs of the types `sig_of` read lately, by the type's identity (with the type, so
#: that its id stays its own): the passes ask for the Sig of the same few type objects
#: over and over (char-GPT's compile: 17,000 calls on 97 types, which `tensor_type`
#: shares), 1.3 us each to rebuild, where a hash of the type alone costs 0.5 us
_SIGS: dict[int, tuple[Attribute, Sig]] = {}
#: how many types `_SIGS` holds before it starts again (a few MB at most)
_SIGS_KEPT = 1 << 12


def sig_of(t: Attribute) -> Sig:
    """The Sig of a ranked tensor type; ShapeError for anything else."""
    known = _SIGS.get(id(t))
    if known is not None and known[0] is t:
        return known[1]
    if not isinstance(t, TensorType):
        raise ShapeError(f"expected a ranked tensor type, found {t}")
    shape = t.get_shape()
    if any(d < 0 for d in shape):
        raise ShapeError(f"dynamic sizes are not supported, found {t}: give static sizes")
    sig = Sig(tuple(shape), dtype_of(t.get_element_type()))
    if len(_SIGS) >= _SIGS_KEPT:
        _SIGS.clear()
    _SIGS[id(t)] = (t, sig)
    return sig


@lru_cache(maxsize=4096)
def tensor_type(sig: Sig) -> TensorType:
    """The xDSL tensor type of a Sig (cached: building types costs ~20 µs each)."""
    return TensorType(DTYPES[sig.dtype].xdsl, sig.shape)
