"""The real models of the ONNX door (tests/py/test_onnx_models.py, benchmarks/onnx_bench.py),
built in torch with fixed seeds: an MLP, a CNN, ResNet-18's layout at a small width, a
torch.nn.TransformerEncoderLayer and a two-layer GPT-2 (transformers, tiny config), each
with example inputs; `export` writes one to .onnx with torch.onnx.export (offline)."""
import logging
import warnings
from pathlib import Path

import torch
from torch import nn


class CNN(nn.Module):
    def __init__(self):
        super().__init__()
        self.features = nn.Sequential(
            nn.Conv2d(3, 8, 3, padding=1), nn.BatchNorm2d(8), nn.ReLU(), nn.MaxPool2d(2),
            nn.Conv2d(8, 16, 3, padding=1), nn.ReLU(), nn.AdaptiveAvgPool2d(1))
        self.head = nn.Linear(16, 10)

    def forward(self, x):
        return self.head(self.features(x).flatten(1))


class Block(nn.Module):
    def __init__(self, cin, cout, stride):
        super().__init__()
        self.conv1 = nn.Conv2d(cin, cout, 3, stride, 1, bias=False)
        self.bn1 = nn.BatchNorm2d(cout)
        self.conv2 = nn.Conv2d(cout, cout, 3, 1, 1, bias=False)
        self.bn2 = nn.BatchNorm2d(cout)
        self.down = None if stride == 1 and cin == cout else nn.Sequential(
            nn.Conv2d(cin, cout, 1, stride, bias=False), nn.BatchNorm2d(cout))

    def forward(self, x):
        y = torch.relu(self.bn1(self.conv1(x)))
        y = self.bn2(self.conv2(y))
        return torch.relu(y + (x if self.down is None else self.down(x)))


class ResNet18(nn.Module):
    """ResNet-18's layout (a 7x7 stem, max pool, four stages of two basic blocks, global
    pool, linear head) at a small width."""
    def __init__(self, width=8, classes=10):
        super().__init__()
        self.stem = nn.Sequential(nn.Conv2d(3, width, 7, 2, 3, bias=False),
                                  nn.BatchNorm2d(width), nn.ReLU(), nn.MaxPool2d(3, 2, 1))
        blocks, cin = [], width
        for k, cout in enumerate([width, 2 * width, 4 * width, 8 * width]):
            blocks += [Block(cin, cout, 1 if k == 0 else 2), Block(cout, cout, 1)]
            cin = cout
        self.blocks = nn.Sequential(*blocks)
        self.head = nn.Linear(cin, classes)

    def forward(self, x):
        return self.head(self.blocks(self.stem(x)).mean((2, 3)))


NAMES = ("mlp", "cnn", "resnet18", "transformer", "gpt2")


def build(name):
    """The model `name` of NAMES in eval mode, and its example inputs."""
    torch.manual_seed(0)
    if name == "mlp":
        m = nn.Sequential(nn.Linear(32, 64), nn.GELU(), nn.Linear(64, 10))
        args = (torch.randn(4, 32),)
    elif name == "cnn":
        m, args = CNN(), (torch.randn(2, 3, 16, 16),)
    elif name == "resnet18":
        m, args = ResNet18(), (torch.randn(1, 3, 32, 32),)
    elif name == "transformer":
        m = nn.TransformerEncoderLayer(32, 4, 64, dropout=0.0, batch_first=True)
        args = (torch.randn(2, 8, 32),)
    elif name == "gpt2":
        from transformers import GPT2Config, GPT2LMHeadModel
        cfg = GPT2Config(vocab_size=128, n_positions=16, n_embd=32, n_layer=2, n_head=4,
                         resid_pdrop=0.0, embd_pdrop=0.0, attn_pdrop=0.0, use_cache=False)
        m = GPT2LMHeadModel(cfg)
        args = (torch.randint(0, 128, (1, 12)),)
    m.eval()
    for mod in m.modules():  # batch norm statistics that are not the identity
        if isinstance(mod, nn.BatchNorm2d):
            mod.running_mean.uniform_(-0.5, 0.5)
            mod.running_var.uniform_(0.5, 1.5)
    return m, args


class _Logits(nn.Module):
    """A transformers model's logits as the only output."""

    def __init__(self, model):
        super().__init__()
        self.model = model

    def forward(self, x):
        return self.model(x).logits


def export(name, folder: Path) -> Path:
    """Model `name` exported to folder/name.onnx with torch.onnx.export (dynamo)."""
    model, args = build(name)
    if name == "gpt2":
        model = _Logits(model)
    path = Path(folder) / f"{name}.onnx"
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        logging.disable(logging.WARNING)
        try:
            program = torch.onnx.export(model, args, dynamo=True, verbose=False)
        finally:
            logging.disable(logging.NOTSET)
    program.save(str(path))
    return path
