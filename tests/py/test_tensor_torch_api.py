"""The PyTorch-named surface of the Tensor API, value for value (and gradient for gradient)
against PyTorch itself; skipped where PyTorch is not installed (test_tensor_semantics.py
holds the numpy-checked core)."""

from __future__ import annotations

from functools import partial

import numpy as np
import pytest

import uopc
from uopc import Tensor, nn
from uopc.uopdialect.shapes import ShapeError

torch = pytest.importorskip("torch")
F = torch.nn.functional

RNG = np.random.default_rng(7)


def same(ours, theirs, tol=1e-5):
    ours = ours.numpy() if isinstance(ours, Tensor) else np.asarray(ours)
    theirs = theirs.detach().numpy() if hasattr(theirs, "detach") else np.asarray(theirs)
    assert ours.shape == theirs.shape, (ours.shape, theirs.shape)
    np.testing.assert_allclose(ours, theirs, rtol=tol, atol=tol, equal_nan=True)


def with_grad(fn_ours, fn_torch, *arrays, tol=1e-5):
    """Values and gradients of sum(fn(x...)) for float inputs."""
    ts = [Tensor(a, requires_grad=True) for a in arrays]
    out = fn_ours(*ts)
    out.sum().backward(ts)
    qs = [torch.tensor(a, requires_grad=True) for a in arrays]
    ref = fn_torch(*qs)
    ref.sum().backward()
    same(out, ref, tol)
    for t, q in zip(ts, qs):
        same(t.grad, q.grad, tol)


UNARY = {  # name: input domain
    "acos": (-0.99, 0.99), "asin": (-0.99, 0.99), "atan": (-5, 5), "sinh": (-5, 5),
    "cosh": (-5, 5), "tan": (-1.4, 1.4), "asinh": (-5, 5), "erf": (-3, 3), "exp": (-5, 5),
    "expm1": (-3, 3), "log": (0.1, 5), "log10": (0.1, 5), "log1p": (-0.9, 5),
    "cos": (-6, 6), "tanh": (-5, 5), "sigmoid": (-8, 8), "ceil": (-5, 5), "floor": (-5, 5),
    "round": (-5, 5), "trunc": (-5, 5), "sign": (-5, 5), "abs": (-5, 5), "neg": (-5, 5),
    "square": (-5, 5), "rsqrt": (0.1, 5), "reciprocal": (0.5, 5),
}


@pytest.mark.parametrize("name", sorted(UNARY))
def test_unary_methods_and_gradients(name):
    lo, hi = UNARY[name]
    x = RNG.uniform(lo, hi, 64).astype(np.float32)
    x[:4] = [lo / 2 + hi / 2, 0.5, 1.5, 2.5][: 4] if name == "round" else x[:4]
    with_grad(lambda t: getattr(t, name)(), lambda q: getattr(q, name)(), x, tol=2e-5)


@pytest.mark.parametrize("name", ["silu", "gelu", "softplus", "softsign", "mish", "elu",
                                  "celu", "selu", "relu6", "hardtanh", "hardsigmoid",
                                  "hardswish", "leaky_relu", "logsigmoid"])
def test_activations(name):
    x = RNG.uniform(-6, 6, 64).astype(np.float32)
    with_grad(lambda t: getattr(t, name)(), lambda q: getattr(F, name)(q), x)
    if name == "gelu":
        with_grad(lambda t: t.gelu(approximate="tanh"), lambda q: F.gelu(q, approximate="tanh"), x)


