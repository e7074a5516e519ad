"""Unmodified PyTorch models through torch.compile(backend="uopc"), forward, against eager:
transformers' GPT-2, BERT and Llama from tiny configs, nn.TransformerEncoderLayer, a
ViT-style patch embedding and ResNet-18's architecture (tests/py/onnx_models.py's, which
the ONNX door exports too: torchvision is not a dependency). Random weights from a fixed
seed; floats within 1e-4 of the output's scale.
"""

from __future__ import annotations

import pytest

torch = pytest.importorskip("torch")
transformers = pytest.importorskip("transformers")

import onnx_models  # noqa: E402

from uopc import settings  # noqa: E402
from uopc.pytorch import backend  # noqa: E402

nn = torch.nn


def compare(model, *inputs, capfd, output=lambda o: o, grad: bool = False) -> str:
    """Run `model` eagerly and compiled (under no_grad unless `grad`); return what the
    door said."""
    torch._dynamo.reset()
    model.eval()
    with torch.set_grad_enabled(grad), settings.override(DEBUG=1):
        want = output(model(*inputs))
        got = output(torch.compile(model, backend=backend)(*inputs))
    assert got.shape == want.shape and got.dtype == want.dtype
    scale = want.abs().max().item()
    assert (got - want).abs().max().item() <= 1e-4 * scale
    return "\n".join(line for line in capfd.readouterr().err.splitlines()
                     if line.startswith("uopc.pytorch:"))


def all_uopc(said: str) -> None:
    assert "one plan" in said and "PyTorch" not in said, said


def test_gpt2(capfd):
    torch.manual_seed(0)
    config = transformers.GPT2Config(n_layer=2, n_head=2, n_embd=32, vocab_size=64,
                                     n_positions=16, bos_token_id=0, eos_token_id=0)
    all_uopc(compare(transformers.GPT2LMHeadModel(config), torch.randint(0, 64, (2, 9)),
                     capfd=capfd, output=lambda o: o.logits))


def test_bert(capfd):
    torch.manual_seed(0)
    config = transformers.BertConfig(vocab_size=64, hidden_size=32, num_hidden_layers=2,
                                     num_attention_heads=2, intermediate_size=64,
                                     max_position_embeddings=16)
    all_uopc(compare(transformers.BertModel(config), torch.randint(0, 64, (2, 9)),
                     capfd=capfd, output=lambda o: o.last_hidden_state))


def test_llama(capfd):
    torch.manual_seed(0)
    config = transformers.LlamaConfig(vocab_size=64, hidden_size=32, intermediate_size=64,
                                      num_hidden_layers=2, num_attention_heads=4,
                                      num_key_value_heads=2, max_position_embeddings=32)
    all_uopc(compare(transformers.LlamaForCausalLM(config), torch.randint(0, 64, (2, 9)),
                     capfd=capfd, output=lambda o: o.logits))


def test_transformer_encoder_layer(capfd):
    torch.manual_seed(0)
    layer = nn.TransformerEncoderLayer(32, 4, 64, dropout=0.0, batch_first=True)
    x = torch.randn(2, 7, 32)
    # with gradients on, the layer is ATen ops that uopc compiles
    all_uopc(compare(layer, x, capfd=capfd, grad=True))
    # under no_grad, PyTorch's fused fast path is one op uopc leaves to PyTorch
    said = compare(layer, x, capfd=capfd)
    assert "aten._transformer_encoder_layer_fwd.default is not in uopc's ATen table" in said


class PatchEmbedding(nn.Module):
    """ViT's stem: non-overlapping patches by a strided conv, a class token, learned
    positions, then a pre-norm attention block."""

    def __init__(self, size: int = 16, patch: int = 4, dim: int = 32):
        super().__init__()
        self.proj = nn.Conv2d(3, dim, patch, stride=patch)
        self.cls = nn.Parameter(torch.randn(1, 1, dim))
        self.pos = nn.Parameter(torch.randn(1, (size // patch) ** 2 + 1, dim))
        self.norm = nn.LayerNorm(dim)
        self.attn = nn.MultiheadAttention(dim, 4, batch_first=True)

    def forward(self, images: torch.Tensor) -> torch.Tensor:
        x = self.proj(images).flatten(2).transpose(1, 2)
        x = torch.cat([self.cls.expand(x.shape[0], -1, -1), x], dim=1) + self.pos
        h = self.norm(x)
        return x + self.attn(h, h, h, need_weights=False)[0]


def test_vit_patch_embedding(capfd):
    torch.manual_seed(0)
    all_uopc(compare(PatchEmbedding(), torch.randn(2, 3, 16, 16), capfd=capfd, grad=True))


def test_resnet18(capfd):
    torch.manual_seed(0)
    model = onnx_models.ResNet18()  # the ONNX door's model: ResNet-18's layout, small
    for m in model.modules():  # running statistics that are not the identity
        if isinstance(m, nn.BatchNorm2d):
            m.running_mean.uniform_(-0.2, 0.2)
            m.running_var.uniform_(0.5, 1.5)
    all_uopc(compare(model, torch.randn(2, 3, 32, 32), capfd=capfd))


def test_gpt2_generate_with_kv_cache(capfd):
    """transformers' generate loop with its KV cache, the model's forward compiled: a
    prefill graph, then a decode graph, whose plan is traced anew for each cache length
    (static shapes); greedy tokens equal eager's."""
    torch.manual_seed(0)
    config = transformers.GPT2Config(n_layer=2, n_head=2, n_embd=32, vocab_size=64,
                                     n_positions=32, bos_token_id=0, eos_token_id=0,
                                     pad_token_id=0)
    model = transformers.GPT2LMHeadModel(config).eval()
    ids = torch.randint(1, 64, (1, 5))
    want = model.generate(ids, max_new_tokens=3, do_sample=False)
    torch._dynamo.reset()
    model.forward = torch.compile(model.forward, backend=backend)
    with settings.override(DEBUG=1):
        got = model.generate(ids, max_new_tokens=3, do_sample=False)
    assert torch.equal(got, want)
    said = [line for line in capfd.readouterr().err.splitlines()
            if line.startswith("uopc.pytorch:")]
    assert sum("one plan" in line for line in said) == 3 and not any("PyTorch" in line
                                                                      for line in said), said
