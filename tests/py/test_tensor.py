"""The Tensor API (SPEC §10) against numpy, through the compiled realize path."""

import math

import numpy as np
import pytest

from uopc import Tensor
from uopc.uopdialect.ops import OP
from uopc.uopdialect.shapes import ShapeError

rng = np.random.default_rng(7)


def randf(*shape):
    return rng.standard_normal(shape).astype(np.float32)


def close(t: Tensor, expected, tol=1e-5):
    got = t.numpy()
    expected = np.asarray(expected)
    assert got.shape == expected.shape, (got.shape, expected.shape)
    np.testing.assert_allclose(got, expected, rtol=tol, atol=tol)


def test_construction_and_properties():
    t = Tensor([[1, 2, 3], [4, 5, 6]])
    assert (t.shape, t.dtype, t.ndim, t.numel()) == ((2, 3), "i64", 2, 6)
    assert Tensor(np.zeros(3, np.float64)).dtype == "f64"  # numpy data keeps its type
    assert Tensor([True, False]).dtype == "i1"
    assert Tensor(2.5).shape == ()
    assert Tensor([1, 2], dtype="f32").dtype == "f32"
    close(Tensor.full((2, 2), 3.5), np.full((2, 2), 3.5, np.float32))
    close(Tensor.zeros(2, 3) + Tensor.ones(3), np.ones((2, 3)))
    close(Tensor.arange(5), np.arange(5))
    close(Tensor.arange(1, 7, 2), np.arange(1, 7, 2))


def test_broadcast_add_and_mixed_arithmetic():
    a, b = randf(4, 1, 3), randf(5, 1)
    close(Tensor(a) + Tensor(b), a + b)
    close(Tensor(a) - b, a - b)
    close(2.0 - Tensor(a) * 3, 2.0 - a * 3)
    close(Tensor(a) / Tensor(b + 3.0), a / (b + 3.0), tol=1e-5)
    close(1.0 / (Tensor(b) + 3.0), 1.0 / (b + 3.0))
    ints = Tensor(np.array([1, 2, 3], np.int32))
    half = ints * 0.5
    assert half.dtype == "f32"
    close(half, [0.5, 1.0, 1.5])
    assert (ints * 2).dtype == "i32"
    close(ints * 2 + 1, [3, 5, 7])
    close(-ints, [-1, -2, -3])
    close(ints / 2, [0.5, 1.0, 1.5])


def test_broadcast_error_names_both_shapes():
    with pytest.raises(ShapeError, match=r"\(2, 3\) and \(4,\)"):
        Tensor(randf(2, 3)) + Tensor(randf(4))
    with pytest.raises(ShapeError, match=r"\(2, 3\) and \(2, 3\).*inner sizes 3 and 2"):
        Tensor(randf(2, 3)) @ Tensor(randf(2, 3))
    with pytest.raises(ShapeError, match="reshape"):
        Tensor(randf(2, 3)).reshape(4, 2)


def test_comparisons_and_logic():
    a, b = randf(3, 4), randf(3, 4)
    a[0, 0] = b[0, 0]
    for got, want in [(Tensor(a) < Tensor(b), a < b), (Tensor(a) > b, a > b),
                      (Tensor(a) <= Tensor(b), a <= b), (Tensor(a) >= b, a >= b),
                      (Tensor(a).eq(Tensor(b)), a == b), (Tensor(a).ne(b), a != b),
                      ((Tensor(a) < 0).logical_not(), ~(a < 0))]:
        assert got.dtype == "i1"
        np.testing.assert_array_equal(got.numpy(), want)
    close(Tensor(a).maximum(Tensor(b)), np.maximum(a, b))
    close(Tensor(a).minimum(0.1), np.minimum(a, 0.1))
    close((Tensor(a) > 0).where(Tensor(a), Tensor(b) * 2), np.where(a > 0, a, b * 2))
    close((Tensor(a) > 0).where(1.0, 0.0), (a > 0).astype(np.float32))


