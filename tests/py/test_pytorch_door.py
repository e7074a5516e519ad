"""The PyTorch door (uopc.pytorch): torch.compile(backend="uopc"), uopc.compile and
uopc.from_exported against eager PyTorch, on small models with seeded random weights.

Float results must match eager within 1e-4 of the output's scale (max |eager|), integer
results exactly. Each test also reads the door's DEBUG=1 lines to prove uopc ran the
graph (or, for the refusal tests, that it refused with the reason).
"""

from __future__ import annotations

import subprocess
import sys
import textwrap
import tomllib
from pathlib import Path

import pytest

torch = pytest.importorskip("torch")

import uopc  # noqa: E402
from uopc import settings  # noqa: E402
from uopc.pytorch import backend, runner  # noqa: E402
from uopc.pytorch.aten import TABLE  # noqa: E402
from uopc.pytorch.runner import GraphRunner  # noqa: E402
from uopc.runtime.engine import default_engine  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]


def close(got: torch.Tensor, want: torch.Tensor, rel: float = 1e-4) -> None:
    """Equal in shape and dtype; floats within `rel` of the output's scale, others exact."""
    assert got.shape == want.shape and got.dtype == want.dtype, (got.shape, want.shape,
                                                                  got.dtype, want.dtype)
    if want.is_floating_point():
        scale = want.abs().max().item() or 1.0
        error = (got.double() - want.double()).abs().max().item()
        assert error <= rel * scale, f"max error {error} > {rel} * {scale}"
    else:
        assert torch.equal(got, want)


def door_lines(capfd: pytest.CaptureFixture[str]) -> str:
    """What the door said under DEBUG=1 since the last read."""
    return "\n".join(line for line in capfd.readouterr().err.splitlines()
                     if line.startswith("uopc.pytorch:"))


@pytest.fixture(autouse=True)
def fresh_dynamo():
    torch._dynamo.reset()
    with settings.override(DEBUG=1):
        yield


def test_table_names_real_overloads():
    """Every entry of the ATen table is an op overload PyTorch has."""
    for name in TABLE:
        _, packet, overload = name.split(".")
        assert isinstance(getattr(getattr(torch.ops.aten, packet), overload),
                          torch._ops.OpOverload), name


def test_more_ops_against_eager(capfd):
    def f(x, idx, src):
        pooled = torch.nn.functional.adaptive_avg_pool2d(x, (2, 3))
        picked = x.index_select(2, idx).scatter_add(3, idx.reshape(1, 1, 4, 1).expand(2, 3, 4, 1),
                                                    src)
        return pooled, picked, torch.diagonal(x, 1, 2, 3) * 2, torch.maximum(x, -x).sum((1, 3))
    x = torch.randn(2, 3, 8, 9)
    idx = torch.tensor([3, 0, 7, 3])
    src = torch.randn(2, 3, 4, 1)
    for got, want in zip(torch.compile(f, backend=backend)(x, idx, src), f(x, idx, src)):
        close(got, want)
    said = door_lines(capfd)
    assert "one plan" in said and "PyTorch" not in said, said


def cnn() -> torch.nn.Module:
    torch.manual_seed(0)
    model = torch.nn.Sequential(
        torch.nn.Conv2d(3, 8, 3, padding=1), torch.nn.BatchNorm2d(8), torch.nn.ReLU(),
        torch.nn.MaxPool2d(2), torch.nn.Conv2d(8, 8, 3, stride=2, padding=1, bias=False),
        torch.nn.BatchNorm2d(8), torch.nn.ReLU(), torch.nn.AdaptiveAvgPool2d(1),
        torch.nn.Flatten(), torch.nn.Linear(8, 5))
    for m in model.modules():  # running statistics that are not the identity
        if isinstance(m, torch.nn.BatchNorm2d):
            m.running_mean.uniform_(-0.5, 0.5)
            m.running_var.uniform_(0.5, 2.0)
            m.weight.data.uniform_(0.5, 1.5)
            m.bias.data.uniform_(-0.5, 0.5)
    return model.eval()


def mlp() -> torch.nn.Module:
    torch.manual_seed(0)
    return torch.nn.Sequential(torch.nn.Linear(12, 32), torch.nn.GELU(), torch.nn.Linear(32, 32),
                               torch.nn.Tanh(), torch.nn.Linear(32, 3))


def test_mlp_inference(capfd):
    model = mlp()
    x = torch.randn(4, 12)
    with torch.no_grad():
        close(torch.compile(model, backend=backend)(x), model(x))
    said = door_lines(capfd)
    assert "one plan" in said and "PyTorch" not in said, said


def test_bf16_autocast_inference(capfd):
    """Under CPU autocast the graph computes its matmuls in bf16, as PyTorch does: the
    results agree within bf16's rounding (2**-7 of the output's scale)."""
    model = mlp()
    x = torch.randn(4, 12)
    with torch.no_grad(), torch.autocast("cpu", dtype=torch.bfloat16):
        want = model(x)
        got = torch.compile(model, backend=backend)(x)
    assert want.dtype == torch.bfloat16
    close(got, want, rel=2**-7)
    said = door_lines(capfd)
    assert "one plan" in said and "PyTorch" not in said, said


