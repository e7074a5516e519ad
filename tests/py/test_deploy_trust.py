"""`uopc.deploy` trusts nothing in a manifest that the artifact's library does not
confirm: file names stay inside the artifact, the arena's size and the ports' shapes and
dtypes must be what the library was compiled for (its `uopc_signature`), the manifest is
covered by a digest compiled into the library, and every missing, mistyped or malformed
field is a DeployError naming it (never a KeyError, TypeError, RecursionError, a crash
or a heap overflow)."""

from __future__ import annotations

import json
import os
import shutil
import subprocess

import numpy as np
import pytest

import uopc
from uopc import deploy, manual_seed, nn
from uopc.deploy import DeployError


class TwoLayers(nn.Module):
    def __init__(self) -> None:
        self.a, self.b = nn.Linear(6, 8), nn.Linear(8, 3)

    def forward(self, x):
        return self.b(self.a(x).relu()).softmax(-1)


X = np.linspace(-1, 1, 24, dtype=np.float32).reshape(4, 6)


@pytest.fixture(scope="module")
def artifact(tmp_path_factory):
    manual_seed(3)
    path = uopc.export(TwoLayers(), [X], tmp_path_factory.mktemp("art") / "two.uopc")
    manifest = json.loads((path / deploy.MANIFEST).read_text())
    assert manifest["arena_bytes"] > 0  # the plan has temporaries: the arena matters
    return path


@pytest.fixture
def copy(artifact, tmp_path):
    target = tmp_path / "copy"
    shutil.copytree(artifact, target)
    return target


def _edit(path, change):
    manifest = json.loads((path / deploy.MANIFEST).read_text())
    change(manifest)
    (path / deploy.MANIFEST).write_text(json.dumps(manifest))


def _set(*keys_and_value):
    *keys, value = keys_and_value

    def change(manifest):
        obj = manifest
        for key in keys[:-1]:
            obj = obj[key]
        obj[keys[-1]] = value

    return change


def _drop(*keys):
    def change(manifest):
        obj = manifest
        for key in keys[:-1]:
            obj = obj[key]
        del obj[keys[-1]]

    return change


# (what is edited, the field the message must name)
EDITS = [
    (_set("arena_bytes", 0), "field arena_bytes says 0, but .* was compiled for"),
    (_set("arena_bytes", -64), "field arena_bytes is -64, expected a count"),
    (_set("arena_bytes", "4096"), "field arena_bytes is str '4096', expected int"),
    (_set("arena_bytes", 1.5), "field arena_bytes is float"),
    (_set("arena_bytes", True), "field arena_bytes is bool"),
    (_set("arena_bytes", 10 ** 60), "field arena_bytes is .*expected a count"),
    (_set("outputs", 0, "shape", [4, 1]), r"field outputs\[0\].shape says \[4, 1\], but "
                                          r".* compiled for \[4, 3\]"),
    (_set("outputs", 0, "shape", [4, 300]), r"field outputs\[0\].shape says \[4, 300\]"),
    (_set("outputs", 0, "dtype", "float64"), r"field outputs\[0\].dtype says 'float64'"),
    (_set("outputs", 0, "dtype", "object"), r"field outputs\[0\].dtype is 'object', expected"),
    (_set("inputs", 0, "shape", [2, 6]), r"field inputs\[0\].shape says \[2, 6\]"),
    (_set("inputs", 0, "shape", [4, -6]), r"field inputs\[0\].shape\[1\] is -6"),
    (_set("inputs", 0, "shape", "4x6"), r"field inputs\[0\].shape is str"),
    (_set("inputs", 0, "dtype", 5), r"field inputs\[0\].dtype is int 5, expected str"),
    (_set("inputs", 0, "name"), r"field inputs\[0\] is str, expected an object"),
    (_set("inputs", {"0": 1}), "field inputs is dict"),
    (_drop("outputs", 0, "shape"), r"field outputs\[0\].shape is missing"),
    (_set("outputs", 0, "copy_of", 3), r"field outputs\[0\].copy_of is 3"),
    (_set("returns", "dict"), "field returns is 'dict'"),
    (_set("library", "model.so"), "field library is str"),
    (_set("library", "file", "/usr/lib/libm.so.6"), "field library.file is '/usr/lib/libm"),
    (_set("library", "file", "../copy/model.so"), r"field library.file is '\.\./copy"),
    (_set("library", "file", ".."), r"field library.file is '\.\.'"),
    # longer than a file name may be: an OSError from stat (the manifest fuzzer, seed 458)
    (_set("library", "file", "x" * 300), "field library.file is a name of 300 characters"),
    (_drop("library", "file"), "field library.file is missing"),
    (_set("library", "sha256", "abc"), "field library.sha256 is 'abc', expected 64 hex"),
    (_set("library", "bytes", None), "field library.bytes is NoneType"),
    (_set("weights", "file", "/etc/passwd"), "field weights.file is '/etc/passwd'"),
    (_set("weights", "byte_order", 1), "field weights.byte_order is int"),
    (_set("weights", "tensors", 0, "offset", -64), r"weights.tensors\[0\].offset is -64"),
    # the whole path, not "field tensors" (found by the manifest fuzzer, seed 14)
    (_set("weights", "tensors", ""), "field weights.tensors is str ''"),
    (_set("weights", "tensors", [7]), r"field weights.tensors\[0\] is int"),
    (_set("weights", "tensors", 0, "shape", [[8]]), r"weights.tensors\[0\].shape\[0\] is"),
    (_set("weights", "bytes", 10), "weights.bin has .* bytes, .* expects 10"),
    (_set("kernels", []), "does not match the digest compiled into"),
    (_set("inputs", 0, "name", "renamed"), "does not match the digest compiled into"),
    (_set("outputs", 0, "name", "y"), "does not match the digest compiled into"),
]


