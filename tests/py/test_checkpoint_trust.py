"""Malformed checkpoints and optimizer states are refused cleanly: `uopc.load` raises
CheckpointError (never TypeError, RecursionError or a bare ValueError) on hostile
metadata, and `Optimizer.load_state_dict` checks everything before it assigns anything,
so a refused state leaves the optimizer exactly as it was."""

from __future__ import annotations

import json
import struct

import numpy as np
import pytest

import uopc
from uopc import manual_seed, nn
from uopc.frontend.checkpoint import CheckpointError
from uopc.frontend.optim import SGD, AdamW


def _write(path, tree_text, tensors=None):
    """A safetensors file whose uopc tree metadata is `tree_text`, verbatim."""
    tensors = tensors or {"x": np.arange(3, dtype=np.float32)}
    header, data, offset = {}, b"", 0
    for name, array in tensors.items():
        raw = array.tobytes()
        header[name] = {"dtype": "F32", "shape": list(array.shape),
                        "data_offsets": [offset, offset + len(raw)]}
        data += raw
        offset += len(raw)
    header["__metadata__"] = {"uopc.tree": tree_text}
    text = json.dumps(header).encode()
    path.write_bytes(struct.pack("<Q", len(text)) + text + data)
    return path


TREES = {
    "nested beyond the JSON parser": "[" * 100_000 + "]" * 100_000,
    "nested beyond MAX_DEPTH": '{"a":' + "[" * 500 + "1" + "]" * 500 + "}",
    "list as tensor reference": '{"w": {"$tensor": ["x"]}}',
    "dict as tensor reference": '{"w": {"$tensor": {"x": 1}}}',
    "number as tensor reference": '{"w": {"$tensor": 7}}',
    "a 5,000-digit integer": '{"step": ' + "9" * 5000 + "}",
    "a string tree": '"x"',
    "a list tree": '[{"$tensor": "x"}]',
    "a tensor reference as tree": '{"$tensor": "x"}',
    "not JSON": "{step: 1",
}


@pytest.mark.parametrize("tree", TREES.values(), ids=TREES.keys())
def test_malformed_metadata_is_a_checkpoint_error(tmp_path, tree):
    path = _write(tmp_path / "bad.safetensors", tree)
    with pytest.raises(CheckpointError, match=str(path)) as caught:
        uopc.load(path)
    assert type(caught.value) is CheckpointError


def test_bf16_and_deep_but_reasonable_trees_load(tmp_path):
    """Edge cases that are valid: a bf16 tensor (scalar and empty too) and a tree as deep
    as a real state dict gets."""
    import ml_dtypes

    bf16 = np.array([1.5, -0.0, np.inf], dtype=ml_dtypes.bfloat16)
    state = {"w": bf16, "scalar": bf16[:1].reshape(()), "empty": bf16[:0],
             "deep": {"a": {"b": {"c": [[{"d": [1, 2]}]]}}}}
    uopc.save(state, tmp_path / "ok.safetensors")
    back = uopc.load(tmp_path / "ok.safetensors")
    assert back["w"].dtype == bf16.dtype and back["w"].tobytes() == bf16.tobytes()
    assert back["scalar"].shape == () and back["empty"].shape == (0,)
    assert back["deep"] == state["deep"]


def _snapshot(opt):
    state = opt.state_dict()
    return state["step"], dict(state["hyperparameters"]), {
        k: {n: a.copy() for n, a in v.items()} for k, v in state["state"].items()}


def _same(a, b):
    return a[0] == b[0] and a[1] == b[1] and all(
        np.array_equal(a[2][k][n], b[2][k][n]) for k in a[2] for n in a[2][k])


@pytest.mark.parametrize("step", [float("inf"), float("nan"), -5, 2.7, "3", True, None,
                                  10 ** 5000, -1e-300],
                         ids=["inf", "nan", "-5", "2.7", "str", "bool", "None", "huge",
                              "tiny-negative"])
@pytest.mark.parametrize("make", [lambda ps: AdamW(ps, lr=0.01),
                                  lambda ps: SGD(ps, lr=0.1, momentum=0.9)],
                         ids=["AdamW", "SGD"])
