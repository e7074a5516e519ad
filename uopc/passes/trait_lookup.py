"""Memoized trait lookups on xDSL operation classes, for cheaper passes.

xDSL's CSE, DCE and LICM (and uopc's hoisting) ask every op for its memory effects many
times (`xdsl.traits.get_effects`, recursively through loop bodies), and each ask scans
the op class's traits with `isinstance`: on the loops of a char-GPT training step (123
kernels) that scan was 3.4 of 8.6 CPU seconds of passes under cProfile, and memoizing it
saves about 10% of the passes' time unprofiled. An op class's traits are fixed when the
class is defined (`Operation.traits` is a class attribute), so the answer for a class
and a trait type never changes: it is computed once per pair. Lookups by a trait
instance (compared with `==`) are left to xDSL.

`install()` replaces the two class methods on `xdsl.ir.Operation` (once per process;
uopc.passes does it on import); the answers are the same lists and traits as before.
"""

from __future__ import annotations

from typing import Any

from xdsl.ir import Operation

_ORIGINAL_GET_TRAIT = Operation.get_trait.__func__  # type: ignore[attr-defined]
_ORIGINAL_TRAITS_OF_TYPE = Operation.get_traits_of_type.__func__  # type: ignore[attr-defined]
_traits_of_type: dict[tuple[type, type], tuple[Any, ...]] = {}
_trait: dict[tuple[type, type], Any] = {}


def _get_traits_of_type(cls: type[Operation], trait_type: type) -> list[Any]:
    key = (cls, trait_type)
    found = _traits_of_type.get(key)
    if found is None:
        found = _traits_of_type[key] = tuple(_ORIGINAL_TRAITS_OF_TYPE(cls, trait_type))
    return list(found)  # a fresh list, as xDSL returns: callers may change it


def _get_trait(cls: type[Operation], trait: Any) -> Any:
    if not isinstance(trait, type):
        return _ORIGINAL_GET_TRAIT(cls, trait)
    key = (cls, trait)
    try:
        return _trait[key]
    except KeyError:
        found = _trait[key] = _ORIGINAL_GET_TRAIT(cls, trait)
        return found


def install() -> None:
    """Memoize `Operation.get_traits_of_type` and `Operation.get_trait` (by type)."""
    Operation.get_traits_of_type = classmethod(_get_traits_of_type)  # type: ignore[method-assign,assignment]
    Operation.get_trait = classmethod(_get_trait)  # type: ignore[method-assign,assignment]
