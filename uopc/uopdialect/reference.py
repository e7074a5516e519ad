"""Graph-level reference executor: every node evaluated with `uopc.uopdialect.semantics`.

This is the test oracle for the compiled engine (differential tests run random graphs
both ways) and nothing else: `uopc.runtime.engine` never calls it on its real path. It walks
the nodes in topological order (no recursion) and frees nothing, which is fine for the
small graphs tests use.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np

from uopc.uopdialect import semantics
from uopc.uopdialect.graph import UOp, toposort

_EVAL: dict[str, Callable[[UOp, list[np.ndarray]], np.ndarray]] = {
    **{op: (lambda op: lambda n, s: semantics.binary(op, *s))(op)
       for op in ("add", "mul", "max", "cmplt", "cmpne", "floordiv", "floormod")},
    **{op: (lambda op: lambda n, s: semantics.unary(op, *s))(op)
       for op in ("recip", "exp2", "log2", "sqrt", "sin")},
    **{op: (lambda op: lambda n, s: semantics.movement(op, s[0], n.arg))(op)
       for op in semantics.MOVEMENT_OPS},
    "cast": lambda n, s: semantics.cast(s[0], n.arg),
    "where": lambda n, s: semantics.where(*s),
    "stack": lambda n, s: semantics.stack(s),
    "index": lambda n, s: semantics.index(s[0], [int(i) for i in s[1:]]),
    "reduce": lambda n, s: semantics.reduce(n.arg[0], s[0], n.arg[1]),
    "const": lambda n, s: np.full(n.sig.shape, semantics.array(n.arg, n.sig.dtype)),
}


def run_graph(nodes: Sequence[UOp], roots: Sequence[UOp],
              read_buffer: Callable[[UOp], np.ndarray]) -> list[np.ndarray]:
    """The values of `roots`; `nodes` is a topological order of everything they reach and
    `read_buffer` gives the data of each buffer node."""
    values: dict[int, np.ndarray] = {}
    for node in nodes:
        if node.op == "buffer":
            value = np.asarray(read_buffer(node))
        else:
            value = _EVAL[node.op](node, [values[id(s)] for s in node.srcs])
        values[id(node)] = value
    return [np.array(values[id(r)]) for r in roots]


def evaluate(roots: Sequence[UOp]) -> list[np.ndarray]:
    """Reference values of `roots`, reading each buffer node's array (`node.arg`)."""
    return run_graph(toposort(roots), roots, lambda node: node.arg)
