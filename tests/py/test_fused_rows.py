"""Row reductions and attention under the default reduce fusion (the rule of
`uopc.passes.fusion_rule`) and the wide split sums (`uopc.passes.reduce_rules`), against
torch: odd row lengths (not a multiple of the 16 partial sums), causal and boolean masks,
rows masked entirely, batch and heads, values and gradients; in strict float order the
default plan equals the unfused one bit for bit, gradients included."""

from __future__ import annotations

import math

import numpy as np
import pytest

import uopc
from uopc import Tensor

torch = pytest.importorskip("torch")
RNG = np.random.default_rng(11)


def f32(*shape):
    return RNG.standard_normal(shape).astype(np.float32)


@pytest.mark.parametrize("shape", [(3, 257), (5, 1030)])
def test_row_reductions_match_torch_at_odd_lengths(shape):
    x, w, b = f32(*shape), f32(shape[-1]), f32(shape[-1])
    t = torch.from_numpy(x)
    np.testing.assert_allclose(Tensor(x).softmax(-1).numpy(), torch.softmax(t, -1),
                               rtol=1e-5, atol=1e-7)
    np.testing.assert_allclose(Tensor(x).log_softmax(-1).numpy(), torch.log_softmax(t, -1),
                               rtol=1e-5, atol=1e-5)
    got = Tensor(x).layer_norm(shape[-1], Tensor(w), Tensor(b)).numpy()
    want = torch.nn.functional.layer_norm(t, shape[-1:], torch.from_numpy(w),
                                          torch.from_numpy(b))
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-5)


def test_a_row_masked_entirely_gives_nan_as_torch():
    x = f32(4, 300)
    x[2] = -np.inf
    got = Tensor(x).softmax(-1).numpy()
    want = torch.softmax(torch.from_numpy(x), -1).numpy()
    assert np.isnan(got[2]).all() and np.isnan(want[2]).all()
    np.testing.assert_allclose(got[[0, 1, 3]], want[[0, 1, 3]], rtol=1e-5, atol=1e-7)


def _attention_case(mask_kind):
    """(B, H, L, E) queries and (B, H, S, E) keys and values with S not a multiple of 16;
    the mask as uopc and torch take it."""
    q, k, v = f32(2, 3, 37, 8), f32(2, 3, 45, 8), f32(2, 3, 45, 8)
    mask = None
    if mask_kind == "bool":
        mask = RNG.random((37, 45)) > 0.3
        mask[:, 0] = True  # no row masked entirely (torch's SDPA defines those apart)
    if mask_kind == "causal":
        q, k, v = q, k[:, :, :37], v[:, :, :37]
    return q, k, v, mask


@pytest.mark.parametrize("mask_kind", ["none", "bool", "causal"])
def test_attention_values_and_gradients_match_torch(mask_kind):
    q, k, v, mask = _attention_case(mask_kind)
    causal = mask_kind == "causal"
    tq, tk, tv = (Tensor(a, requires_grad=True) for a in (q, k, v))
    out = tq.scaled_dot_product_attention(tk, tv, attn_mask=None if mask is None
                                          else Tensor(mask), is_causal=causal)
    weight = f32(*out.shape)
    (out * Tensor(weight)).sum().backward([tq, tk, tv])
    pq, pk, pv = (torch.tensor(a, requires_grad=True) for a in (q, k, v))
    ref = torch.nn.functional.scaled_dot_product_attention(
        pq, pk, pv, attn_mask=None if mask is None else torch.from_numpy(mask),
        is_causal=causal)
    (ref * torch.from_numpy(weight)).sum().backward()
    np.testing.assert_allclose(out.numpy(), ref.detach(), rtol=1e-4, atol=1e-5)
    for mine, theirs in ((tq, pq), (tk, pk), (tv, pv)):
        np.testing.assert_allclose(mine.grad.numpy(), theirs.grad, rtol=1e-3, atol=1e-4)


def test_a_causal_mask_is_made_once_per_shape_and_shared_read_only():
    from uopc.frontend.functional import _causal_keep

    keep = _causal_keep(5, 7)
    assert keep is _causal_keep(5, 7) and not keep.flags.writeable
    np.testing.assert_array_equal(keep, np.tril(np.ones((5, 7), np.bool_)))


def test_strict_default_plan_equals_unfused_with_gradients(monkeypatch):
    monkeypatch.setenv("UOPC_STRICT", "1")
    q, k, v, _ = _attention_case("causal")

    def step():
        tq, tk, tv = (Tensor(a, requires_grad=True) for a in (q, k, v))
        out = tq.scaled_dot_product_attention(tk, tv, is_causal=True)
        out = out.layer_norm(8)
        loss = (out * out).sum() / math.prod(out.shape)
        loss.backward([tq, tk, tv])
        Tensor.realize_all(out, tq.grad, tk.grad, tv.grad)
        return [t.numpy() for t in (out, tq.grad, tk.grad, tv.grad)]

    with uopc.reduce_fusion(False):
        unfused = step()
    by_rule = step()
    for a, b in zip(unfused, by_rule):
        assert np.array_equal(a, b)


@pytest.mark.parametrize("causal", [False, True])
def test_attention_with_keys_copied_for_the_row_tile(monkeypatch, causal):
    """70 queries read each key at least `ROW_COPY_READS` times: the fused kernel reads K
    from a keys-innermost copy (`uop-cut-kernels`). Values match torch; in strict float
    order the plan equals the unfused one bit for bit."""
    q, k, v = f32(2, 2, 70, 16), f32(2, 2, 70, 16), f32(2, 2, 70, 16)

    def attention():
        out = Tensor(q).scaled_dot_product_attention(Tensor(k), Tensor(v), is_causal=causal)
        return out.numpy()

    ref = torch.nn.functional.scaled_dot_product_attention(
        *(torch.from_numpy(a) for a in (q, k, v)), is_causal=causal)
    np.testing.assert_allclose(attention(), ref, rtol=1e-4, atol=1e-5)
    monkeypatch.setenv("UOPC_STRICT", "1")
    with uopc.reduce_fusion(False):
        unfused = attention()
    assert np.array_equal(attention(), unfused)


def test_a_row_kept_in_the_output_changes_no_bit(monkeypatch, tmp_path):
    """A softmax's row of exponentials kept in its output row (uopc.transforms.row_in_output)
    computes the same bits as in a stack row: only where the row lives changes."""
    from uopc.runtime.engine import Engine
    from uopc.transforms import apply_schedule

    monkeypatch.setenv("UOPC_CACHE", str(tmp_path))
    monkeypatch.setenv("UOPC_PLAN_STORE", "0")
    x = f32(5, 1030)
    x[3] = -np.inf  # a row masked entirely: NaN both ways

    def softmax():
        return Engine().realize([Tensor(x).softmax(-1).uop])[0]

    in_output = softmax()
    monkeypatch.setattr(apply_schedule, "rows_in_outputs", lambda fn: None)
    np.testing.assert_array_equal(in_output, softmax())
