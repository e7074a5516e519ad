"""Prefill padding (kv_cache.prefill_width): prompts of different lengths share one
compiled prefill plan per bucket, and the padded step computes what the unpadded one
does (bit for bit under strict float order), cache contents included."""

from __future__ import annotations

import numpy as np
import pytest

from uopc.frontend.llm.generate import generate
from uopc.frontend.llm.gpt2 import GPT2
from uopc.frontend.llm.kv_cache import KVCache, prefill_width
from uopc.frontend.llm.llama import Llama
from uopc.runtime.engine import default_engine


def tiny_llama(seed: int = 0) -> Llama:
    """One Llama block, width 32, 4 query and 2 key/value heads, 64 tokens, tied head."""
    rng = np.random.default_rng(seed)
    d, inter, vocab, kv = 32, 48, 64, 16
    shapes = {"model.embed_tokens.weight": (vocab, d), "model.norm.weight": (d,),
              "model.layers.0.input_layernorm.weight": (d,),
              "model.layers.0.post_attention_layernorm.weight": (d,)}
    for name, shape in (("self_attn.q_proj", (d, d)), ("self_attn.k_proj", (kv, d)),
                        ("self_attn.v_proj", (kv, d)), ("self_attn.o_proj", (d, d)),
                        ("mlp.gate_proj", (inter, d)), ("mlp.up_proj", (inter, d)),
                        ("mlp.down_proj", (d, inter))):
        shapes[f"model.layers.0.{name}.weight"] = shape
    state = {k: (0.2 * rng.standard_normal(s)).astype(np.float32) for k, s in shapes.items()}
    config = dict(vocab_size=vocab, hidden_size=d, intermediate_size=inter,
                  num_hidden_layers=1, num_attention_heads=4, num_key_value_heads=2,
                  tie_word_embeddings=True)
    return Llama(config, state)


def tiny_gpt2() -> GPT2:
    return GPT2.random(layers=1, dim=32, heads=4, vocab=64, positions=64, seed=1)


@pytest.mark.parametrize("count, max_length, width", [
    (1, 64, 8), (5, 64, 8), (9, 64, 16), (16, 64, 16), (17, 64, 32), (33, 64, 64), (33, 40, 40),
    (100, 256, 128), (129, 192, 192)])
def test_prefill_width_is_a_power_of_two_bucket_within_the_cache(count, max_length, width):
    assert prefill_width(count, max_length) == width


def test_padded_step_data():
    cache = KVCache(layers=1, batch=1, kv_heads=1, head_dim=2, max_length=12)
    data = cache.begin(3, width=8)
    assert data.positions.tolist() == [0, 1, 2, 2, 2, 2, 2, 2]
    assert data.last.tolist() == [2]
    assert data.placement.shape == (12, 8)
    # the real tokens go to rows 0..2; the padding writes nothing
    assert np.array_equal(np.argwhere(data.placement), [[0, 0], [1, 1], [2, 2]])
    assert data.written[:, 0].tolist() == [True] * 3 + [False] * 9
    # a padded query sees what the last real one sees
    assert data.visible[3:].tolist() == [data.visible[2].tolist()] * 5
    cache.advance()
    assert cache.length == 3
    with pytest.raises(ValueError, match="a step of 5 tokens padded to 4 positions"):
        cache.begin(5, width=4)


@pytest.mark.parametrize("make", [tiny_gpt2, tiny_llama], ids=["gpt2", "llama"])
def test_padded_prefill_equals_unpadded_bit_for_bit(make, monkeypatch):
    monkeypatch.setenv("UOPC_STRICT", "1")  # schedules keep strict order: shape-free bits
    model = make()
    ids = np.random.default_rng(2).integers(0, 64, (1, 5)).astype(np.int32)
    plain, padded = model.new_cache(24), model.new_cache(24)
    want = model(ids, plain, last_only=True)
    plain.commit(want)
    inputs = model.step_inputs(ids, padded, width=prefill_width(5, 24))
    assert inputs[0].shape == (1, 8)
    got = model.forward(padded, *inputs, last_only=True)
    padded.commit(got)
    assert got.shape == want.shape == (1, 1, 64)
    assert np.array_equal(got.numpy(), want.numpy())
    assert padded.length == plain.length == 5
    for a, b in zip(padded.keys + padded.values, plain.keys + plain.values):
        assert np.array_equal(a.numpy(), b.numpy())
    # the next (decode) step sees the same cache either way
    step = np.array([[7]], np.int32)
    after_plain = model(step, plain, last_only=True)
    plain.commit(after_plain)
    after_padded = model(step, padded, last_only=True)
    padded.commit(after_padded)
    assert np.array_equal(after_padded.numpy(), after_plain.numpy())


def _greedy_without_cache(model, prompt: list[int], count: int) -> list[int]:
    """Greedy tokens by a full forward over the whole sequence per token (no cache, no
    padding): the reference generate must agree with."""
    seq, out = list(prompt), []
    for _ in range(count):
        token = int(np.argmax(model([seq]).numpy()[0, -1]))
        out.append(token)
        seq.append(token)
    return out


def test_prompts_of_one_bucket_compile_one_prefill_plan():
    model = tiny_gpt2()
    engine = default_engine()
    first = generate(model, [3, 1, 4], 3)
    assert first.tokens == _greedy_without_cache(model, [3, 1, 4], 3)
    before = engine.compiles
    for prompt in ([5, 9, 2, 6, 5], [3, 5, 8, 9, 7, 9, 3], list(range(8))):
        run = generate(model, prompt, 3)
        assert engine.compiles == before, f"a prompt of {len(prompt)} tokens compiled a plan"
        assert run.tokens == _greedy_without_cache(model, prompt, 3)
        before = engine.compiles  # the reference's full forwards compile their own plans
