"""Hugging Face model directories (`save_pretrained` output) as numpy state dicts.

A directory holds `config.json` and its weights as `model.safetensors`, sharded
`model-0000i-of-0000n.safetensors` with `model.safetensors.index.json`, or the pickle-zip
`pytorch_model.bin`; safetensors is preferred when both are there. Every floating-point
tensor comes out as float32 (f16 and bf16 widen exactly), the dtype the models compute in.
Tied weights: safetensors files leave out a weight that is the same tensor as another
(GPT-2's `lm_head.weight` is `transformer.wte.weight`); the models take the embedding
when the head is absent, and `pytorch_model.bin` stores both.

Nothing in a directory is trusted: the shard names of `model.safetensors.index.json`
must be `.safetensors` files inside the directory (no absolute path, no `..`, no link
out of it, no device such as /dev/zero), and `config.json` must be a JSON object
(`ModelFileError` naming the file and the field otherwise; the models check each
field they read, `config_fields.Fields`).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np

from uopc.frontend.llm.config_fields import ModelConfig, ModelFileError
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
    if not path.is_file():
        raise ModelFileError(f"{path} is not a regular file (a device or a folder): not a "
                             f"checkpoint")
    state = read_safetensors(path) if path.suffix == ".safetensors" else read_torch_zip(path)
    return {name: _as_compute_dtype(a) for name, a in state.items()}


def read_config(directory: str | Path) -> ModelConfig:
    """The model's config.json as a dict (that knows its file, for messages)."""
    path = Path(directory) / "config.json"
    if not path.exists():
        raise FileNotFoundError(f"{directory} has no config.json: not a saved model directory")
    config = _read_json(path)
    if not isinstance(config, dict):
        raise ModelFileError(f"{path}: expected a JSON object of settings, found a "
                             f"{type(config).__name__}")
    return ModelConfig(config, str(path))


def _read_json(path: Path) -> Any:
    if not path.is_file():
        raise ModelFileError(f"{path} is not a regular file")
    try:
        return json.loads(path.read_text())
    except (OSError, UnicodeDecodeError, ValueError, RecursionError) as e:
        raise ModelFileError(f"{path}: not readable JSON ({type(e).__name__}: "
                             f"{str(e)[:200]})") from None


def _shards(directory: Path, index: Path) -> list[Path]:
    """The shard files `index` names, each checked to be a .safetensors file inside
    `directory`."""
    data = _read_json(index)
    weight_map = data.get("weight_map") if isinstance(data, dict) else None
    if not isinstance(weight_map, dict):
        raise ModelFileError(f"{index}: field weight_map is missing or not an object")
    inside = directory.resolve()
    files = []
    for name in sorted({str(v) for v in weight_map.values()}):
        shard = directory / name
        shown = name if len(name) <= 80 else name[:77] + "..."
        try:  # resolve and is_file raise for a name too long to look up
            outside = shard.resolve().parent != inside
            present = shard.is_file()
        except OSError as e:
            raise ModelFileError(f"{index}: field weight_map names the shard {shown!r}, "
                                 f"which cannot be looked up ({e.strerror})") from None
        if (not name.endswith(".safetensors") or Path(name).is_absolute()
                or ".." in Path(name).parts or outside):
            raise ModelFileError(f"{index}: field weight_map names the shard {shown!r}, "
                                 f"expected a .safetensors file name inside {directory}")
        if not present:
            raise ModelFileError(f"{index}: the shard {shown!r} is missing from {directory} "
                                 f"(or not a regular file)")
        files.append(shard)
    return files


def _read_directory(directory: Path) -> dict[str, np.ndarray]:
    index = directory / "model.safetensors.index.json"
    if index.exists():
        files = _shards(directory, index)
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
