"""Graph-level reference executor: every node evaluated with its record's semantics.

This is the test oracle for the compiled engine (differential tests run random graphs
both ways) and nothing else: `uopc.runtime.engine` never calls it on its real path. It
walks the nodes in topological order (no recursion) and frees nothing, which is fine for
the small graphs tests use.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np

from uopc.uopdialect import semantics
from uopc.uopdialect.graph import UOp, toposort
from uopc.uopdialect.ops import OP


def run_graph(nodes: Sequence[UOp], roots: Sequence[UOp],
              read_buffer: Callable[[UOp], np.ndarray]) -> list[np.ndarray]:
    """The values of `roots`; `nodes` is a topological order of everything they reach and
    `read_buffer` gives the data of each buffer node."""
    values: dict[int, np.ndarray] = {}
    for node in nodes:
        if node.op is OP.buffer:
            value = np.asarray(read_buffer(node))
        elif node.op is OP.const:
            value = np.full(node.sig.shape, semantics.array(node.arg, node.sig.dtype))
        else:
            value = node.op.compute([values[id(s)] for s in node.srcs], node.arg)
        values[id(node)] = value
    return [np.array(values[id(r)]) for r in roots]


def evaluate(roots: Sequence[UOp]) -> list[np.ndarray]:
    """Reference values of `roots`, reading each buffer node's array (`node.arg`)."""
    return run_graph(toposort(roots), roots, lambda node: node.arg)
