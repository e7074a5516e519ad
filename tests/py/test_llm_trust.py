"""Hostile model files and configs (uopc.frontend.llm) are refused with a ModelFileError
naming the file and the field: shard names that leave the model folder or name a device,
config.json fields of the wrong type or range, GGUF headers with zero, missing or
non-dividing counts, truncated GGUF files; and a refused torch-zip pickle cannot change
what later loads in the process get."""

from __future__ import annotations

import json
import os
import zipfile

import numpy as np
import pytest
import safetensors.numpy

from uopc.frontend.llm.checkpoints import read_config, read_state_dict
from uopc.frontend.llm.config_fields import ModelFileError
from uopc.frontend.llm.gguf_file import read_gguf
from uopc.frontend.llm.gpt2 import GPT2
from uopc.frontend.llm.llama import LlamaShape
from uopc.frontend.llm.torch_zip import UnsafeCheckpointError, read_torch_zip

GPT2_CONFIG = {"n_layer": 1, "n_embd": 8, "n_head": 2, "n_positions": 8, "vocab_size": 16,
               "layer_norm_epsilon": 1e-5}


@pytest.fixture
def gpt2_dir(tmp_path):
    model = GPT2.random(layers=1, dim=8, heads=2, vocab=16, positions=8)
    state = {"wte.weight": model.wte.numpy(), "wpe.weight": model.wpe.numpy()}
    safetensors.numpy.save_file(state, tmp_path / "model.safetensors")
    (tmp_path / "config.json").write_text(json.dumps(GPT2_CONFIG))
    return tmp_path


# ---- safetensors index shards --------------------------------------------------------------
@pytest.mark.parametrize("shard", ["../outside.safetensors", "/tmp/abs.safetensors",
                                   "sub/../../x.safetensors", "model.bin", "zero.safetensors",
                                   "link.safetensors", "x" * 300 + ".safetensors"])
def test_index_shards_stay_inside_the_model_folder(tmp_path, shard):
    model = tmp_path / "model"
    model.mkdir()
    outside = tmp_path / "outside.safetensors"
    safetensors.numpy.save_file({"w": np.ones(2, np.float32)}, outside)
    os.symlink("/dev/zero", model / "zero.safetensors")
    os.symlink(outside, model / "link.safetensors")
    (model / "model.bin").write_bytes(b"PK")
    index = model / "model.safetensors.index.json"
    index.write_text(json.dumps({"weight_map": {"w": shard}}))
    with pytest.raises(ModelFileError, match=rf"{index}: .*shard"):
        read_state_dict(model)


@pytest.mark.parametrize("text", ['{"weight_map": ["a"]}', "[]", "{bad json",
                                  "[" * 100_000])
def test_a_malformed_index_is_refused(tmp_path, text):
    index = tmp_path / "model.safetensors.index.json"
    index.write_text(text)
    with pytest.raises(ModelFileError, match=str(index)):
        read_state_dict(tmp_path)


def test_a_device_is_not_read_as_a_checkpoint():
    with pytest.raises(ModelFileError, match="/dev/zero is not a regular file"):
        read_state_dict("/dev/zero")


# ---- config.json ---------------------------------------------------------------------------
CONFIG_EDITS = [
    ({"n_head": 0}, "field n_head is 0, expected a whole number from 1"),
    ({"n_layer": -1}, "field n_layer is -1, expected a whole number from 1"),
    ({"n_embd": "64"}, "field n_embd is str '64', expected a whole number"),
    ({"n_layer": 2.0}, "field n_layer is float 2.0, expected a whole number"),
    ({"n_layer": True}, "field n_layer is bool True"),
    ({"n_head": 3}, "field n_head is 3, which does not divide n_embd"),
    ({"n_layer": None}, "field n_layer is missing"),
    ({"layer_norm_epsilon": float("nan")}, "field layer_norm_epsilon is float nan, expected "
                                           "a finite number"),
    ({"layer_norm_epsilon": -1e-5}, "field layer_norm_epsilon is -1e-05, expected a number >= 0"),
    ({"layer_norm_epsilon": "1e-5"}, "field layer_norm_epsilon is str"),
    ({"vocab_size": 10 ** 5000}, "field vocab_size is an integer of"),
    ({"activation_function": 3}, "field activation_function is int 3, expected a string"),
]


