"""Training through the PyTorch door: AOTAutograd's forward and backward graphs both run
by uopc, with a torch optimizer, give eager PyTorch's losses within 1e-4 relative."""

from __future__ import annotations

import copy

import pytest

torch = pytest.importorskip("torch")
transformers = pytest.importorskip("transformers")

from uopc import settings  # noqa: E402
from uopc.pytorch import backend  # noqa: E402

STEPS = 20


def losses(model, step_input, compiled: bool) -> list[float]:
    """The loss of each of STEPS AdamW steps of `model` (a copy is trained)."""
    model = copy.deepcopy(model)
    opt = torch.optim.AdamW(model.parameters(), lr=1e-2)
    run = torch.compile(model, backend=backend) if compiled else model
    found = []
    for k in range(STEPS):
        opt.zero_grad()
        loss = step_input(run, k)
        loss.backward()
        opt.step()
        found.append(loss.item())
    return found


def assert_same_losses(model, step_input, capfd) -> None:
    torch._dynamo.reset()
    with settings.override(DEBUG=1):
        got = losses(model, step_input, compiled=True)
    said = [line for line in capfd.readouterr().err.splitlines()
            if line.startswith("uopc.pytorch:")]
    want = losses(model, step_input, compiled=False)
    for k, (g, w) in enumerate(zip(got, want)):
        assert abs(g - w) <= 1e-4 * abs(w), f"step {k}: loss {g}, eager {w}"
    assert want[-1] < 0.8 * want[0]  # it trained
    # the forward and backward graphs ran as uopc plans
    assert sum("one plan" in line for line in said) >= 2, said
    return said


def test_mlp_training(capfd):
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(10, 32), torch.nn.ReLU(), torch.nn.Linear(32, 32),
                                torch.nn.GELU(), torch.nn.LayerNorm(32), torch.nn.Linear(32, 4))
    x, y = torch.randn(16, 10), torch.randint(0, 4, (16,))
    said = assert_same_losses(
        model, lambda run, k: torch.nn.functional.cross_entropy(run(x), y), capfd)
    assert not any("PyTorch" in line for line in said), said


def test_gpt2_training(capfd):
    torch.manual_seed(0)
    config = transformers.GPT2Config(n_layer=2, n_head=2, n_embd=32, vocab_size=64,
                                     n_positions=16, resid_pdrop=0.0, embd_pdrop=0.0,
                                     attn_pdrop=0.0, bos_token_id=0, eos_token_id=0)
    model = transformers.GPT2LMHeadModel(config)
    ids = torch.randint(0, 64, (2, 12))
    assert_same_losses(model, lambda run, k: run(ids, labels=ids).loss, capfd)