@pytest.mark.parametrize("change, message", EDITS,
                         ids=[m.split(" is")[0].split(" says")[0][:40] for _, m in EDITS])
def test_an_edited_manifest_is_refused_naming_the_field(copy, change, message):
    _edit(copy, change)
    with pytest.raises(DeployError, match=message):
        deploy.load(copy)


@pytest.mark.parametrize("text", ["[" * 100_000, '{"format": ' + "9" * 5000 + "}",
                                  "[1, 2]", '"text"', "\xff\xfe"])
def test_unparsable_manifests_are_refused(copy, text):
    (copy / deploy.MANIFEST).write_text(text, errors="surrogateescape")
    with pytest.raises(DeployError):
        deploy.load(copy)


def test_files_that_are_links_or_devices_are_refused(copy, tmp_path):
    outside = tmp_path / "outside.bin"
    shutil.copyfile(copy / deploy.WEIGHTS, outside)
    os.unlink(copy / deploy.WEIGHTS)
    os.symlink(outside, copy / deploy.WEIGHTS)  # same bytes, but outside the artifact
    with pytest.raises(DeployError, match="weights.bin is not a regular file"):
        deploy.load(copy)
    os.unlink(copy / deploy.WEIGHTS)
    os.symlink("/dev/zero", copy / deploy.WEIGHTS)
    with pytest.raises(DeployError, match="weights.bin is not a regular file"):
        deploy.load(copy)


def test_a_library_without_a_signature_is_refused(copy, tmp_path):
    """A format-1 style library (its entry point only) whose digest the manifest records:
    the loader wants the library's own word on the arena and the ports."""
    source = tmp_path / "old.c"
    source.write_text("void uopc_run(void **o, void **i, unsigned char *w, "
                      "unsigned char *a) {}\n")
    subprocess.run(["cc", "-shared", "-fPIC", str(source), "-o", str(copy / "old.so")],
                   check=True)
    entry = {"file": "old.so", "bytes": (copy / "old.so").stat().st_size,
             "sha256": deploy.file_sha256(copy / "old.so")}
    _edit(copy, lambda m: m["library"].update(entry))
    with pytest.raises(DeployError, match="old.so has no readable uopc_signature"):
        deploy.load(copy)


def test_the_genuine_artifact_still_loads_and_runs(artifact):
    model = deploy.load(artifact)
    out = model(X)
    assert out.shape == (4, 3) and np.allclose(out.sum(-1), 1, atol=1e-5)