def test_binary_math():
    a = RNG.uniform(-5, 5, 32).astype(np.float32)
    b = RNG.uniform(0.5, 3, 32).astype(np.float32)
    same(Tensor(a).copysign(Tensor(-b)), torch.tensor(a).copysign(-torch.tensor(b)))
    same(Tensor(a).copysign(-0.0), torch.tensor(a).copysign(torch.tensor(-0.0)))
    same(Tensor(a).fmod(Tensor(b)), torch.fmod(torch.tensor(a), torch.tensor(b)))
    ia, ib = np.int32([7, -7, 7, -7]), np.int32([2, 2, -2, -2])
    same(Tensor(ia).fmod(Tensor(ib)), torch.fmod(torch.tensor(ia), torch.tensor(ib)))
    with_grad(lambda x, y: x.logaddexp(y), torch.logaddexp, a, b)
    with_grad(lambda x, y: x.lerp(y, 0.3), lambda x, y: torch.lerp(x, y, 0.3), a, b)
    with_grad(lambda x: x.clamp(-1, 2), lambda x: x.clamp(-1, 2), np.float32([-3, -1, 0, 2, 5]))
    x = np.float32([1, np.inf, -np.inf, np.nan, 0])
    for name in ("isnan", "isinf", "isfinite"):
        same(getattr(Tensor(x), name)(), getattr(torch.tensor(x), name)())
    same(Tensor(x).isclose(Tensor(x + 1e-7)), torch.tensor(x).isclose(torch.tensor(x + 1e-7)))
    same(Tensor(x).isclose(Tensor(x), equal_nan=True), torch.isclose(torch.tensor(x), torch.tensor(x),
                                                                        equal_nan=True))


def test_integer_operators():
    a, b = np.int32([12, -7, 5, 0]), np.int32([10, 3, -1, 6])
    for op in ("__and__", "__or__", "__xor__"):
        same(getattr(Tensor(a), op)(Tensor(b)), getattr(torch.tensor(a), op)(torch.tensor(b)))
    same(~Tensor(a), ~torch.tensor(a))
    same(Tensor(a) << 3, torch.tensor(a) << 3)
    same(Tensor(a) >> 1, torch.tensor(a) >> 1)
    m, n = np.array([True, False, True]), np.array([True, True, False])
    same(Tensor(m) & Tensor(n), torch.tensor(m) & torch.tensor(n))
    same(Tensor(m) ^ Tensor(n), torch.tensor(m) ^ torch.tensor(n))
    same(~Tensor(m), ~torch.tensor(m))


def test_reductions_and_keywords():
    x = RNG.standard_normal((3, 4, 5)).astype(np.float32)
    t, q = Tensor(x), torch.tensor(x)
    same(t.sum(dim=1), q.sum(dim=1))
    same(t.sum(dim=(0, 2), keepdim=True), q.sum(dim=(0, 2), keepdim=True))
    same(t.mean(dim=-1), q.mean(dim=-1))
    same(t.var(dim=1), q.var(dim=1))
    same(t.std(dim=1, unbiased=False), q.std(dim=1, unbiased=False))
    same(t.prod(dim=2), q.prod(dim=2), tol=1e-4)
    same(t.max(dim=1), q.max(dim=1).values)
    same(t.argmax(dim=2), q.argmax(dim=2))
    same((t > 0).all(dim=1), (q > 0).all(dim=1))
    same((t > 0).any(), (q > 0).any())
    same(Tensor(np.int32([1, 2])).sum(dtype="f32"), torch.tensor([1, 2]).sum(dtype=torch.float32))
    s, m = t.std_mean(dim=0)
    rs, rm = torch.std_mean(q, dim=0)
    same(s, rs)
    same(m, rm)
    same(Tensor(3.0).sum(0), torch.tensor(3.0).sum(0))
    same(Tensor(3.0).squeeze(0), torch.tensor(3.0).squeeze(0))


