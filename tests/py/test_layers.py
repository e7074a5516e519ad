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
    "uopc.passes": 1,
    "uopc.importers": 1,
    "uopc.pipelines": 1,  # names the passes (as strings) and composes the compile
    "uopc.lowering": 2,  # tensors to loops
    "uopc.transforms": 3,  # the loop transforms of uop-apply-schedule
    "uopc.gpu": 4,
    "uopc.targets": 5,  # the C and CUDA emitters; emit_cuda reads uopc.gpu's attributes
    "uopc.runtime": 6,
    "uopc.frontend": 7,
    "uopc.tools": 8,
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


def import_cycles() -> list[list[str]]:
    """The import circles among the modules of each package (every import statement,
    lazy ones too): strongly connected components of more than one module, found by
    Tarjan's algorithm, iteratively."""
    graph: dict[str, set[str]] = {}
    for path in sorted(PACKAGE.rglob("*.py")):
        module = module_name(path)
        graph[module] = {target for _, target in imported_modules(path, module)
                         if target != module and package_of(target) == package_of(module)}
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    cycles: list[list[str]] = []
    for root in graph:
        if root in index:
            continue
        work = [(root, iter(sorted(graph[root])))]
        index[root] = low[root] = len(index)
        stack.append(root)
        on_stack.add(root)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in graph:
                    continue
                if child not in index:
                    index[child] = low[child] = len(index)
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(graph[child]))))
                elif child in on_stack:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                component = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.append(member)
                    if member == node:
                        break
                if len(component) > 1:
                    cycles.append(sorted(component))
    return cycles


def test_no_import_circle_spans_two_modules_of_a_package():
    cycles = import_cycles()
    assert not cycles, "import circles:\n" + "\n".join(" <-> ".join(c) for c in cycles)
