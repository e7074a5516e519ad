"""The MLIR door on real exports: ordinary PyTorch modules, exported as they are by
torch-mlir (`torch_mlir.fx.export_and_import(..., output_type="linalg-on-tensors")`: weights
as `dense_resource` blobs, f64 statistics, i64 indices, `linalg.index`, named convolutions
and poolings, multi-result generics, erf), compile through uopc and give torch's results:
f32 within 1e-4 of the output's scale (max |uopc - torch| / max |torch|), integers exactly.

Each module goes three ways:
- the Python entry point `uopc.compile_text(text)`;
- `uopc-opt -p uop-from-linalg` (all modules in one `--split-input-file` run), whose uop IR
  is then compiled and run, and `uopc-opt -p 'uop-from-linalg,uop-to-c' -t c`, which must
  print C for every module;
- `uopc-run program.mlir in.npy -o out.npy`.

The stock `xdsl-opt` (uopc's plugin) parses every export, and mutated exports give
diagnostics through uopc-opt, never a crash.

torch-mlir is a test-only dependency (scripts/install-test-deps installs it after
torch==2.13.0); without it, or without torch, the module skips.
"""

from __future__ import annotations

import functools
import random
import re
import subprocess
import sys
import sysconfig
from pathlib import Path

import numpy as np
import pytest

torch = pytest.importorskip("torch")
fx = pytest.importorskip("torch_mlir.fx")
nn = torch.nn
F = torch.nn.functional

from uopc.runtime.driver import compile_program, compile_text, parse_program  # noqa: E402

SCALE_TOLERANCE = 1e-4
FILECHECK = Path(__file__).resolve().parents[1] / "filecheck/passes"