SHAPING = [
    ("cumsum", lambda t: t.cumsum(1), lambda q: q.cumsum(1)),
    ("cumprod", lambda t: t.cumprod(0), lambda q: q.cumprod(0)),
    ("logcumsumexp", lambda t: t.logcumsumexp(1), lambda q: q.logcumsumexp(1)),
    ("cummax", lambda t: t.cummax(1)[0], lambda q: q.cummax(1)[0]),
    ("tril", lambda t: t.tril(1), lambda q: q.tril(1)),
    ("triu", lambda t: t.triu(-1), lambda q: q.triu(-1)),
    ("diagonal", lambda t: t.diagonal(1), lambda q: q.diagonal(1)),
    ("repeat", lambda t: t.repeat(2, 1, 3), lambda q: q.repeat(2, 1, 3)),
    ("repeat_interleave", lambda t: t.repeat_interleave(2, 1), lambda q: q.repeat_interleave(2, 1)),
    ("roll", lambda t: t.roll((1, -2), (0, 1)), lambda q: q.roll((1, -2), (0, 1))),
    ("sort", lambda t: t.sort(1)[0], lambda q: q.sort(1)[0]),
    ("topk", lambda t: t.topk(2)[0], lambda q: q.topk(2)[0]),
    ("unflatten", lambda t: t.unflatten(1, (1, 5)), lambda q: q.unflatten(1, (1, 5))),
    ("t", lambda t: t.t(), lambda q: q.t()),
    ("flip", lambda t: t.flip(0), lambda q: q.flip(0)),
    ("pad reflect", lambda t: t.reshape(1, 3, 5).pad((2, 1), mode="reflect"),
     lambda q: F.pad(q.reshape(1, 3, 5), (2, 1), mode="reflect")),
    ("softmin", lambda t: t.softmin(dim=1), lambda q: F.softmin(q, dim=1)),
]


@pytest.mark.parametrize("name, ours, theirs", SHAPING, ids=[s[0] for s in SHAPING])
def test_shaping_values_and_gradients(name, ours, theirs):
    x = RNG.standard_normal((3, 5)).astype(np.float32)
    with_grad(ours, theirs, x, tol=1e-4)


def test_sorting_indices_and_selection():
    x = RNG.standard_normal((3, 6)).astype(np.float32)
    x[1, 2] = np.nan
    x[2, 1] = x[2, 4]
    t, q = Tensor(x), torch.tensor(x)
    for descending in (False, True):
        v, i = t.sort(1, descending=descending)
        rv, ri = q.sort(dim=1, descending=descending, stable=True)
        same(v, rv)
        same(i, ri)
    same(t.argsort(0), q.argsort(dim=0, stable=True))
    same(t.cummax(1)[1], q.cummax(1)[1])
    idx = RNG.integers(0, 6, (3, 4))
    same(t.gather(1, idx), q.gather(1, torch.tensor(idx)))
    y = np.nan_to_num(x)
    rows = np.array([[0, 1], [2, 3], [4, 5]])
    same(Tensor(y).scatter(1, rows, 9.0), torch.tensor(y).scatter(1, torch.tensor(rows), 9.0))
    same(Tensor(y).masked_fill(Tensor(y > 0), -1.0), torch.tensor(y).masked_fill(torch.tensor(y > 0), -1.0))
    parts = Tensor(y).split([2, 4], 1)
    for a, b in zip(parts, torch.tensor(y).split([2, 4], 1)):
        same(a, b)
    assert [p.shape for p in Tensor(y).chunk(4, 1)] == [tuple(p.shape) for p in torch.tensor(y).chunk(4, 1)]


def test_construction_and_conversion():
    same(Tensor.eye(3, 4), torch.eye(3, 4))
    same(Tensor.linspace(-1, 2, 7), torch.linspace(-1, 2, 7))
    a, b = Tensor([1, 2, 3]), Tensor([4, 5])
    for g, r in zip(Tensor.meshgrid(a, b, indexing="xy"),
                    torch.meshgrid(torch.tensor([1, 2, 3]), torch.tensor([4, 5]), indexing="xy")):
        same(g, r)
    x = Tensor([1.5, -2.5])
    assert x.full_like(7).tolist() == [7.0, 7.0] and x.zeros_like().dtype == "f32"
    assert x.half().dtype == "f16" and x.bool().dtype == "i1" and x.long().dtype == "i64"
    assert x.to("f16").dtype == "f16" and x.to("cpu").dtype == "f32" and x.size() == (2,) \
        and x.size(0) == 2 and x.view(2, 1).shape == (2, 1)
    assert Tensor.cat([a, b]).tolist() == [1, 2, 3, 4, 5]
    assert Tensor.stack((a, a), dim=1).shape == (3, 2)
    Tensor.manual_seed(3)
    first = Tensor.randn(4).numpy()
    Tensor.manual_seed(3)
    assert np.array_equal(first, Tensor.randn(4).numpy())


