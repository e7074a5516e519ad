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

It also replaces `xdsl.traits.get_effects` (there and where xDSL's CSE and DCE imported
it) by `get_effects` below, which gives the same answers with less work per op: an op
class's memory-effect traits are looked up once, an op whose only such trait is
`NoMemoryEffect` answers at once, and a loop or an if (`RecursiveMemoryEffect` alone)
gathers its body's effects without the generic trait dispatch. CSE asks each op up to
three times and scans the ops between two equal reads, each ask walking a loop's whole
body: on a char-GPT step's loops that was 584k calls, a third of CSE's time.
`is_side_effect_free` (in xDSL's place in CSE and LICM) answers without gathering them.
"""

from __future__ import annotations

from collections.abc import Set as AbstractSet
from typing import Any

from xdsl import traits
from xdsl.dialects import vector
from xdsl.ir import Operation
from xdsl.traits import (
    EffectInstance,
    MemoryEffect,
    MemoryReadEffect,
    MemoryWriteEffect,
    NoMemoryEffect,
    RecursiveMemoryEffect,
)

_ORIGINAL_GET_TRAIT = Operation.get_trait.__func__  # type: ignore[attr-defined]
_ORIGINAL_TRAITS_OF_TYPE = Operation.get_traits_of_type.__func__  # type: ignore[attr-defined]
_ORIGINAL_GET_EFFECTS = traits.get_effects
_ORIGINAL_IS_SIDE_EFFECT_FREE = traits.is_side_effect_free
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


#: how an op class's memory effects are found
_UNKNOWN, _NONE, _RECURSIVE, _BY_TRAITS = range(4)
#: the memory effects of op classes whose xDSL definitions declare none: a vector load
#: reads and a vector store writes, as their memref counterparts say (unknown, CSE and
#: LICM would treat them as barriers, and uopc's hoisting would give up on their loops)
_UNDECLARED: dict[type, tuple[MemoryEffect, ...]] = {
    vector.LoadOp: (MemoryReadEffect(),), vector.StoreOp: (MemoryWriteEffect(),)}
_effect_rule: dict[type, tuple[int, tuple[MemoryEffect, ...]]] = {}


def _rule_of(cls: type[Operation]) -> tuple[int, tuple[MemoryEffect, ...]]:
    found = _effect_rule.get(cls)
    if found is None:
        effect_traits = tuple(_get_traits_of_type(cls, MemoryEffect)) or _UNDECLARED.get(cls, ())
        kinds = {type(t) for t in effect_traits}
        if not effect_traits:
            found = (_UNKNOWN, ())
        elif kinds == {NoMemoryEffect}:
            found = (_NONE, ())
        elif kinds == {RecursiveMemoryEffect}:
            found = (_RECURSIVE, ())
        else:
            found = (_BY_TRAITS, effect_traits)
        _effect_rule[cls] = found
    return found


def get_effects(op: Operation) -> AbstractSet[EffectInstance] | None:
    """`xdsl.traits.get_effects`: the memory effects of `op` (a new set), None when
    unknown."""
    rule, effect_traits = _rule_of(type(op))
    if rule == _NONE:
        return set()
    if rule == _UNKNOWN:
        return None
    effects: set[EffectInstance] = set()
    if rule == _RECURSIVE:  # what RecursiveMemoryEffect.get_effects does
        for region in op.regions:
            for block in region.blocks:
                for child in block.ops:
                    child_effects = get_effects(child)
                    if child_effects is None:
                        return None
                    effects.update(child_effects)
        return effects
    for trait in effect_traits:
        trait_effects = trait.get_effects(op)
        if trait_effects is None:
            return None
        effects.update(trait_effects)
    return effects


def is_side_effect_free(op: Operation) -> bool:
    """`xdsl.traits.is_side_effect_free`: whether `op` surely has no memory effect. The
    same answer as `get_effects(op) == set()`, without gathering the effects: a loop
    stops at the first op of its body that has one (LICM asks it of every op of every
    loop body, loops included)."""
    rule, effect_traits = _rule_of(type(op))
    if rule == _NONE:
        return True
    if rule == _UNKNOWN:
        return False
    if rule == _RECURSIVE:
        return all(is_side_effect_free(child) for region in op.regions
                   for block in region.blocks for child in block.ops)
    for trait in effect_traits:
        if trait.get_effects(op) != set():  # None (unknown) or some effect
            return False
    return True


def install() -> None:
    """Memoize `Operation.get_traits_of_type` and `Operation.get_trait` (by type), and
    put `get_effects` in place of xDSL's."""
    from xdsl.transforms import (
        common_subexpression_elimination,
        dead_code_elimination,
        loop_invariant_code_motion,
    )

    Operation.get_traits_of_type = classmethod(_get_traits_of_type)  # type: ignore[method-assign,assignment]
    Operation.get_trait = classmethod(_get_trait)  # type: ignore[method-assign,assignment]
    # `is_side_effect_free`, `only_has_effect` and RecursiveMemoryEffect look the name
    # up in xdsl.traits; CSE and DCE imported it
    for module in (traits, common_subexpression_elimination, dead_code_elimination):
        module.get_effects = get_effects  # type: ignore[attr-defined]
    # and `is_side_effect_free` where CSE and LICM imported it
    for module in (traits, common_subexpression_elimination, loop_invariant_code_motion):
        module.is_side_effect_free = is_side_effect_free  # type: ignore[attr-defined]