def test_cnn_inference_and_new_shapes(capfd):
    model = cnn()
    compiled = torch.compile(model, backend=backend)
    engine = default_engine()
    compiles = engine.compiles
    with torch.no_grad():
        for shape in [(2, 3, 16, 16), (3, 3, 12, 20), (2, 3, 16, 16)]:
            x = torch.randn(shape)
            close(compiled(x), model(x))
    said = door_lines(capfd)
    assert "one plan" in said and "PyTorch" not in said, said
    # a plan per input signature: the third call's is the first's (Dynamo's graph for
    # dynamic shapes, traced anew, finds it in the engine's cache)
    assert engine.compiles - compiles == 2


def test_calls_replay_the_plan_without_tracing(monkeypatch):
    """After the first call of a signature, calls run the plan: no tracing of the graph,
    new input values give new results."""
    model = mlp()
    compiled = torch.compile(model, backend=backend)
    traces = []
    trace_graph = runner.trace_graph
    monkeypatch.setattr(runner, "trace_graph", lambda *a: traces.append(1) or trace_graph(*a))
    with torch.no_grad():
        for _ in range(4):
            x = torch.randn(4, 12)
            close(compiled(x), model(x))
    assert len(traces) == 1


def test_outputs_that_are_views_of_inputs():
    def f(x):
        return x.t(), x[1:, ::2], x * 2
    x = torch.randn(4, 6)
    for got, want in zip(torch.compile(f, backend=backend)(x), f(x)):
        close(got, want)
        assert got.stride() == want.stride()


def test_integers_exact(capfd):
    def f(a, b):
        c = (a * 3 + b) // 2 - (a % 5)
        return c, c.argmax(dim=1), (c > 0).sum(dim=0), torch.maximum(a, b).amax(dim=-1)
    a = torch.randint(-50, 50, (6, 7))
    b = torch.randint(-50, 50, (6, 7))
    for got, want in zip(torch.compile(f, backend=backend)(a, b), f(a, b)):
        close(got, want)
    assert "one plan" in door_lines(capfd)


def test_graph_break_on_an_unknown_op(capfd):
    def f(x):
        y = torch.digamma(x.exp() + 1.0)  # no uopc entry: runs in PyTorch
        return (y * 2).softmax(-1) + x.sum()
    x = torch.randn(3, 5)
    close(torch.compile(f, backend=backend)(x), f(x))
    said = door_lines(capfd)
    assert "graph break: aten.digamma.default is not in uopc's ATen table" in said, said


def test_unsupported_dtype_graph_breaks(capfd):
    def f(x):
        return x * x + 1
    x = torch.randn(4).to(torch.complex64)
    close(torch.compile(f, backend=backend)(x), f(x))
    assert "complex64, which uopc has no element type for" in door_lines(capfd)


def test_other_devices_run_in_pytorch(capfd):
    gm = torch.fx.symbolic_trace(lambda x: torch.ops.aten.mul.Tensor(x, x))
    runner = GraphRunner(gm)
    out = runner(torch.empty(3, device="meta"))[0]
    assert out.device.type == "meta"
    assert "is on meta: the uopc door runs CPU tensors" in door_lines(capfd)
    close(runner(torch.arange(3.0))[0], torch.arange(3.0) ** 2)


def test_inplace_mutation_of_inputs_keeps_pytorch_semantics():
    def f(x, y):
        x.add_(y)
        return x * 2
    x, y = torch.randn(5), torch.randn(5)
    x_eager = x.clone()
    want = f(x_eager, y)
    got = torch.compile(f, backend=backend)(x, y)
    close(got, want)
    close(x, x_eager)


def test_compile_and_from_exported(capfd):
    model = cnn()
    x = torch.randn(2, 3, 16, 16)
    with torch.no_grad():
        want = model(x)
        close(uopc.compile(model, [x])(x), want)
        close(uopc.from_exported(torch.export.export(model, (x,)))(x), want)
        close(uopc.compile(lambda a, b: (a @ b).relu(), [x[0, 0], x[1, 0]])(x[0, 0], x[1, 0]),
              (x[0, 0] @ x[1, 0]).relu())
        with pytest.raises(ValueError, match=r"exported as torch.float32\[2, 3, 16, 16\], "
                                             r"got torch.float32\[1, 3, 16, 16\]"):
            uopc.compile(model, [x])(x[:1])
    assert "PyTorch" not in door_lines(capfd)


def test_entry_point_finds_the_backend(tmp_path):
    """pyproject's torch_dynamo_backends entry point, installed as package metadata, lets
    torch.compile(backend="uopc") find uopc with no import of uopc."""
    declared = tomllib.loads((ROOT / "pyproject.toml").read_text())
    points = declared["project"]["entry-points"]["torch_dynamo_backends"]
    info = tmp_path / "uopc_door-0.0.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: uopc-door\nVersion: 0.0\n")
    (info / "entry_points.txt").write_text(
        "[torch_dynamo_backends]\n" + "".join(f"{k} = {v}\n" for k, v in points.items()))
    script = textwrap.dedent("""
        import sys, torch
        f = torch.compile(lambda x: (x * 2).relu(), backend="uopc")
        x = torch.randn(8)
        assert torch.equal(f(x), (x * 2).relu())
        assert "uopc.pytorch" in sys.modules
        print("ok")
    """)
    env = {"PYTHONPATH": f"{tmp_path}:{ROOT}", "PATH": "/usr/bin:/bin"}
    done = subprocess.run([sys.executable, "-c", script], env=env, capture_output=True,
                          text=True, timeout=300)
    assert done.stdout.strip() == "ok", done.stderr[-2000:]
