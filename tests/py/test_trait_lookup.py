"""The memoized trait lookups (`uopc.passes.trait_lookup`) answer what xDSL's do, for
the op classes of the dialects a compile's loops are in."""

from __future__ import annotations

from xdsl.ir import Operation
from xdsl.traits import ConditionallySpeculatable, IsTerminator, MemoryEffect, NoMemoryEffect, Pure

from uopc.passes import trait_lookup
from uopc.uopdialect.context import make_context


def test_memoized_lookups_match_xdsl_for_every_registered_op():
    assert Operation.get_trait.__func__ is trait_lookup._get_trait  # installed by uopc.passes
    ctx = make_context()
    # the dialects of loop-level IR, where CSE, DCE and LICM ask most
    classes = [op for name in ("uop", "arith", "scf", "memref", "func", "math", "builtin")
               for op in ctx.get_dialect(name).operations]
    assert len(classes) > 50
    for cls in classes:
        for kind in (MemoryEffect, NoMemoryEffect, IsTerminator, ConditionallySpeculatable,
                     Pure):
            for _ in range(2):  # computed, then memoized
                assert cls.get_traits_of_type(kind) == trait_lookup._ORIGINAL_TRAITS_OF_TYPE(cls, kind)
                assert cls.get_trait(kind) is trait_lookup._ORIGINAL_GET_TRAIT(cls, kind)
    # callers own the list they get
    first = classes[0].get_traits_of_type(MemoryEffect)
    first.append(None)
    assert None not in classes[0].get_traits_of_type(MemoryEffect)
