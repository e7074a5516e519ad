"""Checkpoint readers (uopc.frontend.llm): safetensors and torch zip files read without
torch, compared with what torch itself holds; pickles that would run code are refused."""

from __future__ import annotations

import json
import os
import pickle
import struct
import zipfile

import numpy as np
import pytest
import safetensors.numpy

from uopc.frontend.llm.checkpoints import read_config, read_state_dict
from uopc.frontend.llm.torch_zip import UnsafeCheckpointError, read_torch_zip


def _zip_with_pickle(path, payload: bytes) -> None:
    with zipfile.ZipFile(path, "w") as z:
        z.writestr("archive/data.pkl", payload)
        z.writestr("archive/byteorder", "little")


class _RunsCode:
    """Pickles as a call of os.system: loading it with pickle.load would run the shell."""

    def __init__(self, marker):
        self.marker = marker

    def __reduce__(self):
        return (os.system, (f"touch {self.marker}",))


def test_pickle_that_would_run_code_is_refused_without_running(tmp_path):
    marker = tmp_path / "ran"
    path = tmp_path / "pytorch_model.bin"
    _zip_with_pickle(path, pickle.dumps({"w": _RunsCode(marker)}, protocol=2))
    with pytest.raises(UnsafeCheckpointError, match=r"refusing to load (posix|os)\.system"):
        read_torch_zip(path)
    assert not marker.exists()
    # the same payload does run under the plain unpickler: the test would catch a reader
    # that let it through
    with zipfile.ZipFile(path) as z:
        pickle.loads(z.read("archive/data.pkl"))
    assert marker.exists()


@pytest.mark.parametrize("payload", [
    pickle.dumps(__import__("builtins").eval, protocol=2),  # a bare global
    b"\x80\x02cbuiltins\nexec\nq\x00X\x01\x00\x00\x001q\x01\x85q\x02Rq\x03.",  # exec("1")
])
def test_other_globals_are_refused(tmp_path, payload):
    path = tmp_path / "m.bin"
    _zip_with_pickle(path, payload)
    with pytest.raises(UnsafeCheckpointError, match=r"refusing to load (__builtin__|builtins)\.(eval|exec)"):
        read_torch_zip(path)


def _string(s: str) -> bytes:
    return b"X" + struct.pack("<I", len(s)) + s.encode()  # BINUNICODE


def _state_dict_pickle(offset: int, size: tuple, stride: tuple, numel: int) -> bytes:
    """The pickle torch.save writes for {"w": tensor}, one FloatStorage "0" of `numel`
    elements, assembled opcode by opcode (no torch needed)."""
    ints = lambda xs: b"(" + b"".join(b"K" + bytes([x]) for x in xs) + b"t"  # noqa: E731
    storage = (b"(" + _string("storage") + b"ctorch\nFloatStorage\n" + _string("0")
               + _string("cpu") + b"K" + bytes([numel]) + b"tQ")  # tuple, BINPERSID
    rebuild = (b"ctorch._utils\n_rebuild_tensor_v2\n(" + storage + b"K" + bytes([offset])
               + ints(size) + ints(stride) + b"\x89" + b"ccollections\nOrderedDict\n)R"
               + b"tR")  # args tuple, REDUCE
    return b"\x80\x02}" + _string("w") + rebuild + b"s."


def test_hand_built_state_dict_reads(tmp_path):
    path = tmp_path / "m.bin"
    with zipfile.ZipFile(path, "w") as z:
        z.writestr("archive/data.pkl", _state_dict_pickle(1, (2, 3), (1, 2), 8))
        z.writestr("archive/data/0", np.arange(8, dtype="<f4").tobytes())
    expected = np.lib.stride_tricks.as_strided(np.arange(8, dtype=np.float32)[1:], (2, 3), (4, 8))
    np.testing.assert_array_equal(read_torch_zip(path)["w"], expected)


def test_tensor_reaching_past_its_storage_is_refused(tmp_path):
    # a 3x3 tensor over a storage of 4 elements: reading it would read past the storage
    path = tmp_path / "m.bin"
    with zipfile.ZipFile(path, "w") as z:
        z.writestr("archive/data.pkl", _state_dict_pickle(0, (3, 3), (3, 1), 4))
        z.writestr("archive/data/0", np.arange(4, dtype="<f4").tobytes())
    with pytest.raises(UnsafeCheckpointError, match="reaches element 8 of a storage of 4"):
        read_torch_zip(path)


def test_malformed_pickle_is_a_clear_error(tmp_path):
    # a storage type called like a function: refused as malformed, not a TypeError
    path = tmp_path / "m.bin"
    _zip_with_pickle(path, b"\x80\x02ctorch\nFloatStorage\n)R.")
    with pytest.raises(ValueError, match="not a valid torch state dict pickle"):
        read_torch_zip(path)


