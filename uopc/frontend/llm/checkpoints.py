"""Hugging Face model directories (`save_pretrained` output) as numpy state dicts.

A directory holds `config.json` and its weights as `model.safetensors`, sharded
`model-0000i-of-0000n.safetensors` with `model.safetensors.index.json`, or the pickle-zip
`pytorch_model.bin`; safetensors is preferred when both are there. Every floating-point
tensor comes out as float32 (f16 and bf16 widen exactly), the dtype the models compute in.
Tied weights: safetensors files leave out a weight that is the same tensor as another
(GPT-2's `lm_head.weight` is `transformer.wte.weight`); the models take the embedding
when the head is absent, and `pytorch_model.bin` stores both.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np

from uopc.frontend.llm.torch_zip import read_torch_zip
from uopc.frontend.safetensors_file import read_safetensors
from uopc.uopdialect.dtypes import BY_NUMPY


def read_state_dict(path: str | Path) -> dict[str, np.ndarray]:
    """The weights of one file (.safetensors or torch zip) or of a model directory."""
    path = Path(path)
    if path.is_dir():
        return _read_directory(path)
    if not path.exists():
        raise FileNotFoundError(f"no checkpoint at {path}")
    state = read_safetensors(path) if path.suffix == ".safetensors" else read_torch_zip(path)
    return {name: _as_compute_dtype(a) for name, a in state.items()}


def read_config(directory: str | Path) -> dict[str, Any]:
    """The model's config.json as a dict."""
    path = Path(directory) / "config.json"
    if not path.exists():
        raise FileNotFoundError(f"{directory} has no config.json: not a saved model directory")
    return json.loads(path.read_text())


def _read_directory(directory: Path) -> dict[str, np.ndarray]:
    index = directory / "model.safetensors.index.json"
    if index.exists():
        shards = sorted(set(json.loads(index.read_text())["weight_map"].values()))
        files = [directory / s for s in shards]
    elif (directory / "model.safetensors").exists():
        files = [directory / "model.safetensors"]
    elif (directory / "pytorch_model.bin").exists():
        files = [directory / "pytorch_model.bin"]
    else:
        raise FileNotFoundError(f"{directory} has no model.safetensors(.index.json) or "
                                f"pytorch_model.bin")
    state: dict[str, np.ndarray] = {}
    for f in files:
        state.update(read_state_dict(f))
    return state


def _as_compute_dtype(array: np.ndarray) -> np.ndarray:
    d = BY_NUMPY.get(array.dtype)
    return array.astype(np.float32) if d is not None and d.is_float else array
