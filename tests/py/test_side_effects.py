"""uopc leaves the process as it found it (issue 8, item 7).

- `gc_frozen` restores the caller's garbage-collector freeze, and no pass freezes the heap;
- lowering deep programs raises no recursion limit (and needs none raised);
- xDSL's own classes keep their methods outside uopc's entry points, while uopc's
  parsing and printing keep -0.0, inf and nan exact.
"""

from __future__ import annotations

import gc
import sys
from io import StringIO

import numpy as np
import pytest
from xdsl.dialects import func
from xdsl.dialects.builtin import DenseIntOrFPElementsAttr, ModuleOp
from xdsl.ir import Block, Region
from xdsl.parser import Parser
from xdsl.printer import Printer

from uopc.lowering.rangeify import RangeifyPass
from uopc.passes import gc_frozen
from uopc.passes.eval import EvalPass
from uopc.passes.fold import FoldPass
from uopc.runtime import compile_program, parse_program
from uopc.uopdialect import ops as uop
from uopc.uopdialect.context import make_context
from uopc.uopdialect.shapes import Sig
from uopc.uopdialect.types import tensor_type
from uopc.uopdialect.xdsl_fixes import FIXES, exact_constants

CTX = make_context()
F32 = tensor_type(Sig((4, 4), "f32"))


# ---- gc.freeze ---------------------------------------------------------------------------


@pytest.fixture
def unfrozen():
    """Start from an unfrozen heap and leave it unfrozen."""
    assert gc.get_freeze_count() == 0, "something in the test process left the heap frozen"
    yield
    gc.unfreeze()


def test_gc_frozen_unfreezes_what_it_froze(unfrozen):
    with gc_frozen():
        assert gc.get_freeze_count() > 0
        with gc_frozen():  # nested: the outer block still owns the freeze
            pass
        assert gc.get_freeze_count() > 0
    assert gc.get_freeze_count() == 0


def test_gc_frozen_keeps_the_callers_freeze(unfrozen):
    gc.freeze()
    with gc_frozen():
        pass
    # still frozen (gc.unfreeze() would make the count 0; frozen objects freed since
    # have left it, so it need not be the count on entry)
    assert gc.get_freeze_count() > 0


def closed_chain() -> ModuleOp:
    block = Block()
    c = uop.ConstOp.from_array(1.5, Sig((4, 4), "f32"))
    add = uop.AddOp.make(c.result, c.result)
    block.add_ops([c, add, func.ReturnOp(add.result)])
    return ModuleOp([func.FuncOp("main", ([], [F32]), Region(block))])


@pytest.mark.parametrize("pass_", [FoldPass(), EvalPass()], ids=lambda p: p.name)
def test_passes_do_not_touch_the_freeze(unfrozen, pass_):
    pass_.apply(CTX, closed_chain())
    assert gc.get_freeze_count() == 0  # nothing frozen by the pass
    gc.freeze()
    pass_.apply(CTX, closed_chain())
    assert gc.get_freeze_count() > 0  # the caller's freeze is not undone


# ---- recursion limit ---------------------------------------------------------------------


@pytest.fixture
def fixed_recursion_limit(monkeypatch):
    """Fail on any change of the recursion limit while the test runs."""
    limit = sys.getrecursionlimit()

    def forbidden(n: int) -> None:
        raise AssertionError(f"sys.setrecursionlimit({n}) called: uopc must not change it")

    monkeypatch.setattr(sys, "setrecursionlimit", forbidden)
    yield limit
    assert sys.getrecursionlimit() == limit


def lowered_ops(module: ModuleOp, name: str) -> int:
    return sum(1 for op in module.walk() if op.name == name)


def test_twenty_thousand_op_chain_rangeifies_at_the_default_limit(fixed_recursion_limit):
    assert fixed_recursion_limit <= 1000 < 20000
    block = Block(arg_types=[F32])
    (x,) = block.args
    v, ops = x, []
    for k in range(20000):
        op = (uop.AddOp if k % 2 else uop.MulOp).make(v, x)
        ops.append(op)
        v = op.result
    block.add_ops([*ops, func.ReturnOp(v)])
    module = ModuleOp([func.FuncOp("main", ([F32], [F32]), Region(block))])
    RangeifyPass().apply(CTX, module)
    assert lowered_ops(module, "arith.addf") == lowered_ops(module, "arith.mulf") == 10000


def nested_reductions(depth: int) -> ModuleOp:
    """`depth` times: a column sum broadcast back along rows, added to x. Each sum is
    read at an index that varies faster than an outer loop it does not depend on, so it
    is materialized, inside the materialization of the next one."""
    col = tensor_type(Sig((4,), "f32"))
    block = Block(arg_types=[F32])
    (x,) = block.args
    v, ops = x, []
    for _ in range(depth):
        r = uop.ReduceOp.make(v, kind="add", axes=(0,))
        s = uop.ReshapeOp.make(r.result, result=Sig((4, 1), "f32"))
        e = uop.ExpandOp.make(s.result, result=Sig((4, 4), "f32"))
        a = uop.AddOp.make(e.result, x)
        ops += [r, s, e, a]
        v = a.result
    out = uop.ReduceOp.make(v, kind="add", axes=(0,))
    block.add_ops([*ops, out, func.ReturnOp(out.result)])
    return ModuleOp([func.FuncOp("main", ([F32], [col]), Region(block))])


