"""Deploy-manifest mutation: an exported artifact (`uopc.export`, a two-layer MLP with an
arena) whose `manifest.json` has fields set to hostile values (sizes, shapes, dtypes,
file names, types), dropped or added, or whose other files are truncated, flipped,
swapped or replaced by links, must be refused by `uopc.deploy.load` with a `DeployError`
naming the artifact's file, or load and compute exactly what the export computed. Never
another exception, a crash, or a wrong result."""

from __future__ import annotations

import functools
import json
import os
import re
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

NAME = "manifests"
X = np.linspace(-1, 1, 24, dtype=np.float32).reshape(4, 6)
#: besides HOSTILE_VALUES: the artifact's other names and plausible-looking neighbours
VALUES = (*HOSTILE_VALUES, "model.c", "manifest.json", "weights.bin", "model.so",
          "uopc_deploy.py", "float64", "int32", "bfloat16", "float32", [4, 3], [3], [4, 6],
          [1, 3], [2**62, 2**62], 64, 4096, 2**46)
FILES = ("model.so", "weights.bin", "model.c")


@functools.cache
def _artifact(work: Path) -> tuple[Path, dict[str, Any], Any]:
    """The exported artifact (once per process), its manifest and its outputs on X."""
    import uopc.deploy as deploy
    from uopc.frontend import nn
    from uopc.frontend.export import export
    from uopc.frontend.tensor import manual_seed

    class TwoLayers(nn.Module):
        def __init__(self) -> None:
            self.a, self.b = nn.Linear(6, 8), nn.Linear(8, 3)

        def forward(self, x: Any) -> Any:
            return self.b(self.a(x).relu()).softmax(-1)

    manual_seed(3)
    path = export(TwoLayers(), [X], work / f"artifact-{os.getpid()}" / "two.uopc")
    manifest = json.loads((path / deploy.MANIFEST).read_text())
    return path, manifest, deploy.load(path)(X)


def edits(rng: np.random.Generator) -> list[tuple]:
    """One to three edits of the manifest or of the artifact's files."""
    # the manifest's shape, without building the artifact: its keys are fixed
    skeleton = {"format": 0, "format_version": 0, "returns": 0, "arena_bytes": 0,
                "memory": [0], "kernels": [0],
                "inputs": [{"name": 0, "shape": [0, 0], "dtype": 0}],
                "outputs": [{"name": 0, "shape": [0, 0], "dtype": 0}],
                "library": {"file": 0, "bytes": 0, "sha256": 0},
                "weights": {"file": 0, "bytes": 0, "sha256": 0, "byte_order": 0,
                            "tensors": [{"name": 0, "shape": [0], "dtype": 0, "offset": 0}]}}
    found: list[tuple] = []
    for _ in range(int(rng.integers(1, 4))):
        how = rng.random()
        if how < 0.7:
            found.append(("manifest", json_edit(rng, skeleton, VALUES)))
        elif how < 0.85:
            name = FILES[int(rng.integers(len(FILES)))]
            found.append(("file", name, byte_edit(rng, 4096)))
        else:
            a, b = rng.choice(len(FILES), 2, replace=False)
            found.append(("link" if rng.random() < 0.5 else "swap", FILES[a], FILES[b]))
    return found


def check(work: Path, edit_list: list[tuple]) -> str:
    import uopc.deploy as deploy

    original, manifest, expected = _artifact(work)
    case = work / f"case-{os.getpid()}"
    shutil.rmtree(case, ignore_errors=True)
    case.mkdir()
    for name in os.listdir(original):
        os.link(original / name, case / name)  # the same library file: loaded once
    manifest = json.loads(json.dumps(manifest))
    for edit in edit_list:
        if edit[0] == "manifest":
            apply_json_edit(manifest, edit[1])
        elif edit[0] == "file":
            data = apply_byte_edit((case / edit[1]).read_bytes(), edit[2])
            (case / edit[1]).unlink()
            (case / edit[1]).write_bytes(data)
        elif edit[0] == "link":
            (case / edit[1]).unlink()
            os.symlink(original / edit[2], case / edit[1])
        else:
            a, b = case / edit[1], case / edit[2]
            os.replace(a, case / "swap")
            os.replace(b, a)
            os.replace(case / "swap", b)
    text = json.dumps(manifest, allow_nan=True)
    (case / deploy.MANIFEST).unlink()
    (case / deploy.MANIFEST).write_text(text)
    try:
        model = deploy.load(case)
    except Exception as err:  # noqa: BLE001  (expect_error raises what is not expected)
        account = expect_error(err, deploy.DeployError, str(case))
        _check_named_field(str(err), manifest)
        return account
    got = model(X)
    if not np.array_equal(got, expected):
        raise Wrong(f"an edited artifact loaded and computed {got!r}, expected {expected!r}")
    return "loaded and computed the exported result"


_FIELD = re.compile(r"field ([\w.\[\]]+)")


def _check_named_field(message: str, manifest: Any) -> None:
    """A message saying `field F` must name a field of the manifest by its whole path
    (`weights.tensors[0].name`), which must be there (but its last part, when the
    message says it is missing)."""
    match = _FIELD.search(message)
    if match is None:
        return
    parts = [p for p in re.split(r"[.\[\]]+", match.group(1)) if p]
    node = manifest
    for part in parts[:-1] if f"{match.group(1)} is missing" in message else parts:
        key: Any = int(part) if isinstance(node, list) and part.isdigit() else part
        try:
            node = node[key]
        except (KeyError, IndexError, TypeError):
            raise Wrong(f"the message names field {match.group(1)}, which is no path in the "
                        f"manifest: {message[:200]!r}") from None