def test_unary_math():
    x = randf(3, 5)
    pos = np.abs(x) + 0.1
    close(Tensor(x).exp(), np.exp(x), tol=1e-5)
    close(Tensor(pos).log(), np.log(pos), tol=1e-5)
    close(Tensor(x).exp2(), np.exp2(x), tol=1e-5)
    close(Tensor(pos).log2(), np.log2(pos), tol=1e-5)
    close(Tensor(pos).sqrt(), np.sqrt(pos))
    close(Tensor(pos).rsqrt(), 1 / np.sqrt(pos), tol=1e-5)
    close(Tensor(pos).reciprocal(), 1 / pos)
    close(Tensor(x).sin(), np.sin(x), tol=1e-5)
    close(Tensor(x).cos(), np.cos(x), tol=1e-5)
    close(Tensor(x).square(), x * x)
    close(Tensor(x).abs(), np.abs(x))
    close(Tensor(x).relu(), np.maximum(x, 0))
    close(Tensor(x).sigmoid(), 1 / (1 + np.exp(-x)), tol=1e-5)
    close(Tensor(x).tanh(), np.tanh(x), tol=1e-5)
    gelu = 0.5 * x * (1 + np.tanh(math.sqrt(2 / math.pi) * (x + 0.044715 * x**3)))
    close(Tensor(x).gelu(approximate="tanh"), gelu, tol=1e-5)
    exact = 0.5 * x * (1 + np.vectorize(math.erf)(x / math.sqrt(2)))
    close(Tensor(x).gelu(), exact, tol=1e-5)  # PyTorch's default: the erf form
    close(Tensor(x).silu(), x / (1 + np.exp(-x)), tol=1e-5)
    close(Tensor(np.array([1, 2], np.int32)).exp(), np.exp([1.0, 2.0]), tol=1e-5)
    close(Tensor([1.5, -2.7]).cast("i32"), [1, -2])


def test_reductions():
    x = randf(2, 3, 4)
    close(Tensor(x).sum(), x.sum(), tol=1e-4)
    close(Tensor(x).sum((0, 2)), x.sum((0, 2)), tol=1e-5)
    close(Tensor(x).sum(-1, keepdim=True), x.sum(-1, keepdims=True), tol=1e-5)
    close(Tensor(x).max(1, keepdim=True), x.max(1, keepdims=True))
    close(Tensor(x).max(), x.max())
    close(Tensor(x).min((0, 1)), x.min((0, 1)))
    close(Tensor(x).mean(1), x.mean(1), tol=1e-5)
    close(Tensor(x).var(2), x.var(2, ddof=1), tol=1e-5)
    close(Tensor(x).var((0, 2), keepdim=True, correction=0), x.var((0, 2), keepdims=True), tol=1e-5)
    ints = np.array([[1, 5], [7, 2]], np.int32)
    close(Tensor(ints).sum(0), ints.sum(0))
    close(Tensor(ints).float().mean(), 3.75)
    with pytest.raises(TypeError, match="mean needs a floating point input"):
        Tensor(ints).mean()
    close(Tensor([True, False, True]).sum(), 2)


def test_softmax_family():
    x = randf(3, 6) * 4
    e = np.exp(x - x.max(-1, keepdims=True))
    close(Tensor(x).softmax(), e / e.sum(-1, keepdims=True), tol=1e-5)
    lse = np.log(np.exp(x).sum(0))
    close(Tensor(x).logsumexp(0), lse, tol=1e-5)
    close(Tensor(x).log_softmax(-1), x - np.log(np.exp(x).sum(-1, keepdims=True)), tol=1e-5)


def test_argmax_first_maximum():
    x = np.array([[1, 3, 3, 0], [5, 5, 5, 5], [0, 1, 2, 9]], np.float32)
    got = Tensor(x).argmax(1)
    assert got.dtype == "i64"
    np.testing.assert_array_equal(got.numpy(), [1, 0, 3])
    np.testing.assert_array_equal(Tensor(x).argmax(0).numpy(), np.argmax(x, 0))
    assert Tensor(x).argmax().item() == np.argmax(x)
    np.testing.assert_array_equal(Tensor(x).argmin(1).numpy(), np.argmin(x, 1))


def test_matmul():
    a, b = randf(2, 3, 4, 5), randf(3, 5, 6)
    close(Tensor(a) @ Tensor(b), a @ b, tol=1e-4)
    v, m = randf(5), randf(5, 2)
    close(Tensor(v) @ Tensor(m), v @ m, tol=1e-5)
    close(Tensor(m.T) @ Tensor(v), m.T @ v, tol=1e-5)
    close(Tensor(v) @ Tensor(v), v @ v, tol=1e-5)
    w, bias = randf(5, 3), randf(3)
    close(Tensor(a).linear(Tensor(w), Tensor(bias)), a @ w + bias, tol=1e-4)