def test_nested_materialized_reductions_rangeify_at_the_default_limit(fixed_recursion_limit):
    module = nested_reductions(1000)  # 4,000 ops, materializations nested 1,000 deep
    RangeifyPass().apply(CTX, module)
    assert lowered_ops(module, "memref.view") == 1000


def test_nested_materialized_reductions_compute_the_right_values():
    x = np.arange(16, dtype=np.float32).reshape(4, 4) / 8
    want = x
    for _ in range(3):
        want = want.sum(axis=0)[:, None] + x
    got = compile_program(nested_reductions(3))(x)[0]
    np.testing.assert_allclose(got, want.sum(axis=0), rtol=1e-6)


def test_deep_call_chain_rangeifies_at_the_default_limit(fixed_recursion_limit):
    """f0 calls f1 calls ... f1199: the callee-first order is found without recursion."""
    depth = 1200
    t = tensor_type(Sig((4,), "f32"))
    funcs = []
    for k in range(depth):
        block = Block(arg_types=[t])
        results = [block.args[0]]
        if k + 1 < depth:
            call = func.CallOp(f"f{k + 1}", [block.args[0]], [t])
            block.add_op(call)
            results = list(call.results)
        block.add_op(func.ReturnOp(*results))
        funcs.append(func.FuncOp(f"f{k}", ([t], [t]), Region(block)))
    module = ModuleOp(funcs)
    RangeifyPass().apply(CTX, module)
    assert lowered_ops(module, "func.call") == depth - 1
    assert lowered_ops(module, "memref.store") == 1  # only the innermost copies its input


# ---- xDSL fixes scoped to uopc -----------------------------------------------------------

EXACT = """func.func @main() -> tensor<4xf32> {
  %c = uop.const dense<[0.0, -0.0, 0x7F800000, 0x7FC00000]> : tensor<4xf32>
  func.return %c : tensor<4xf32>
}"""
EXACT_BITS = [0x00000000, 0x80000000, 0x7F800000, 0x7FC00000]


def xdsl_originals_in_place() -> bool:
    """xDSL's own methods (defined in xDSL's modules) are the ones on its classes."""
    return all(cls.__dict__[name].__module__.startswith("xdsl.") for cls, name, _ in FIXES)


def bits(module: ModuleOp) -> list[int]:
    const = next(op for op in module.walk() if isinstance(op, uop.ConstOp))
    return const.as_array().view(np.uint32).tolist()


def show(module: ModuleOp, generic: bool = False) -> str:
    out = StringIO()
    Printer(stream=out, print_generic_format=generic).print_op(module)
    return out.getvalue()


def test_importing_uopc_leaves_xdsl_untouched():
    import uopc.tools.opt  # noqa: F401  (every entry point's module)

    assert xdsl_originals_in_place()
    # xDSL's own behaviour outside uopc: == splats, hex elements read as numbers (if
    # this fails, the pinned xDSL has fixed them: drop the fixes from xdsl_fixes.py)
    zeros = DenseIntOrFPElementsAttr.from_list(tensor_type(Sig((2,), "f32")), [0.0, -0.0])
    assert zeros.is_splat()
    literal = Parser(CTX, "dense<[0x7F800000]> : tensor<1xf32>").parse_attribute()
    assert literal.get_values() == (float(0x7F800000),)
    # ... and splats read as one value per element
    assert len(Parser(CTX, "dense<1.0> : tensor<3xf32>").parse_attribute()) == 3
    with exact_constants():
        assert len(Parser(CTX, "dense<1.0> : tensor<3xf32>").parse_attribute()) == 1


def test_uop_const_parses_and_prints_exactly_through_a_bare_xdsl_parser():
    module = Parser(CTX, EXACT).parse_module()
    assert bits(module) == EXACT_BITS
    text = show(module)
    assert "dense<[0.000000e+00, -0.000000e+00, 0x7f800000, 0x7fc00000]>" in text
    assert bits(Parser(CTX, text).parse_module()) == EXACT_BITS
    assert xdsl_originals_in_place()


def test_parse_program_reads_the_generic_form_exactly():
    with exact_constants():
        generic = show(Parser(CTX, EXACT).parse_module(), generic=True)
    assert xdsl_originals_in_place()
    assert bits(parse_program(generic, "mlir")) == EXACT_BITS
    assert xdsl_originals_in_place()


def test_exact_constants_is_reentrant_and_restores_on_error():
    with pytest.raises(RuntimeError):
        with exact_constants():
            with exact_constants():
                pass
            assert not xdsl_originals_in_place()  # the inner exit left them to the outer
            raise RuntimeError("inside")
    assert xdsl_originals_in_place()
