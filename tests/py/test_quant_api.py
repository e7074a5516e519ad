"""Quantized weights on the Tensor API: compiled inline dequantization against the numpy
reference decode, matmuls, nn layers, whole models, and what the plans hold."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import uopc
from uopc import Tensor, nn
from uopc.frontend.nn.gpt import GPT
from uopc.frontend.quant import QuantError, QuantizedTensor, quantize_model, quantize_weight
from uopc.runtime.engine import default_engine
from uopc.uopdialect.graph import toposort
from uopc.uopdialect.ops import OP
from uopc.uopdialect.quant_formats import CODES, FORMATS, pack_codes

RNG = np.random.default_rng(7)
ALL = list(FORMATS)


def bits_equal(a: np.ndarray, b: np.ndarray) -> bool:
    return a.shape == b.shape and np.array_equal(a.view(np.uint32), b.view(np.uint32))


@pytest.mark.parametrize("fmt", ALL)
def test_compiled_dequantization_is_the_reference_decode_bit_for_bit(fmt):
    w = RNG.standard_normal((12, 64)).astype(np.float32) * 3
    q = quantize_weight(w, fmt)
    assert isinstance(q, QuantizedTensor) and q.shape == (12, 64) and q.dtype == "f32"
    assert bits_equal(q.numpy(), q.packed.dequantize())
    assert q.nbytes == q.packed.nbytes < w.nbytes


@pytest.mark.parametrize("code", sorted(CODES))
def test_every_code_decodes_in_the_kernels_as_the_table_says(code):
    """uop.decode compiled to C (`_lower_decode`) gives every code of every element
    format the f32 value of `Code.table`, bit for bit: signed zeros, the subnormal
    codes, the largest, infinities; NaN where the table has NaN."""
    from uopc.frontend.quant import _decoded

    c = CODES[code]
    codes = np.arange(2**c.bits)
    got = _decoded(pack_codes(codes[None, :], c.bits), code, c.bits, codes.size).numpy()[0]
    want = c.table
    nan = np.isnan(want)
    assert np.array_equal(np.isnan(got), nan), code
    assert bits_equal(got[~nan], want[~nan]), code


@settings(max_examples=12, deadline=None)
@given(st.sampled_from(["int4", "e2m1", "int8", "e4m3", "bf16", "e5m2"]),
       st.integers(1, 5), st.sampled_from([(4, 3), (4, 5), (8, 2), (2, 9)]))
def test_rows_that_do_not_fill_whole_words(fmt, rows, grouping):
    """Rows of any even length: packed rows are padded to whole i32 words and the padding
    is cut off again (e.g. 12 int4 codes are 6 bytes, two words)."""
    group, groups = grouping
    w = RNG.standard_normal((rows, group * groups)).astype(np.float32)
    q = quantize_weight(w, fmt, group_size=group)
    assert bits_equal(q.numpy(), q.packed.dequantize())


@pytest.mark.parametrize("fmt", ["q4_0", "mxfp4", "int8"])
def test_a_partial_last_block(fmt):
    """784 inputs (MNIST) in blocks of 32: the last block is padded, the padding unread."""
    w = RNG.standard_normal((3, 784)).astype(np.float32)
    q = quantize_weight(w, fmt)
    assert q.shape == (3, 784) and bits_equal(q.numpy(), q.packed.dequantize())


@pytest.mark.parametrize("fmt", ["int4", "e4m3", "mxfp4", "q4_0", "q4_1", "q8_0", "bf16"])
def test_matmuls_read_quantized_weights(fmt):
    w = RNG.standard_normal((48, 64)).astype(np.float32)
    q = quantize_weight(w, fmt)
    ref = q.packed.dequantize()
    x = RNG.standard_normal((5, 64)).astype(np.float32)
    np.testing.assert_allclose((Tensor(x) @ q.T).numpy(), x @ ref.T, rtol=1e-5, atol=1e-4)
    xb = RNG.standard_normal((2, 3, 64)).astype(np.float32)  # batched
    np.testing.assert_allclose((Tensor(xb) @ q.T).numpy(), xb @ ref.T, rtol=1e-5, atol=1e-4)
    v = RNG.standard_normal(64).astype(np.float32)  # a vector
    np.testing.assert_allclose((q @ Tensor(v)).numpy(), ref @ v, rtol=1e-5, atol=1e-4)


def test_the_plan_holds_packed_bytes_only():
    """x @ W.T with an int4 W: the plan's inputs are x, the packed words and the scales
    (the code positions are a constant of the kernel); its arena has no room for an f32
    copy of W."""
    w = RNG.standard_normal((256, 128)).astype(np.float32)
    q = quantize_weight(w, "int4", group_size=32)
    x = RNG.standard_normal((64, 128)).astype(np.float32)
    (Tensor(x) @ q.T).numpy()
    plan, inputs = default_engine().last
    weight_inputs = [a for a in inputs if a is not None and a.nbytes != x.nbytes]
    assert sorted(a.dtype.name for a in weight_inputs) == ["float32", "int32"]
    assert sum(a.nbytes for a in weight_inputs) == q.nbytes
    assert q.nbytes * 6 < w.nbytes  # 4 bits and a 4-byte scale per 32: 5 bits each
    assert plan.arena_bytes < w.nbytes
    assert len(plan.kernels) == 1


@pytest.mark.parametrize("fmt", ["q4_1", "q8_0", "int4"])
def test_a_prompt_matmul_decodes_each_panel_once_with_the_same_bits(fmt):
    """x @ W.T over 96 rows (a prompt's projection): the kernel decodes each panel of
    W's columns once into a stack buffer that the register tiles read (`pack` of the
    decoded value); in strict float order its result has the bits of the naive
    schedule, which decodes every weight where it multiplies it."""
    w = RNG.standard_normal((96, 256)).astype(np.float32)
    q = quantize_weight(w, fmt)
    x = RNG.standard_normal((96, 256)).astype(np.float32)
    with uopc.settings.override(UOPC_STRICT=True):
        packed = (Tensor(x) @ q.T).numpy()
        plan, _ = default_engine().last
        assert "pack = 1" in str(plan.kernels[0].schedule), plan.kernels[0].schedule
        with uopc.settings.override(OPT=0):
            naive = (Tensor(x) @ q.T).numpy()
    assert packed.tobytes() == naive.tobytes()
    np.testing.assert_allclose(packed, x @ q.numpy().T, rtol=1e-4, atol=1e-4)


def test_a_row_gathered_from_a_quantized_table_is_computed_once_not_per_output():
    """A decode step: the row of a quantized embedding, normalized, feeds a matvec over
    many outputs (a tied head). The small value is staged like any other (one kernel
    decodes the row), so the matvec decodes only its own weight, not the row again for
    every output; a dequantized weight itself is never copied (the plan above)."""
    table = quantize_weight(RNG.standard_normal((300, 64)).astype(np.float32), "int8")
    w = RNG.standard_normal((512, 64)).astype(np.float32)
    ids = np.array([[7]], np.int32)
    x = table[Tensor(ids)]
    got = ((x - x.mean(-1, keepdim=True)) @ Tensor(w).T).numpy()
    plan, _ = default_engine().last
    (matvec,) = [k for k in plan.kernels if k.out.shape == (1, 1, 512)]
    assert all(s.dtype != "i32" for s in matvec.inputs), matvec.inputs
    row = table.packed.dequantize()[7].astype(np.float64)
    want = (row - row.mean()) @ w.T.astype(np.float64)
    np.testing.assert_allclose(got[0, 0], want, rtol=1e-4, atol=1e-4)


def test_a_quantized_tensor_stays_packed_after_numpy():
    q = quantize_weight(RNG.standard_normal((8, 32)).astype(np.float32), "int8")
    first = q.numpy()
    q.realize()
    Tensor.realize_all(q)
    assert q.uop.op.name != "buffer"  # still the decode graph, not an f32 buffer
    assert bits_equal(q.numpy(), first)
    assert "QuantizedTensor(shape=(8, 32), format=int8" in repr(q)


def test_gradients_reach_the_activations_not_the_codes():
    q = quantize_weight(RNG.standard_normal((6, 32)).astype(np.float32), "e4m3")
    x = Tensor(RNG.standard_normal((3, 32)).astype(np.float32), requires_grad=True)
    (x @ q.T).sum().backward([x])
    np.testing.assert_allclose(x.grad.numpy(), np.broadcast_to(
        q.packed.dequantize().sum(0), (3, 32)), rtol=1e-5, atol=1e-5)


def test_nn_layers_with_quantize_model():
    uopc.manual_seed(0)
    net = nn.Sequential(nn.Linear(64, 32), nn.Linear(32, 10))
    emb = nn.Embedding(20, 64)
    ids = np.array([[3, 0, 19], [7, 7, 1]])
    x = emb(ids)
    before = net(x).numpy()
    state = {"emb": emb, "net": net}
    report = quantize_model(state, "q8_0")
    assert [e.name for e in report.entries] == ["emb.weight", "net.0.weight", "net.1.weight"]
    assert isinstance(emb.weight, QuantizedTensor)
    assert emb.weight.shape == (20, 64) and net[0].weight.shape == (64, 32)
    after = net(emb(ids)).numpy()
    # Linear weights are quantized through their transpose: blocks along the inputs
    linear = net[0].weight
    assert linear.uop.op.name == "permute"
    ref_emb = emb.weight.packed.dequantize()[ids]
    np.testing.assert_allclose(emb(ids).numpy(), ref_emb, rtol=1e-6, atol=1e-6)
    assert np.abs(after - before).max() < 0.05 * np.abs(before).max()
    assert report.bytes_after < report.bytes_before / 3.5
    for e in report.entries:
        assert e.bytes_before == 4 * np.prod(e.shape) and 0 < e.worst_relative_error < 0.01
    assert "total (q8_0)" in str(report)


def test_quantize_model_reports_the_worst_error_it_makes():
    layer = nn.Linear(32, 16)
    w = layer.weight.numpy()
    report = quantize_model(layer, "int4")
    (entry,) = report.entries
    q = layer.weight.numpy()
    assert entry.name == "weight" and entry.shape == (32, 16)
    assert entry.worst_relative_error == pytest.approx(np.abs(q - w).max() / np.abs(w).max())
    assert entry.bytes_after == 16 * 32 // 2 + 16 * 4  # codes + one f32 scale per 32


def test_exclude_and_tied_heads():
    """A GPT (uopc.nn.gpt): exclude keeps the head in f32; every block matrix and the
    token table is quantized; the plain position table too (any 2-D weight)."""
    uopc.manual_seed(1)
    model = GPT(vocab=40, context=16, dim=32, heads=4, layers=1)
    ids = Tensor(RNG.integers(0, 40, (2, 8)).astype(np.int32))
    f32 = model(ids).numpy()
    report = quantize_model(model, "int8", exclude=["head.*"])
    names = [e.name for e in report.entries]
    assert "head.weight" not in names and not isinstance(model.head.weight, QuantizedTensor)
    assert {"tokens.weight", "positions", "blocks.0.attn.qkv.weight", "blocks.0.fc.weight"} \
        <= set(names)
    out = model(ids).numpy()
    assert (out.argmax(-1) == f32.argmax(-1)).mean() > 0.9
    with pytest.raises(QuantError, match="found no weight to quantize in GPT"):
        quantize_model(model, "int8", exclude=["head.*"])  # the rest is quantized already


def test_llm_gpt2_tied_head_reads_the_quantized_table():
    from uopc.frontend.llm.gpt2 import GPT2

    model = GPT2.random(layers=1, dim=32, heads=4, vocab=64, positions=16, seed=3)
    rng = np.random.default_rng(3)
    ids = rng.integers(0, 64, (1, 6))
    f32 = model(ids).numpy()
    report = quantize_model(model, "q8_0")
    assert len(report.entries) == 6  # wte, wpe and the four block matrices
    assert isinstance(model.wte, QuantizedTensor)
    assert model.head.uop.srcs[0] is model.wte.uop  # the head is a view of the new table
    out = model(ids).numpy()
    assert np.abs(out - f32).max() < 0.02 * np.abs(f32).max()
    assert (out.argmax(-1) == f32.argmax(-1)).all()


def _tiny_llama(rng):
    """A one-layer Llama's config and random state (transformers' names and shapes)."""
    d, inter, vocab, kv = 32, 48, 64, 2 * 8
    shapes = {"model.embed_tokens.weight": (vocab, d), "model.norm.weight": (d,)}
    for name, shape in (("self_attn.q_proj", (d, d)), ("self_attn.k_proj", (kv, d)),
                        ("self_attn.v_proj", (kv, d)), ("self_attn.o_proj", (d, d)),
                        ("mlp.gate_proj", (inter, d)), ("mlp.up_proj", (inter, d)),
                        ("mlp.down_proj", (d, inter))):
        shapes[f"model.layers.0.{name}.weight"] = shape
    shapes["model.layers.0.input_layernorm.weight"] = (d,)
    shapes["model.layers.0.post_attention_layernorm.weight"] = (d,)
    state = {k: (0.2 * rng.standard_normal(s)).astype(np.float32) for k, s in shapes.items()}
    config = dict(vocab_size=vocab, hidden_size=d, intermediate_size=inter,
                  num_hidden_layers=1, num_attention_heads=4, num_key_value_heads=2,
                  tie_word_embeddings=True)
    return config, state


def test_llm_llama_transposed_weights_are_quantized_along_their_inputs():
    from uopc.frontend.llm.llama import Llama

    rng = np.random.default_rng(4)
    config, state = _tiny_llama(rng)
    d = config["hidden_size"]
    model = Llama(config, state)
    ids = rng.integers(0, config["vocab_size"], (1, 5))
    f32 = model(ids).numpy()
    report = quantize_model(model, "q8_0")
    assert len(report.entries) == 8  # the seven (out, in) projections and the table
    q = model.blocks[0].q  # still the (in, out) view, of the quantized (out, in) rows
    assert q.shape == (d, d) and q.uop.op is OP.permute
    assert isinstance(model.embed, QuantizedTensor) and model.head.uop.srcs[0] is model.embed.uop
    out = model(ids).numpy()
    assert np.abs(out - f32).max() < 0.02 * np.abs(f32).max()


def test_llm_llama_loads_packed_matrices_as_quantized_tensors():
    """A state holding `Packed` blocks (a GGUF file's, `quantized_state`) loads them as
    QuantizedTensors: the logits of the float32 model of their dequantized values."""
    from uopc.frontend.llm.llama import Llama

    rng = np.random.default_rng(5)
    config, state = _tiny_llama(rng)
    packed = {k: FORMATS["q4_1"].quantize(v) if v.ndim == 2 else v for k, v in state.items()}
    dequantized = {k: v.dequantize() if v is not state[k] else v for k, v in packed.items()}
    model = Llama(config, packed)
    assert isinstance(model.embed, QuantizedTensor)
    gate = model.blocks[0].gate  # the (in, out) view of packed (out, in) rows
    buffers = [n.arg for n in toposort([gate.uop]) if n.op is OP.buffer]
    assert gate.shape == (32, 48) and not any(b.dtype == np.float32 and b.size >= 32 * 48
                                              for b in buffers)
    ids = rng.integers(0, config["vocab_size"], (1, 5))
    np.testing.assert_allclose(model(ids).numpy(), Llama(config, dequantized)(ids).numpy(),
                               rtol=1e-5, atol=1e-6)
    wrong = dict(packed, **{"model.layers.0.mlp.up_proj.weight":
                            packed["model.layers.0.mlp.down_proj.weight"]})
    with pytest.raises(ValueError, match="weight 'layers.0.mlp.up_proj.weight' has shape"):
        Llama(config, wrong)


def test_bad_requests():
    with pytest.raises(QuantError, match=r"quantize_weight takes a 2-D float weight, got shape \(4,\)"):
        quantize_weight(np.zeros(4, np.float32), "int8")
    with pytest.raises(QuantError, match="unknown weight format 'fp3'"):
        quantize_weight(np.zeros((2, 32), np.float32), "fp3")
    with pytest.raises(QuantError, match="group_size 3 must be positive and even"):
        quantize_weight(np.zeros((2, 30), np.float32), "int4", group_size=3)


#: the README's documented bound on the worst output error (relative to the largest
#: output) of a quantized MLP against the f32 one
TOLERANCE = {"f16": 1e-3, "bf16": 1e-2, "int8": 2e-2, "q8_0": 2e-2, "e4m3": 0.1, "mxfp8": 0.1,
             "e5m2": 0.15, "int4": 0.3, "e2m1": 0.3, "mxfp4": 0.3, "q4_0": 0.3, "q4_1": 0.3}


def test_each_format_stays_within_its_documented_tolerance():
    assert set(TOLERANCE) == set(FORMATS)
    x = Tensor(np.random.default_rng(0).standard_normal((64, 256)).astype(np.float32))

    def build():
        uopc.manual_seed(0)
        return nn.Sequential(nn.Linear(256, 128), nn.Linear(128, 10))

    def run(model):
        return model[1](model[0](x).relu()).numpy()

    ref = run(build())
    for fmt, bound in TOLERANCE.items():
        model = build()
        quantize_model(model, fmt)
        error = np.abs(run(model) - ref).max() / np.abs(ref).max()
        assert 0 < error < bound, fmt