@pytest.mark.parametrize("edit, message", CONFIG_EDITS,
                         ids=[m.split(" is")[0].removeprefix("field ") for _, m in CONFIG_EDITS])
def test_gpt2_config_fields_are_checked(gpt2_dir, edit, message):
    config = {**GPT2_CONFIG, **edit}
    config = {k: v for k, v in config.items() if v is not None}
    text = json.dumps(config) if "vocab_size" not in edit else json.dumps(
        {**config, "vocab_size": 0}).replace('"vocab_size": 0', '"vocab_size": ' + "9" * 5000)
    (gpt2_dir / "config.json").write_text(text)
    if "vocab_size" in edit:
        with pytest.raises(ModelFileError, match="config.json: not readable JSON"):
            GPT2.from_pretrained(gpt2_dir)  # Python's JSON refuses 4,300+ digits itself
        return
    with pytest.raises(ModelFileError, match=f"{gpt2_dir / 'config.json'}: {message}"):
        GPT2.from_pretrained(gpt2_dir)


@pytest.mark.parametrize("text", ["[1, 2]", '"gpt2"', "{oops", "[" * 100_000])
def test_a_config_that_is_not_an_object_is_refused(gpt2_dir, text):
    (gpt2_dir / "config.json").write_text(text)
    with pytest.raises(ModelFileError, match=str(gpt2_dir / "config.json")):
        read_config(gpt2_dir)


LLAMA = {"num_hidden_layers": 1, "hidden_size": 8, "num_attention_heads": 2,
         "intermediate_size": 16, "vocab_size": 16}


@pytest.mark.parametrize("edit, message", [
    ({"num_attention_heads": 0}, "num_attention_heads is 0"),
    ({"num_key_value_heads": 3, "num_attention_heads": 4}, "num_key_value_heads is 3, which "
                                                            "does not divide"),
    ({"num_attention_heads": 3}, "num_attention_heads is 3, which does not divide hidden_size"),
    ({"head_dim": 3}, "head_dim is 3: rotary embeddings rotate pairs"),
    ({"rms_norm_eps": -1.0}, "rms_norm_eps is -1.0, expected a number >= 0"),
    ({"rope_theta": "big"}, "rope_theta is str"),
    ({"rope_theta": 0}, "rope_theta is 0, expected a number > 0"),
    ({"rope_parameters": [1]}, "rope_parameters is a list"),
    ({"tie_word_embeddings": "yes"}, "tie_word_embeddings is str"),
    ({"intermediate_size": None}, "intermediate_size is missing"),
])
def test_llama_config_fields_are_checked(tmp_path, edit, message):
    config = {k: v for k, v in {**LLAMA, **edit}.items() if v is not None}
    (tmp_path / "config.json").write_text(json.dumps(config))
    with pytest.raises(ModelFileError, match=f"config.json: field {message}"):
        LlamaShape(read_config(tmp_path))


# ---- GGUF ----------------------------------------------------------------------------------
def _gguf(path, drop=(), tensors=True, **values):
    import gguf

    writer = gguf.GGUFWriter(str(path), "llama")
    settings = {"block_count": 1, "embedding_length": 8, "feed_forward_length": 16,
                "attention.head_count": 2, "attention.head_count_kv": 2,
                "context_length": 8, "vocab_size": 16, **values}
    for key, value in settings.items():
        if key in drop:
            continue
        if isinstance(value, float):
            writer.add_float32(f"llama.{key}", value)
        elif isinstance(value, str):
            writer.add_string(f"llama.{key}", value)
        else:
            writer.add_uint32(f"llama.{key}", value)
    if tensors:
        rng = np.random.default_rng(0)
        writer.add_tensor("token_embd.weight", rng.standard_normal((16, 8)).astype(np.float32))
        writer.add_tensor("blk.0.attn_q.weight", rng.standard_normal((8, 8)).astype(np.float32))
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()
    return path


