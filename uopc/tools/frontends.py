"""Frontends of the layers above `uopc.pipelines`, for `uopc-opt`, `uopc-run` and the
stock `xdsl-opt` (pyproject.toml publishes `UNIVERSE` as a second `xdsl.universe` entry
point): `.onnx` models (`uopc.onnx.frontend`). Entries are lazy, so that a tool's start
does not import onnx.

`BINARY` names the frontends whose input is bytes, not text: uopc-opt hands them the
file as it is (no UTF-8 decoding, no `--split-input-file` chunks).
"""

from __future__ import annotations

from pathlib import Path

from xdsl.dialects.builtin import ModuleOp
from xdsl.universe import Universe

from uopc.pipelines import _lazy

FRONTENDS: dict[str, str] = {
    "onnx": "uopc.onnx.frontend.OnnxFrontend",
}
BINARY = frozenset({"onnx"})

UNIVERSE = Universe(all_frontends={name: _lazy(path) for name, path in FRONTENDS.items()})


def parse_binary(path: Path) -> ModuleOp:
    """The module of the binary file `path` (its frontend by extension, `BINARY`)."""
    from uopc.uopdialect.context import make_context

    frontend = UNIVERSE.all_frontends[path.suffix.lstrip(".")]()
    with open(path, "rb") as stream:
        return frontend().parse(make_context(), stream, str(path))
