"""Reverse-mode gradients against central differences, both on the compiled path."""

import numpy as np
import pytest

from uopc import Tensor

rng = np.random.default_rng(11)


def numerical_grad(f, x: np.ndarray, eps: float = 1e-2) -> np.ndarray:
    """Central differences of the scalar f over every element of x (f32 evaluation)."""
    grad = np.zeros(x.shape, np.float64)
    for i in np.ndindex(x.shape):
        plus, minus = x.copy(), x.copy()
        plus[i] += eps
        minus[i] -= eps
        grad[i] = (f(Tensor(plus)).item() - f(Tensor(minus)).item()) / (2 * eps)
    return grad


def check_gradient(f, x: np.ndarray, tol: float = 2e-3) -> None:
    t = Tensor(x, requires_grad=True)
    f(t).backward([t])
    assert t.grad is not None and t.grad.shape == x.shape
    np.testing.assert_allclose(t.grad.numpy(), numerical_grad(f, x), rtol=tol, atol=tol)


def randf(*shape):
    return rng.standard_normal(shape).astype(np.float32)


# constant operands, drawn once so that every evaluation of a case sees the same ones
W_STACK, W_CONV, W_NORM = randf(8, 3), randf(2, 2, 3, 3) * 0.3, randf(4)

CASES = {
    "tanh_sum": (lambda x: x.tanh().sum(), randf(3, 4)),
    "log_softmax_column": (lambda x: x.log_softmax(-1)[:, 2].sum(), randf(3, 5)),
    "product_of_maxes_of_sums": (lambda x: x.sum(0).max() * x.sum(1).max(), randf(3, 4)),
    "pad_then_slice": (lambda x: (x.pad(((1, 2), (0, 1)))[1:4, ::2]
                                  * Tensor(np.arange(6, dtype=np.float32).reshape(3, 2))).sum(),
                       randf(3, 3)),
    "sqrt_reciprocal_chain": (lambda x: (x.sqrt().reciprocal() + (x * 2 + 1).rsqrt() * x).sum(),
                              np.abs(randf(3, 4)) + 0.5),
    "x_xT_sin": (lambda x: (x @ x.T).sin().sum(), randf(3, 4) * 0.5),
    "exp_log_div": (lambda x: ((x.exp() + 1).log() / (x * x + 1)).mean(), randf(2, 5)),
    "gelu_sigmoid_var": (lambda x: (x.gelu() * x.sigmoid()).sum() + x.var(), randf(3, 4)),
    "cross_entropy": (lambda x: x.cross_entropy(np.array([1, 0, 3])), randf(3, 4)),
    "stack_flip_cat": (lambda x: (x[0].stack(x[1] * 2, x[2], dim=1).flip(0).cat(x.T * x.T)
                                  * Tensor(W_STACK)).sum(), randf(3, 4)),
    "conv2d_stride_pad": (lambda x: (x.conv2d(Tensor(W_CONV), stride=2,
                                              padding=1) ** 2).sum() * 0.1, randf(1, 2, 5, 5)),
    "max_pool_min_abs": (lambda x: x.max_pool2d().sum() + x.abs().min(), randf(1, 2, 4, 4)),
    "logsumexp_cos_where": (lambda x: x.logsumexp(0).sum() + (x > 0).where(x.cos(), x * 3).sum(),
                            randf(3, 4)),
    "expand_broadcast": (lambda x: (x.reshape(3, 1, 4) * x.reshape(1, 3, 4).exp()).sum(),
                         randf(3, 4) * 0.5),
    "layernorm_style": (lambda x: ((x - x.mean(-1, keepdim=True))
                                   * (x.var(-1, keepdim=True, correction=0) + 1e-5).rsqrt()
                                   * Tensor(W_NORM)).sum(), randf(3, 4)),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_gradient_matches_central_differences(name):
    f, x = CASES[name]
    check_gradient(f, x)


def test_max_splits_ties_evenly():
    x = Tensor(np.array([2.0, 5.0, 5.0, 1.0], np.float32), requires_grad=True)
    x.max().backward([x])
    np.testing.assert_allclose(x.grad.numpy(), [0, 0.5, 0.5, 0])
    y = Tensor(np.array([0.0, 3.0, -1.0], np.float32), requires_grad=True)
    y.maximum(0).sum().backward([y])
    np.testing.assert_allclose(y.grad.numpy(), [0.5, 1, 0])
    y.grad = None
    y.relu().sum().backward([y])  # relu is PyTorch's: no gradient at exactly 0
    np.testing.assert_allclose(y.grad.numpy(), [0, 1, 0])


def test_item_before_backward_keeps_graph():
    w = Tensor(np.array([1.0, -2.0, 3.0], np.float32), requires_grad=True)
    loss = (w * w).sum()
    assert loss.item() == 14.0
    loss.backward()
    np.testing.assert_allclose(w.grad.numpy(), [2.0, -4.0, 6.0])


def test_detach_stops_gradient():
    w = Tensor(np.array([1.0, 2.0], np.float32), requires_grad=True)
    loss = (w * w.detach()).sum() + (w.detach() * 5).sum()
    loss.backward([w])
    np.testing.assert_allclose(w.grad.numpy(), [1.0, 2.0])


def test_requires_grad_sets_the_flag_in_place_and_returns_the_tensor():
    from uopc import from_numpy

    a = np.array([1.0, -2.0, 3.0], np.float32)
    x = from_numpy(a)
    assert x.requires_grad_() is x and x.requires_grad
    (x * x).sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), 2 * a)
    assert not x.requires_grad_(False).requires_grad