def test_a_valid_gguf_reads(tmp_path):
    checkpoint = read_gguf(_gguf(tmp_path / "m.gguf"))
    assert checkpoint.config["num_attention_heads"] == 2
    assert checkpoint.state["model.embed_tokens.weight"].shape == (16, 8)


@pytest.mark.parametrize("values, drop, message", [
    ({"attention.head_count": 0}, (), "llama.attention.head_count is 0"),
    ({}, ("attention.head_count",), "llama.attention.head_count is missing"),
    ({}, ("embedding_length",), "llama.embedding_length is missing"),
    ({}, ("block_count",), "llama.block_count is missing"),
    ({"attention.head_count": 3, "attention.head_count_kv": 3}, (),
     "llama.attention.head_count is 3, which does not divide llama.embedding_length"),
    ({"attention.head_count_kv": 0}, (), "llama.attention.head_count_kv is 0"),
    ({"attention.head_count": 4, "attention.head_count_kv": 3}, (),
     "head_count_kv is 3, which does not divide"),
    ({"attention.layer_norm_rms_epsilon": float("nan")}, (),
     r"layer_norm_rms_epsilon is float\w* nan, expected a finite number"),
    ({"attention.layer_norm_rms_epsilon": -1.0}, (), "layer_norm_rms_epsilon is -1.0"),
    ({"block_count": "one"}, (), "llama.block_count is str 'one'"),
])
def test_gguf_header_fields_are_checked(tmp_path, values, drop, message):
    path = _gguf(tmp_path / "m.gguf", drop=drop, tensors=False, **values)
    with pytest.raises(ModelFileError, match=f"{path}: field .*{message}"):
        read_gguf(path)


def test_gguf_tensors_that_do_not_fit_the_heads_are_refused(tmp_path):
    import gguf

    path = tmp_path / "m.gguf"
    writer = gguf.GGUFWriter(str(path), "llama")
    for key, value in {"block_count": 1, "embedding_length": 8, "feed_forward_length": 16,
                       "attention.head_count": 2, "vocab_size": 16}.items():
        writer.add_uint32(f"llama.{key}", value)
    writer.add_tensor("blk.0.attn_q.weight", np.ones((6, 8), np.float32))  # 6 rows, 2 heads
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()
    with pytest.raises(ModelFileError, match=r"tensor 'blk.0.attn_q.weight' cannot be read.*"
                                             r"6 rows, which 2 heads"):
        read_gguf(path)


@pytest.mark.parametrize("fraction", [0.02, 0.3, 0.7, 0.97])
def test_a_truncated_gguf_is_refused(tmp_path, fraction):
    data = _gguf(tmp_path / "m.gguf").read_bytes()
    cut = tmp_path / "cut.gguf"
    cut.write_bytes(data[:int(len(data) * fraction)])
    with pytest.raises(ModelFileError, match=str(cut)):
        read_gguf(cut)


# ---- torch zip -----------------------------------------------------------------------------
def _zip(path, pickle_bytes, storage=None):
    with zipfile.ZipFile(path, "w") as z:
        z.writestr("archive/data.pkl", pickle_bytes)
        if storage is not None:
            z.writestr("archive/data/0", storage)
    return path


def _text(s: str) -> bytes:
    return b"X" + len(s).to_bytes(4, "little") + s.encode()


def _genuine(tmp_path):
    """{"w": FloatStorage "0" of 4 elements viewed as (2, 2)}, opcode by opcode."""
    storage = (b"(" + _text("storage") + b"ctorch\nFloatStorage\n" + _text("0")
               + _text("cpu") + b"K\x04tQ")
    rebuild = (b"ctorch._utils\n_rebuild_tensor_v2\n(" + storage + b"K\x00(K\x02K\x02t"
               + b"(K\x02K\x01t\x89ccollections\nOrderedDict\n)RtR")
    return _zip(tmp_path / "good.bin", b"\x80\x02}" + _text("w") + rebuild + b"s.",
                np.arange(4, dtype="<f4").tobytes())