def test_movement():
    x = randf(2, 3, 4)
    close(Tensor(x).reshape(4, -1), x.reshape(4, -1))
    close(Tensor(x).permute(2, -3, 1), x.transpose(2, 0, 1))
    close(Tensor(x).transpose(0, -1), x.swapaxes(0, -1))
    close(Tensor(x[0]).T, x[0].T)
    close(Tensor(x[:, :1]).expand(-1, 5, -1), np.broadcast_to(x[:, :1], (2, 5, 4)))
    close(Tensor(x[0, 0]).expand(3, 4), np.broadcast_to(x[0, 0], (3, 4)))
    close(Tensor(x).flatten(1), x.reshape(2, 12))
    close(Tensor(x).unsqueeze(-1), x[..., None])
    close(Tensor(x).shrink(((1, 2), None, (1, 3))), x[1:2, :, 1:3])
    close(Tensor(x).flip(0, -1), x[::-1, :, ::-1])


def test_slicing_and_cat():
    x = randf(5, 6, 7)
    for index in [(1,), (-1, 2), (slice(1, 4),), (slice(None, None, 2),),
                  (slice(None), slice(5, 0, -2)), (Ellipsis, 3), (None, 0, slice(1, 6, 3)),
                  (slice(-3, None), Ellipsis, slice(None, None, -1)), (2, 3, 4)]:
        close(Tensor(x)[index], x[index])
    a, b = randf(2, 3), randf(2, 5)
    close(Tensor(a).cat(Tensor(b), Tensor(a), dim=1), np.concatenate([a, b, a], 1))
    close(Tensor.cat(Tensor(a), Tensor(a)[:1], dim=0), np.concatenate([a, a[:1]], 0))
    close(Tensor.stack(Tensor(a), Tensor(a) * 2, dim=1), np.stack([a, a * 2], 1))
    close(Tensor(x)[1:4].cat(Tensor(x)[:1])[::2], np.concatenate([x[1:4], x[:1]])[::2])
    with pytest.raises(IndexError):
        Tensor(x)[5]


def test_pad_and_flip():
    x = randf(3, 4)
    close(Tensor(x).pad(((1, 2), (0, 3))), np.pad(x, ((1, 2), (0, 3))))
    close(Tensor(x).pad((None, (2, 1)), value=-1.5).flip(1),
          np.pad(x, ((0, 0), (2, 1)), constant_values=-1.5)[:, ::-1])


def _conv_reference(x, w, stride, padding):
    n, c, h, width = x.shape
    o, _, kh, kw = w.shape
    xp = np.pad(x, ((0, 0), (0, 0), (padding, padding), (padding, padding)))
    oh = (h + 2 * padding - kh) // stride + 1
    ow = (width + 2 * padding - kw) // stride + 1
    out = np.zeros((n, o, oh, ow), np.float32)
    for i in range(oh):
        for j in range(ow):
            patch = xp[:, :, i * stride:i * stride + kh, j * stride:j * stride + kw]
            out[:, :, i, j] = np.einsum("nchw,ochw->no", patch, w)
    return out


@pytest.mark.parametrize("stride,padding", [(1, 0), (2, 1)])
def test_conv2d(stride, padding):
    x, w, b = randf(2, 3, 7, 6), randf(4, 3, 3, 3), randf(4)
    want = _conv_reference(x, w, stride, padding) + b[None, :, None, None]
    close(Tensor(x).conv2d(Tensor(w), Tensor(b), stride=stride, padding=padding), want, tol=1e-4)


def test_max_pool2d():
    x = randf(2, 3, 6, 6)
    want = x.reshape(2, 3, 3, 2, 3, 2).max((3, 5))
    close(Tensor(x).max_pool2d(2), want)


def test_one_hot_and_cross_entropy():
    labels = np.array([2, 0, 1, 2], np.int32)
    one_hot = Tensor(labels).one_hot(3)
    assert one_hot.dtype == "i64"  # PyTorch's type
    np.testing.assert_array_equal(one_hot.numpy(), np.eye(3, dtype=np.int64)[labels])
    logits = randf(4, 3)
    logp = logits - np.log(np.exp(logits).sum(-1, keepdims=True))
    close(Tensor(logits).cross_entropy(Tensor(labels)), -logp[np.arange(4), labels].mean(), tol=1e-5)


