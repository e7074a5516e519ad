"""Bad ONNX input fails cleanly: an `OnnxError` naming the file, node, op or input from
`uopc.onnx.load` and from calls, one `error:` line and exit status 1 from uopc-opt and
uopc-run, never a traceback, never a read outside the model's folder. The last tests are
a mutation fuzzer over the models of tests/onnx (in process, and through the CLI fuzzer's
`uopc.testing.mutations.check`).

    pytest -q tests/py/test_onnx_errors.py
"""

from __future__ import annotations

import shutil
from pathlib import Path

import numpy as np
import pytest

onnx = pytest.importorskip("onnx")
from onnx import TensorProto, helper  # noqa: E402

import uopc.onnx  # noqa: E402
from uopc.onnx import OnnxError  # noqa: E402
from uopc.testing import mutations  # noqa: E402

SEEDS = Path(__file__).resolve().parents[1] / "onnx"
X = np.ones((2, 8), np.float32)


def mlp_model() -> onnx.ModelProto:
    return onnx.load(SEEDS / "mlp.onnx")


def one_node(op: str, domain: str = "", opset: int = 17) -> onnx.ModelProto:
    node = helper.make_node(op, ["x"], ["y"], name="strange", domain=domain)
    graph = helper.make_graph([node], "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2])])
    imports = [helper.make_opsetid("", opset)] + ([helper.make_opsetid(domain, 1)] if domain else [])
    return helper.make_model(graph, opset_imports=imports)


def test_truncated_and_malformed_protobuf(tmp_path):
    data = (SEEDS / "conv_pool.onnx").read_bytes()
    for cut in (1, 10, len(data) // 2, len(data) - 3):
        path = tmp_path / "cut.onnx"
        path.write_bytes(data[:cut])
        with pytest.raises(OnnxError, match="cut.onnx"):
            uopc.onnx.load(path)
    with pytest.raises(OnnxError, match="not an ONNX model"):
        uopc.onnx.load(b"\xff\x00garbage" * 10)
    with pytest.raises(OnnxError, match="no such file"):
        uopc.onnx.load(tmp_path / "missing.onnx")


def test_unknown_op_and_domain_are_named():
    with pytest.raises(OnnxError, match=r"node 'strange' is op 'FrobnicateAll'.*not in its op table"):
        uopc.onnx.load(one_node("FrobnicateAll"))
    with pytest.raises(OnnxError, match=r"'Frob' of domain 'com.example'"):
        uopc.onnx.load(one_node("Frob", "com.example"))
    with pytest.raises(OnnxError, match=r"op 'SequenceEmpty'.*sequences"):
        uopc.onnx.load(one_node("SequenceEmpty"))


def test_opsets_outside_the_range():
    with pytest.raises(OnnxError, match="opset 99 is newer"):
        uopc.onnx.load(one_node("Relu", opset=99))
    model = one_node("Relu")
    del model.opset_import[:]
    with pytest.raises(OnnxError, match="no standard ONNX opset"):
        uopc.onnx.load(model)
    # an old opset is upgraded by ONNX's version converter
    old = uopc.onnx.load(one_node("Relu", opset=9))
    np.testing.assert_array_equal(old(np.array([-1, 2], np.float32))[0].numpy(), [0, 2])


def test_initializer_size_mismatch():
    model = mlp_model()
    w = model.graph.initializer[0]
    w.raw_data = w.raw_data[:-4] if w.raw_data else b""
    if not w.raw_data:
        del w.float_data[-1]
    with pytest.raises(OnnxError, match=r"initializer .w. of shape \[8, 4\] .float. needs 128 bytes"):
        uopc.onnx.load(model)


def external_copy(tmp_path: Path, location: str) -> Path:
    folder = tmp_path / "model"
    folder.mkdir()
    model = onnx.load(SEEDS / "external.onnx", load_external_data=False)
    for entry in model.graph.initializer[0].external_data:
        if entry.key == "location":
            entry.value = location
    onnx.save(model, folder / "model.onnx")
    return folder / "model.onnx"


def test_external_data_only_from_the_model_folder(tmp_path, monkeypatch):
    # a location outside the folder is refused before anything is opened: the same
    # bytes lie there, and opening them is watched
    paths = []
    for k, location in enumerate(("../outside.bin", "{abs}/outside.bin", "sub/../../outside.bin")):
        case = tmp_path / f"case{k}"
        case.mkdir()
        shutil.copy(SEEDS / "external.bin", case / "outside.bin")
        paths.append(external_copy(case, location.replace("{abs}", str(case))))
    opened = []
    real_open = open

    def watching_open(file, *args, **kwargs):
        opened.append(str(file))
        return real_open(file, *args, **kwargs)

    monkeypatch.setattr("builtins.open", watching_open)
    for path in paths:
        with pytest.raises(OnnxError, match="outside the model's folder"):
            uopc.onnx.load(path)
    monkeypatch.undo()
    assert not [f for f in opened if f.endswith("outside.bin")]
    good = tmp_path / "good"
    good.mkdir()
    shutil.copy(SEEDS / "external.onnx", good / "m.onnx")
    with pytest.raises(OnnxError, match="external.bin does not exist"):
        uopc.onnx.load(good / "m.onnx")
    shutil.copy(SEEDS / "external.bin", good / "external.bin")
    expected = uopc.onnx.load(SEEDS / "mlp.onnx")(X)[0].numpy()
    np.testing.assert_array_equal(uopc.onnx.load(good / "m.onnx")(X)[0].numpy(), expected)
    with pytest.raises(OnnxError, match="without a folder"):
        uopc.onnx.load((SEEDS / "external.onnx").read_bytes())


def test_wrong_input_shape_dtype_and_count():
    model = uopc.onnx.load(SEEDS / "mlp.onnx")
    with pytest.raises(OnnxError, match=r"input 'x' must have shape \[2, 8\], got \[3, 8\]"):
        model(np.ones((3, 8), np.float32))
    with pytest.raises(OnnxError, match=r"input 'x' must be float32, got float64"):
        model(np.ones((2, 8)))
    with pytest.raises(OnnxError, match=r"takes 1 input\(s\) \(x\), 2 given"):
        model(X, X)
    with pytest.raises(OnnxError, match=r"no input\(s\) \['z'\]"):
        model.run({"z": X})


def test_cli_errors_are_one_line(tmp_path):
    from uopc.tools.opt import main as opt_main
    from uopc.tools.run import main as run_main

    bad = tmp_path / "bad.onnx"
    bad.write_bytes((SEEDS / "mlp.onnx").read_bytes()[:40])
    assert opt_main([str(bad)]) == 1
    assert run_main([str(bad), "--fill"]) == 1
    unknown = tmp_path / "unknown.onnx"
    onnx.save(one_node("FrobnicateAll"), unknown)
    assert run_main([str(unknown), "--fill"]) == 1
    wrong = tmp_path / "x.npy"
    np.save(wrong, np.ones((3, 8), np.float32))
    assert run_main([str(SEEDS / "mlp.onnx"), str(wrong)]) == 1


def _mutate(rng: np.random.Generator, data: bytes) -> bytes:
    name = str(rng.choice(list(mutations.MUTATIONS)))
    return mutations.MUTATIONS[name](rng, data)


def test_mutated_models_fail_cleanly_in_process(tmp_path):
    """200 mutants of the seed models: each loads and runs, or raises OnnxError; no other
    exception, and no file outside the model's folder is opened."""
    rng = np.random.default_rng(0)
    seeds = sorted(SEEDS.glob("*.onnx"))
    outcomes = {"ok": 0, "error": 0}
    for k in range(200):
        seed = seeds[k % len(seeds)]
        folder = tmp_path / f"m{k}"
        folder.mkdir()
        shutil.copy(SEEDS / "external.bin", folder / "external.bin")
        path = folder / "model.onnx"
        path.write_bytes(_mutate(rng, seed.read_bytes()))
        try:
            model = uopc.onnx.load(path)
            for port in model.inputs:
                if port.shape is None or np.prod(port.shape) > 1 << 20:
                    raise OnnxError("skip: no static small shape")
            model(*[np.ones(p.shape, p.dtype) for p in model.inputs])
            outcomes["ok"] += 1
        except OnnxError:
            outcomes["error"] += 1
        except Exception as err:  # noqa: BLE001 -- the point: name what escaped
            pytest.fail(f"mutant {k} of {seed.name}: {type(err).__name__}: {err}")
    assert outcomes["error"] > 50 and outcomes["ok"] > 0, outcomes


def test_mutated_models_through_the_cli():
    """The CLI fuzzer's check (subprocess, limits, traceback/crash/hang detection) on a
    few mutants of each seed model."""
    rng = np.random.default_rng(1)
    for seed in sorted(SEEDS.glob("*.onnx")):
        for command in mutations.COMMANDS[::2]:
            mutant = mutations.Mutant(_mutate(rng, seed.read_bytes()), ".onnx", command,
                                      f"mutant of {seed.name}")
            outcome = mutations.check(mutant)
            assert outcome.kind == "ok", (mutant.origin, command, outcome)
    assert "onnx" in {p.suffix.lstrip(".") for p in mutations.seeds()}




def test_readme_lists_the_op_table():
    from uopc.onnx.ops import supported_ops_text

    readme = (Path(__file__).resolve().parents[2] / "README.md").read_text()
    assert supported_ops_text() in readme, "README's ONNX op list is stale: paste " \
        "uopc.onnx.ops.supported_ops_text()"
