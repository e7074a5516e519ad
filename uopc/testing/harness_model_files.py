"""Model-file and config mutation (`uopc.frontend.llm`): tiny model files written here
(a Llama GGUF by the `gguf` package's writer, a GPT-2 directory of two safetensors shards
with its index and config.json, a Llama config.json, a `torch.save` zip) are damaged:

- gguf: header fields written with hostile values or types, or dropped; counts, bytes
  and lengths overwritten; the file truncated;
- index: `model.safetensors.index.json`'s shard names made absolute, `..`, links out
  of the folder, devices, other types; the index's structure edited;
- config: GPT-2 and Llama `config.json` fields set to hostile values or types, dropped;
- torch-zip: the pickle's bytes flipped, its globals renamed (`os.system`, ...), storage
  records dropped or truncated, the byte order changed, the archive's bytes damaged;
- safetensors: the header's bytes overwritten, the file truncated.

A read must end in the documented error naming the file (`ModelFileError` for GGUF
files, indexes and configs, naming the field; `ValueError`/`UnsafeCheckpointError` for a
safetensors or torch zip file; a weight that does not fit the config raises naming the
weight), or succeed. After every torch-zip case, the undamaged file must still read as
written: a refused pickle must leave nothing behind in the process.
"""

from __future__ import annotations

import functools
import json
import os
import shutil
import subprocess
import sys
import zipfile
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

NAME = "model-files"
KINDS = ("gguf", "index", "config", "torch-zip", "safetensors")
GGUF_FIELDS = {"block_count": 1, "embedding_length": 8, "feed_forward_length": 16,
               "attention.head_count": 2, "attention.head_count_kv": 2, "context_length": 8,
               "vocab_size": 16, "rope.freq_base": 10000.0,
               "attention.layer_norm_rms_epsilon": 1e-5}
GPT2_CONFIG = {"n_layer": 1, "n_embd": 8, "n_head": 2, "n_positions": 8, "vocab_size": 16,
               "layer_norm_epsilon": 1e-5, "activation_function": "gelu_new"}
LLAMA_CONFIG = {"num_hidden_layers": 1, "hidden_size": 8, "num_attention_heads": 2,
                "num_key_value_heads": 2, "intermediate_size": 16, "vocab_size": 16,
                "rms_norm_eps": 1e-6, "rope_theta": 10000.0, "tie_word_embeddings": True,
                "max_position_embeddings": 8}
GLOBAL_SWAPS = ((b"collections\nOrderedDict", b"os\nsystem"),
                (b"collections\nOrderedDict", b"builtins\neval"),
                (b"torch._utils\n_rebuild_tensor_v2", b"subprocess\ncall"),
                (b"torch\nFloatStorage", b"torch\nHalfStorage"),
                (b"torch\nFloatStorage", b"torch\nLongStorage"),
                (b"torch\nFloatStorage", b"torch\nNoSuchStorage"),
                (b"torch._utils\n_rebuild_tensor_v2", b"torch._utils\n_rebuild_parameter"))
#: the torch zip's state dict: a view sharing its base's storage, and several dtypes
TORCH_STATE: dict[str, np.ndarray] = {"w": np.arange(12, dtype=np.float32).reshape(3, 4),
               "b": np.array([0.5, -1.0], np.float32), "i": np.array([3, -4], np.int64)}


# ---------------------------------------------------------------------- fixtures
def _put(writer: Any, key: str, value: Any) -> None:
    """One GGUF key/value of whatever type `value` has (the hostile ones included)."""
    import gguf

    if isinstance(value, bool):
        writer.add_bool(key, value)
    elif isinstance(value, int):
        if 0 <= value < 2**32:
            writer.add_uint32(key, value)
        elif -(2**31) <= value < 0:
            writer.add_int32(key, value)
        elif 0 <= value < 2**64:
            writer.add_uint64(key, value)
        else:
            writer.add_int64(key, max(min(value, 2**63 - 1), -(2**63)))
    elif isinstance(value, float):
        writer.add_float32(key, value)
    elif isinstance(value, str):
        writer.add_string(key, value)
    elif isinstance(value, list) and value and all(isinstance(v, int) for v in value):
        writer.add_array(key, value)
    else:  # None, dicts, nested or empty lists: no GGUF value; a string stands in
        writer.add_key_value(key, repr(value), gguf.GGUFValueType.STRING)


