"""PyTorch's element type rules, checked against torch itself: the dtype objects and
their names, `torch.result_type` promotion over every pair of the ten types and every
operand kind (tensors with axes, zero-dim tensors, Python scalars), the defaults of
construction and reductions, and the errors for data that does not fit.

Promotion is checked on the lazy graph (the result's dtype, nothing realized); values on
the types every stage computes (bool, int32, float16, float32)."""

from __future__ import annotations

import itertools

import ml_dtypes
import numpy as np
import pytest

import uopc
from uopc import Tensor

torch = pytest.importorskip("torch")

NAMES = ["i1", "i8", "ui8", "i16", "i32", "i64", "f16", "bf16", "f32", "f64"]
TORCH = {"i1": torch.bool, "i8": torch.int8, "ui8": torch.uint8, "i16": torch.int16,
         "i32": torch.int32, "i64": torch.int64, "f16": torch.float16,
         "bf16": torch.bfloat16, "f32": torch.float32, "f64": torch.float64}
IR_OF = {v: k for k, v in TORCH.items()}

#: op kind: (ours, torch's); None where the kind takes no Python scalar in torch
OPS = {
    "+": (lambda a, b: a + b, lambda a, b: a + b),
    "-": (lambda a, b: a - b, lambda a, b: a - b),
    "*": (lambda a, b: a * b, lambda a, b: a * b),
    "/": (lambda a, b: a / b, lambda a, b: a / b),
    "//": (lambda a, b: a // b, lambda a, b: a // b),
    "%": (lambda a, b: a % b, lambda a, b: a % b),
    "maximum": (lambda a, b: a.maximum(b), lambda a, b: torch.maximum(a, b)),
    "<": (lambda a, b: a < b, lambda a, b: a < b),
    "==": (lambda a, b: a == b, lambda a, b: a == b),
    "where": (lambda a, b: Tensor([True, False]).where(a, b),
              lambda a, b: torch.where(torch.tensor([True, False]), a, b)),
}


#: op kinds checked for their result type only (their values: test_tensor_torch_api.py)
TYPE_ONLY_OPS = {
    "**": (lambda a, b: a ** b, lambda a, b: a ** b),
    "&": (lambda a, b: a & b, lambda a, b: a & b),
    "<<": (lambda a, b: a << b, lambda a, b: a << b),
}
ALL_OPS = {**OPS, **TYPE_ONLY_OPS}


def integer_power(op: str, base: str, exponent: str | None) -> bool:
    """`**` with an integer tensor exponent: uopc computes it in float32 (no integer pow
    op), a documented difference from torch."""
    return op == "**" and exponent is not None and DT_KIND[exponent] != "float" \
        and DT_KIND[base] != "float"


DT_KIND = {n: "float" if n[0] in "fb" else "int" for n in NAMES}


def ours(dt: str, dim: bool) -> Tensor:
    return Tensor.ones(2, dtype=dt) if dim else Tensor.ones((), dtype=dt)


def theirs(dt: str, dim: bool):
    return torch.ones(2 if dim else (), dtype=TORCH[dt])


def torch_dtype(fn, a, b):
    """torch's result type, or None where torch refuses the operands."""
    try:
        return IR_OF[fn(a, b).dtype]
    except (RuntimeError, TypeError):
        return None


@pytest.mark.parametrize("op", list(ALL_OPS))
@pytest.mark.parametrize("dims", [(True, True), (True, False), (False, True), (False, False)],
                         ids=["dim-dim", "dim-zero", "zero-dim", "zero-zero"])
def test_tensor_pairs_promote_as_torch(op, dims):
    mine, ref = ALL_OPS[op]
    for a, b in itertools.product(NAMES, NAMES):
        want = torch_dtype(ref, theirs(a, dims[0]), theirs(b, dims[1]))
        if want is None or integer_power(op, a, b):
            continue
        got = mine(ours(a, dims[0]), ours(b, dims[1])).dtype
        assert got == want, (op, a, b, dims, got, want)


@pytest.mark.parametrize("op", [k for k in ALL_OPS if k != "maximum"])
@pytest.mark.parametrize("scalar", [3, 2.5, True], ids=["int", "float", "bool"])
@pytest.mark.parametrize("dim", [True, False], ids=["dim", "zero"])
def test_python_scalars_are_weak(op, scalar, dim):
    mine, ref = ALL_OPS[op]
    for dt in NAMES:
        for reflected in (False, True):
            args_ours = (scalar, ours(dt, dim)) if reflected else (ours(dt, dim), scalar)
            args_torch = (scalar, theirs(dt, dim)) if reflected else (theirs(dt, dim), scalar)
            want = torch_dtype(ref, *args_torch)
            if want is None or (reflected and integer_power(op, "i64", dt)):
                continue
            got = mine(*args_ours).dtype
            assert got == want, (op, dt, scalar, reflected, dim, got, want)


def test_where_of_two_scalars_and_of_three_kinds():
    cond = Tensor([True, False])
    tcond = torch.tensor([True, False])
    for a, b in itertools.product([1, 2.5, False], repeat=2):
        assert cond.where(a, b).dtype == IR_OF[torch.where(tcond, a, b).dtype], (a, b)
    for dt in NAMES:
        got = cond.where(ours(dt, False), 2.5).dtype
        assert got == IR_OF[torch.where(tcond, theirs(dt, False), 2.5).dtype], dt


# ---------------------------------------------------------------------- dtype objects

ALIASES = ["float32", "float", "float64", "double", "float16", "half", "bfloat16", "int8",
           "uint8", "int16", "short", "int32", "int", "int64", "long", "bool"]


@pytest.mark.parametrize("name", ALIASES)
def test_module_dtypes_are_torchs(name):
    dt = getattr(uopc, name)
    ref = getattr(torch, name)
    assert isinstance(dt, uopc.dtype) and isinstance(dt, str)
    assert dt == IR_OF[ref] and dt == name and dt == str(ref)
    assert repr(dt) == str(ref).replace("torch.", "uopc.")
    assert dt.itemsize == ref.itemsize
    assert dt.is_floating_point == ref.is_floating_point
    assert dt.is_signed == ref.is_signed
    assert Tensor.zeros(2, dtype=dt).dtype == dt
    assert Tensor.zeros(2, dtype=ref).dtype == dt  # a torch.dtype is understood too


def test_dtype_compares_with_numpy_and_names():
    t = Tensor(np.zeros(2, np.float64))
    assert t.dtype == np.float64 and t.dtype == np.dtype("float64") and t.dtype == "double"
    assert t.dtype != "f32" and t.dtype != np.float32 and t.dtype != "float"
    assert t.dtype in ("f64",) and {"f64": 1}[t.dtype] == 1  # still the IR name as a key
    assert f"{t.dtype}" == "f64"
    with pytest.raises(TypeError, match="unknown dtype 'float128'.*float64"):
        Tensor.zeros(2, dtype="float128")


@pytest.mark.parametrize("method", ["long", "int", "short", "char", "byte", "double",
                                    "bfloat16", "half", "float", "bool"])
def test_cast_methods(method):
    t = Tensor([1.0, 2.0])
    got = getattr(t, method)()
    ref = getattr(torch.tensor([1.0, 2.0]), method)()
    assert got.dtype == IR_OF[ref.dtype]
    assert got.element_size() == ref.element_size()
    assert got.is_floating_point() == ref.is_floating_point()
    assert t.to(ref.dtype).dtype == got.dtype and t.type(ref.dtype).dtype == got.dtype


# ---------------------------------------------------------------------- defaults

def test_construction_defaults_are_torchs():
    for data in ([1, 2], [1.5, 2], [True, False], 3, 2.5, True, [[1], [2]], [], [[1, 2.5]],
                 [True, 2], [np.float64(1.5), 2], [np.int32(1), 2], [np.int8(1), 2.5],
                 [np.uint8(3)], [np.float16(1), True], (np.array([1.5]), np.array([2.0]))):
        assert Tensor(data).dtype == IR_OF[torch.tensor(np.asarray(data) if isinstance(
            data, tuple) else data).dtype], data
    for name, dt in TORCH.items():
        array = np.zeros(3, dtype=ml_dtypes.bfloat16 if name == "bf16" else TORCH_TO_NUMPY[dt])
        assert Tensor(array).dtype == name
    assert Tensor(np.float64(2.5)).dtype == "f64"
    assert Tensor.full((2,), 3).dtype == IR_OF[torch.full((2,), 3).dtype]
    assert Tensor.full((2,), 3.5).dtype == IR_OF[torch.full((2,), 3.5).dtype]
    assert Tensor.full((2,), True).dtype == IR_OF[torch.full((2,), True).dtype]
    assert Tensor.arange(5).dtype == IR_OF[torch.arange(5).dtype]
    assert Tensor.arange(0, 2.5, 0.5).dtype == IR_OF[torch.arange(0, 2.5, 0.5).dtype]
    assert Tensor.arange(5, dtype=uopc.int16).dtype == "i16"
    for make in ("zeros", "ones", "randn"):
        assert getattr(Tensor, make)(2).dtype == "f32"
        assert getattr(Tensor, make)(2, dtype=uopc.float64).dtype == "f64"
    assert Tensor.uniform(2, dtype=uopc.bfloat16).dtype == "bf16"
    assert Tensor.rand(2, 3).dtype == "f32" and Tensor.rand(2, dtype=float).dtype == "f64"
    with pytest.raises(TypeError, match="randn draws floats, not uopc.int64"):
        Tensor.randn(2, dtype=uopc.long)
    assert Tensor.eye(2, dtype=uopc.int8).dtype == "i8"
    x = Tensor([1, 2])
    assert x.zeros_like().dtype == "i64" and x.ones_like(dtype=uopc.half).dtype == "f16"
    assert Tensor(x, dtype="float64").dtype == "f64"


TORCH_TO_NUMPY = {torch.bool: np.bool_, torch.int8: np.int8, torch.uint8: np.uint8,
                  torch.int16: np.int16, torch.int32: np.int32, torch.int64: np.int64,
                  torch.float16: np.float16, torch.float32: np.float32,
                  torch.float64: np.float64}


@pytest.mark.parametrize("dt", NAMES)
def test_reduction_and_index_types(dt):
    x, r = ours(dt, True), theirs(dt, True)
    assert x.sum().dtype == IR_OF[r.sum().dtype]
    assert x.sum(0).dtype == IR_OF[r.sum(0).dtype]
    assert x.prod().dtype == IR_OF[r.prod().dtype]
    assert x.sum(dtype=uopc.float64).dtype == IR_OF[r.sum(dtype=torch.float64).dtype]
    assert x.cumsum(0, dtype=uopc.int16).dtype == IR_OF[r.cumsum(0, dtype=torch.int16).dtype]
    assert x.max().dtype == IR_OF[r.max().dtype] and x.min(0).dtype == IR_OF[r.min(0).values.dtype]
    assert x.any().dtype == x.all(0).dtype == "i1"  # torch: bool (uint8 for uint8 input)
    if dt != "i1":
        assert x.argmax().dtype == IR_OF[r.argmax().dtype]
        assert x.argmin(0).dtype == IR_OF[r.argmin(0).dtype]
        assert x.argsort().dtype == IR_OF[r.argsort().dtype]
        assert x.topk(1)[1].dtype == IR_OF[r.topk(1)[1].dtype]
        assert x.cumsum(0).dtype == IR_OF[r.cumsum(0).dtype]
    if r.is_floating_point():
        assert x.mean().dtype == IR_OF[r.mean().dtype]
        assert x.softmax(0).dtype == IR_OF[r.softmax(0).dtype]
        assert x.softmax(0, dtype=uopc.float64).dtype == "f64"
        assert x.log_softmax(0, dtype="float64").dtype == "f64"
    else:
        with pytest.raises(RuntimeError):
            r.mean()
        with pytest.raises(TypeError, match="mean needs a floating point input"):
            x.mean()
        assert x.mean(dtype=uopc.float32).dtype == IR_OF[r.mean(dtype=torch.float32).dtype]
    assert (x < x).dtype == "i1" and (x == 1).dtype == "i1"


# ---------------------------------------------------------------------- bad input

@pytest.mark.parametrize("value, dt", [(300, "uint8"), (-1, "uint8"), (128, "int8"),
                                       (40000, "int16"), (2**31, "int32"), (2**63, "int64"),
                                       (1e10, "int32"), (float("nan"), "int64")])
def test_values_that_do_not_fit_raise(value, dt):
    with pytest.raises(OverflowError, match=rf"{value} does not fit {dt}"):
        Tensor([value], dtype=dt)
    with pytest.raises(OverflowError, match=f"does not fit {dt}"):
        Tensor(np.array([value]), dtype=dt)


def test_python_ints_beyond_int64_raise():
    with pytest.raises(OverflowError, match=r"does not fit int64.*dtype=uopc.float64"):
        Tensor([2**64])
    with pytest.raises(OverflowError, match="does not fit int64"):
        Tensor([1, 2]) + 2**63
    with pytest.raises(OverflowError, match="does not fit int8"):
        Tensor([1], dtype=uopc.int8) + 1000  # torch raises here too
    with pytest.raises(OverflowError, match="beyond the range of float16"):
        Tensor([1e6], dtype="half")
    assert Tensor([2**62]).dtype == "i64"


@pytest.mark.parametrize("array, fix", [
    (np.zeros(2, np.uint16), "astype.np.int64"), (np.zeros(2, np.uint32), "astype.np.int64"),
    (np.zeros(2, np.uint64), "astype.np.int64"), (np.zeros(2, np.complex64), "no complex"),
    (np.array(["a"]), "give numbers"), (np.array([object()]), "give numbers"),
    (np.zeros(2, np.longdouble), "astype.np.float64")])
def test_unsupported_numpy_dtypes_raise(array, fix):
    if array.dtype == np.float64:  # longdouble is double on this platform
        pytest.skip("long double is float64 here")
    with pytest.raises(TypeError, match=rf"numpy dtype {array.dtype} is not supported.*{fix}"):
        Tensor(array)


def test_strings_in_lists_raise():
    with pytest.raises(TypeError, match="is not numbers"):
        Tensor(["a", "b"])


def test_mean_of_integers_raises_like_torch():
    with pytest.raises(TypeError, match=r"mean of a uopc.int64 tensor.*dtype=uopc.float32"):
        Tensor([1, 2]).mean()
    with pytest.raises(TypeError, match="var needs a floating point input"):
        Tensor([1, 2]).var()


# ---------------------------------------------------------------------- values

VALUE_TYPES = ["i1", "i32", "f16", "f32"]


@pytest.mark.parametrize("a, b", list(itertools.product(VALUE_TYPES, VALUE_TYPES)))
def test_promoted_values_match_torch(a, b):
    """Every op kind on one pair of types, realized in one plan, against torch."""
    ra = torch.tensor([3, -7, 5, 0, 1, 6]).to(TORCH[a])
    rb = torch.tensor([2, 2, -3, 4, 1, 5]).to(TORCH[b])
    xa, xb = Tensor(ra.numpy()), Tensor(rb.numpy())
    results = []
    for op, (mine, ref) in OPS.items():
        if op == "where":
            continue
        want = None if (op in ("//", "%") and b == "i1") else torch_dtype(ref, ra, rb)
        if want is not None:
            results.append((op, mine(xa, xb), ref(ra, rb)))
    Tensor.realize_all(*(r[1] for r in results))
    for op, got, want in results:
        assert got.dtype == IR_OF[want.dtype], op
        np.testing.assert_allclose(got.numpy().astype(np.float64),
                                   want.double().numpy(), rtol=1e-3, err_msg=op)


def test_true_division_of_integers_is_float32():
    got = Tensor(np.array([7, -7], np.int32)) / 2
    assert got.dtype == "f32"
    np.testing.assert_array_equal(got.numpy(), [3.5, -3.5])
    floor = Tensor(np.array([7, -7], np.int32)) // 2
    assert floor.dtype == "i32"
    np.testing.assert_array_equal(floor.numpy(), [3, -4])
    np.testing.assert_array_equal((Tensor(np.array([7, -7], np.int32)) % 2).numpy(), [1, 1])


# ---------------------------------------------------------------------- values of every type

A_VALUES = [100, -7, 5, 0, 1, 127]  # 100 * 2 wraps in int8, -7 is 249 as uint8
B_VALUES = [2, 2, -3, 4, 1, 5]  # no zero: integer division by zero is undefined


def _compare(got: Tensor, want, what) -> None:
    assert got.dtype == IR_OF[want.dtype], (what, got.dtype, want.dtype)
    mine = got.numpy().astype(np.float64)
    ref = want.double().numpy()
    if want.is_floating_point():  # f16/bf16 round after every op where torch may not
        tol = 1e-6 if want.dtype in (torch.float32, torch.float64) else 2e-2
        np.testing.assert_allclose(mine, ref, rtol=tol, atol=tol, err_msg=str(what))
    else:
        np.testing.assert_array_equal(mine, ref, err_msg=str(what))


def _pair_results(a: str, b: str):
    ra = torch.tensor(A_VALUES).to(TORCH[a])
    rb = torch.tensor(B_VALUES).to(TORCH[b])
    xa, xb = Tensor(ra.numpy() if a != "bf16" else ra.float().numpy(), dtype=a), \
        Tensor(rb.numpy() if b != "bf16" else rb.float().numpy(), dtype=b)
    out = []
    for op, (mine, ref) in OPS.items():
        if op in ("//", "%") and b == "i1":
            continue  # a division by False
        want = torch_dtype(ref, ra, rb)
        if want is not None:
            out.append(((op, a, b), mine(xa, xb), ref(ra, rb)))
    return out


@pytest.mark.parametrize("dt", NAMES)
def test_values_of_each_type_match_torch(dt):
    """Every op kind on two tensors of one type, its reductions, and its casts to every
    type, realized in one plan, value for value against torch (integers wrap)."""
    results = _pair_results(dt, dt)
    r = torch.tensor(A_VALUES).to(TORCH[dt])
    x = Tensor(r.numpy() if dt != "bf16" else r.float().numpy(), dtype=dt)
    results += [(("sum", dt), x.sum(), r.sum()), (("prod", dt), x[2:5].prod(), r[2:5].prod())]
    if dt != "i1":  # torch has no argmax, max or cumsum of bools
        results += [(("argmax", dt), x.argmax(), r.argmax()), (("max", dt), x.max(), r.max()),
                    (("cumsum", dt), x.cumsum(0), r.cumsum(0))]
    positive = x.abs() if dt not in ("i1", "ui8") else x  # casts of negatives can be undefined
    for to in NAMES:
        results.append((("cast", dt, to), positive.cast(to), r.abs().to(TORCH[to])
                        if dt not in ("i1", "ui8") else r.to(TORCH[to])))
    Tensor.realize_all(*(got for _, got, _ in results))
    for what, got, want in results:
        _compare(got, want, what)


@pytest.mark.parametrize("a, b", [("ui8", "i8"), ("i1", "ui8"), ("i64", "f16"), ("bf16", "f16"),
                                  ("f64", "i32"), ("bf16", "i64"), ("i16", "ui8"), ("f64", "bf16")])
def test_mixed_type_values_match_torch(a, b):
    results = _pair_results(a, b)
    Tensor.realize_all(*(got for _, got, _ in results))
    for what, got, want in results:
        _compare(got, want, what)


def test_half_precision_sums_accumulate_in_float32():
    for dt in ("f16", "bf16"):
        t = Tensor.ones(4096, dtype=dt) * 0.1
        r = torch.ones(4096, dtype=TORCH[dt]) * 0.1
        assert t.sum().dtype == dt
        assert t.sum().item() == r.sum().item()
        assert t.mean().item() == r.mean().item()
