"""Reduce fusion (SPEC §8, `uopc.reduce_fusion()`, and by default where
`uopc.passes.fusion_rule` picks it): fewer kernels, nothing N x N written, and, in strict
float order, the same results bit for bit as without it (the fused kernels run the same
ops in the same order, each value computed once into a row buffer instead of a whole
temporary)."""

from __future__ import annotations

import numpy as np
import pytest

import uopc
from uopc import Tensor, settings
from uopc.runtime import engine as engine_module
from uopc.runtime.engine import Engine

RNG = np.random.default_rng(3)


def f32(*shape):
    return RNG.standard_normal(shape).astype(np.float32)


Q, K, V = f32(48, 16), f32(48, 16), f32(48, 16)
X, W, B = f32(32, 64), f32(64), f32(64)


def attention():
    return (Tensor(Q) @ Tensor(K).T / 4).softmax(-1) @ Tensor(V)


def softmax():
    return Tensor(X).softmax(-1)


def layernorm():
    t = Tensor(X)
    c = t - t.mean(-1, keepdim=True)
    return c * ((c * c).mean(-1, keepdim=True) + 1e-5).rsqrt() * Tensor(W) + Tensor(B)


def reference(name):
    if name == "attention":
        s = Q.astype(np.float64) @ K.T / 4
        e = np.exp(s - s.max(-1, keepdims=True))
        return e / e.sum(-1, keepdims=True) @ V
    if name == "softmax":
        e = np.exp(X - X.max(-1, keepdims=True).astype(np.float64))
        return e / e.sum(-1, keepdims=True)
    c = X - X.astype(np.float64).mean(-1, keepdims=True)
    return c / np.sqrt((c * c).mean(-1, keepdims=True) + 1e-5) * W + B


PROGRAMS = {"attention": attention, "softmax": softmax, "layernorm": layernorm}


@pytest.fixture
def engine(monkeypatch):
    # strict float order: no schedule splits a sum, so fused and unfused plans agree bit
    # for bit
    monkeypatch.setenv("UOPC_STRICT", "1")
    eng = Engine()
    monkeypatch.setattr(engine_module, "_ENGINE", eng)
    return eng


@pytest.mark.parametrize("name", sorted(PROGRAMS))
def test_fused_results_equal_unfused_bit_for_bit(name, engine):
    with uopc.reduce_fusion(False):
        plain = PROGRAMS[name]().numpy()
    by_rule = PROGRAMS[name]().numpy()  # the default: fusion where the rule picks it
    with uopc.reduce_fusion():
        fused = PROGRAMS[name]().numpy()
    assert engine.compiles == 3  # the fusion setting is part of the plan's key
    unfused_plan, rule_plan, fused_plan = engine.plans.values()
    # each of these programs is one kernel (after a layout copy) under the rule
    assert len(rule_plan.kernels) == len(fused_plan.kernels) < len(unfused_plan.kernels)
    assert np.array_equal(fused, plain)
    assert np.array_equal(by_rule, plain)
    np.testing.assert_allclose(fused, reference(name), rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("fusion", [True, None])
def test_fused_attention_writes_nothing_n_by_n(engine, fusion):
    """Under reduce_fusion() and by default (the rule)."""
    with uopc.settings.override(UOPC_FUSE_REDUCES=fusion):
        attention().numpy()
    (plan,) = engine.plans.values()
    n = Q.shape[0]
    # the plan's temporaries: only the copy of K (48x16), not the 48x48 scores or P
    assert plan.arena_bytes < n * n * 4
    assert all(k.out.shape != (n, n) for k in plan.kernels)
    assert "alloca" not in plan.sources[0]  # C: a stack row of n floats per query row
    assert f"[{n}];" in plan.sources[0]


def fuse_reduces() -> bool | None:
    return settings.FUSE_REDUCES.get()


def test_the_switch_nests_and_the_environment_sets_it(monkeypatch):
    monkeypatch.delenv("UOPC_FUSE_REDUCES", raising=False)
    assert fuse_reduces() is None  # by rule
    with uopc.reduce_fusion():
        assert fuse_reduces() is True
        with uopc.reduce_fusion(False):
            assert fuse_reduces() is False
        assert fuse_reduces() is True
    assert fuse_reduces() is None
    for text, value in (("1", True), ("0", False), ("auto", None), ("", None)):
        monkeypatch.setenv("UOPC_FUSE_REDUCES", text)
        assert fuse_reduces() is value
    monkeypatch.setenv("UOPC_FUSE_REDUCES", "yes")
    with pytest.raises(ValueError, match="expected 1 .* 0 .* or auto"):
        fuse_reduces()


def test_the_rule_keeps_a_matmul_read_twice_out_of_both_kernels(engine):
    """A matmul whose result two outputs read is computed once (a cut), not in each
    output's kernel; the softmax after it fuses."""
    scores = Tensor(Q) @ Tensor(K).T
    probs, shifted = scores.softmax(-1), scores * 2.0
    Tensor.realize_all(probs, shifted)
    (plan,) = engine.plans.values()
    got_probs, got_shifted = probs.numpy(), shifted.numpy()
    matmuls = [k for k in plan.kernels if k.out.shape == (48, 48) and k.flops >= 48 * 48 * 16]
    assert len(matmuls) == 1, plan.kernels
    s = Q.astype(np.float64) @ K.T.astype(np.float64)
    np.testing.assert_allclose(got_shifted, 2 * s, rtol=1e-4, atol=1e-4)
    e = np.exp(s - s.max(-1, keepdims=True))
    np.testing.assert_allclose(got_probs, e / e.sum(-1, keepdims=True), rtol=1e-4,
                               atol=1e-6)
