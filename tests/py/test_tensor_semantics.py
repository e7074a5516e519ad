"""The Tensor API computes what PyTorch (and numpy) compute, where it once silently did not.

Each test pins one of those former silent wrong results: `==` as identity, NaN in <=, >=
and argmax, negation tricks at INT_MIN, unchecked indices, division by reciprocal,
narrowing of data that does not fit, f16 and long float sums, NaN gradients on the tails,
ignored padding numbers, numpy on the left. Values come from numpy where it defines the
same thing; tests that need PyTorch (gradients, its keywords) skip without it.
"""

from __future__ import annotations

import math

import numpy as np
import pytest

from uopc import Tensor, from_numpy, nn
from uopc.uopdialect.shapes import ShapeError

NAN, INF = float("nan"), float("inf")
INT_MIN, INT_MAX = -(2**31), 2**31 - 1


@pytest.fixture
def torch():
    return pytest.importorskip("torch")


# ---------------------------------------------------------------------- == and !=


def test_eq_and_ne_are_elementwise_and_hash_stays_identity():
    x = np.array([1.0, 2.0, 1.0, NAN], np.float32)
    t = Tensor(x)
    np.testing.assert_array_equal((t == 1).numpy(), x == 1)
    np.testing.assert_array_equal((t != 1).numpy(), x != 1)
    np.testing.assert_array_equal((t == t).numpy(), x == x)  # NaN != NaN
    np.testing.assert_array_equal((t * (t == 1)).numpy(), x * (x == 1))
    pred, y = Tensor([1, 2, 3, 4]), Tensor([1, 0, 3, 0])
    assert (pred == y).float().mean().item() == 0.5
    other = Tensor(x)
    table = {t: "t", other: "other"}  # identity hashing: distinct keys, found again
    assert table[t] == "t" and table[other] == "other" and len({t, t, other}) == 2


def test_bool_of_a_tensor_is_its_value_or_an_error():
    assert bool(Tensor(2) == 2) and not bool(Tensor([0.0]))
    with pytest.raises(RuntimeError, match="ambiguous"):
        bool(Tensor([1, 2]) == 1)


# ---------------------------------------------------------------------- NaN


def test_comparisons_are_ieee_with_nan():
    x = np.array([NAN, 1.0, 0.5, 2.0, -0.0], np.float32)
    t = Tensor(x)
    for got, want in (((t <= 1.0), x <= 1), ((t >= 1.0), x >= 1), ((t < 1.0), x < 1),
                      ((t > 1.0), x > 1), ((t <= t), x <= x), ((1.0 <= t), 1 <= x),
                      ((t >= 0.0), x >= 0)):
        np.testing.assert_array_equal(got.numpy(), want)


@pytest.mark.parametrize("values", [[1, NAN, 3], [NAN, 5, NAN], [2, 7, 7, 1], [-INF, -INF]])
def test_argmax_argmin_give_the_first_nan_or_extreme_like_numpy(values):
    x = np.array(values, np.float32)
    assert Tensor(x).argmax().item() == np.argmax(x)
    assert Tensor(x).argmin().item() == np.argmin(x)
    rows = np.stack([x, x[::-1]])
    np.testing.assert_array_equal(Tensor(rows).argmax(1).numpy(), np.argmax(rows, 1))
    np.testing.assert_array_equal(Tensor(rows).argmin(axis=1).numpy(), np.argmin(rows, 1))


def test_argmax_matches_torch_with_nan(torch):
    x = np.array([[1, NAN, 3], [4, 2, NAN]], np.float32)
    np.testing.assert_array_equal(Tensor(x).argmax(1).numpy(), torch.tensor(x).argmax(1).numpy())


# ---------------------------------------------------------------------- INT_MIN


def test_int32_min_minimum_argmin_at_int_min():
    x = np.array([5, INT_MIN, INT_MAX, -1, INT_MIN], np.int32)
    assert Tensor(x).min().item() == INT_MIN
    assert Tensor(x).argmin().item() == np.argmin(x) == 1
    assert Tensor(x).max().item() == INT_MAX
    y = np.array([INT_MIN, 0, INT_MIN, INT_MAX, 3], np.int32)
    np.testing.assert_array_equal(Tensor(x).minimum(Tensor(y)).numpy(), np.minimum(x, y))
    np.testing.assert_array_equal(Tensor(x).reshape(1, 5).min(1).numpy(), [INT_MIN])