HOSTILE = {
    # BUILD a dict state onto the FloatStorage stand-in: its dtype becomes a string
    "storage dtype": b"\x80\x02ctorch\nFloatStorage\n}" + _text("dtype") + _text("x")
                     + b"sb.",
    # BUILD slot state onto the rebuild function: new default arguments
    "function defaults": b"\x80\x02ctorch._utils\n_rebuild_tensor_v2\nN}" + _text("__defaults__")
                         + b"(K\x01K\x02K\x03tsTb."[:-3] + b"\x86b.",
    # BUILD onto the OrderedDict stand-in
    "OrderedDict": b"\x80\x02ccollections\nOrderedDict\n}" + _text("x") + b"K\x01sb.",
}


@pytest.mark.parametrize("payload", HOSTILE.values(), ids=HOSTILE.keys())
def test_a_refused_pickle_cannot_break_later_loads(tmp_path, payload):
    good = _genuine(tmp_path)
    expected = np.arange(4, dtype=np.float32).reshape(2, 2)
    np.testing.assert_array_equal(read_torch_zip(good)["w"], expected)
    with pytest.raises((UnsafeCheckpointError, ValueError)):
        read_torch_zip(_zip(tmp_path / "bad.bin", payload))
    np.testing.assert_array_equal(read_torch_zip(good)["w"], expected)


# found by the model-file fuzzer (`python -m uopc.testing.fuzz --model-files N`): each
# refusal names the file, and no other exception type escapes
def _damaged(tmp_path, pickle_bytes=None, storage=None, byteorder=None):
    good = _genuine(tmp_path)
    with zipfile.ZipFile(good) as z:
        records = {n: z.read(n) for n in z.namelist()}
    if pickle_bytes is not None:
        records["archive/data.pkl"] = pickle_bytes(records["archive/data.pkl"])
    if storage is not None:
        records["archive/data/0"] = storage
    if byteorder is not None:
        records["archive/byteorder"] = byteorder
    path = tmp_path / "damaged.bin"
    with zipfile.ZipFile(path, "w") as z:
        for name, data in records.items():
            z.writestr(name, data)
    return path


@pytest.mark.parametrize("damage, error, message", [
    # a refused global (seed 59 of the fuzzer: os.system in place of OrderedDict)
    (dict(pickle_bytes=lambda p: p.replace(b"collections\nOrderedDict", b"os\nsystem")),
     UnsafeCheckpointError, "refusing to load os.system"),
    # a byte of a global's name that is not UTF-8 (seed 44: a UnicodeDecodeError)
    (dict(pickle_bytes=lambda p: p.replace(b"torch\nFloatStorage", b"torch\nFloat\xf8torage")),
     ValueError, "not a valid torch state dict"),
    # a storage that is no whole number of elements (seed 90: numpy's own ValueError)
    (dict(storage=b"\x00" * 15), ValueError, "storage 0 has 15 bytes, not a whole number"),
    # a byte order that is neither (was read as big-endian)
    (dict(byteorder=b"middle"), ValueError, "byteorder says 'middle', expected"),
    (dict(byteorder=b"\xffbig"), ValueError, "byteorder says"),
])
def test_a_damaged_torch_zip_is_refused_naming_the_file(tmp_path, damage, error, message):
    path = _damaged(tmp_path, **damage)
    with pytest.raises(error, match=rf"^{path}: .*{message}"):
        read_torch_zip(path)


def test_a_damaged_zip_archive_is_a_value_error_naming_the_file(tmp_path):
    data = bytearray(_genuine(tmp_path).read_bytes())
    data[40] ^= 0xFF  # inside the first record's bytes: its CRC no longer matches
    path = tmp_path / "crc.bin"
    path.write_bytes(bytes(data))
    with pytest.raises(ValueError, match=rf"^{path}: "):
        read_torch_zip(path)
