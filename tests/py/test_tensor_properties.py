"""Property tests: numpy broadcasting and basic indexing agree with numpy on random shapes."""

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from uopc import Tensor
from uopc.frontend.shape_args import broadcast_shape
from uopc.uopdialect.shapes import ShapeError

shapes = st.lists(st.integers(1, 4), min_size=0, max_size=3).map(tuple)


@st.composite
def broadcastable_pair(draw):
    out = draw(st.lists(st.integers(1, 4), min_size=1, max_size=3))
    def operand():
        keep = draw(st.integers(0, len(out)))
        return tuple(d if draw(st.booleans()) else 1 for d in out[len(out) - keep:])
    return operand(), operand()


@settings(max_examples=20, deadline=None)
@given(broadcastable_pair(), st.sampled_from(["add", "mul", "maximum", "lt"]))
def test_binary_broadcasting_matches_numpy(pair, op):
    a = np.arange(np.prod(pair[0]), dtype=np.float32).reshape(pair[0]) - 2
    b = np.linspace(-3, 3, int(np.prod(pair[1])), dtype=np.float32).reshape(pair[1])
    ours = {"add": lambda x, y: x + y, "mul": lambda x, y: x * y,
            "maximum": lambda x, y: x.maximum(y), "lt": lambda x, y: x < y}[op]
    theirs = {"add": np.add, "mul": np.multiply, "maximum": np.maximum, "lt": np.less}[op]
    np.testing.assert_array_equal(ours(Tensor(a), Tensor(b)).numpy(), theirs(a, b))


@given(shapes, shapes)
def test_broadcast_shape_agrees_or_names_both(a, b):
    try:
        expected = np.broadcast_shapes(a, b)
    except ValueError:
        try:
            broadcast_shape(a, b, "add")
        except ShapeError as e:
            assert str(a) in str(e) and str(b) in str(e)
        else:
            raise AssertionError(f"{a} and {b} should not broadcast")
    else:
        assert broadcast_shape(a, b, "add") == expected


@st.composite
def index_case(draw):
    shape = tuple(draw(st.lists(st.integers(1, 6), min_size=1, max_size=3)))
    items = []
    for n in shape[:draw(st.integers(1, len(shape)))]:
        if draw(st.booleans()):
            items.append(draw(st.integers(-n, n - 1)))
        else:
            bound = st.one_of(st.none(), st.integers(-n - 1, n + 1))
            step = draw(st.sampled_from([None, 1, 2, 3, -1, -2]))
            items.append(slice(draw(bound), draw(bound), step))
    return shape, tuple(items)


@settings(max_examples=25, deadline=None)
@given(index_case())
def test_basic_indexing_matches_numpy(case):
    shape, index = case
    x = np.arange(int(np.prod(shape)), dtype=np.int32).reshape(shape)
    np.testing.assert_array_equal(Tensor(x)[index].numpy(), x[index])
