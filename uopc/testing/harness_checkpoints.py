"""Checkpoint mutation (`uopc.save`/`uopc.load`, `TrainingCheckpoint.resume`,
`Optimizer.load_state_dict`): a training checkpoint (a two-layer model, its SGD or AdamW
state, the data generator's state and the losses) is damaged: its metadata tree edited
(values set to hostile ones, tensor references broken, nodes dropped or added), its
metadata replaced by text nested deeply or holding 5,000-digit integers, a tensor stored
with another dtype or shape, or the file's bytes damaged. Resuming from it must either
load all of it (the model's parameters then equal the file's), or raise `CheckpointError`
(a ValueError) naming the file (and the field) and leave the model, the
optimizer and the generator exactly as they were: never half-loaded, never another
exception."""

from __future__ import annotations

import functools
import json
import os
import shutil
from pathlib import Path
from typing import Any

import numpy as np

from uopc.testing.hostile import (
    HOSTILE_VALUES,
    Wrong,
    apply_byte_edit,
    apply_json_edit,
    byte_edit,
    expect_error,
    json_edit,
)

NAME = "checkpoints"
OPTIMIZERS = ("SGD", "AdamW")
TREE_KEY = "uopc.tree"
#: besides HOSTILE_VALUES: broken tensor references and plausible neighbours
VALUES = (*HOSTILE_VALUES, {"$tensor": "model/a.weight"}, {"$tensor": 5},
          {"$tensor": "missing"}, {"$tensor": ["model/a.weight"]}, ["model/a.weight"],
          2.5, -5, 10**20, [0.5, 1.0], {"$tensor": "model/a.weight", "x": 1})
DTYPES = ("float64", "float16", "int32", "int64", "bool", "uint8", "bfloat16")


def _model() -> Any:
    from uopc.frontend import nn

    class TwoLayers(nn.Module):
        def __init__(self) -> None:
            self.a, self.b = nn.Linear(3, 4), nn.Linear(4, 2)

        def __call__(self, x: Any) -> Any:
            return self.b(self.a(x).relu())

    return TwoLayers()


def _fresh(kind: str) -> tuple[Any, Any, np.random.Generator]:
    from uopc.frontend import nn
    from uopc.frontend.optim import SGD, AdamW
    from uopc.frontend.tensor import manual_seed

    manual_seed(1)
    model = _model()
    params = nn.parameters(model)
    opt = SGD(params, lr=0.1, momentum=0.9) if kind == "SGD" else AdamW(params, lr=0.01)
    return model, opt, np.random.default_rng(5)


@functools.cache
def _pristine(work: Path, kind: str) -> Path:
    """A checkpoint after one training step (once per process and optimizer)."""
    from uopc.frontend.checkpoint import TrainingCheckpoint
    from uopc.frontend.tensor import Tensor

    model, opt, rng = _fresh(kind)
    x = Tensor(rng.standard_normal((5, 3)).astype(np.float32))
    opt.zero_grad()
    loss = (model(x) ** 2).mean()
    loss.backward()
    opt.step(loss)
    path = work / f"pristine-{kind}-{os.getpid()}.ckpt"
    TrainingCheckpoint(path, model, opt, rng, every=1, last_step=1)(1, float(loss.item()))
    return path


def _snapshot(model: Any, opt: Any, rng: np.random.Generator) -> str:
    """Everything a resume may change, as comparable text."""
    from uopc.frontend.checkpoint import state_dict

    parts = {name: value.tobytes().hex() for name, value in state_dict(model).items()}
    state = opt.state_dict()
    return json.dumps({"params": parts, "step": state["step"],
                       "hyper": state["hyperparameters"], "steps": opt.steps,
                       "state": {k: {n: a.tobytes().hex() for n, a in v.items()}
                                 for k, v in state["state"].items()},
                       "shared": {k: v.tobytes().hex() for k, v in state["shared"].items()},
                       "rng": rng.bit_generator.state}, sort_keys=True, default=str)


