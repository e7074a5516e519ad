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


def test_get_effects_matches_xdsl_on_every_op_of_lowered_loops(monkeypatch):
    """`trait_lookup.get_effects` (installed in xdsl.traits, CSE and DCE) gives xDSL's
    answer for every op of a compiled program's loops: loads, stores, calls, loops."""
    from pathlib import Path

    from xdsl import traits
    from xdsl.transforms import common_subexpression_elimination as cse

    from uopc.runtime.driver import emit_source, parse_program

    assert traits.get_effects is trait_lookup.get_effects
    assert cse.get_effects is trait_lookup.get_effects
    assert cse.is_side_effect_free is trait_lookup.is_side_effect_free
    root = Path(__file__).resolve().parents[2] / "examples"
    ops = []
    for name in ("softmax.mlir", "gemm.mlir", "conv1d.mlir"):
        module = parse_program((root / name).read_text(), "mlir")
        emit_source(module)  # every stage, in place: what the C target prints
        ops.extend(module.walk())
    kinds = {type(op) for op in ops}
    assert len(ops) > 200 and len(kinds) > 15
    answers = [trait_lookup.get_effects(op) for op in ops]
    # xDSL's own function, with its recursion through xDSL's function too
    monkeypatch.setattr(traits, "get_effects", trait_lookup._ORIGINAL_GET_EFFECTS)
    expected = [traits.get_effects(op) for op in ops]
    assert answers == expected
    free = [trait_lookup.is_side_effect_free(op) for op in ops]
    assert free == [trait_lookup._ORIGINAL_IS_SIDE_EFFECT_FREE(op) for op in ops]
    assert any(free) and not all(free)
    assert any(a is None for a in answers) and any(a == set() for a in answers)
    assert any(a for a in answers)  # some op reads or writes