def test_not_a_zip_is_a_clear_error(tmp_path):
    path = tmp_path / "m.bin"
    path.write_bytes(b"\x80\x02}q\x00.")
    with pytest.raises(ValueError, match="not a zip archive"):
        read_torch_zip(path)


def test_safetensors_dtypes_widen_to_float32(tmp_path):
    rng = np.random.default_rng(0)
    w = rng.standard_normal((3, 4)).astype(np.float32)
    safetensors.numpy.save_file({"f32": w, "f16": w.astype(np.float16),
                                 "ids": np.arange(5, dtype=np.int64)}, str(tmp_path / "a.safetensors"))
    state = read_state_dict(tmp_path / "a.safetensors")
    np.testing.assert_array_equal(state["f32"], w)
    assert state["f16"].dtype == np.float32
    np.testing.assert_array_equal(state["f16"], w.astype(np.float16).astype(np.float32))
    np.testing.assert_array_equal(state["ids"], np.arange(5))


def test_safetensors_bfloat16_is_exact(tmp_path):
    # bfloat16 = the high 16 bits of a float32; numpy has no such type, so build the file
    values = np.array([1.0, -2.5, 3.140625, 1e-3], np.float32)
    bits = (values.view(np.uint32) >> 16).astype("<u2")
    header = json.dumps({"w": {"dtype": "BF16", "shape": [2, 2],
                               "data_offsets": [0, bits.nbytes]}}).encode()
    path = tmp_path / "b.safetensors"
    path.write_bytes(struct.pack("<Q", len(header)) + header + bits.tobytes())
    got = read_state_dict(path)["w"]
    expected = (bits.astype(np.uint32) << 16).view(np.float32).reshape(2, 2)
    np.testing.assert_array_equal(got, expected)
    assert abs(got[1, 0] - 3.140625) == 0


def test_missing_checkpoint_messages(tmp_path):
    with pytest.raises(FileNotFoundError, match="no model.safetensors"):
        read_state_dict(tmp_path)
    with pytest.raises(FileNotFoundError, match="no config.json"):
        read_config(tmp_path)


# ------------------------------------------------------------------ against torch
torch = pytest.importorskip("torch")
transformers = pytest.importorskip("transformers")


@pytest.fixture(scope="module")
def gpt2_dirs(tmp_path_factory):
    """One small random GPT-2 saved as safetensors (save_pretrained) and as a torch.save
    pytorch_model.bin (tied lm_head stored too, as transformers 4 wrote it)."""
    root = tmp_path_factory.mktemp("gpt2")
    torch.manual_seed(0)
    model = transformers.GPT2LMHeadModel(transformers.GPT2Config(n_layer=2, n_embd=64, n_head=16))
    model.save_pretrained(root / "st")
    (root / "bin").mkdir()
    (root / "bin" / "config.json").write_text((root / "st" / "config.json").read_text())
    torch.save(model.state_dict(), root / "bin" / "pytorch_model.bin")
    return model, root


def test_gpt2_directories_match_torch(gpt2_dirs):
    model, root = gpt2_dirs
    reference = {k: v.detach().numpy() for k, v in model.state_dict().items()}
    from_bin = read_state_dict(root / "bin")
    from_st = read_state_dict(root / "st")
    assert set(from_bin) == set(reference)
    # safetensors leaves out the tied head (the same tensor as wte)
    assert set(from_st) == set(reference) - {"lm_head.weight"}
    for name, value in reference.items():
        np.testing.assert_array_equal(from_bin[name], value, err_msg=name)
        if name in from_st:
            np.testing.assert_array_equal(from_st[name], value, err_msg=name)
    # Conv1D weights are stored [in, out]
    assert from_st["transformer.h.0.attn.c_attn.weight"].shape == (64, 192)
    assert read_config(root / "st")["n_layer"] == 2


def test_torch_views_offsets_and_half_types(tmp_path):
    g = torch.Generator().manual_seed(1)
    t = torch.randn(6, 5, generator=g)
    tensors = {"slice": t[2:, 1:3], "transposed": t.T, "row": t[3],
               "f16": t.half()[1:], "bf16": t.bfloat16()[:, 2:], "f64": t.double(),
               "i64": torch.arange(7)[2:], "bool": t > 0, "empty": t[:0]}
    torch.save(tensors, tmp_path / "v.bin")
    got = read_state_dict(tmp_path / "v.bin")
    for name, value in tensors.items():
        expected = value.float().numpy() if value.is_floating_point() else value.numpy()
        np.testing.assert_array_equal(got[name], expected, err_msg=name)
        assert got[name].shape == tuple(value.shape), name