class MLP(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1, self.fc2 = nn.Linear(16, 32), nn.Linear(32, 8)

    def forward(self, x):
        return self.fc2(torch.relu(self.fc1(x)))


class LayerNormSoftmax(nn.Module):
    def __init__(self):
        super().__init__()
        self.norm = nn.LayerNorm(16)

    def forward(self, x):
        return torch.softmax(self.norm(x), -1)


class CausalSelfAttention(nn.Module):
    def __init__(self, dim: int = 16, heads: int = 2):
        super().__init__()
        self.qkv, self.proj, self.heads = nn.Linear(dim, 3 * dim), nn.Linear(dim, dim), heads

    def forward(self, x):
        b, t, c = x.shape
        q, k, v = (z.view(b, t, self.heads, c // self.heads).transpose(1, 2)
                   for z in self.qkv(x).split(c, 2))
        scores = q @ k.transpose(-2, -1) / (c // self.heads) ** 0.5
        future = torch.arange(t)[None, :] > torch.arange(t)[:, None]
        weights = scores.masked_fill(future, float("-inf")).softmax(-1)
        return self.proj((weights @ v).transpose(1, 2).reshape(b, t, c))


class ConvBnReluPool(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv, self.bn = nn.Conv2d(3, 8, 3, padding=1), nn.BatchNorm2d(8)

    def forward(self, x):
        return F.max_pool2d(torch.relu(self.bn(self.conv(x))), 2)


class BasicBlock(nn.Module):
    def __init__(self, c: int = 8):
        super().__init__()
        self.conv1, self.bn1 = nn.Conv2d(c, c, 3, padding=1, bias=False), nn.BatchNorm2d(c)
        self.conv2, self.bn2 = nn.Conv2d(c, c, 3, padding=1, bias=False), nn.BatchNorm2d(c)

    def forward(self, x):
        return torch.relu(x + self.bn2(self.conv2(torch.relu(self.bn1(self.conv1(x))))))


class DepthwiseGrouped(nn.Module):
    def __init__(self):
        super().__init__()
        self.depthwise = nn.Conv2d(8, 8, 3, padding=1, groups=8)
        self.grouped = nn.Conv2d(8, 16, 3, stride=2, groups=4)

    def forward(self, x):
        return self.grouped(self.depthwise(x))


class GPT2Block(nn.Module):
    def __init__(self, dim: int = 16):
        super().__init__()
        self.ln1, self.attn, self.ln2 = nn.LayerNorm(dim), CausalSelfAttention(dim), nn.LayerNorm(dim)
        self.up, self.down = nn.Linear(dim, 4 * dim), nn.Linear(4 * dim, dim)

    def forward(self, x):
        x = x + self.attn(self.ln1(x))
        return x + self.down(F.gelu(self.up(self.ln2(x))))  # erf GELU


class EmbeddingMean(nn.Module):
    def __init__(self):
        super().__init__()
        self.embed = nn.Embedding(50, 16)

    def forward(self, ids):
        return self.embed(ids).mean(1)


class ArgExtremes(nn.Module):
    """Integer outputs: argmax, max(dim)'s indices and argmin."""

    def forward(self, x):
        return x.argmax(-1), x.max(0).indices, x.argmin(1)


class SmallCNN(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv1, self.conv2 = nn.Conv2d(1, 4, 3), nn.Conv2d(4, 8, 3, stride=2)
        self.fc = nn.Linear(8, 10)

    def forward(self, x):
        x = F.max_pool2d(F.relu(self.conv1(x)), 2)
        x = F.adaptive_avg_pool2d(F.relu(self.conv2(x)), 1).flatten(1)
        return self.fc(x)


class SmallGPT(nn.Module):
    def __init__(self, vocab: int = 32, dim: int = 16, context: int = 8):
        super().__init__()
        self.tokens, self.positions = nn.Embedding(vocab, dim), nn.Embedding(context, dim)
        self.blocks = nn.Sequential(GPT2Block(dim), GPT2Block(dim))
        self.ln, self.head = nn.LayerNorm(dim), nn.Linear(dim, vocab, bias=False)

    def forward(self, ids):
        x = self.tokens(ids) + self.positions(torch.arange(ids.shape[1]))
        return self.head(self.ln(self.blocks(x)))


def _cases() -> dict[str, tuple]:
    """name -> (module factory, input factory), each seeded where it is built."""
    def encoder():
        return nn.TransformerEncoderLayer(16, 2, 32, dropout=0.0, batch_first=True)

    def randn(*shape):
        return lambda: (torch.randn(*shape),)

    return {
        "mlp": (MLP, randn(4, 16)),
        "layernorm_softmax": (LayerNormSoftmax, randn(4, 16)),
        "causal_attention": (CausalSelfAttention, randn(2, 8, 16)),
        "conv_bn_relu_pool": (ConvBnReluPool, randn(1, 3, 8, 8)),
        "resnet_basic_block": (BasicBlock, randn(1, 8, 8, 8)),
        "depthwise_grouped_conv": (DepthwiseGrouped, randn(1, 8, 9, 9)),
        "gpt2_block": (GPT2Block, randn(2, 8, 16)),
        "transformer_encoder_layer": (encoder, randn(2, 8, 16)),
        "embedding_mean": (EmbeddingMean, lambda: (torch.randint(0, 50, (2, 6)),)),
        "arg_extremes": (ArgExtremes, randn(6, 10)),
        "small_cnn": (SmallCNN, randn(2, 1, 12, 12)),
        "small_gpt": (SmallGPT, lambda: (torch.randint(0, 32, (2, 8)),)),
    }


CASES = _cases()


@functools.cache
def exported(name: str) -> tuple[str, list[np.ndarray], list[np.ndarray]]:
    """(the linalg-on-tensors text, the inputs, torch's outputs) of case `name`."""
    make_module, make_inputs = CASES[name]
    torch.manual_seed(0)
    module = make_module().eval()  # BatchNorm with its running statistics
    inputs = make_inputs()
    text = str(fx.export_and_import(module, *inputs, output_type="linalg-on-tensors"))
    with torch.no_grad():
        outputs = module(*inputs)
    outputs = outputs if isinstance(outputs, tuple) else (outputs,)
    return text, [i.numpy() for i in inputs], [o.numpy() for o in outputs]


def assert_matches(got: list[np.ndarray], want: list[np.ndarray]) -> None:
    assert len(got) == len(want)
    for g, w in zip(got, want):
        g = np.asarray(g)
        assert g.shape == w.shape and g.dtype == w.dtype, (g.shape, g.dtype, w.shape, w.dtype)
        if w.dtype.kind == "f":
            scale = float(np.abs(w).max()) or 1.0
            assert float(np.abs(g - w).max()) <= SCALE_TOLERANCE * scale
        else:
            np.testing.assert_array_equal(g, w)


@pytest.mark.parametrize("name", list(CASES))
def test_python_entry_point(name):
    text, inputs, want = exported(name)
    assert_matches(list(compile_text(text)(*inputs)), want)


@pytest.fixture(scope="module")
def opt_outputs(tmp_path_factory) -> dict[str, str]:
    """uopc-opt -p uop-from-linalg on every export in one --split-input-file run."""
    path = tmp_path_factory.mktemp("opt") / "all.mlir"
    path.write_text("\n// -----\n".join(exported(name)[0] for name in CASES))
    done = subprocess.run([sys.executable, "-m", "uopc.tools.opt", str(path), "-p",
                           "uop-from-linalg", "--split-input-file"],
                          capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr
    parts = done.stdout.split("// -----")
    assert len(parts) == len(CASES)
    return dict(zip(CASES, parts))


@pytest.mark.parametrize("name", list(CASES))
def test_uopc_opt(name, opt_outputs):
    text, inputs, want = exported(name)
    module = parse_program(opt_outputs[name], "mlir")
    assert not any(op.name.startswith(("linalg.", "tensor.")) for op in module.walk())
    assert_matches(list(compile_program(module, "main")(*inputs)), want)


def test_uopc_opt_to_c(tmp_path):
    """The whole pipeline to C, as the issue spells it, for every export in one run."""
    path = tmp_path / "all.mlir"
    path.write_text("\n// -----\n".join(exported(name)[0] for name in CASES))
    done = subprocess.run([sys.executable, "-m", "uopc.tools.opt", str(path), "-p",
                           "uop-from-linalg,uop-to-c", "-t", "c", "--split-input-file"],
                          capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr
    assert len(re.findall(r"^void main_fn\(.*\) \{$", done.stdout, re.MULTILINE)) == len(CASES)


@pytest.mark.parametrize("name", list(CASES))
def test_uopc_run(name, tmp_path):
    text, inputs, want = exported(name)
    program = tmp_path / f"{name}.mlir"
    program.write_text(text)
    args = [sys.executable, "-m", "uopc.tools.run", str(program)]
    for k, x in enumerate(inputs):
        np.save(tmp_path / f"in{k}.npy", x)
        args.append(str(tmp_path / f"in{k}.npy"))
    for k in range(len(want)):
        args += ["-o", str(tmp_path / f"out{k}.npy")]
    done = subprocess.run(args, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr
    assert_matches([np.load(tmp_path / f"out{k}.npy") for k in range(len(want))], want)


def _stock_tool(name: str) -> str:
    return str(Path(sysconfig.get_path("scripts")) / name)


def test_stock_xdsl_opt_reads_what_uopc_opt_reads(tmp_path):
    """The plugin entry point gives the stock xdsl-opt uopc's linalg extensions (named
    ops, multi-result generics): every export and the importer's FileCheck inputs parse."""
    texts = [exported(name)[0] for name in CASES]
    texts += [(FILECHECK / name).read_text() for name in (
        "from_linalg.mlir", "from_linalg_frontends.mlir", "inputs/linalg_mlp.mlir",
        "inputs/linalg_pool_argmax.mlir")]
    path = tmp_path / "all.mlir"
    path.write_text("\n// -----\n".join(texts))
    done = subprocess.run([_stock_tool("xdsl-opt"), str(path), "--split-input-file"],
                          capture_output=True, text=True, timeout=600)
    assert done.returncode == 0 and not done.stderr, done.stderr


def mutate(text: str, rng: random.Random) -> str:
    """`text` with one random edit of one line: deleted, duplicated, a number changed, an
    element type changed, a token dropped, or two SSA names swapped."""
    lines = text.split("\n")
    editable = [k for k, line in enumerate(lines)
                if line.strip() and len(line) < 400 and not line.lstrip().startswith('"')]
    k = rng.choice(editable)
    line = lines[k]
    edit = rng.randrange(6)
    if edit == 0:
        del lines[k]
    elif edit == 1:
        lines.insert(k, line)
    elif edit == 2 and (numbers := list(re.finditer(r"\b\d+\b", line))):
        m = rng.choice(numbers)
        lines[k] = line[:m.start()] + str(rng.choice([0, 1, 2, 3, 7, 64, -1])) + line[m.end():]
    elif edit == 3:
        lines[k] = line.replace("f32", rng.choice(["f64", "i64", "i1", "f16", "index"]), 1)
    elif edit == 4 and len(tokens := line.split(" ")) > 2:
        del tokens[rng.randrange(1, len(tokens))]
        lines[k] = " ".join(tokens)
    elif edit == 5 and len(names := sorted(set(re.findall(r"%[\w#]+", line)))) >= 2:
        a, b = rng.sample(names, 2)
        lines[k] = line.replace(a, "\0").replace(b, a).replace("\0", b)
    return "\n".join(lines)


MUTANTS = 120


def test_mutants_give_diagnostics_not_crashes(tmp_path):
    """Mutated exports (and the importer's FileCheck input) through uopc-opt: each chunk
    imports or gets a diagnostic; none crashes the parser, a verifier or the pass (a
    Python traceback, or the tool's "cannot handle this input" report of one)."""
    rng = random.Random(26)
    sources = [exported(name)[0] for name in CASES if name != "small_gpt"]
    sources.append((FILECHECK / "from_linalg_frontends.mlir").read_text())
    path = tmp_path / "mutants.mlir"
    path.write_text("\n// -----\n".join(mutate(rng.choice(sources), rng)
                                        for _ in range(MUTANTS)))
    done = subprocess.run([sys.executable, "-m", "uopc.tools.opt", str(path), "-p",
                           "uop-from-linalg", "--split-input-file"],
                          capture_output=True, text=True, timeout=600)
    assert "Traceback" not in done.stderr
    assert "cannot handle this input" not in done.stderr, done.stderr
    assert done.stderr.count("error") >= MUTANTS // 4  # the mutations did break programs