def test_realize_replaces_graph_with_data():
    t = Tensor(randf(3)) * 2 + 1
    assert t.uop.op is not OP.buffer
    Tensor.realize_all(t, t * 3)
    assert t.uop.op is OP.buffer
    before = t.numpy()
    close(t + 1, before + 1)


def test_assign_detach_contiguous():
    w = Tensor(np.array([1.0, 2.0], np.float32))
    w.assign(w * 10).realize()
    close(w, [10.0, 20.0])
    w.assign(5)
    close(w, [5.0, 5.0])
    with pytest.raises(ShapeError):
        w.assign(Tensor(randf(3)))
    x = randf(2, 3)
    close((Tensor(x) + 1).contiguous().detach() * 2, (x + 1) * 2)


def test_random_is_seeded():
    from uopc import manual_seed

    manual_seed(3)
    a = Tensor.randn(4, 5).numpy()
    manual_seed(3)
    b = Tensor.randn(4, 5).numpy()
    np.testing.assert_array_equal(a, b)
    u = Tensor.uniform(1000, low=-2, high=3).numpy()
    assert u.min() >= -2 and u.max() < 3 and abs(u.mean() - 0.5) < 0.2
    k = Tensor.kaiming(64, 32, fan_in=16).numpy()
    assert np.abs(k).max() <= math.sqrt(6 / 16)


def test_pow_and_scalar_where_branches():
    x = randf(3, 4)
    for n in (0, 1, 2, 3, 5, -2):
        close(Tensor(x) ** n, x.astype(np.float64) ** n, tol=1e-4)
    pos = np.abs(x) + 0.5
    close(Tensor(pos) ** 1.5, pos ** 1.5, tol=1e-5)
    close(Tensor(pos) ** 0.5, np.sqrt(pos))
    close((Tensor(x) > 0).where(Tensor(x), -np.inf), np.where(x > 0, x, -np.inf))
    picked = (Tensor(x) > 0).where(1, 0)
    assert picked.dtype == "i64"
    close(picked, (x > 0).astype(np.int32))
    assert (Tensor(x) > 0).where(Tensor(np.ones(4, np.int32)), 0.5).dtype == "f32"


def test_integer_tensor_index_gathers_rows():
    table = randf(5, 3)
    ids = np.array([[4, 0], [2, 2]], np.int32)
    close(Tensor(table)[Tensor(ids)], table[ids])
    close(Tensor(table)[[1, 3]], table[[1, 3]])
    counts = np.array([3, 1, 4], np.int32)
    close(Tensor(counts)[Tensor(np.array([2, 0], np.int32))], counts[[2, 0]])
    close(Tensor(table)[Tensor(ids), 1], table[ids, 1])  # numpy's advanced indexing
    close(Tensor(table)[1:, Tensor(np.array([2, 0], np.int32))], table[1:, [2, 0]])


def test_a_gather_is_one_index_node_that_reads_rows_as_they_are():
    table = randf(1000, 3)
    table[7, 1] = -0.0  # a masked sum over the table would give +0.0 here
    ids = np.array([[7, 0], [999, 7]], np.int32)
    picked = Tensor(table)[ids]
    assert picked.uop.op is OP.index and picked.uop.srcs[1].sig.shape == (2, 2)
    out = picked.numpy()
    assert np.array_equal(out, table[ids]) and np.signbit(out[0, 0, 1])


def test_a_lazy_index_out_of_range_gives_a_zero_row():
    table = randf(4, 2)
    lazy = Tensor(np.array([0, 3, 5, -6], np.int32)) + 1  # 1, 4, 6, -5: only 1 is a row
    out = Tensor(table)[lazy].numpy()
    assert np.array_equal(out, np.stack([table[1], np.zeros(2), np.zeros(2), np.zeros(2)]))


def test_a_lazy_index_out_of_range_on_one_axis_never_reads_another_row():
    table = randf(3, 4, 2)
    rows = np.array([0, 1], np.int32)
    cols = Tensor(np.array([3, 4], np.int32)) + 0  # 4 is past the axis of 4
    out = Tensor(table)[rows, cols].numpy()  # a flat row number 1 * 4 + 4 would be row 2, 0
    assert np.array_equal(out, np.stack([table[0, 3], np.zeros(2)]))