def _write_gguf(path: Path, fields: dict[str, Any]) -> None:
    import gguf

    writer = gguf.GGUFWriter(str(path), "llama")
    for key, value in fields.items():
        _put(writer, f"llama.{key}", value)
    rng = np.random.default_rng(0)
    writer.add_tensor("token_embd.weight", rng.standard_normal((16, 8)).astype(np.float32))
    writer.add_tensor("blk.0.attn_q.weight", rng.standard_normal((8, 8)).astype(np.float32))
    writer.add_tensor("blk.0.attn_k.weight", rng.standard_normal((8, 8)).astype(np.float16))
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()


@functools.cache
def _gpt2_directory(work: Path) -> Path:
    """A GPT-2 directory: config.json, two shards and their index, a stray file."""
    import safetensors.numpy

    from uopc.frontend.llm.gpt2 import GPT2

    folder = work / f"gpt2-{os.getpid()}"
    shutil.rmtree(folder, ignore_errors=True)
    folder.mkdir(parents=True)
    _, state = GPT2.random_checkpoint(layers=1, dim=8, heads=2, vocab=16, positions=8)
    names = sorted(state)
    shards = {"model-00001-of-00002.safetensors": names[: len(names) // 2],
              "model-00002-of-00002.safetensors": names[len(names) // 2:]}
    for shard, keys in shards.items():
        safetensors.numpy.save_file({k: state[k] for k in keys}, folder / shard)
    (folder / "model.safetensors.index.json").write_text(json.dumps(
        {"metadata": {"total_size": 0},
         "weight_map": {k: shard for shard, keys in shards.items() for k in keys}}))
    (folder / "config.json").write_text(json.dumps(GPT2_CONFIG))
    (folder / "notes.txt").write_text("not a shard")
    outside = work / "outside.safetensors"
    safetensors.numpy.save_file({"w": np.ones(2, np.float32)}, outside)
    os.symlink(outside, folder / "link.safetensors")
    os.symlink("/dev/zero", folder / "zero.safetensors")
    (folder / "dir.safetensors").mkdir()
    return folder


@functools.cache
def _torch_zip(work: Path) -> Path | None:
    """A torch.save zip of TORCH_STATE (a view of `w` too), or None without torch."""
    path = work / f"state-{os.getpid()}.pt"
    code = ("import sys, torch; w = torch.arange(12.0).reshape(3, 4); "
            "torch.save({'w': w, 'row': w[1], 'b': torch.tensor([0.5, -1.0]), "
            "'i': torch.tensor([3, -4])}, sys.argv[1])")
    done = subprocess.run([sys.executable, "-c", code, str(path)], capture_output=True,
                          timeout=300)
    return path if done.returncode == 0 else None


# ---------------------------------------------------------------------- edits
def edits(rng: np.random.Generator) -> list[tuple]:
    kind = KINDS[int(rng.integers(len(KINDS)))]
    found: list[tuple] = [("kind", kind)]
    for _ in range(int(rng.integers(1, 4))):
        how = rng.random()
        if kind == "gguf":
            if how < 0.5:
                keys = list(GGUF_FIELDS)
                key = keys[int(rng.integers(len(keys)))]
                if rng.random() < 0.2:
                    found.append(("drop", key))
                else:
                    found.append(("field", key, HOSTILE_VALUES[int(rng.integers(
                        len(HOSTILE_VALUES)))]))
            else:
                # the header (counts at bytes 8-24) and the key/value table are where
                # a damaged length or count hides
                found.append(("bytes", byte_edit(rng, int(rng.choice([24, 400, 2000])))))
        elif kind == "index":
            names = ["../outside.safetensors", "/dev/zero", "zero.safetensors",
                     "link.safetensors", "dir.safetensors", "notes.txt", "missing.safetensors",
                     "sub/../model-00001-of-00002.safetensors", "model-00002-of-00002.safetensors",
                     "./model-00001-of-00002.safetensors", "", "x" * 300 + ".safetensors"]
            values = (*HOSTILE_VALUES, *names)
            skeleton = {"metadata": {"total_size": 0},
                        "weight_map": {"wte.weight": "", "h.0.ln_1.weight": ""}}
            found.append(("json", json_edit(rng, skeleton, values)))
        elif kind == "config":
            which = "gpt2" if rng.random() < 0.5 else "llama"
            base = GPT2_CONFIG if which == "gpt2" else LLAMA_CONFIG
            values = (*HOSTILE_VALUES, 2, 4, 16, 1e-6, 64)
            if how < 0.05:
                found.append(("config-text", which, str(rng.choice(
                    ["[1, 2]", '"gpt2"', "{", "[" * 50_000, "null", '{"n_layer": ' + "9" * 5000 + "}"]))))
            else:
                found.append(("config", which, json_edit(rng, base, values)))
        elif kind == "torch-zip":
            if how < 0.3:
                found.append(("pickle", byte_edit(rng, 400)))
            elif how < 0.6:
                found.append(("global", *GLOBAL_SWAPS[int(rng.integers(len(GLOBAL_SWAPS)))]))
            elif how < 0.75:
                found.append(("record", "data/0", byte_edit(rng, 48)))
            elif how < 0.8:
                found.append(("zip-bytes", byte_edit(rng, 1200)))
            elif how < 0.88:
                found.append(("drop-record", str(rng.choice(["data/0", "data/1", "data.pkl"]))))
            else:
                found.append(("byteorder", str(rng.choice(["big", "middle", "", "little\n"]))))
        else:
            found.append(("bytes", byte_edit(rng, int(rng.choice([8, 120, 400])))))
    return found


# ---------------------------------------------------------------------- checks
def check(work: Path, edit_list: list[tuple]) -> str:
    kinds = [e[1] for e in edit_list if e[0] == "kind"]
    kind = kinds[0] if kinds else "gguf"
    rest = [e for e in edit_list if e[0] != "kind"]
    case = work / f"case-{os.getpid()}"
    shutil.rmtree(case, ignore_errors=True)
    case.mkdir()
    return {"gguf": _check_gguf, "index": _check_index, "config": _check_config,
            "torch-zip": _check_torch_zip, "safetensors": _check_safetensors}[kind](
        work, case, rest)


def _check_gguf(work: Path, case: Path, edit_list: list[tuple]) -> str:
    from uopc.frontend.llm.config_fields import ModelFileError
    from uopc.frontend.llm.gguf_file import read_gguf

    fields = dict(GGUF_FIELDS)
    for edit in edit_list:
        if edit[0] == "drop":
            fields.pop(edit[1], None)
        elif edit[0] == "field":
            fields[edit[1]] = edit[2]
    path = case / "model.gguf"
    _write_gguf(path, fields)
    data = path.read_bytes()
    for edit in edit_list:
        if edit[0] == "bytes":
            data = apply_byte_edit(data, edit[1])
    path.write_bytes(data)
    try:
        checkpoint = read_gguf(path)
    except Exception as err:  # noqa: BLE001  (expect_error raises what is not expected)
        return expect_error(err, ModelFileError, str(path))
    return _check_llama(checkpoint.config, checkpoint.state, str(path))


def _check_llama(config: Any, state: dict[str, np.ndarray], source: str) -> str:
    """A config that read must describe a model (or be refused naming its field)."""
    from uopc.frontend.llm.config_fields import ModelFileError
    from uopc.frontend.llm.llama import LlamaShape

    try:
        shape = LlamaShape(config)
    except Exception as err:  # noqa: BLE001
        return expect_error(err, ModelFileError, source, "field")
    for name, value in state.items():
        if not isinstance(value, np.ndarray):
            raise Wrong(f"weight {name} read as {type(value).__name__}")
    return f"read: {shape.layers} layers" if hasattr(shape, "layers") else "read"


def _check_index(work: Path, case: Path, edit_list: list[tuple]) -> str:
    from uopc.frontend.llm.checkpoints import read_state_dict
    from uopc.frontend.llm.config_fields import ModelFileError

    folder = _gpt2_directory(work)
    index_path = folder / "model.safetensors.index.json"
    original = index_path.read_text()
    index = json.loads(original)
    for edit in edit_list:
        apply_json_edit(index, edit[1])
    index_path.write_text(json.dumps(index))
    try:
        try:
            state = read_state_dict(folder)
        except Exception as err:  # noqa: BLE001
            if isinstance(err, ModelFileError):
                return expect_error(err, ModelFileError, str(index_path))
            return expect_error(err, ValueError, str(folder))
    finally:
        index_path.write_text(original)
    for name, value in state.items():
        if not isinstance(value, np.ndarray):
            raise Wrong(f"weight {name} read as {type(value).__name__}")
    return f"read {len(state)} weights"


def _check_config(work: Path, case: Path, edit_list: list[tuple]) -> str:
    from uopc.frontend.llm.checkpoints import read_config
    from uopc.frontend.llm.config_fields import ModelFileError
    from uopc.frontend.llm.gpt2 import GPT2

    which = edit_list[0][1]
    base = GPT2_CONFIG if which == "gpt2" else LLAMA_CONFIG
    config: Any = json.loads(json.dumps(base))
    text = None
    for edit in edit_list:
        if edit[0] == "config-text":
            text = edit[2]
        elif edit[1] == which:
            apply_json_edit(config, edit[2])
    folder = _gpt2_directory(work) if which == "gpt2" else case
    path = folder / "config.json"
    original = path.read_text() if path.exists() else None
    path.write_text(text if text is not None else json.dumps(config, allow_nan=True))
    try:
        if which == "gpt2":
            model = GPT2.from_pretrained(folder)
            return f"built a GPT-2 of {model.layers} layers"
        return _check_llama(read_config(folder), {}, str(path))
    except Wrong:
        raise
    except ModelFileError as err:
        return expect_error(err, ModelFileError, str(path))
    except (KeyError, ValueError) as err:
        # the config read, but the weights do not fit it: named by the weight
        return expect_error(err, (KeyError, ValueError), "weight")
    finally:
        if original is not None:
            path.write_text(original)


def _check_torch_zip(work: Path, case: Path, edit_list: list[tuple]) -> str:
    from uopc.frontend.llm.torch_zip import UnsafeCheckpointError, read_torch_zip

    pristine = _torch_zip(work)
    if pristine is None:
        return "skipped: torch is not installed to write the fixture"
    path = case / "pytorch_model.bin"
    with zipfile.ZipFile(pristine) as archive:
        records = {info.filename: archive.read(info) for info in archive.infolist()}
    prefix = next(n for n in records if n.endswith("data.pkl"))[: -len("data.pkl")]
    for edit in edit_list:
        pkl = prefix + "data.pkl"
        if edit[0] == "pickle" and pkl in records:
            records[pkl] = apply_byte_edit(records[pkl], edit[1])
        elif edit[0] == "global" and pkl in records:
            records[pkl] = records[pkl].replace(edit[1], edit[2], 1)
        elif edit[0] == "record" and prefix + edit[1] in records:
            records[prefix + edit[1]] = apply_byte_edit(records[prefix + edit[1]], edit[2])
        elif edit[0] == "drop-record":
            records.pop(prefix + edit[1], None)
        elif edit[0] == "byteorder":
            records[prefix + "byteorder"] = edit[1].encode()
    with zipfile.ZipFile(path, "w") as archive:
        for name, data in records.items():
            archive.writestr(name, data)
    for edit in edit_list:
        if edit[0] == "zip-bytes":  # the archive itself damaged (CRCs, lengths, names)
            path.write_bytes(apply_byte_edit(path.read_bytes(), edit[1]))
    try:
        state = read_torch_zip(path)
        account = f"read {len(state)} tensors"
    except Exception as err:  # noqa: BLE001
        account = expect_error(err, (ValueError, UnsafeCheckpointError), str(path))
    # a refused (or accepted) pickle leaves nothing behind: the genuine file still reads
    again = read_torch_zip(pristine)
    want = {**TORCH_STATE, "row": TORCH_STATE["w"][1]}
    if sorted(again) != sorted(want) or any(
            again[k].dtype != want[k].dtype or not np.array_equal(again[k], want[k])
            for k in want):
        raise Wrong(f"after reading the damaged file, the genuine one read as {again}")
    return account


def _check_safetensors(work: Path, case: Path, edit_list: list[tuple]) -> str:
    from uopc.frontend.llm.checkpoints import read_state_dict

    folder = _gpt2_directory(work)
    path = case / "model.safetensors"
    data = (folder / "model-00001-of-00002.safetensors").read_bytes()
    for edit in edit_list:
        data = apply_byte_edit(data, edit[1])
    path.write_bytes(data)
    try:
        state = read_state_dict(path)
    except Exception as err:  # noqa: BLE001
        return expect_error(err, ValueError, str(path))
    return f"read {len(state)} weights"
