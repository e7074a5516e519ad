"""GPT-2 and Llama on the Tensor API (uopc.frontend.llm) against transformers' models
built from the same small random configs: logits, probabilities, greedy generation
token for token through the KV cache, and one compiled plan for all decode steps."""

from __future__ import annotations

import numpy as np
import pytest

from uopc.frontend.llm.generate import Sampling, generate
from uopc.frontend.llm.gpt2 import GPT2
from uopc.frontend.llm.llama import Llama
from uopc.runtime.engine import default_engine

torch = pytest.importorskip("torch")
transformers = pytest.importorskip("transformers")

PROMPT = [464, 2068, 7586, 21831, 18045, 625, 262, 16931]


def _reference_greedy(model, prompt, count):
    """Greedy continuation by transformers, recomputing the whole sequence each step (no
    cache), so that it checks uopc's cache as well as its arithmetic."""
    ids = list(prompt)
    with torch.no_grad():
        for _ in range(count):
            ids.append(int(model(torch.tensor([ids])).logits[0, -1].argmax()))
    return ids[len(prompt):]


@pytest.fixture(scope="module")
def gpt2(tmp_path_factory):
    """GPT2Config(n_layer=8, n_embd=64, n_head=16), seed 0, saved by transformers as
    safetensors and (torch.save of the state dict) as pytorch_model.bin."""
    root = tmp_path_factory.mktemp("gpt2")
    torch.manual_seed(0)
    model = transformers.GPT2LMHeadModel(
        transformers.GPT2Config(n_layer=8, n_embd=64, n_head=16)).eval()
    model.save_pretrained(root / "st")
    (root / "bin").mkdir()
    (root / "bin" / "config.json").write_text((root / "st" / "config.json").read_text())
    torch.save(model.state_dict(), root / "bin" / "pytorch_model.bin")
    return model, root


@pytest.mark.parametrize("fmt", ["st", "bin"])
def test_gpt2_logits_and_probabilities(gpt2, fmt):
    model, root = gpt2
    ours = GPT2.from_pretrained(root / fmt)
    with torch.no_grad():
        ref = model(torch.tensor([PROMPT])).logits.numpy()
    got = ours([PROMPT]).numpy()
    assert got.shape == ref.shape == (1, len(PROMPT), 50257)
    np.testing.assert_allclose(got, ref, rtol=0, atol=2e-5)
    probs = torch.softmax(torch.tensor(got[0, -1]), -1).numpy()
    ref_probs = torch.softmax(torch.tensor(ref[0, -1]), -1).numpy()
    assert np.abs(probs - ref_probs).max() <= 1e-5


def test_gpt2_greedy_24_tokens_with_one_decode_plan(gpt2):
    model, root = gpt2
    ours = GPT2.from_pretrained(root / "st")
    engine = default_engine()
    compiles = []
    run = generate(ours, PROMPT, 24, on_token=lambda _: compiles.append(engine.compiles))
    assert run.tokens == _reference_greedy(model, PROMPT, 24)
    # prefill and the first decode step may compile; no later step does
    assert compiles[2:] == [compiles[1]] * 22


def test_gpt2_cache_step_matches_full_forward(gpt2):
    """Feeding a sequence in chunks through the cache gives the logits of one pass."""
    _, root = gpt2
    ours = GPT2.from_pretrained(root / "st")
    full = ours([PROMPT]).numpy()
    cache = ours.new_cache(16)
    parts = []
    for chunk in (PROMPT[:5], PROMPT[5:6], PROMPT[6:]):
        logits = ours([chunk], cache)
        cache.commit(logits)
        parts.append(logits.numpy())
    np.testing.assert_allclose(np.concatenate(parts, axis=1), full, rtol=0, atol=1e-5)
    assert cache.length == len(PROMPT)
    with pytest.raises(ValueError, match="KV cache of 16 positions is full: 8 held"):
        ours([PROMPT + PROMPT[:1]], cache)


def _llama(tmp_path, seed, **overrides):
    config = dict(vocab_size=320, hidden_size=64, intermediate_size=96, num_hidden_layers=3,
                  num_attention_heads=8, num_key_value_heads=2, max_position_embeddings=256,
                  rope_theta=10000.0, rms_norm_eps=1e-5)
    config.update(overrides)
    torch.manual_seed(seed)
    model = transformers.LlamaForCausalLM(transformers.LlamaConfig(**config)).eval()
    with torch.no_grad():  # norms away from 1, so that their weights are tested too
        for name, p in model.named_parameters():
            if "norm" in name:
                p.add_(0.3 * torch.randn_like(p))
    model.save_pretrained(tmp_path)
    return model


@pytest.mark.parametrize("overrides", [
    {},  # grouped-query attention: 8 heads read 2 key/value heads
    {"num_key_value_heads": 8, "tie_word_embeddings": True, "rope_theta": 100000.0},
    {"num_key_value_heads": 1, "head_dim": 16},  # head_dim * heads != hidden_size
], ids=["gqa", "mha-tied", "mqa-head-dim"])
def test_llama_matches_transformers(tmp_path, overrides):
    model = _llama(tmp_path, 1, **overrides)
    ours = Llama.from_pretrained(tmp_path)
    prompt = [5, 77, 12, 300, 41, 8, 199]
    with torch.no_grad():
        ref = model(torch.tensor([prompt])).logits.numpy()
    np.testing.assert_allclose(ours([prompt]).numpy(), ref, rtol=0, atol=2e-5)
    run = generate(ours, prompt, 16)
    assert run.tokens == _reference_greedy(model, prompt, 16)


def test_sampling_is_seeded_and_top_k_1_is_greedy(tmp_path):
    _llama(tmp_path, 2)
    ours = Llama.from_pretrained(tmp_path)
    prompt = [3, 14, 15, 92]
    a = generate(ours, prompt, 10, Sampling(temperature=1.0, top_p=0.9, seed=7)).tokens
    b = generate(ours, prompt, 10, Sampling(temperature=1.0, top_p=0.9, seed=7)).tokens
    c = generate(ours, prompt, 10, Sampling(temperature=1.0, seed=8)).tokens
    assert a == b and a != c
    greedy = generate(ours, prompt, 10).tokens
    assert generate(ours, prompt, 10, Sampling(temperature=0.7, top_k=1, seed=3)).tokens == greedy


def test_wrong_weight_shape_is_named(tmp_path):
    _llama(tmp_path, 3)
    config = transformers.LlamaConfig.from_pretrained(tmp_path).to_dict()
    config["intermediate_size"] = 100
    from uopc.frontend.llm.checkpoints import read_state_dict

    with pytest.raises(ValueError, match=r"layers.0.mlp.gate_proj.weight' has shape \(96, 64\), "
                                         r"the config needs \(100, 64\)"):
        Llama(config, read_state_dict(tmp_path))
