"""The light uop graph: memoized shape rules and the topological walk."""

from __future__ import annotations

import numpy as np
import pytest

from uopc.runtime.engine import trace
from uopc.uopdialect import shapes
from uopc.uopdialect.graph import UOp, toposort
from uopc.uopdialect.ops import OP, OPS
from uopc.uopdialect.shapes import ShapeError, Sig


def buf(*shape: int) -> UOp:
    return UOp.buffer(np.zeros(shape, np.float32), Sig(shape, "f32"))


@pytest.mark.parametrize("op, srcs, arg, expected", [
    ("add", (Sig((2, 3), "f32"),) * 2, None, Sig((2, 3), "f32")),
    ("cmplt", (Sig((2, 3), "f32"),) * 2, None, Sig((2, 3), "i1")),
    ("reshape", (Sig((2, 3), "f32"),), (3, 2), Sig((3, 2), "f32")),
    ("expand", (Sig((2, 1), "f32"),), (2, 5), Sig((2, 5), "f32")),
    ("permute", (Sig((2, 3, 4), "f32"),), (2, 0, 1), Sig((4, 2, 3), "f32")),
    ("reduce", (Sig((2, 3, 4), "f32"),), ("add", (0, 2)), Sig((3,), "f32")),
])
def test_memoized_rule_matches_the_shape_rule_every_time(op, srcs, arg, expected):
    nodes = [UOp.buffer(None, s) for s in srcs]
    for _ in range(3):  # the first call computes, later ones hit the memo
        assert UOp.make(OPS[op], nodes, arg).sig == expected


def test_failures_are_not_memoized():
    x = buf(2, 3)
    assert UOp.make(OP.reshape, [x], (6,)).sig.shape == (6,)
    for _ in range(2):
        with pytest.raises(ShapeError, match="keep the element count"):
            UOp.make(OP.reshape, [x], (7,))
    with pytest.raises(ShapeError, match="shape mismatch"):
        UOp.make(OP.add, [x, buf(3, 2)])


def test_unhashable_argument_is_checked_without_memo():
    x = buf(2, 3)
    assert UOp.make(OP.reshape, [x], [3, 2]).sig == shapes.reshape(x.sig, (3, 2))
    with pytest.raises(ShapeError):
        UOp.make(OP.permute, [x], [0, 0])


def test_toposort_and_trace_share_one_post_order():
    # d = (a + b) * (b + c): b is shared; sources come first, the first source first
    a, b, c = buf(2), buf(2), buf(2)
    ab = UOp.make(OP.add, [a, b])
    bc = UOp.make(OP.add, [b, c])
    d = UOp.make(OP.mul, [ab, bc])
    expected = [a, b, ab, c, bc, d]
    assert toposort([d]) == expected
    assert trace([d]).nodes == expected
    # several roots: each node once, in the order the roots reach it
    assert toposort([bc, d]) == [b, c, bc, a, ab, d]
    assert trace([bc, d]).nodes == [b, c, bc, a, ab, d]


def test_a_tuple_constant_is_a_dense_literal_of_the_kernel():
    """UOp.const with a tuple: a vector of its values, computed alike by the compiled
    plan and the reference, and keyed by value (no plan input)."""
    from uopc.frontend.tensor import Tensor
    from uopc.uopdialect import reference

    pattern = UOp.const((3, 1, 4, 1, 5, 9), Sig((6,), "i32"))
    x = np.arange(6, dtype=np.int32).reshape(2, 3)
    y = Tensor(x) * Tensor._wrap(pattern, False).reshape(2, 3)
    expected = x * np.array([[3, 1, 4], [1, 5, 9]], np.int32)
    np.testing.assert_array_equal(y.numpy(), expected)
    np.testing.assert_array_equal(reference.evaluate([y.uop])[0], expected)
    assert len(trace([y.uop]).arrays) == 1  # x only
    other = UOp.const((3, 1, 4, 1, 5, 8), Sig((6,), "i32"))
    assert trace([pattern]).key != trace([other]).key


def test_a_tuple_constant_must_match_a_vector_type():
    with pytest.raises(ShapeError, match=r"6 values typed .*tensor<6xi32>; reshape"):
        UOp.const((3, 1, 4, 1, 5, 9), Sig((2, 3), "i32"))