# ---------------------------------------------------------------------- indices


def test_negative_indices_wrap_like_numpy():
    x = np.arange(12, dtype=np.float32).reshape(4, 3)
    for ids in ([-1], [-4, 3, -2], np.array([[0, -1], [-3, 2]])):
        np.testing.assert_array_equal(Tensor(x)[Tensor(np.asarray(ids))].numpy(),
                                      x[np.asarray(ids)])
        np.testing.assert_array_equal(Tensor(x)[np.asarray(ids)].numpy(), x[np.asarray(ids)])


def test_out_of_range_indices_raise_where_known():
    x = Tensor(np.arange(12, dtype=np.float32).reshape(4, 3))
    for ids in ([4], np.array([-5]), Tensor([0, 7])):
        with pytest.raises(IndexError, match=r"index -?\d+ is out of range for size 4"):
            x[ids]
    with pytest.raises(IndexError, match="Embedding: index 10 is out of range for size 10"):
        nn.Embedding(10, 4)(Tensor([1, 10]))
    with pytest.raises(IndexError, match="Embedding: index -1"):
        nn.Embedding(10, 4)(np.array([-1]))
    logits = Tensor(np.zeros((2, 3), np.float32))
    with pytest.raises(IndexError, match="cross_entropy labels: index 3 is out of range"):
        logits.cross_entropy([0, 3])


def test_checked_mode_checks_lazy_indices(monkeypatch):
    x = Tensor(np.arange(12, dtype=np.float32).reshape(4, 3))
    lazy = Tensor([1, 2]) * 3  # [3, 6]: computed, not known while tracing
    monkeypatch.delenv("UOPC_CHECK", raising=False)
    # unchecked: no out-of-bounds read, the missing row is zeros (documented)
    np.testing.assert_array_equal(x[lazy].numpy(), [[9, 10, 11], [0, 0, 0]])
    monkeypatch.setenv("UOPC_CHECK", "1")
    with pytest.raises(IndexError, match="index 6 is out of range for size 4"):
        x[Tensor([1, 2]) * 3]
    with pytest.raises(IndexError, match="Embedding: index 6"):
        nn.Embedding(4, 2)(Tensor([1, 2]) * 3)


# ---------------------------------------------------------------------- division


def test_division_is_correctly_rounded_and_ieee():
    rng = np.random.default_rng(0)
    a = rng.standard_normal(4096).astype(np.float32) * 100
    b = rng.standard_normal(4096).astype(np.float32)
    np.testing.assert_array_equal((Tensor(a) / Tensor(b)).numpy(), a / b)
    np.testing.assert_array_equal((Tensor(a) / 3.0).numpy(), a / np.float32(3))
    np.testing.assert_array_equal((7.0 / Tensor(b)).numpy(), np.float32(7) / b)
    assert ((Tensor(a) / Tensor(a)).numpy() == 1).all()
    with np.errstate(all="ignore"):
        z = np.array([1.0, -1.0, 0.0], np.float32)
        np.testing.assert_array_equal((Tensor(z) / 0).numpy(), z / np.float32(0))
        np.testing.assert_array_equal((Tensor(z) / Tensor([0.0, -0.0, 0.0])).numpy(),
                                      z / np.array([0.0, -0.0, 0.0], np.float32))
    h = rng.standard_normal(512).astype(np.float16)
    np.testing.assert_array_equal((Tensor(h) / Tensor(h[::-1].copy())).numpy(), h / h[::-1])
    ints = (Tensor([7, -7, 1]) / Tensor([2, 2, 3])).numpy()
    assert ints.dtype == np.float32 and np.array_equal(ints, np.float32([3.5, -3.5, 1 / 3]))


