"""Real models through uopc.onnx against onnxruntime: an MLP, a CNN, ResNet-18's
layout, torch.nn.TransformerEncoderLayer and a tiny GPT-2 (tests/py/onnx_models.py),
exported with torch.onnx.export, run by uopc and by onnxruntime (CPU) on the same
inputs: f32 outputs agree within 1e-4 relative to the output's scale. Also: a loaded
model replays its plan (one compile per signature, none after), and the same model
through `uopc-run model.onnx x.npy` prints the same numbers.

    pytest -q tests/py/test_onnx_models.py
"""

from __future__ import annotations

import numpy as np
import pytest

pytest.importorskip("onnx")
ort = pytest.importorskip("onnxruntime")
pytest.importorskip("onnxscript")
pytest.importorskip("transformers")

import onnx_models  # noqa: E402

import uopc.onnx  # noqa: E402


@pytest.fixture(scope="module")
def exported(tmp_path_factory):
    folder = tmp_path_factory.mktemp("onnx_models")
    return {name: onnx_models.export(name, folder) for name in onnx_models.NAMES}


def feeds_for(session, seed=0):
    rng = np.random.default_rng(seed)
    feeds = {}
    for i in session.get_inputs():
        if "int" in i.type:
            feeds[i.name] = rng.integers(0, 128, i.shape).astype(np.int64)
        else:
            feeds[i.name] = rng.standard_normal(i.shape).astype(np.float32)
    return feeds


@pytest.mark.parametrize("name", onnx_models.NAMES)
def test_matches_onnxruntime(exported, name):
    path = exported[name]
    session = ort.InferenceSession(str(path), providers=["CPUExecutionProvider"])
    model = uopc.onnx.load(path)
    for seed in (0, 1):  # the second call replays the first call's plan
        feeds = feeds_for(session, seed)
        expected = session.run(None, feeds)
        got = model.run(feeds)
        assert len(got) == len(expected)
        for g, e in zip(got, expected):
            assert g.dtype == e.dtype and g.shape == e.shape
            np.testing.assert_allclose(g, e, rtol=1e-4, atol=1e-4 * float(np.abs(e).max()))
    assert model.compiles == 1


def test_uopc_run_cli_matches(exported, tmp_path, capsys):
    from uopc.tools.run import main

    path = exported["mlp"]
    session = ort.InferenceSession(str(path), providers=["CPUExecutionProvider"])
    feeds = feeds_for(session)
    (x,) = feeds.values()
    np.save(tmp_path / "x.npy", x)
    assert main([str(path), str(tmp_path / "x.npy"), "-o", str(tmp_path / "y.npy")]) == 0
    np.testing.assert_allclose(np.load(tmp_path / "y.npy"), session.run(None, feeds)[0],
                               rtol=1e-4, atol=1e-5)


def test_uopc_opt_prints_c(exported, capsys):
    from uopc.tools.opt import main

    assert main([str(exported["cnn"]), "-p", "uop-to-c", "-t", "c"]) == 0
    out = capsys.readouterr().out
    assert "void main_fn(" in out
