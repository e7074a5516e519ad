"""The realize engine: results, the structural plan cache, input binding, outputs, DEBUG."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import uopc.runtime.engine as engine_mod
from uopc.frontend import nn
from uopc.frontend.optim import SGD
from uopc.frontend.tensor import Tensor
from uopc.passes.cut_kernels import CutKernelsPass
from uopc.runtime.engine import Engine, default_engine, trace
from uopc.uopdialect import reference
from uopc.uopdialect.graph import UOp
from uopc.uopdialect.ops import OP
from uopc.uopdialect.shapes import Sig


def rand(*shape, seed=0):
    return np.random.default_rng(seed).standard_normal(shape).astype(np.float32)


def buf(array: np.ndarray) -> UOp:
    dtype = {"float32": "f32", "int32": "i32", "bool": "i1"}[array.dtype.name]
    return UOp.buffer(array, Sig(tuple(array.shape), dtype))


def mlp_step_graph(x: np.ndarray, w: np.ndarray, b: np.ndarray) -> list[UOp]:
    """relu(x @ w + b) row sums and the column max, traced as fresh nodes every call."""
    h = (Tensor(x) @ Tensor(w) + Tensor(b)).relu()
    return [h.sum(-1).uop, h.max(0).uop]


def numpy_mlp(x, w, b):
    h = np.maximum(x @ w + b, 0)
    return [h.sum(-1), h.max(0)]


def test_results_match_numpy():
    eng = Engine()
    x, w, b = rand(5, 7), rand(7, 3, seed=1), rand(3, seed=2)
    for got, want in zip(eng.realize(mlp_step_graph(x, w, b)), numpy_mlp(x, w, b)):
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)


def test_softmax_and_layernorm_match_numpy():
    eng = Engine()
    x = rand(4, 9)
    t = Tensor(x)
    sm = t.softmax(-1)
    mu = t.mean(-1, keepdim=True)
    ln = (t - mu) * ((t - mu).square().mean(-1, keepdim=True) + 1e-5).rsqrt()
    got_sm, got_ln = eng.realize([sm.uop, ln.uop])
    e = np.exp(x - x.max(-1, keepdims=True))
    np.testing.assert_allclose(got_sm, e / e.sum(-1, keepdims=True), rtol=1e-5, atol=1e-6)
    want_ln = (x - x.mean(-1, keepdims=True)) / np.sqrt(x.var(-1, keepdims=True) + 1e-5)
    np.testing.assert_allclose(got_ln, want_ln, rtol=1e-4, atol=1e-5)


def test_cached_plan_builds_no_ir_and_runs_no_passes(monkeypatch):
    eng = Engine()
    first = [rand(5, 7), rand(7, 3, seed=1), rand(3, seed=2)]
    eng.realize(mlp_step_graph(*first))
    assert (eng.compiles, eng.hits) == (1, 0)

    def forbidden(*args, **kwargs):
        raise AssertionError("a cache hit must not build IR or run passes")

    monkeypatch.setattr(engine_mod, "build_module", forbidden)
    monkeypatch.setattr(CutKernelsPass, "apply", forbidden)
    monkeypatch.setattr(Engine, "_compile_module", forbidden)
    second = [rand(5, 7, seed=3), rand(7, 3, seed=4), rand(3, seed=5)]
    got = eng.realize(mlp_step_graph(*second))
    assert (eng.compiles, eng.hits) == (1, 1)
    for g, want in zip(got, numpy_mlp(*second)):
        np.testing.assert_allclose(g, want, rtol=1e-5, atol=1e-5)


def test_new_shape_compiles_a_new_plan():
    eng = Engine()
    eng.realize(mlp_step_graph(rand(5, 7), rand(7, 3), rand(3)))
    eng.realize(mlp_step_graph(rand(6, 7), rand(7, 3), rand(3)))
    assert eng.compiles == 2 and len(eng.plans) == 2


def test_a_changed_dtype_or_compile_setting_misses_the_cache(monkeypatch):
    # the settings a plan is compiled under are read through knobs that keep their
    # parsed value: a changed environment must still change the key
    from uopc import from_numpy

    eng = Engine()
    monkeypatch.setattr(engine_mod, "_ENGINE", eng)
    x = rand(4, 3)

    def run(array):
        return (from_numpy(array) * 2 + 1).numpy()

    monkeypatch.delenv("OPT", raising=False)
    np.testing.assert_allclose(run(x), x * 2 + 1, rtol=1e-6)
    run(x)
    assert (eng.compiles, eng.hits) == (1, 1)
    np.testing.assert_array_equal(run(x.astype(np.float64)), x.astype(np.float64) * 2 + 1)
    assert eng.compiles == 2
    monkeypatch.setenv("OPT", "0")
    np.testing.assert_allclose(run(x), x * 2 + 1, rtol=1e-6)
    assert eng.compiles == 3
    monkeypatch.delenv("OPT")
    run(x)
    assert (eng.compiles, eng.hits) == (3, 2)


def test_key_ignores_data_but_not_structure():
    a, b = rand(3, 4), rand(3, 4, seed=1)
    assert trace([UOp.make(OP.add, [buf(a), buf(b)])]).key == \
        trace([UOp.make(OP.add, [buf(b), buf(a)])]).key
    assert trace([UOp.make(OP.add, [buf(a), buf(b)])]).key != \
        trace([UOp.make(OP.mul, [buf(a), buf(b)])]).key


def test_one_array_in_two_buffer_nodes_is_one_input():
    a, b = rand(3, 4), rand(3, 4, seed=1)
    same = trace([UOp.make(OP.mul, [buf(a), buf(a)])])
    other = trace([UOp.make(OP.mul, [buf(a), buf(b)])])
    assert len(same.arrays) == 1 and len(other.arrays) == 2
    assert same.key != other.key
    eng = Engine()
    [got] = eng.realize([UOp.make(OP.mul, [buf(a), buf(a)])])
    np.testing.assert_allclose(got, a * a)


def test_constants_are_keyed_by_bits():
    eng = Engine()
    x = np.ones(3, np.float32)
    sig = Sig((3,), "f32")
    [pos] = eng.realize([UOp.make(OP.mul, [buf(x), UOp.const(0.0, sig)])])
    [neg] = eng.realize([UOp.make(OP.mul, [buf(x), UOp.const(-0.0, sig)])])
    assert eng.compiles == 2
    assert not np.signbit(pos).any() and np.signbit(neg).all()
    [n1] = eng.realize([UOp.make(OP.add, [buf(x), UOp.const(math.nan, sig)])])
    [n2] = eng.realize([UOp.make(OP.add, [buf(x), UOp.const(math.nan, sig)])])
    assert eng.compiles == 3 and eng.hits == 1 and np.isnan(n1).all() and np.isnan(n2).all()


def dead_read_graph(x, y, z, order: str) -> UOp:
    """(x*0 + y) + z on integers, the dead product first or second."""
    dead = UOp.make(OP.mul, [buf(x), UOp.const(0, Sig(x.shape, "i32"))])
    terms = [dead, buf(y)] if order == "xy" else [buf(y), dead]
    return UOp.make(OP.add, [UOp.make(OP.add, terms), buf(z)])


@pytest.mark.parametrize("order", ["xy", "yx"])
def test_deleted_read_does_not_shift_inputs(order):
    """x*0 on integers may fold away, leaving x unread; y and z must still bind."""
    eng = Engine()
    x = np.arange(6, dtype=np.int32).reshape(2, 3)
    y = np.arange(10, 16, dtype=np.int32).reshape(2, 3)
    z = np.full((2, 3), 100, np.int32)
    [got] = eng.realize([dead_read_graph(x, y, z, order)])
    np.testing.assert_array_equal(got, y + z)
    [again] = eng.realize([dead_read_graph(x + 7, y * 3, z - 1, order)])
    assert eng.hits == 1
    np.testing.assert_array_equal(again, y * 3 + z - 1)


def test_root_that_simplifies_to_an_input_is_a_fresh_copy():
    eng = Engine()
    x = np.arange(6, dtype=np.int32)
    node = buf(x)
    same = UOp.make(OP.add, [node, UOp.const(0, Sig((6,), "i32"))])  # x + 0 may fold to x
    twice = UOp.make(OP.mul, [node, UOp.const(1, Sig((6,), "i32"))])
    a, b = eng.realize([same, twice])
    np.testing.assert_array_equal(a, x)
    np.testing.assert_array_equal(b, x)
    assert not np.shares_memory(a, x) and not np.shares_memory(a, b)


def test_outputs_are_fresh_arrays():
    eng = Engine()
    a = rand(2, 3)
    node = buf(a)
    y = UOp.make(OP.add, [node, node])
    outs = eng.realize([node, y, y])
    np.testing.assert_array_equal(outs[0], a)
    assert not np.shares_memory(outs[0], a)
    assert outs[1] is not outs[2] and not np.shares_memory(outs[1], outs[2])
    again = eng.realize([node, y, y])
    assert not np.shares_memory(again[1], outs[1])


def test_deep_graph_realizes_without_recursion():
    """20,000 chained ops: trace, IR building, kernelize and lowering stay iterative."""
    eng = Engine()
    x = np.ones(4, np.float32)
    node = buf(x)
    one, half = UOp.const(1.0, Sig((4,), "f32")), UOp.const(0.5, Sig((4,), "f32"))
    for i in range(20000):
        node = UOp.make(OP.add, [node, one]) if i % 2 else UOp.make(OP.mul, [node, half])
    [got] = eng.realize([node])
    np.testing.assert_allclose(got, np.full(4, 2.0, np.float32))  # x -> x/2 + 1 -> 2
    (plan,) = eng.plans.values()
    assert len(plan.kernels) > 20000 // 64  # cut every max-depth ops


def test_stack_and_index_match_reference():
    a, b = rand(3, 4), rand(3, 4, seed=1)
    i = np.array(1, np.int32)
    st = UOp.make(OP.stack, [buf(a), buf(b)])
    picked = UOp.make(OP.index, [st, UOp.buffer(i, Sig((), "i32"))])
    roots = [st, picked, UOp.make(OP.reduce, [picked], ("max", (1,))),
             UOp.make(OP.index, [st, buf(i), buf(i)])]
    for got, want in zip(Engine().realize(roots), reference.evaluate(roots)):
        np.testing.assert_array_equal(got, want)


def test_debug_levels(monkeypatch, capsys):
    eng = Engine()
    monkeypatch.setenv("DEBUG", "2")
    eng.realize(mlp_step_graph(rand(5, 7), rand(7, 3), rand(3)))
    first = capsys.readouterr().err.splitlines()
    assert any(line.startswith("realize:") and "compiled in" in line for line in first)
    kernel_lines = [line for line in first if line.strip().startswith("kernel ")]
    assert len(kernel_lines) == 3 and all("GFLOP/s" in line for line in kernel_lines)
    monkeypatch.setenv("DEBUG", "1")
    eng.realize(mlp_step_graph(rand(5, 7), rand(7, 3), rand(3)))
    second = capsys.readouterr().err.splitlines()
    assert len(second) == 1 and "cached" in second[0]
    monkeypatch.delenv("DEBUG")
    eng.realize(mlp_step_graph(rand(5, 7), rand(7, 3), rand(3)))
    assert capsys.readouterr().err == ""
    monkeypatch.setenv("DEBUG", "4")
    eng.realize(mlp_step_graph(rand(2, 7), rand(7, 3), rand(3)))
    source = capsys.readouterr().err
    assert "void k0(" in source and "for (" in source


def test_plans_run_compiled_c():
    eng = Engine()
    eng.realize(mlp_step_graph(rand(5, 7), rand(7, 3), rand(3)))
    (plan,) = eng.plans.values()
    assert plan.backend == "c" and len(plan.kernels) == 3  # the matmul, the sum, the max
    assert all(f"void {k.name}(" in plan.sources[0] for k in plan.kernels)
    assert all(k.flops > 0 for k in plan.kernels)


def test_training_loop_compiles_nothing_after_the_second_step():
    rng = np.random.default_rng(0)
    x = rng.standard_normal((32, 4)).astype(np.float32)
    y = (x @ np.array([1.0, -2.0, 0.5, 3.0], np.float32)).reshape(32, 1)
    layer1, layer2 = nn.Linear(4, 16), nn.Linear(16, 1)
    opt = SGD(nn.parameters([layer1, layer2]), lr=0.01, momentum=0.9)
    eng = default_engine()
    losses, compiles = [], []
    for _ in range(6):
        pred = layer2(layer1(Tensor(x)).relu())
        loss = ((pred - Tensor(y)).square()).mean()
        opt.zero_grad()
        loss.backward()
        opt.step(loss)
        losses.append(loss.item())
        compiles.append(eng.compiles)
    assert compiles[2:] == [compiles[1]] * 4
    assert losses[-1] < losses[0]


def _shifted(a: Tensor) -> Tensor:
    """a padded by one row on top and cut back to its shape (pad + shrink views)."""
    rows = a.shape[0]
    return a.pad(((1, 0), (0, 0)))[:rows]


RANDOM_OPS = [
    lambda a, b: a + b,
    lambda a, b: a * b,
    lambda a, b: (a * 0.5).exp(),
    lambda a, b: a - a.max(-1, keepdim=True),
    lambda a, b: a * b.sum(0, keepdim=True),
    lambda a, b: (a.transpose(0, 1) @ b).sum(0, keepdim=True) + b,
    lambda a, b: a.maximum(b).flip(0),
    lambda a, b: (a < b).where(a, b * 2.0),
    lambda a, b: _shifted(a) - b,
    lambda a, b: (a @ b.transpose(0, 1) @ a + b).relu(),
    lambda a, b: a.softmax(-1) * b,
    lambda a, b: (a * 4.0).cast("i32").cast("f32") + b.mean(),
]


@settings(max_examples=25, deadline=None)
@given(st.data())
def test_random_graphs_match_reference(data):
    """Compiled plans (kernelize + C) against the graph reference on random programs."""
    rng = np.random.default_rng(data.draw(st.integers(0, 2**16)))
    shape = (data.draw(st.integers(1, 4)), data.draw(st.integers(1, 5)))
    pool = [Tensor(rng.standard_normal(shape).astype(np.float32)) for _ in range(2)]
    for _ in range(data.draw(st.integers(1, 10))):
        a, b = data.draw(st.sampled_from(pool)), data.draw(st.sampled_from(pool))
        pool.append(data.draw(st.sampled_from(RANDOM_OPS))(a, b))
    roots = [p.uop for p in pool[2:]]
    eng = Engine()
    got = eng.realize(roots)
    assert all(plan.backend == "c" for plan in eng.plans.values())
    for g, w in zip(got, reference.evaluate(roots)):
        np.testing.assert_allclose(g, w, rtol=1e-4, atol=1e-4)