def test_integer_and_float_floor_division_and_modulo_follow_python():
    a = np.array([7, -7, 7, -7, 0, INT_MAX], np.int32)
    b = np.array([2, 2, -2, -2, 5, 3], np.int32)
    np.testing.assert_array_equal((Tensor(a) // Tensor(b)).numpy(), a // b)
    np.testing.assert_array_equal((Tensor(a) % Tensor(b)).numpy(), a % b)
    np.testing.assert_array_equal((Tensor(a) % 3).numpy(), a % 3)
    x = np.array([7.5, -7.5, 3.0], np.float32)
    np.testing.assert_array_equal((Tensor(x) // 2.0).numpy(), x // np.float32(2))
    with pytest.raises(ZeroDivisionError, match="integer // by zero"):
        Tensor(a) // 0


def test_div_rounding_modes_match_torch(torch):
    a = np.array([7, -7, 7, -7, 1], np.int32)
    b = np.array([2, 2, -2, -2, 3], np.int32)
    x, y = np.float32([7.5, -7.5, 1.0]), np.float32([2.0, 2.0, -3.0])
    for mode in ("trunc", "floor"):
        want = torch.div(torch.tensor(a), torch.tensor(b), rounding_mode=mode).numpy()
        np.testing.assert_array_equal(Tensor(a).div(Tensor(b), rounding_mode=mode).numpy(), want)
        want = torch.div(torch.tensor(x), torch.tensor(y), rounding_mode=mode).numpy()
        np.testing.assert_array_equal(Tensor(x).div(Tensor(y), rounding_mode=mode).numpy(), want)


# ---------------------------------------------------------------------- data that does not fit


def test_data_that_does_not_fit_raises_instead_of_wrapping():
    with pytest.raises(OverflowError, match="1099511627776 does not fit int32"):
        Tensor(np.array([2**40]), dtype="i32")
    with pytest.raises(OverflowError, match="2147483648 does not fit int32"):
        Tensor([1, 2**31], dtype="int32")
    with pytest.raises(OverflowError, match="does not fit int32"):
        Tensor(np.array([1], np.int32)) + 2**40
    with pytest.raises(OverflowError, match="beyond the range of float32"):
        Tensor(np.array([1e300]), dtype="f32")
    with pytest.raises(OverflowError, match="18446744073709551616 does not fit int64"):
        Tensor([2**64])
    # nothing is narrowed: numpy data keeps its type and its values
    assert Tensor(np.array([2**40])).dtype == "i64" and Tensor(np.array([2**40])).item() == 2**40
    assert Tensor(np.array([0.1])).dtype == "f64" and Tensor(np.array([0.1])).item() == 0.1
    np.testing.assert_array_equal(Tensor(np.array([INT_MIN, INT_MAX]), dtype="i32").numpy(),
                                  [INT_MIN, INT_MAX])
    assert Tensor(np.array([0.1]), dtype="f32").numpy()[0] == np.float32(0.1)


# ---------------------------------------------------------------------- sums


def test_f16_sums_accumulate_in_f32():
    t = Tensor.ones(4096, dtype="f16")
    assert t.sum().dtype == "f16" and t.sum().item() == 4096
    assert t.mean().item() == 1.0


def test_long_f32_sums_stay_accurate():
    assert Tensor.ones(2**25).sum().item() == 2**25
    assert Tensor.ones((4096, 4097)).mean().item() == 1.0
    x = np.random.default_rng(1).random((3, 50001), dtype=np.float32)
    got = Tensor(x).sum(1).numpy()
    np.testing.assert_allclose(got, x.astype(np.float64).sum(1), rtol=2e-6)


def test_float_of_f16_is_f32():
    t = Tensor.ones(3, dtype="f16")
    assert t.float().dtype == "f32" and t.half().dtype == "f16" and t.float().numpy().dtype == np.float32


# ---------------------------------------------------------------------- gradients on the tails


def _grad(fn, x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    t = Tensor(x, requires_grad=True)
    out = fn(t)
    out.sum().backward([t])
    return out.numpy(), t.grad.numpy()


@pytest.mark.parametrize("name", ["sigmoid", "tanh", "gelu", "silu", "softplus", "elu", "mish"])
def test_activation_values_and_gradients_match_torch_on_the_tails(torch, name):
    x = np.array([-1000, -200, -90, -50, -12, -1, 0, 0.5, 3, 15, 50, 100, 1000], np.float32)
    value, grad = _grad(lambda t: getattr(t, name)(), x)
    tx = torch.tensor(x, requires_grad=True)
    fn = getattr(torch, name, None) or getattr(torch.nn.functional, name)
    ty = fn(tx)
    ty.sum().backward()
    assert np.isfinite(grad).all(), (name, grad)
    np.testing.assert_allclose(value, ty.detach().numpy(), rtol=2e-6, atol=1e-6)
    np.testing.assert_allclose(grad, tx.grad.numpy(), rtol=2e-5, atol=1e-6)


def test_fractional_power_gradients_match_torch_at_zero_and_infinity(torch):
    x = np.array([0.0, 1e-30, 0.5, 2.0, INF], np.float32)
    for p in (0.3, 1.5, -0.5):
        value, grad = _grad(lambda t, p=p: t ** p, x)
        tx = torch.tensor(x, requires_grad=True)
        (tx ** p).sum().backward()
        np.testing.assert_allclose(value, (torch.tensor(x) ** p).numpy(), rtol=1e-6)
        np.testing.assert_allclose(grad, tx.grad.numpy(), rtol=1e-5)


def test_tensor_exponent_and_scalar_base_match_torch(torch):
    a = np.float32([0.5, 2.0, 3.0])
    b = np.float32([2.0, -1.0, 0.5])
    ta, tb = Tensor(a, requires_grad=True), Tensor(b, requires_grad=True)
    (ta ** tb + 2.0 ** tb).sum().backward([ta, tb])
    qa, qb = (torch.tensor(v, requires_grad=True) for v in (a, b))
    (qa ** qb + 2.0 ** qb).sum().backward()
    np.testing.assert_allclose(ta.grad.numpy(), qa.grad.numpy(), rtol=1e-5)
    np.testing.assert_allclose(tb.grad.numpy(), qb.grad.numpy(), rtol=1e-5)


# ---------------------------------------------------------------------- conv and pool padding


def test_conv2d_flat_padding_and_pool_padding_checks(torch):
    import torch.nn.functional as F

    rng = np.random.default_rng(2)
    x = rng.standard_normal((1, 2, 5, 6)).astype(np.float32)
    w = rng.standard_normal((3, 2, 3, 3)).astype(np.float32)
    got = Tensor(x).conv2d(Tensor(w), padding=(1, 2, 0, 1)).numpy()  # (left, right, top, bottom)
    want = F.conv2d(F.pad(torch.tensor(x), (1, 2, 0, 1)), torch.tensor(w)).numpy()
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)
    with pytest.raises(ShapeError, match="max_pool2d: padding takes"):
        Tensor(x).max_pool2d(2, padding=(1, 1, 1))
    xi = rng.integers(-9, 9, (1, 1, 4, 4)).astype(np.int32)
    pooled = Tensor(xi).max_pool2d(2, padding=1)
    want = F.max_pool2d(torch.tensor(xi).float(), 2, padding=1).numpy()
    assert pooled.dtype == "i32" and np.array_equal(pooled.numpy(), want.astype(np.int32))


# ---------------------------------------------------------------------- numpy on the left


def test_numpy_shares_the_value_read_only_and_from_numpy_shares_the_array():
    x = np.arange(6, dtype=np.float32).reshape(2, 3)
    t = from_numpy(x)
    y = t * 2
    x[0, 0] = 10  # a lazy graph reads the array when it is realized
    values = y.numpy()
    np.testing.assert_array_equal(values, np.arange(6).reshape(2, 3) * 2 + [[20, 0, 0], [0] * 3])
    assert not values.flags.writeable and values.base is not None
    with pytest.raises(ValueError, match="read-only"):
        values[0, 0] = 1
    assert np.array_equal(y.numpy(), values)  # the tensor's value is unchanged
    mine = np.array(y)
    mine[0, 0] = -1  # np.array copies: a writable array of one's own
    assert y.numpy()[0, 0] == 20
    assert np.shares_memory(from_numpy(x).numpy(), x)


@pytest.mark.parametrize("bad, error, words", [
    (np.zeros(3, np.uint32), TypeError, "cannot convert its dtype uint32"),
    (np.zeros((3, 2), np.float32).T, ValueError, "needs a C-contiguous array"),
    ([1.0, 2.0], TypeError, "takes a numpy array, not list"),
])
def test_from_numpy_refuses_what_it_cannot_share(bad, error, words):
    with pytest.raises(error, match=words):
        from_numpy(bad)


def test_numpy_operands_on_the_left_defer_to_tensor():
    x = np.array([1.0, 2.0, 4.0], np.float32)
    t = Tensor(x)
    for got, want in ((np.float32(2) * t, 2 * x), (x + t, x + x), (np.exp(t), np.exp(x)),
                      (x - t, x - x), (np.float32(1) / t, 1 / x), (x > t, x > x),
                      (np.maximum(x[::-1].copy(), t), np.maximum(x[::-1], x))):
        assert isinstance(got, Tensor)
        np.testing.assert_allclose(got.numpy(), want, rtol=1e-6)
    np.testing.assert_array_equal(np.asarray(t * 2), 2 * x)
    assert float(Tensor(2.5)) == 2.5 and int(Tensor(3)) == 3
    assert math.isclose(float(Tensor([0.1])), 0.1, rel_tol=1e-7)


ACTIVATIONS = ["relu6", "hardtanh", "hardsigmoid", "hardswish", "leaky_relu", "celu", "selu",
               "softsign", "logsigmoid", "softplus"]


@pytest.mark.parametrize("name", ACTIVATIONS)
def test_more_activations_match_torch_at_their_kinks(torch, name):
    x = np.float32([-7, -4, -3, -1, -0.5, 0, 0.7, 1, 2, 3, 6, 7, 25])
    value, grad = _grad(lambda t: getattr(t, name)(), x)
    tx = torch.tensor(x, requires_grad=True)
    ty = getattr(torch.nn.functional, name)(tx)
    ty.sum().backward()
    np.testing.assert_allclose(value, ty.detach().numpy(), rtol=2e-6, atol=1e-7)
    np.testing.assert_allclose(grad, tx.grad.numpy(), rtol=2e-6, atol=1e-7)


# ---------------------------------------------------------------------- advanced indexing


def test_multi_axis_and_boolean_indexing_match_numpy():
    x = np.arange(24, dtype=np.float32).reshape(2, 3, 4)
    t = Tensor(x)
    i, j = np.array([[0, 1], [1, 0]]), np.array([2, -1])
    for index in ((i, j), (Tensor([1, 0]), 2), (x[..., 0] > 5,), (x > 10,), ([0, 1], [1, 2], [3, 0]),
                  (i, j, slice(None))):
        expected = x[tuple(np.asarray(a.numpy()) if isinstance(a, Tensor) else a for a in index)]
        np.testing.assert_array_equal(t[index].numpy(), expected)
    with pytest.raises(TypeError, match="computed boolean mask"):
        t[(t > 3) * (t < 9)]
    masked = Tensor(x)
    masked[masked > 10] = -1.0  # a lazy mask of the tensor's shape: a static `where`
    np.testing.assert_array_equal(masked.numpy(), np.where(x > 10, -1, x))
    np.testing.assert_array_equal(t[:, np.array([0, 2])].numpy(), x[:, [0, 2]])


# ---------------------------------------------------------------------- errors at the user's call


@pytest.mark.parametrize("call, error, fragment", [
    (lambda t: t.squeeze(4), ShapeError, "squeeze: axis 4 is out of range"),
    (lambda t: t.pad((1, 2, 3)), ShapeError, "an even count up to 4, got 3 numbers"),
    (lambda t: Tensor.stack((t, Tensor.ones(3))), ShapeError, "stack: shapes (2, 3) and (3,) differ"),
    (lambda t: t.roll(1, 4), ShapeError, "roll: axis 4 is out of range"),
    (lambda t: t.topk(5), ShapeError, "topk: k=5 is out of range for axis 1 of size 3"),
    (lambda t: t.diagonal(0, 0, 5), ShapeError, "diagonal: axis 5 is out of range"),
    (lambda t: t.interpolate(size=3), ShapeError, "interpolate takes (N, C, ...) inputs"),
    (lambda t: t.max_pool2d(2), ShapeError, "max_pool2d takes an (N, C, H, W) input, got (2, 3)"),
    (lambda t: t.div(t, rounding_mode="round"), ValueError, "rounding_mode must be None"),
    (lambda t: t.cross_entropy([0]), ShapeError, "need labels of shape (2,), got (1,)"),
    (lambda t: t.gelu(approximate="fast"), ValueError, "approximate must be 'none' or 'tanh'"),
    (lambda t: t & t, TypeError, "& takes integer or bool tensors, got f32"),
    (lambda t: Tensor.cat([t, 3]), TypeError, "cat takes Tensors"),
])
def test_rejected_forms_name_the_op_and_the_fix(call, error, fragment):
    with pytest.raises(error) as info:
        call(Tensor(np.ones((2, 3), np.float32)))
    assert fragment in str(info.value)