def test_einsum_and_dot():
    a = RNG.standard_normal((2, 3)).astype(np.float32)
    b = RNG.standard_normal((3, 4)).astype(np.float32)
    c = RNG.standard_normal((2, 3, 4)).astype(np.float32)
    for eq, ops in (("ij,jk->ik", (a, b)), ("ij,jk", (a, b)), ("bij->jb", (c,)),
                    ("bij,jk->bik", (c[:, :, :3], b)), ("ii->i", (b[:, :3],)), ("ij->", (a,))):
        same(Tensor.einsum(eq, *[Tensor(np.ascontiguousarray(o)) for o in ops]),
             torch.einsum(eq, *[torch.tensor(np.ascontiguousarray(o)) for o in ops]))
    same(Tensor(a[0]).dot(Tensor(a[1])), torch.tensor(a[0]).dot(torch.tensor(a[1])))


INDEX = np.array([2, 0])
PAIRS = np.array([[2], [0], [1]])
INDEXES = [  # x has shape (2, 3, 4, 5)
    (slice(None), INDEX), (slice(None), INDEX, slice(None)), (slice(None), PAIRS),
    (0, slice(None), INDEX), (np.array([1, -2]), slice(None), INDEX),
    (slice(None), slice(None), INDEX, INDEX), (None, slice(None), INDEX), (Ellipsis, INDEX),
    (slice(1, None), PAIRS), (slice(None), None, INDEX, 1), (True,), (False,), (1, True),
    (slice(None), INDEX, None, INDEX), (slice(None, None, 2), INDEX), (np.array([1, -2]), 1, INDEX),
    (slice(None), 1, INDEX, np.array([[0], [3]])), (slice(None), [0, 2], slice(None), [1, 1]),
    (Ellipsis, np.arange(5) > 2), (slice(None), np.arange(12).reshape(3, 4) % 3 == 0),
]


@pytest.mark.parametrize("index", INDEXES, ids=range(len(INDEXES)))
def test_indexing_matches_torch(index):
    """Arrays on any axes mixed with ints, slices, None, Ellipsis and bools: the broadcast
    index shape stays in place when the arrays are adjacent and goes first when not, and
    ints select before arrays apply (PyTorch's rule, not numpy's); gradients scatter back."""
    x = RNG.standard_normal((2, 3, 4, 5)).astype(np.float32)
    theirs_index = tuple(torch.tensor(i) if isinstance(i, np.ndarray) else i for i in index)
    with_grad(lambda t: t[index], lambda q: q[theirs_index], x)
    t, q = Tensor(x) * 1.0, torch.tensor(x)
    t[index] = -1.0
    q[theirs_index] = -1.0
    same(t, q)


@pytest.mark.parametrize("index, fragment", [
    ((1.5,), "index 1.5 of type float"), ((slice(None), 2.0), "index 2.0 of type float"),
    ((np.zeros(3, bool),), r"mask of shape \(3,\) at axis 0 must match the axes it covers, \(2,\)"),
    ((Ellipsis, 0, Ellipsis), "single ellipsis"),
])
def test_bad_indexes_raise_like_torch(index, fragment):
    with pytest.raises(IndexError, match=fragment):
        Tensor(np.zeros((2, 3, 4, 5), np.float32))[index]


def test_item_assignment_matches_torch():
    x = RNG.standard_normal((4, 5)).astype(np.float32)
    t, q = Tensor(x), torch.tensor(x)
    t[1] = 0.0
    q[1] = 0.0
    t[:, ::2] = Tensor(np.float32([1, 2, 3]))
    q[:, ::2] = torch.tensor([1.0, 2, 3])
    t[np.array([3, -4])] = -5.0
    q[torch.tensor([3, -4])] = -5.0
    same(t, q)
    w = Tensor(x, requires_grad=True)
    u = w * 1.0
    v = Tensor(np.float32([2, 3, 4, 5, 6]), requires_grad=True)
    u[2] = v * v
    u.sum().backward([w, v])
    assert w.grad.numpy()[2].tolist() == [0] * 5 and v.grad.tolist() == [4, 6, 8, 10, 12]
    with pytest.raises(RuntimeError, match="leaf tensor that requires grad"):
        w[0] = 1.0