def test_gradients_accumulate_and_unused_params_get_zero():
    w = Tensor(np.array([1.0, 2.0], np.float32), requires_grad=True)
    unused = Tensor(np.ones((2, 2), np.float32), requires_grad=True)
    (w * 3).sum().backward([w, unused])
    (w * w).sum().backward([w])
    np.testing.assert_allclose(w.grad.numpy(), [5.0, 7.0])
    np.testing.assert_array_equal(unused.grad.numpy(), np.zeros((2, 2)))


def test_gradient_through_realized_intermediate():
    w = Tensor(np.array([1.0, 2.0], np.float32), requires_grad=True)
    h = (w * w).realize()  # realized, but its history still carries the gradient
    (h * 3).sum().backward([w])
    np.testing.assert_allclose(w.grad.numpy(), [6.0, 12.0])


def test_integer_index_gradient():
    from uopc.uopdialect.graph import UOp
    from uopc.uopdialect.ops import OP

    x = Tensor(randf(3, 2), requires_grad=True)
    i = Tensor(np.int32(1))
    picked = Tensor._wrap(UOp.make(OP.index, [x._trace, i.uop]), True)
    (picked * Tensor(np.array([2.0, 3.0], np.float32))).sum().backward([x])
    np.testing.assert_allclose(x.grad.numpy(), [[0, 0], [2, 3], [0, 0]])


def test_deep_chain_has_no_recursion_limit():
    w = Tensor(np.array([0.5], np.float32), requires_grad=True)
    y = w
    for _ in range(3000):
        y = y * 1.0001 + 0.0
    y.sum().backward([w])
    assert w.grad is not None and w.grad.shape == (1,)


def test_gather_rows_gradient_scatters_back():
    table = Tensor(np.zeros((4, 2), np.float32), requires_grad=True)
    picked = table[Tensor(np.array([3, 1, 3], np.int32))]
    (picked * Tensor(np.array([[1.0, 2.0], [3.0, 4.0], [5.0, 6.0]], np.float32))).sum().backward()
    np.testing.assert_allclose(table.grad.numpy(), [[0, 0], [3, 4], [0, 0], [6, 8]])


def test_keepdim_reduction_gradients_trace_no_reshape_of_a_reshape():
    from uopc.uopdialect.graph import toposort
    from uopc.uopdialect.ops import OP

    x_data, y_data = randf(3, 4), randf(3, 4)
    x = Tensor(x_data, requires_grad=True)
    (x.sum(-1, keepdim=True) * Tensor(y_data)).sum().backward([x])
    nodes = toposort([x.grad.uop])
    assert not [n for n in nodes if n.op is OP.reshape and n.srcs[0].op is OP.reshape]
    expected = np.broadcast_to(y_data.sum(-1, keepdims=True), (3, 4))
    np.testing.assert_allclose(x.grad.numpy(), expected, rtol=1e-5, atol=1e-6)


def test_gather_with_a_2d_index_scatters_every_use_back():
    table = Tensor(np.zeros((3, 2), np.float32), requires_grad=True)
    ids = np.array([[2, 0], [2, 2]], np.int32)
    g = np.arange(8, dtype=np.float32).reshape(2, 2, 2)
    (table[ids] * Tensor(g)).sum().backward()
    want = np.zeros((3, 2), np.float32)
    np.add.at(want, ids, g)
    np.testing.assert_array_equal(table.grad.numpy(), want)


def test_reading_each_grad_after_backward_costs_one_plan():
    """PyTorch's habit: backward(), then read p.grad one by one. The first read computes
    every gradient of that backward in one realize; the rest are ready. Values against
    torch."""
    torch = pytest.importorskip("torch")
    from uopc.runtime.engine import default_engine

    x, labels = randf(4, 6), np.array([2, 0, 1, 2])
    arrays = [randf(6, 5) * 0.5, randf(5), randf(5, 3) * 0.5, randf(3)]
    params = [Tensor(a, requires_grad=True) for a in arrays]
    w1, b1, w2, b2 = params
    ((Tensor(x) @ w1 + b1).relu() @ w2 + b2).cross_entropy(labels).backward()
    engine = default_engine()
    realizes = engine.compiles + engine.hits
    grads = [p.grad.numpy() for p in params]
    assert engine.compiles + engine.hits - realizes == 1

    tw1, tb1, tw2, tb2 = tp = [torch.tensor(a, requires_grad=True) for a in arrays]
    logits = (torch.tensor(x) @ tw1 + tb1).relu() @ tw2 + tb2
    torch.nn.functional.cross_entropy(logits, torch.tensor(labels)).backward()
    for got, want in zip(grads, tp):
        np.testing.assert_allclose(got, want.grad.numpy(), rtol=1e-4, atol=1e-5)


def test_a_dropped_gradient_is_not_computed_with_its_siblings():
    from uopc.runtime.engine import default_engine

    w = Tensor(np.array([1.0, 2.0], np.float32), requires_grad=True)
    v = Tensor(np.array([3.0], np.float32), requires_grad=True)
    u = Tensor(np.array([4.0], np.float32), requires_grad=True)
    (w * v * u).sum().backward()
    v.grad = None  # as zero_grad drops it
    np.testing.assert_allclose(w.grad.numpy(), [12.0, 12.0])
    plan, _ = default_engine().last
    assert len(plan.roots) == 2  # w's and u's gradients, not v's
    np.testing.assert_allclose(u.grad.numpy(), [9.0])
