"""The PyTorch door: PyTorch programs compiled and run by uopc.

    compiled = torch.compile(model, backend="uopc")      # Dynamo; no `import uopc` needed
    run = uopc.compile(model, [x])                        # ahead of time, via torch.export
    run = uopc.from_exported(torch.export.export(model, (x,)))

Graphs arrive in PyTorch's core ATen opset; each ATen op uopc compiles is one entry of
`uopc.pytorch.aten.TABLE`, written with the `Tensor` API. A graph is traced once per
input signature and run as one plan (`uopc.pytorch.runner`); ops uopc does not compile
stay PyTorch's (`uopc.pytorch.compiler`). Dynamo finds the backend through the
`torch_dynamo_backends` entry point that pyproject.toml declares.
"""

from uopc.pytorch.compiler import backend, compile, compile_graph, from_exported

__all__ = ["backend", "compile", "compile_graph", "from_exported"]
