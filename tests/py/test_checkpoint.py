"""Checkpoints: uopc.save/load round trips, atomic writes, state-dict checks, and a
training process killed mid-run that resumes to the same losses as an uninterrupted run."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest
import safetensors.numpy

import uopc
from uopc import Tensor, manual_seed, nn
from uopc.frontend.checkpoint import CheckpointError, load_state_dict, state_dict
from uopc.frontend.nn.gpt import GPT
from uopc.frontend.optim import SGD, AdamW
from uopc.uopdialect.dtypes import DTYPES

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"


@pytest.mark.parametrize("dtype", list(DTYPES))
def test_every_element_type_round_trips_bit_for_bit(tmp_path, dtype):
    """Each of uop's element types is stored under its safetensors name and read back as
    the same numpy dtype with the same bits (bf16 as ml_dtypes.bfloat16, which
    safetensors' own numpy reader refuses)."""
    d = DTYPES[dtype]
    raw = np.random.default_rng(0).integers(0, 256, 8 * d.itemsize, dtype=np.uint8)
    values = raw.view(d.numpy) if d.kind != "bool" else raw % 2 == 1
    uopc.save({"x": values.reshape(2, -1)}, tmp_path / "c.safetensors")
    back = uopc.load(tmp_path / "c.safetensors")["x"]
    assert back.dtype == d.numpy and back.shape == (2, values.size // 2)
    assert back.tobytes() == values.tobytes()
    header = json.loads((tmp_path / "c.safetensors").read_bytes()[8:][:int.from_bytes(
        (tmp_path / "c.safetensors").read_bytes()[:8], "little")])
    assert header["x"]["dtype"] == d.safetensors


def test_save_load_round_trip_keeps_values_dtypes_and_metadata(tmp_path):
    state = {"model": {"blocks.0.w": Tensor(np.arange(6, dtype=np.float32).reshape(2, 3)),
                       "half": np.array([1.5, -2], np.float16),
                       "ids": np.array([[3, 4]], np.int32), "mask": np.array([True, False]),
                       "scalar": np.array(0.25, np.float32)},
             "step": 12, "lr": 0.1, "name": "run", "rng": {"state": 2**127 + 3},
             "history": [1.0, 0.5], "none": None}
    uopc.save(state, tmp_path / "c.safetensors")
    back = uopc.load(tmp_path / "c.safetensors")
    assert {k: v for k, v in back.items() if k != "model"} == \
        {k: v for k, v in state.items() if k != "model"}
    assert np.array_equal(back["model"]["blocks.0.w"], state["model"]["blocks.0.w"].numpy())
    for name in ("half", "ids", "mask", "scalar"):
        assert back["model"][name].dtype == state["model"][name].dtype, name
        assert back["model"][name].shape == state["model"][name].shape, name
        assert np.array_equal(back["model"][name], state["model"][name]), name
    # a plain safetensors file: other readers see the tensors by key path
    assert set(safetensors.numpy.load_file(tmp_path / "c.safetensors")) == \
        {f"model/{k}" for k in state["model"]}


def test_a_crash_mid_write_leaves_the_old_checkpoint(tmp_path, monkeypatch):
    path = tmp_path / "c.safetensors"
    uopc.save({"w": np.ones(4, np.float32)}, path)

    def half_written(tensors, filename, metadata=None):
        Path(filename).write_bytes(b"\x10\x00\x00")  # a few bytes, then the "crash"
        raise OSError("disk full")

    monkeypatch.setattr(safetensors.numpy, "save_file", half_written)
    with pytest.raises(CheckpointError, match="disk full.*previous checkpoint.*unchanged"):
        uopc.save({"w": np.zeros(4, np.float32)}, path)
    assert np.array_equal(uopc.load(path)["w"], np.ones(4, np.float32))
    assert [p.name for p in tmp_path.iterdir()] == ["c.safetensors"]  # no temp file left


def test_load_refuses_missing_foreign_and_garbage_files(tmp_path):
    with pytest.raises(CheckpointError, match="no such checkpoint file"):
        uopc.load(tmp_path / "none.safetensors")
    (tmp_path / "junk").write_bytes(b"\x80\x04not a checkpoint")
    with pytest.raises(CheckpointError, match="not a readable safetensors checkpoint"):
        uopc.load(tmp_path / "junk")
    safetensors.numpy.save_file({"w": np.ones(2, np.float32)}, tmp_path / "plain")
    with pytest.raises(CheckpointError, match="save it with uopc.save"):
        uopc.load(tmp_path / "plain")
    with pytest.raises(CheckpointError, match="'model/opt' is a object"):
        uopc.save({"model": {"opt": object()}}, tmp_path / "x")
    with pytest.raises(CheckpointError, match="cannot write a checkpoint there"):
        uopc.save({}, tmp_path / "no" / "x")


def small_gpt(seed: int = 0) -> GPT:
    manual_seed(seed)
    return GPT(vocab=5, context=4, dim=8, heads=2, layers=1)


def test_module_state_dict_names_parameters_by_attribute_path(tmp_path):
    model = small_gpt()
    state = state_dict(model)
    assert "blocks.0.attn.qkv.weight" in state and "ln_f.bias" in state
    assert len(state) == len(nn.parameters(model))
    uopc.save({"model": state}, tmp_path / "m")
    other = small_gpt(seed=1)
    load_state_dict(other, uopc.load(tmp_path / "m")["model"])
    for name, value in state_dict(other).items():
        assert np.array_equal(value, state[name]), name


def test_module_load_names_the_mismatching_tensor():
    model = small_gpt()
    state = state_dict(model)
    with pytest.raises(CheckpointError, match=r"parameter 'head.bias': expected shape \(5,\), "
                                              r"found \(6,\)"):
        load_state_dict(model, {**state, "head.bias": np.zeros(6, np.float32)})
    with pytest.raises(CheckpointError, match="parameter 'head.bias': expected dtype f32"):
        load_state_dict(model, {**state, "head.bias": np.zeros(5, np.int32)})
    del state["ln_f.weight"]
    with pytest.raises(CheckpointError, match=r"missing \['ln_f.weight'\]"):
        load_state_dict(model, {**state, "extra": np.zeros(1, np.float32)})


@pytest.mark.parametrize("make", [lambda ps: AdamW(ps, lr=0.01, wd=0.1),
                                  lambda ps: SGD(ps, lr=0.1, momentum=0.9)],
                         ids=["adamw", "sgd"])
def test_optimizer_state_dict_continues_bit_identically(tmp_path, make):
    xs = Tensor(np.linspace(-1, 1, 12, dtype=np.float32).reshape(4, 3))

    def run(model, opt, steps):
        for _ in range(steps):
            opt.zero_grad()
            loss = (model(xs) * model(xs)).mean()
            loss.backward()
            opt.step(loss)
        return state_dict(model)

    manual_seed(0)
    model = nn.Linear(3, 2)
    opt = make(nn.parameters(model))
    run(model, opt, 3)
    uopc.save({"model": state_dict(model), "opt": opt.state_dict()}, tmp_path / "c")
    expected = run(model, opt, 2)

    manual_seed(5)
    resumed = nn.Linear(3, 2)
    resumed_opt = make(nn.parameters(resumed))
    saved = uopc.load(tmp_path / "c")
    load_state_dict(resumed, saved["model"])
    resumed_opt.load_state_dict(saved["opt"])
    assert resumed_opt.steps == 3
    got = run(resumed, resumed_opt, 2)
    for name in expected:
        assert np.array_equal(got[name], expected[name]), name


def test_optimizer_load_names_the_mismatching_state():
    manual_seed(0)
    opt = AdamW(nn.parameters(nn.Linear(3, 2)))
    state = opt.state_dict()
    state["state"]["1"]["exp_avg_sq"] = np.zeros(3, np.float32)
    with pytest.raises(CheckpointError, match=r"optimizer state '1/exp_avg_sq': expected "
                                              r"shape \(2,\), found \(3,\)"):
        opt.load_state_dict(state)
    sgd = SGD(nn.parameters(nn.Linear(3, 2)), momentum=0.9)
    with pytest.raises(CheckpointError, match="SGD hyperparameters: missing"):
        sgd.load_state_dict(opt.state_dict())


GPT_RUN = ["--steps", "100", "--context", "8", "--dim", "16", "--heads", "2", "--layers", "1",
           "--batch", "4", "--sample", "5", "--log-every", "0", "--checkpoint-every", "5"]


def gpt_process(corpus: Path, checkpoint: Path, *extra: str) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, str(EXAMPLES / "gpt.py"), str(corpus), *GPT_RUN,
                             "--checkpoint", str(checkpoint), *extra],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def finish(process: subprocess.Popen) -> str:
    out, err = process.communicate(timeout=120)
    assert process.returncode == 0, err
    return out


def test_training_killed_mid_run_resumes_to_the_same_losses(tmp_path):
    corpus = tmp_path / "abc.txt"
    corpus.write_text("abcdefgh " * 200)
    uninterrupted = finish(gpt_process(corpus, tmp_path / "full.safetensors"))

    crashed = tmp_path / "crashed.safetensors"
    process = gpt_process(corpus, crashed)
    deadline = time.monotonic() + 120
    while not crashed.exists() and process.poll() is None and time.monotonic() < deadline:
        time.sleep(0.005)
    os.kill(process.pid, signal.SIGKILL)
    process.communicate()
    saved_step = uopc.load(crashed)["optimizer"]["step"]
    assert 5 <= saved_step < 100, "the process was not killed mid-run"

    resumed = finish(gpt_process(corpus, crashed, "--resume"))
    assert f"resumed {crashed} after step {saved_step}" in resumed
    full, after_crash = uopc.load(tmp_path / "full.safetensors"), uopc.load(crashed)
    assert len(full["losses"]) == 100
    assert after_crash["losses"] == full["losses"]  # bit-identical floats
    for name, value in full["model"].items():
        assert np.array_equal(after_crash["model"][name], value), name
    # the same generator state afterwards: the same sampled text
    assert resumed.split("---- sample ----")[1] == uninterrupted.split("---- sample ----")[1]


def test_mnist_example_resumes_across_an_epoch_boundary(tmp_path, capsys):
    from test_datasets import fake_mnist, run_example

    fake_mnist(tmp_path)  # 512 digits: 8 batches of 64 per epoch
    run = ["--data", str(tmp_path), "--batch", "64", "--log-every", "0",
           "--checkpoint-every", "3", "--checkpoint"]
    assert run_example("mnist_mlp", [*run, str(tmp_path / "full"), "--steps", "12"]) == 0
    assert run_example("mnist_mlp", [*run, str(tmp_path / "part"), "--steps", "7"]) == 0
    assert run_example("mnist_mlp", [*run, str(tmp_path / "part"), "--steps", "12",
                                     "--resume"]) == 0
    assert "after step 7" in capsys.readouterr().out
    full, part = uopc.load(tmp_path / "full"), uopc.load(tmp_path / "part")
    assert part["losses"] == full["losses"] and len(full["losses"]) == 12
    for name, value in full["model"].items():
        assert np.array_equal(part["model"][name], value), name


def test_resume_without_a_checkpoint_file_is_a_clean_error(tmp_path, capsys):
    from test_datasets import fake_mnist, run_example

    fake_mnist(tmp_path, n_train=64, n_test=16)
    assert run_example("mnist_mlp", ["--data", str(tmp_path), "--checkpoint",
                                     str(tmp_path / "none"), "--resume"]) == 1
    assert "none: no such checkpoint file" in capsys.readouterr().err


def test_optimizer_load_refuses_malformed_state():
    manual_seed(0)
    opt = SGD(nn.parameters(nn.Linear(3, 2)), momentum=0.9)
    state = opt.state_dict()
    with pytest.raises(CheckpointError, match="SGD lr: expected a finite number, found 'fast'"):
        opt.load_state_dict({**state, "hyperparameters": {**state["hyperparameters"],
                                                          "lr": "fast"}})
    with pytest.raises(CheckpointError, match="SGD state of parameter 0: expected a dict"):
        opt.load_state_dict({**state, "state": {**state["state"], "0": np.zeros(3)}})