def test_scatter_family_matches_torch():
    """scatter's repeated indices: the last write along the axis wins (PyTorch's CPU
    kernel); scatter_add and index_add add them up."""
    x = RNG.standard_normal((3, 5)).astype(np.float32)
    src = RNG.standard_normal((3, 4)).astype(np.float32)
    ids = np.array([[0, 1, 1, 4], [2, 2, 2, 0], [3, 0, 3, 3]])
    q, qi, qs = torch.tensor(x), torch.tensor(ids), torch.tensor(src)
    np.testing.assert_array_equal(Tensor(x).scatter(1, ids, Tensor(src)).numpy(),
                                  q.scatter(1, qi, qs).numpy())
    np.testing.assert_array_equal(Tensor(x).scatter(1, ids, value=2.5).numpy(),
                                  q.scatter(1, qi, 2.5).numpy())
    down = np.array([[0, 2, 2, 1, 0], [2, 2, 0, 0, 1]])
    src2 = RNG.standard_normal((2, 5)).astype(np.float32)
    np.testing.assert_array_equal(Tensor(x).scatter(0, down, Tensor(src2)).numpy(),
                                  q.scatter(0, torch.tensor(down), torch.tensor(src2)).numpy())
    same(Tensor(x).scatter_add(1, ids, Tensor(src)), q.scatter_add(1, qi, qs))
    rows = RNG.standard_normal((3, 3)).astype(np.float32)
    same(Tensor(x).index_add(1, np.array([4, 0, 4]), Tensor(rows), alpha=2),
         q.index_add(1, torch.tensor([4, 0, 4]), torch.tensor(rows), alpha=2))
    counts = np.arange(15).reshape(3, 5)
    ours = Tensor(counts).index_add(0, np.array([2, 2]), Tensor(np.ones((2, 5), np.int64)))
    theirs = torch.tensor(counts).index_add(0, torch.tensor([2, 2]), torch.ones(2, 5, dtype=torch.int64))
    assert ours.dtype == "i64"
    np.testing.assert_array_equal(ours.numpy(), theirs.numpy())
    theirs = torch.tensor(counts).index_put((torch.tensor([2, 0, 2]),), torch.ones(3, 5, dtype=torch.int64),
                                            accumulate=True)
    ours = Tensor(counts).index_put((np.array([2, 0, 2]),), Tensor(np.ones((3, 5), np.int64)),
                                    accumulate=True)
    np.testing.assert_array_equal(ours.numpy(), theirs.numpy())
    with pytest.raises(ShapeError, match="index_add along axis 0 of \\(3, 5\\): index must be 1-D"):
        Tensor(counts).index_add(0, np.array([2, 2]), Tensor(np.ones((3, 5), np.int64)))


@pytest.mark.parametrize("dtype", ["f16", "bf16"])
def test_half_matmul_multiplies_and_sums_in_f32(dtype):
    """Products are not rounded to the half type before the f32 sum (PyTorch's half
    matmul, and the tensor cores): (1 + 2**-10)**2 - (1 + 2**-9) is 2**-20, not 0."""
    theirs_type = torch.float16 if dtype == "f16" else torch.bfloat16
    step = 2**-10 if dtype == "f16" else 2**-7
    a = np.array([[1 + step, -1.0]], np.float32)
    b = np.array([[1 + step], [1 + 2 * step]], np.float32)
    ours = (Tensor(a).cast(dtype) @ Tensor(b).cast(dtype))
    theirs = torch.tensor(a).to(theirs_type) @ torch.tensor(b).to(theirs_type)
    assert ours.dtype == dtype
    assert ours.float().item() == theirs.float().item() == step * step
    x = RNG.standard_normal((33, 300)).astype(np.float32)
    w = RNG.standard_normal((300, 17)).astype(np.float32)
    ours = (Tensor(x).cast(dtype) @ Tensor(w).cast(dtype)).float().numpy()
    theirs = (torch.tensor(x).to(theirs_type) @ torch.tensor(w).to(theirs_type)).float().numpy()
    ulp = 2**-10 if dtype == "f16" else 2**-7  # the sums differ in order, not in rounding
    np.testing.assert_allclose(ours, theirs, rtol=ulp, atol=ulp * np.abs(theirs).max())


