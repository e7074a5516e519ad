"""The package layout is a stack of layers, and imports only go down.

    uopc.uopdialect <- uopc.passes <- uopc.lowering <- uopc.transforms <- uopc.gpu
        <- uopc.targets <- uopc.runtime <- uopc.frontend <- uopc.tools

`uopc.importers` (text formats turned into uop IR) sits beside the passes, `uopc.datasets`
at the bottom. Every `import` statement of every module is checked, those inside functions
too (a lazy import is still a dependency).
"""

from __future__ import annotations

import ast
from pathlib import Path

import uopc

PACKAGE = Path(uopc.__file__).parent

LAYERS = {
    "uopc.uopdialect": 0,
    "uopc.datasets": 0,
    "uopc.deploy": 0,  # the loader of exported artifacts: numpy and cffi only
    "uopc.settings": 0,  # every knob read from the environment
    "uopc.cpu": 0,  # the CPU's facts that schedules are sized by
    "uopc.linalg_named": 0,  # named linalg ops xDSL lacks (the plugin adds them, so light)
    "uopc.passes": 1,
    "uopc.importers": 1,
    "uopc.pipelines": 1,  # names the passes (as strings) and composes the compile
    "uopc.lowering": 2,  # tensors to loops
    "uopc.transforms": 3,  # the loop transforms of uop-apply-schedule
    "uopc.gpu": 4,
    "uopc.targets": 5,  # the C and CUDA emitters; emit_cuda reads uopc.gpu's attributes
    "uopc.runtime": 6,
    "uopc.frontend": 7,
    "uopc.nn": 7,  # `import uopc.nn`: uopc.frontend.nn under its PyTorch-style name
    "uopc.optim": 7,  # likewise uopc.frontend.optim
    "uopc.tools": 8,
    "uopc.pytorch": 8,  # the PyTorch door: torch.compile's backend over the frontend
    "uopc.onnx": 8,  # ONNX models in: the reader, the op table onto the Tensor API, the frontend
    "uopc.testing": 9,
}
TOP = max(LAYERS.values()) + 1  # `uopc/__init__.py`, which re-exports the frontend


def module_name(path: Path) -> str:
    parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def layer(module: str) -> int:
    for prefix, rank in LAYERS.items():
        if module == prefix or module.startswith(prefix + "."):
            return rank
    if module == "uopc":
        return TOP
    raise AssertionError(f"{module} belongs to no layer: add it to LAYERS in {__file__}")


def is_module(name: str) -> bool:
    path = PACKAGE.parent / name.replace(".", "/")
    return path.with_suffix(".py").exists() or path.is_dir()


def imported_modules(path: Path, module: str) -> list[tuple[int, str]]:
    """(line, module) of every uopc module that `path` imports."""
    package = module if path.name == "__init__.py" else module.rpartition(".")[0]
    found = []
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:  # relative: resolve against the importing package
                anchor = package.split(".")
                anchor = anchor[: len(anchor) - node.level + 1]
                base = ".".join([*anchor, base] if base else anchor)
            # `from uopc.x import y` may name the submodule uopc.x.y
            names = [f"{base}.{alias.name}" if is_module(f"{base}.{alias.name}") else base
                     for alias in node.names]
        else:
            continue
        found += [(node.lineno, n) for n in names if n == "uopc" or n.startswith("uopc.")]
    return found


def test_every_module_imports_only_its_own_layer_or_below():
    upward = []
    for path in sorted(PACKAGE.rglob("*.py")):
        module = module_name(path)
        own = layer(module)
        for line, target in imported_modules(path, module):
            if layer(target) > own:
                upward.append(f"{path.relative_to(PACKAGE.parent)}:{line}: {module} "
                              f"(layer {own}) imports {target} (layer {layer(target)})")
    assert not upward, "upward imports:\n" + "\n".join(upward)


def test_the_check_sees_lazy_and_relative_imports(tmp_path):
    # a module of the dialect layer that lazily imports the frontend is caught
    fake = PACKAGE / "uopdialect" / "ops.py"
    source = "def f():\n    from uopc.frontend.tensor import Tensor\nfrom . import shapes\n"
    probe = tmp_path / "probe.py"
    probe.write_text(source)
    found = imported_modules(probe, module_name(fake))
    assert (2, "uopc.frontend.tensor") in found
    assert (3, "uopc.uopdialect.shapes") in found
    assert layer("uopc.frontend.tensor") > layer(module_name(fake))


def package_of(module: str) -> str:
    """The package a module belongs to (a package's `__init__` belongs to itself)."""
    is_package = (PACKAGE.parent / module.replace(".", "/")).is_dir()
    return module if is_package else module.rpartition(".")[0]


def import_graph() -> dict[str, set[str]]:
    """The modules of its own package that each uopc module imports (every import
    statement, lazy ones too)."""
    graph = {}
    for path in sorted(PACKAGE.rglob("*.py")):
        module = module_name(path)
        graph[module] = {target for _, target in imported_modules(path, module)
                         if target != module and package_of(target) == package_of(module)}
    return graph


def circles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The import circles of `graph` that span more than one module (its strongly
    connected components of two modules or more), each as sorted names."""
    reach = {}
    for start in graph:
        seen, todo = set(), [start]
        while todo:
            for target in graph.get(todo.pop(), ()):
                if target not in seen:
                    seen.add(target)
                    todo.append(target)
        reach[start] = seen
    # a module's circle: itself and what it reaches that reaches it back
    found = {tuple(sorted({m} | {o for o in reach[m] if m in reach.get(o, ())}))
             for m in graph if m in reach[m]}
    return sorted(list(c) for c in found if len(c) > 1)


def test_no_import_circle_spans_two_modules_of_a_package():
    found = circles(import_graph())
    assert not found, "import circles:\n" + "\n".join(" <-> ".join(c) for c in found)


def test_the_circle_check_finds_circles_through_several_modules():
    graph = {"a": {"b"}, "b": {"c", "x"}, "c": {"a"}, "d": {"d", "a"}, "x": set()}
    assert circles(graph) == [["a", "b", "c"]]
