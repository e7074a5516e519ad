"""Every pass, target and frontend that uopc adds to xDSL's, by name.

Entries are factories so that `uopc-opt --help` does not import the whole compiler.
To add a pass: write it in `uopc/passes/<name>.py` (a `ModulePass` with a `name`), add a
line to `PASSES`, and add a FileCheck test in `tests/filecheck/passes/`.
"""

from __future__ import annotations

from collections.abc import Callable
from importlib import import_module

from xdsl.passes import ModulePass
from xdsl.utils.target import Target


def _lazy(path: str) -> Callable[[], type]:
    module, _, attr = path.rpartition(".")
    return lambda: getattr(import_module(module), attr)


#: pass name -> "module.Class"
PASSES: dict[str, str] = {
    "uop-kernelize": "uopc.passes.kernelize.KernelizePass",
    "uop-fold": "uopc.passes.fold.UopFoldPass",
    "uop-symbolic": "uopc.passes.symbolic.UopSymbolicPass",
    "uop-eval": "uopc.passes.eval.UopEvalPass",
    "uop-rangeify": "uopc.lowering.rangeify.UopRangeify",
}

#: target name -> "module.Class"
TARGETS: dict[str, str] = {
    "c": "uopc.lowering.emit_c.CTarget",
}

#: file extension -> "module.Class"
FRONTENDS: dict[str, str] = {
    "uir": "uopc.importers.uir.UirFrontend",
}


def pass_factories() -> dict[str, Callable[[], type[ModulePass]]]:
    return {name: _lazy(path) for name, path in PASSES.items()}


def target_factories() -> dict[str, Callable[[], type[Target]]]:
    return {name: _lazy(path) for name, path in TARGETS.items()}


def frontend_factories() -> dict[str, Callable[[], type]]:
    return {name: _lazy(path) for name, path in FRONTENDS.items()}


def all_passes() -> dict[str, type[ModulePass]]:
    """Every pass uopc-opt knows (xDSL's and ours), resolved, for in-process pipelines."""
    from xdsl.universe import Universe

    passes = {name: f() for name, f in Universe.get_multiverse().all_passes.items()}
    passes.update({name: f() for name, f in pass_factories().items()})
    return passes