def test_edge_values_match_torch():
    """Infinite rows in logsumexp/softmax, meshgrid called on a tensor, argmax of nothing."""
    x = np.array([[-np.inf, -np.inf], [1, 2], [np.inf, 1], [np.nan, 1]], np.float32)
    for name in ("logsumexp", "softmax", "log_softmax"):
        same(getattr(Tensor(x), name)(1), getattr(torch.tensor(x), name)(1))
    a, b = [1, 2, 3], [4, 5]
    for ours, theirs in zip(Tensor(a).meshgrid(Tensor(b), indexing="xy"),
                            torch.meshgrid(torch.tensor(a), torch.tensor(b), indexing="xy")):
        np.testing.assert_array_equal(ours.numpy(), theirs.numpy())
    with pytest.raises(ShapeError, match="argmax/argmin along axis 0 of a tensor of shape \\(0,\\)"):
        Tensor(np.zeros(0, np.float32)).argmax()
    with pytest.raises(ShapeError, match="the axis is empty"):
        Tensor(np.zeros((2, 0), np.float32)).argmin(1)


def test_backward_and_to_follow_torch():
    """backward of a non-scalar needs gradient= (PyTorch's rule); to() moves the device
    it realizes on, and takes dtypes, devices and tensors as PyTorch's does."""
    x = RNG.standard_normal((2, 3)).astype(np.float32)
    g = RNG.standard_normal((2, 3)).astype(np.float32)
    t, q = Tensor(x, requires_grad=True), torch.tensor(x, requires_grad=True)
    with pytest.raises(RuntimeError, match="backward of a tensor of shape \\(2, 3\\)"):
        (t * t).backward()
    (t * t).backward(Tensor(g))
    (q * q).backward(torch.tensor(g))
    same(t.grad, q.grad)
    t.grad = None
    (t * t).sum().backward(inputs=[t])
    same(t.grad, 2 * q.detach())
    moved = t.to("cuda")
    assert moved.device == "cuda" and t.device == "cpu" and moved.dtype == "f32"
    assert t.to("cpu", uopc.float64).dtype == "f64" and t.to(Tensor([1])).dtype == "i64"
    with pytest.raises(ValueError, match="device 'mps': expected one of 'cpu', 'cuda'"):
        t.to("mps")


def test_view_of_a_dtype_reinterprets_the_bits():
    x = np.array([1.5, -2.0, np.inf], np.float32)
    for ours, theirs in ((uopc.int32, torch.int32), (uopc.float32, torch.float32)):
        np.testing.assert_array_equal(Tensor(x).view(ours).numpy(),
                                      torch.tensor(x).view(theirs).numpy())
    flags = np.array([True, False])
    np.testing.assert_array_equal(Tensor(flags).view(uopc.uint8).numpy(),
                                  torch.tensor(flags).view(torch.uint8).numpy())
    assert Tensor(x).view(3, 1).shape == (3, 1)
    with pytest.raises(ShapeError, match="bitcast from f32 to i64: the types must have the same bit width"):
        Tensor(x).view(uopc.int64)