def edits(rng: np.random.Generator) -> list[tuple]:
    found: list[tuple] = [("optimizer", OPTIMIZERS[int(rng.integers(len(OPTIMIZERS)))])]
    skeleton = {"model": {"a.weight": 0, "a.bias": 0, "b.weight": 0, "b.bias": 0},
                "optimizer": {"step": 0, "hyperparameters": {"lr": 0, "momentum": 0,
                                                             "b1": 0, "weight_decay": 0},
                              "state": {"0": {"momentum_buffer": 0, "exp_avg": 0},
                                        "3": {"exp_avg_sq": 0}},
                              "shared": {"b1_power": 0}},
                "rng": {"bit_generator": 0, "state": {"state": 0, "inc": 0}},
                "losses": [0]}
    for _ in range(int(rng.integers(1, 4))):
        how = rng.random()
        if how < 0.65:
            found.append(("tree", json_edit(rng, skeleton, VALUES)))
        elif how < 0.8:
            names = ["model/a.weight", "model/b.bias", "optimizer/state/0/exp_avg",
                     "optimizer/state/1/momentum_buffer", "optimizer/shared/b1_power"]
            found.append(("tensor", str(rng.choice(names)), str(rng.choice(DTYPES)),
                          bool(rng.random() < 0.5)))
        elif how < 0.88:
            found.append(("metadata", str(rng.choice(
                ["[" * 100_000, '{"model": ' + "7" * 5000 + "}", "{", '"text"',
                 '{"$tensor": "model/a.weight"}', json.dumps({"a": {"b": 1}} | {"c": [[[[]]]]})]))))
        else:
            found.append(("bytes", byte_edit(rng, int(rng.choice([8, 200, 2000])))))
    return found


def _write(path: Path, pristine: Path, edit_list: list[tuple]) -> None:
    """The pristine checkpoint with `edit_list` applied, at `path`."""
    import ml_dtypes
    import safetensors
    import safetensors.numpy

    from uopc.frontend.safetensors_file import read_safetensors

    tensors = read_safetensors(pristine)
    with safetensors.safe_open(pristine, "np") as opened:
        metadata = dict(opened.metadata())
    tree = json.loads(metadata[TREE_KEY])
    for edit in edit_list:
        if edit[0] == "tree":
            apply_json_edit(tree, edit[1])
        elif edit[0] == "tensor" and edit[1] in tensors:
            value = tensors[edit[1]]
            dtype = ml_dtypes.bfloat16 if edit[2] == "bfloat16" else np.dtype(edit[2])
            value = value.astype(dtype)
            tensors[edit[1]] = value.reshape(-1) if edit[3] else value
    metadata[TREE_KEY] = json.dumps(tree, allow_nan=True)
    for edit in edit_list:
        if edit[0] == "metadata":
            metadata[TREE_KEY] = edit[1]
    if any(str(t.dtype) == "bfloat16" for t in tensors.values()):
        _write_with_bf16(path, tensors, metadata)
    else:
        safetensors.numpy.save_file(tensors, path, metadata)
    data = path.read_bytes()
    for edit in edit_list:
        if edit[0] == "bytes":
            data = apply_byte_edit(data, edit[1])
    path.write_bytes(data)


def _write_with_bf16(path: Path, tensors: dict[str, np.ndarray], metadata: dict) -> None:
    """safetensors.numpy cannot write bf16: the format by hand (header, then the data)."""
    header: dict[str, Any] = {"__metadata__": metadata}
    blobs, offset = [], 0
    names = {"bfloat16": "BF16", "float64": "F64", "float32": "F32", "float16": "F16",
             "int64": "I64", "int32": "I32", "uint8": "U8", "bool": "BOOL", "int8": "I8",
             "int16": "I16"}
    for name, value in sorted(tensors.items()):
        raw = np.ascontiguousarray(value).tobytes()
        header[name] = {"dtype": names[str(value.dtype)], "shape": list(value.shape),
                        "data_offsets": [offset, offset + len(raw)]}
        blobs.append(raw)
        offset += len(raw)
    text = json.dumps(header).encode()
    text += b" " * (-len(text) % 8)
    path.write_bytes(len(text).to_bytes(8, "little") + text + b"".join(blobs))


def check(work: Path, edit_list: list[tuple]) -> str:
    from uopc.frontend.checkpoint import CheckpointError, TrainingCheckpoint, load

    kind = edit_list[0][1] if edit_list and edit_list[0][0] == "optimizer" else "SGD"
    pristine = _pristine(work, kind)
    case = work / f"case-{os.getpid()}"
    shutil.rmtree(case, ignore_errors=True)
    case.mkdir()
    path = case / "run.ckpt"
    _write(path, pristine, [e for e in edit_list if e[0] != "optimizer"])
    model, opt, rng = _fresh(kind)
    before = _snapshot(model, opt, rng)
    try:
        TrainingCheckpoint(path, model, opt, rng, every=1, last_step=1).resume()
    except Exception as err:  # noqa: BLE001  (expect_error raises what is not expected)
        account = expect_error(err, CheckpointError, str(path))
        if _snapshot(model, opt, rng) != before:
            raise Wrong(f"a refused resume ({account}) changed the model, optimizer or "
                        f"generator: half-loaded") from None
        return account
    from uopc.frontend.checkpoint import state_dict

    saved = load(path)["model"]
    for name, value in state_dict(model).items():
        if not np.array_equal(value, saved[name]):
            raise Wrong(f"resumed, but parameter {name} is not the file's")
    return "resumed"