def test_a_bad_step_leaves_the_optimizer_untouched(make, step):
    manual_seed(0)
    opt = make(nn.parameters(nn.Linear(3, 2)))
    other = make(nn.parameters(nn.Linear(3, 2)))
    saved = other.state_dict()
    saved["state"] = {k: {n: a + 1 for n, a in v.items()}  # other moments, other lr
                      for k, v in saved["state"].items()}
    saved["hyperparameters"]["lr"] = 0.5
    before = _snapshot(opt)
    with pytest.raises(CheckpointError, match="step: expected a whole number of steps >= 0"):
        opt.load_state_dict({**saved, "step": step})
    assert _same(before, _snapshot(opt))
    opt.load_state_dict({**saved, "step": 7.0})  # an integral float is a step count
    assert opt.steps == 7 and opt.lr == 0.5


@pytest.mark.parametrize("lr", [float("nan"), float("inf"), 10 ** 5000],
                         ids=["nan", "inf", "huge"])
def test_a_non_finite_hyperparameter_leaves_the_optimizer_untouched(lr):
    manual_seed(0)
    opt = AdamW(nn.parameters(nn.Linear(3, 2)), lr=0.01)
    saved = opt.state_dict()
    saved["step"] = 4
    before = _snapshot(opt)
    with pytest.raises(CheckpointError, match="AdamW lr: expected a finite number"):
        opt.load_state_dict({**saved, "hyperparameters": {**saved["hyperparameters"],
                                                          "lr": lr}})
    assert _same(before, _snapshot(opt)) and opt.steps == 0


# found by the checkpoint fuzzer (`python -m uopc.testing.fuzz --checkpoints N`, seeds 4,
# 11, 24, 56): a resume loaded the model before checking the optimizer's state, the
# generator's and the losses, and the optimizer's refusals did not name the file
def _run():
    manual_seed(1)
    model = [nn.Linear(3, 4), nn.Linear(4, 2)]
    return model, SGD(nn.parameters(model), lr=0.1, momentum=0.9), np.random.default_rng(5)


@pytest.mark.parametrize("damage, message", [
    (lambda s: s["optimizer"].update(step="x"), "SGD step: expected a whole number"),
    (lambda s: s["optimizer"]["state"]["0"].update(exp_avg=np.zeros(3, np.float32)),
     r"SGD state of parameter 0: missing nothing, unexpected \['exp_avg'\]"),
    (lambda s: s.update(rng={"bit_generator": "MT19937"}), "'rng' is not a state"),
    # an OverflowError from the generator (the checkpoint fuzzer, seed 413)
    (lambda s: s["rng"]["state"].update(state=-1), "'rng' is not a state"),
    (lambda s: s.update(losses="many"), "'losses' is not a list of numbers"),
])
def test_a_refused_resume_leaves_model_optimizer_and_generator_as_they_were(
        tmp_path, damage, message):
    from uopc.frontend.checkpoint import TrainingCheckpoint, state_dict

    model, opt, rng = _run()
    for p in nn.parameters(model):  # the saved run differs from a fresh one
        p.assign(p * 2 + 1)
    state = {"model": [state_dict(m) for m in model], "optimizer": opt.state_dict(),
             "rng": rng.bit_generator.state, "losses": [1.0]}
    state["model"] = {f"{i}.{k}": v for i, m in enumerate(state["model"]) for k, v in m.items()}
    damage(state)
    path = tmp_path / "run.ckpt"
    uopc.save(state, path)
    model, opt, rng = _run()
    before = ([p.numpy().copy() for p in nn.parameters(model)], opt.steps,
              json.dumps(rng.bit_generator.state, default=str))
    with pytest.raises(CheckpointError, match=rf"^{path}: .*{message}"):
        TrainingCheckpoint(path, model, opt, rng, every=1, last_step=1).resume()
    after = ([p.numpy() for p in nn.parameters(model)], opt.steps,
             json.dumps(rng.bit_generator.state, default=str))
    assert all(np.array_equal(a, b) for a, b in zip(before[0], after[0])), "half loaded"
    assert before[1:] == after[1:]