def test_torch_spellings_and_defaults():
    """relu's gradient at 0, one_hot's type, the scans' axis keyword, pad's keyword."""
    x = np.array([-1.0, -0.0, 0.0, 2.0, np.nan], np.float32)
    with_grad(lambda t: t.relu(), torch.relu, x)
    labels = np.array([2, 0, 1])
    hot = Tensor(labels).one_hot(3)
    assert hot.dtype == "i64"
    np.testing.assert_array_equal(hot.numpy(), F.one_hot(torch.tensor(labels), 3).numpy())
    a = RNG.standard_normal((3, 4)).astype(np.float32)
    for name in ("cumsum", "cumprod", "logcumsumexp"):
        same(getattr(Tensor(a), name)(axis=1), getattr(torch.tensor(a), name)(dim=1))
    same(Tensor(a).cummax(axis=0)[0], torch.tensor(a).cummax(dim=0).values)
    with pytest.raises(TypeError, match="cumsum: give the axis to scan along"):
        Tensor(a).cumsum()
    same(Tensor(a).pad(pad=(1, 2)), F.pad(torch.tensor(a), pad=(1, 2)))
    same(Tensor(a).pad(pad=[1, 0, 0, 2], value=3.0), F.pad(torch.tensor(a), [1, 0, 0, 2], value=3.0))
    x = np.arange(8, dtype=np.float32).reshape(1, 1, 2, 4)
    for mode in ("reflect", "replicate", "circular"):  # the widest pads each mode allows
        widths = (3, 3, 1, 1) if mode == "reflect" else (4, 4, 2, 2)
        same(Tensor(x).pad(widths, mode=mode), F.pad(torch.tensor(x), widths, mode=mode))
    with pytest.raises(TypeError, match="give the widths once"):
        Tensor(a).pad((1, 1), pad=(1, 1))


def test_losses():
    logits = RNG.standard_normal((6, 4)).astype(np.float32)
    labels = np.array([0, 3, 1, -100, 2, 2])
    probs = RNG.random((6, 4)).astype(np.float32)
    probs /= probs.sum(1, keepdims=True)
    for kw in ({}, {"reduction": "sum"}, {"reduction": "none"}, {"label_smoothing": 0.2}):
        with_grad(lambda x, kw=kw: x.cross_entropy(labels, **kw),
                  lambda x, kw=kw: F.cross_entropy(x, torch.tensor(labels), **kw), logits)
        with_grad(lambda x, kw=kw: x.cross_entropy(Tensor(probs), **kw),
                  lambda x, kw=kw: F.cross_entropy(x, torch.tensor(probs), **kw), logits)
    with_grad(lambda x: x.log_softmax(1).nll_loss(labels),
              lambda x: F.nll_loss(F.log_softmax(x, 1), torch.tensor(labels)), logits)
    p = RNG.uniform(0.05, 0.95, 8).astype(np.float32)
    y = (RNG.random(8) > 0.5).astype(np.float32)
    with_grad(lambda x: x.binary_cross_entropy(Tensor(y)),
              lambda x: F.binary_cross_entropy(x, torch.tensor(y)), p)
    with_grad(lambda x: x.binary_cross_entropy_with_logits(Tensor(y)),
              lambda x: F.binary_cross_entropy_with_logits(x, torch.tensor(y)), logits[:2].ravel())


