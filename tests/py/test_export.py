"""`uopc.export` and `uopc.deploy`: an exported static plan runs the Tensor API's own
kernels bit for bit, in a process that never imports the compiler; it is reproducible
byte for byte; damaged or mismatched artifacts and bad inputs are refused with messages
that name the file or input and the fix."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest

import uopc
from uopc import Tensor, deploy, manual_seed, nn
from uopc.frontend.export import ExportError
from uopc.frontend.llm.gpt2 import GPT2
from uopc.runtime.engine import default_engine

RNG = np.random.default_rng(5)
FILES = (deploy.MANIFEST, deploy.LIBRARY, deploy.SOURCE, deploy.WEIGHTS, deploy.LOADER)


class MLP(nn.Module):
    """The MNIST MLP of examples/mnist_mlp.py (784-128-10)."""

    def __init__(self) -> None:
        self.hidden, self.out = nn.Linear(784, 128), nn.Linear(128, 10)

    def forward(self, images: Tensor) -> Tensor:
        return self.out(self.hidden(images).relu()).log_softmax(-1)


def tiny_gpt2(seed: int = 0) -> GPT2:
    """A GPT-2 config forward (one block, width 32, 4 heads, 96 tokens), random weights."""
    dim, vocab, context = 32, 96, 16
    rng = np.random.default_rng(seed)
    shapes = {"wte.weight": (vocab, dim), "wpe.weight": (context, dim),
              "ln_f.weight": (dim,), "ln_f.bias": (dim,),
              "h.0.ln_1.weight": (dim,), "h.0.ln_1.bias": (dim,),
              "h.0.ln_2.weight": (dim,), "h.0.ln_2.bias": (dim,),
              "h.0.attn.c_attn.weight": (dim, 3 * dim), "h.0.attn.c_attn.bias": (3 * dim,),
              "h.0.attn.c_proj.weight": (dim, dim), "h.0.attn.c_proj.bias": (dim,),
              "h.0.mlp.c_fc.weight": (dim, 4 * dim), "h.0.mlp.c_fc.bias": (4 * dim,),
              "h.0.mlp.c_proj.weight": (4 * dim, dim), "h.0.mlp.c_proj.bias": (dim,)}
    state = {k: (0.2 * rng.standard_normal(s)).astype(np.float32) for k, s in shapes.items()}
    config = {"n_layer": 1, "n_embd": dim, "n_head": 4, "n_positions": context,
              "vocab_size": vocab}
    return GPT2(config, state)


def images(n: int = 16) -> np.ndarray:
    return RNG.random((n, 784), dtype=np.float32)


def same_bits(a: np.ndarray, b: np.ndarray) -> bool:
    return a.shape == b.shape and a.dtype == b.dtype and a.tobytes() == b.tobytes()


@pytest.fixture(scope="module")
def mlp_artifact(tmp_path_factory):
    manual_seed(0)
    model = MLP()
    path = uopc.export(model, [images()], tmp_path_factory.mktemp("mlp") / "mlp.uopc")
    return model, path


# ---- results: the Tensor API's kernels, bit for bit ------------------------------------
def test_mlp_artifact_matches_the_tensor_api_bit_for_bit(mlp_artifact):
    model, path = mlp_artifact
    loaded = deploy.load(path)
    assert [str(p) for p in loaded.inputs] == ["images: float32[16, 784]"]
    for _ in range(3):  # new inputs each time, not the example the export ran on
        x = images()
        want = model(Tensor(x)).numpy()
        plan, _ = default_engine().last
        got = loaded(x)
        assert same_bits(got, want)
    # the same kernels: the plan's C is the artifact's, plus the entry point
    assert plan.sources[0] in (path / deploy.SOURCE).read_text()
    # and the weights are the model's parameters, by name
    np.testing.assert_array_equal(loaded.weight("hidden.weight"), model.hidden.weight.numpy())
    # run() writes caller-owned outputs
    x = images()
    out = np.empty((16, 10), np.float32)
    loaded.run([out], [x])
    assert same_bits(out, model(Tensor(x)).numpy())


def test_quantized_weights_travel_packed_and_match_bit_for_bit(tmp_path):
    manual_seed(1)
    model = MLP()
    f32_bytes = sum(p.numpy().nbytes for p in (model.hidden.weight, model.out.weight))
    report = uopc.quantize_model(model, "q4_0")
    path = uopc.export(model, [images()], tmp_path / "q4.uopc")
    loaded = deploy.load(path)
    x = images()
    assert same_bits(loaded(x), model(Tensor(x)).numpy())
    manifest = json.loads((path / deploy.MANIFEST).read_text())
    weight_bytes = (path / deploy.WEIGHTS).stat().st_size
    # the packed words and scales, never a decoded f32 matrix
    assert weight_bytes < f32_bytes / 4 and report.bytes_after < f32_bytes / 4
    assert manifest["arena_bytes"] < 784 * 128 * 4


def test_gpt2_forward_matches_the_tensor_api_bit_for_bit(tmp_path):
    model = tiny_gpt2()

    def logits(ids: Tensor) -> Tensor:
        """GPT2.__call__ on a fresh cache, with the ids as a graph input: __call__ itself
        reads its ids into numpy (export refuses it: they would become a weight)."""
        cache = model.new_cache(ids.shape[1], ids.shape[0])
        step = model.step_inputs(np.zeros(ids.shape, np.int32), cache)
        return model.forward(cache, ids, *step[1:])

    ids = RNG.integers(0, 96, (2, 8))
    with pytest.raises(ExportError, match=r"weight 'constant\d+' \(int32\[2, 8\]\) changes "
                                          r"with the input values"):
        uopc.export(model, [ids], tmp_path / "refused")
    path = uopc.export(logits, [ids], tmp_path / "gpt2")
    manifest = json.loads((path / deploy.MANIFEST).read_text())
    assert manifest["inputs"] == [{"name": "ids", "shape": [2, 8], "dtype": "int64",
                                   "used": True}]
    names = [w["name"] for w in manifest["weights"]["tensors"]]
    assert {"model.wte", "model.wpe", "model.blocks.0.qkv.0", "model.ln_f.weight"} <= set(names)
    dtypes = {w["dtype"] for w in manifest["weights"]["tensors"]}
    assert {"float32", "bool", "int32"} <= dtypes  # causal mask, index tables
    loaded = deploy.load(path)
    for seed in range(2):
        other = np.random.default_rng(seed).integers(0, 96, (2, 8))  # int64 ids, as exported
        assert same_bits(loaded(other), model(other).numpy())


def test_several_outputs_repeated_outputs_and_unused_inputs(tmp_path):
    manual_seed(1)
    layer = nn.Linear(6, 4)

    def fn(x, unused, scale):
        y = layer(x) * scale
        return y, y.sum(-1), y

    x, unused, scale = RNG.random((3, 6), np.float32), np.zeros(2, np.float32), \
        RNG.random((3, 1), np.float32)
    path = uopc.export(fn, [x, unused, scale], tmp_path / "multi",
                       output_names=["y", "total", "again"])
    loaded = deploy.load(path)
    manifest = loaded.manifest
    assert [i["used"] for i in manifest["inputs"]] == [True, False, True]
    assert manifest["outputs"][2]["copy_of"] == 0
    assert [w["name"] for w in manifest["weights"]["tensors"]] == ["layer.weight", "layer.bias"]
    x2, s2 = RNG.random((3, 6), np.float32), RNG.random((3, 1), np.float32)
    got = loaded(x2, np.ones(2, np.float32), s2)
    want = fn(Tensor(x2), None, Tensor(s2))
    Tensor.realize_all(*want)
    assert isinstance(got, tuple) and len(got) == 3
    for g, w in zip(got, want):
        assert same_bits(g, w.numpy())


def test_weights_of_any_dtype_and_functions_without_weights(tmp_path):
    table = Tensor(RNG.standard_normal((10, 3)).astype(np.float16))  # built outside: a weight

    def lookup(ids):
        return table[ids].float() * 2.0

    ids = RNG.integers(0, 10, (4,)).astype(np.int32)
    loaded = deploy.load(uopc.export(lookup, [ids], tmp_path / "lookup"))
    entries = {w["name"]: w for w in loaded.manifest["weights"]["tensors"]}
    assert (entries["table"]["dtype"], entries["table"]["shape"]) == ("float16", [10, 3])
    np.testing.assert_array_equal(loaded.weight("table"), table.numpy())
    assert all(name.startswith("constant") for name in entries if name != "table")
    other = np.array([9, 0, 0, 5], np.int32)
    assert same_bits(loaded(other), lookup(Tensor(other)).numpy())
    # the ids were not known when the artifact was built: a negative one counts from the
    # end, one out of range selects zeros (as for computed indices), never another row
    wild = np.array([-1, 10, 3, -11], np.int32)
    got = loaded(wild)
    assert same_bits(got[[0, 2]], lookup(Tensor(np.array([9, 3], np.int32))).numpy())
    assert not got[[1, 3]].any()
    assert same_bits(got, lookup(Tensor(wild) + 0).numpy())

    bare = deploy.load(uopc.export(lambda x: (x * 2.0).exp(), [np.ones(5, np.float32)],
                                   tmp_path / "bare"))
    assert bare.manifest["weights"]["bytes"] == 0 and bare.inputs[0].name == "x"
    x = RNG.random(5, np.float32)
    assert same_bits(bare(x), (Tensor(x) * 2.0).exp().numpy())


# ---- DEBUG=1: kernels after fusion and the memory plan ---------------------------------
def test_debug_shows_kernels_and_memory_plan(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("DEBUG", "1")
    manual_seed(2)
    model = nn.Sequential(nn.Linear(20, 32), nn.Linear(32, 32), nn.Linear(32, 32),
                          nn.Linear(32, 5))
    path = uopc.export(model, [RNG.random((4, 20), np.float32)], tmp_path / "seq")
    err = capsys.readouterr().err
    (line,) = [e for e in err.splitlines() if e.startswith("export:")]
    manifest = json.loads((path / deploy.MANIFEST).read_text())
    memory = manifest["memory_plan"]
    assert f"{len(manifest['kernels'])} kernels after fusion" in line
    assert (f"memory plan: arena {memory['arena_bytes']} B for "
            f"{len(memory['temporaries'])} temporaries of {memory['temporary_bytes']} B") in line
    # one kernel per layer (the bias add fused into its matmul); three (4, 32)
    # activations of which the first and the third never live at once share memory
    assert len(manifest["kernels"]) == 4
    assert memory["temporaries"] == [512, 512, 512]
    assert memory["arena_bytes"] == 1024
    assert manifest["arena_bytes"] == memory["arena_bytes"]
    # the compile's realize line reports the same memory plan
    assert any(e.startswith("realize:") and "memory plan: arena" in e for e in err.splitlines())


# ---- the loader needs numpy and cffi only ----------------------------------------------
def _run_loader(code: str, art: Path, tmp_path: Path) -> dict:
    x = images()
    np.save(tmp_path / "x.npy", x)
    script = textwrap.dedent(code) + textwrap.dedent(f"""
        import json
        import numpy as np
        y = model(np.load({str(tmp_path / 'x.npy')!r}))
        np.save({str(tmp_path / 'y.npy')!r}, y)
        mods = sorted(m for m in sys.modules if m.split('.')[0] in ('xdsl', 'uopc', 'uopc_deploy'))
        print(json.dumps(mods))
    """)
    proc = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                          cwd=tmp_path, timeout=120)
    assert proc.returncode == 0, proc.stderr
    return {"modules": json.loads(proc.stdout.splitlines()[-1]), "x": x,
            "y": np.load(tmp_path / "y.npy")}


def test_uopc_deploy_imports_no_compiler(mlp_artifact, tmp_path):
    model, path = mlp_artifact
    ran = _run_loader(f"""
        import sys
        from uopc import deploy
        model = deploy.load({str(path)!r})
    """, path, tmp_path)
    assert ran["modules"] == ["uopc", "uopc.deploy"]  # no xdsl, no uopc compiler module
    assert same_bits(ran["y"], model(Tensor(ran["x"])).numpy())


def test_the_artifacts_own_loader_runs_without_uopc(mlp_artifact, tmp_path):
    model, path = mlp_artifact
    copy = tmp_path / "shipped"
    shutil.copytree(path, copy)
    ran = _run_loader(f"""
        import sys
        sys.path.insert(0, {str(copy)!r})
        import uopc_deploy
        model = uopc_deploy.load({str(copy)!r})
    """, copy, tmp_path)
    assert ran["modules"] == ["uopc_deploy"]
    assert same_bits(ran["y"], model(Tensor(ran["x"])).numpy())
    assert (copy / deploy.LOADER).read_bytes() == Path(deploy.__file__).read_bytes()


# ---- reproducible ------------------------------------------------------------------------
def test_exports_are_byte_identical_in_one_process_and_across_processes(tmp_path):
    script = textwrap.dedent("""
        import sys
        import numpy as np
        import uopc
        from uopc import manual_seed, nn
        manual_seed(3)
        model = nn.Sequential(nn.Linear(12, 16), nn.Linear(16, 3))
        x = np.random.default_rng(0).random((5, 12), dtype=np.float32)
        for target in sys.argv[1:]:
            uopc.export(model, [x], target)
    """)
    first, second, third = tmp_path / "a", tmp_path / "b", tmp_path / "c"
    for targets in ([first, second], [third]):
        proc = subprocess.run([sys.executable, "-c", script, *map(str, targets)],
                              capture_output=True, text=True, timeout=300)
        assert proc.returncode == 0, proc.stderr
    for name in FILES:
        data = (first / name).read_bytes()
        assert data == (second / name).read_bytes() == (third / name).read_bytes(), name
    assert str(tmp_path) not in (first / deploy.MANIFEST).read_text()


def test_export_replaces_an_artifact_but_no_other_directory(tmp_path, mlp_artifact):
    model, path = mlp_artifact
    target = tmp_path / "again"
    shutil.copytree(path, target)
    manual_seed(4)
    small = nn.Linear(3, 2)
    uopc.export(small, [np.ones((1, 3), np.float32)], target)
    assert str(deploy.load(target).inputs[0]) == "x: float32[1, 3]"
    assert sorted(p.name for p in target.iterdir()) == sorted(FILES)
    assert [p.name for p in tmp_path.iterdir()] == ["again"]  # no staging left behind
    other = tmp_path / "photos"
    other.mkdir()
    (other / "cat.jpg").write_bytes(b"meow")
    with pytest.raises(ExportError, match="exists and is not a uopc artifact"):
        uopc.export(small, [np.ones((1, 3), np.float32)], other)
    assert [p.name for p in other.iterdir()] == ["cat.jpg"]


# ---- damaged and mismatched artifacts ----------------------------------------------------
@pytest.fixture
def broken(mlp_artifact, tmp_path):
    copy = tmp_path / "art"
    shutil.copytree(mlp_artifact[1], copy)
    return copy


def _flip_byte(path: Path, at: int) -> None:
    data = bytearray(path.read_bytes())
    data[at] ^= 0x10
    path.write_bytes(bytes(data))


def test_corrupted_weights_are_refused(broken):
    _flip_byte(broken / deploy.WEIGHTS, 1000)
    with pytest.raises(deploy.DeployError, match=r"weights\.bin does not match its SHA-256.*"
                       r"export the model again"):
        deploy.load(broken)


def test_truncated_weights_are_refused(broken):
    data = (broken / deploy.WEIGHTS).read_bytes()
    (broken / deploy.WEIGHTS).write_bytes(data[:-4])
    with pytest.raises(deploy.DeployError, match=rf"weights\.bin has {len(data) - 4} bytes.*"
                       rf"expects {len(data)}"):
        deploy.load(broken)


def test_weights_of_another_export_are_refused(broken, tmp_path):
    manual_seed(99)  # the same architecture, other weights
    other = uopc.export(MLP(), [images()], tmp_path / "other")
    shutil.copyfile(other / deploy.WEIGHTS, broken / deploy.WEIGHTS)
    with pytest.raises(deploy.DeployError, match="weights file is corrupted or from another "
                                                 "export"):
        deploy.load(broken)
    # the other export's manifest with this library's entry: the library's own digest of
    # its manifest (which covers the weights' digest) refuses it
    mine = json.loads((broken / deploy.MANIFEST).read_text())
    theirs = json.loads((other / deploy.MANIFEST).read_text())
    (broken / deploy.MANIFEST).write_text(json.dumps({**theirs, "library": mine["library"]}))
    with pytest.raises(deploy.DeployError, match="does not match the digest compiled into"):
        deploy.load(broken)


def test_corrupted_or_missing_library_is_refused(broken):
    _flip_byte(broken / deploy.LIBRARY, 4000)
    with pytest.raises(deploy.DeployError, match=r"model\.so does not match its SHA-256"):
        deploy.load(broken)
    (broken / deploy.LIBRARY).unlink()
    with pytest.raises(deploy.DeployError, match=r"model\.so is missing"):
        deploy.load(broken)


def test_bad_manifests_are_refused(broken, tmp_path):
    with pytest.raises(deploy.DeployError, match="is not an exported uopc artifact"):
        deploy.load(tmp_path / "nothing")
    manifest = json.loads((broken / deploy.MANIFEST).read_text())
    (broken / deploy.MANIFEST).write_text(json.dumps({**manifest, "format_version": 99}))
    with pytest.raises(deploy.DeployError, match="format version 99, this loader reads "
                                                 f"version {deploy.FORMAT_VERSION}"):
        deploy.load(broken)
    (broken / deploy.MANIFEST).write_text(json.dumps({k: v for k, v in manifest.items()
                                                      if k != "weights"}))
    with pytest.raises(deploy.DeployError, match="lacks weights: the manifest is damaged"):
        deploy.load(broken)
    (broken / deploy.MANIFEST).write_text("{not json")
    with pytest.raises(deploy.DeployError, match="cannot be read"):
        deploy.load(broken)


def test_inputs_are_checked(mlp_artifact):
    loaded = deploy.load(mlp_artifact[1])
    with pytest.raises(deploy.InputError, match=r"input 0 \(images\) .* has shape \(8, 784\), "
                                                r"expected \(16, 784\)"):
        loaded(images(8))
    with pytest.raises(deploy.InputError, match=r"has dtype float64, expected float32: "
                                                r"convert it with \.astype\('float32'\)"):
        loaded(images().astype(np.float64))
    with pytest.raises(deploy.InputError, match=r"takes 1 input\(s\) \(images: "
                                                r"float32\[16, 784\]\), got 2"):
        loaded(images(), images())
    with pytest.raises(deploy.InputError, match=r"output 0 \(output\) .* has shape \(16,\)"):
        loaded.run([np.empty(16, np.float32)], [images()])
    # a strided view is fine (copied), and gives the contiguous array's result
    wide = np.repeat(images(), 2, axis=0)[::2]
    assert same_bits(loaded(wide), loaded(np.ascontiguousarray(wide)))


# ---- functions that cannot be one static plan --------------------------------------------
def test_value_dependent_functions_are_refused(tmp_path):
    manual_seed(5)
    layer = nn.Linear(4, 4)
    x = np.linspace(0.1, 0.9, 8, dtype=np.float32).reshape(2, 4)

    def branches(t):  # the second trace's values have a mean below 0.3
        return layer(t) if t.mean().item() > 0.3 else layer(-t)

    def host_math(t):
        return layer(t) + Tensor(t.numpy() * 2)

    dropout = nn.Sequential(nn.Linear(4, 4), nn.Dropout(0.5))
    with pytest.raises(ExportError, match="builds a different graph for other input values"):
        uopc.export(branches, [x], tmp_path / "a")
    with pytest.raises(ExportError, match=r"weight 'constant\d+' \(float32\[2, 4\]\) changes "
                                          r"with the input values"):
        uopc.export(host_math, [x], tmp_path / "b")
    with pytest.raises(ExportError, match="random .*call model.eval"):
        uopc.export(dropout, [x], tmp_path / "c")
    dropout.eval()
    uopc.export(dropout, [x], tmp_path / "d")
    with pytest.raises(ExportError, match="returned dict"):
        uopc.export(lambda t: {"y": layer(t)}, [x], tmp_path / "e")
    with pytest.raises(ExportError, match="output 1 .* is an input or weight"):
        uopc.export(lambda t: (layer(t), t), [x], tmp_path / "f")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["d"]