def test_attention_resize_and_convolutions():
    q = RNG.standard_normal((2, 5, 4)).astype(np.float32)
    k = RNG.standard_normal((2, 6, 4)).astype(np.float32)
    v = RNG.standard_normal((2, 6, 3)).astype(np.float32)
    mask = RNG.random((5, 6)) > 0.3
    mask[:, 0] = True
    for kw in ({}, {"is_causal": True}, {"scale": 0.5}):
        with_grad(partial(Tensor.scaled_dot_product_attention, **kw),
                  partial(F.scaled_dot_product_attention, **kw), q, k, v)
    same(Tensor(q).scaled_dot_product_attention(Tensor(k), Tensor(v), attn_mask=Tensor(mask)),
         F.scaled_dot_product_attention(*map(torch.tensor, (q, k, v)), attn_mask=torch.tensor(mask)))
    img = RNG.standard_normal((1, 2, 5, 7)).astype(np.float32)
    for mode, corners in (("nearest", None), ("bilinear", False), ("bilinear", True)):
        for kw in ({"size": (8, 3)}, {"scale_factor": 2}):
            with_grad(partial(Tensor.interpolate, mode=mode, align_corners=corners, **kw),
                      partial(F.interpolate, mode=mode, align_corners=corners, **kw), img)
    w = RNG.standard_normal((4, 1, 3, 3)).astype(np.float32)
    with_grad(lambda x, y: x.conv2d(y, padding=2, dilation=2, groups=2),
              lambda x, y: F.conv2d(x, y, padding=2, dilation=2, groups=2), img, w)
    wt = RNG.standard_normal((2, 3, 3, 2)).astype(np.float32)
    with_grad(lambda x, y: x.conv_transpose2d(y, stride=2, padding=1, output_padding=1),
              lambda x, y: F.conv_transpose2d(x, y, stride=2, padding=1, output_padding=1), img, wt)
    with_grad(lambda x: x.avg_pool2d(3, 2, 1, ceil_mode=True, count_include_pad=False),
              lambda x: F.avg_pool2d(x, 3, 2, 1, ceil_mode=True, count_include_pad=False), img)
    values, where = Tensor(img).max_pool2d(2, dilation=(1, 2), ceil_mode=True, return_indices=True)
    ref, ref_where = F.max_pool2d(torch.tensor(img), 2, dilation=(1, 2), ceil_mode=True,
                                  return_indices=True)
    same(values, ref)
    same(where, ref_where)


def test_nn_modules_load_torch_state_dicts():
    torch.manual_seed(0)
    ref = torch.nn.Sequential(torch.nn.Conv2d(3, 4, 3, padding=1), torch.nn.BatchNorm2d(4),
                              torch.nn.ReLU(), torch.nn.Flatten(), torch.nn.Linear(100, 6),
                              torch.nn.LayerNorm(6))
    ours = nn.Sequential(nn.Conv2d(3, 4, 3, padding=1), nn.BatchNorm2d(4), Tensor.relu,
                         lambda x: x.flatten(1), nn.Linear(100, 6), nn.LayerNorm(6))
    ours.load_state_dict(ref.state_dict())
    x = RNG.standard_normal((2, 3, 5, 5)).astype(np.float32)
    for mode in ("train", "eval", "train"):
        getattr(ref, mode)()
        getattr(ours, mode)()
        same(ours(Tensor(x)), ref(torch.tensor(x)))
    state = ours.state_dict()
    assert sorted(state) == sorted(ref.state_dict())
    for name, value in ref.state_dict().items():
        same(state[name], value)  # running statistics updated as PyTorch's
    with pytest.raises(KeyError, match=r"missing \['4.bias'\]"):
        ours.load_state_dict({k: v for k, v in ref.state_dict().items() if k != "4.bias"})


@pytest.mark.parametrize("make", [
    lambda: (nn.Conv1d(3, 4, 3, padding=1, groups=1), torch.nn.Conv1d(3, 4, 3, padding=1), (2, 3, 7)),
    lambda: (nn.GroupNorm(2, 4), torch.nn.GroupNorm(2, 4), (2, 4, 3, 3)),
    lambda: (nn.RMSNorm(5), torch.nn.RMSNorm(5), (2, 3, 5)),
    lambda: (nn.Linear(5, 2), torch.nn.Linear(5, 2), (3, 5)),
])
def test_more_modules_match_torch(make):
    ours, ref, shape = make()
    ours.load_state_dict(ref.state_dict())
    x = RNG.standard_normal(shape).astype(np.float32)
    same(ours(Tensor(x)), ref(torch.tensor(x)))


def test_dropout_is_seeded_and_off_in_eval():
    drop = nn.Dropout(0.5)
    x = Tensor.ones(1000)
    Tensor.manual_seed(1)
    first = drop(x).numpy()
    Tensor.manual_seed(1)
    assert np.array_equal(first, drop(x).numpy())
    assert set(np.unique(first)) <= {0.0, 2.0} and 400 < (first == 0).sum() < 600
    assert np.array_equal(drop.eval()(x).numpy(), x.numpy())
