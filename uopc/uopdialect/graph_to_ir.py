"""Build uop xDSL IR from a traced `UOp` graph (done on a plan-cache miss only).

The graph becomes one `func.func` whose arguments are the graph's input buffers, in slot
order, and whose results are the requested roots. Nodes are visited in a given
topological order, so graphs of any depth build without recursion; every op is created
with the dialect's builder (`XOp.make`), which applies the same shape rule the frontend
used to type the node.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence

from xdsl.dialects import builtin, func
from xdsl.ir import Operation, SSAValue

from uopc.uopdialect.graph import UOp
from uopc.uopdialect import ops
from uopc.uopdialect.shapes import Sig
from uopc.uopdialect.types import tensor_type

Builder = Callable[[UOp, list[SSAValue]], Operation]


def _binary(node: UOp, srcs: list[SSAValue]) -> Operation:
    return ops.BINARY_BY_NAME[node.op].make(*srcs)


def _unary(node: UOp, srcs: list[SSAValue]) -> Operation:
    return ops.UNARY_BY_NAME[node.op].make(*srcs)


def _with_type(cls: type[ops.UopOp]) -> Builder:
    """reshape, expand, cast: the node's type is the target."""
    return lambda node, srcs: cls.make(*srcs, result=node.sig)


def _lists(cls: type[ops.UopOp], *names: str) -> Builder:
    """Ops whose arg holds their integer lists: one list, or a tuple of several."""
    if len(names) == 1:
        return lambda node, srcs: cls.make(*srcs, **{names[0]: tuple(node.arg)})
    return lambda node, srcs: cls.make(*srcs, **dict(zip(names, map(tuple, node.arg))))


_BUILDERS: dict[str, Builder] = {
    **{name: _binary for name in ops.BINARY_BY_NAME},
    **{name: _unary for name in ops.UNARY_BY_NAME},
    "cast": _with_type(ops.CastOp),
    "reshape": _with_type(ops.ReshapeOp),
    "expand": _with_type(ops.ExpandOp),
    "where": lambda node, srcs: ops.WhereOp.make(*srcs),
    "permute": _lists(ops.PermuteOp, "perm"),
    "shrink": _lists(ops.ShrinkOp, "begin", "end"),
    "pad": _lists(ops.PadOp, "before", "after"),
    "flip": _lists(ops.FlipOp, "axes"),
    "stack": lambda node, srcs: ops.StackOp.make(*srcs),
    "index": lambda node, srcs: ops.IndexOp.make(*srcs),
    "reduce": lambda node, srcs: ops.ReduceOp.make(
        *srcs, kind=node.arg[0], axes=tuple(node.arg[1])),
    "contiguous": lambda node, srcs: ops.ContiguousOp.make(*srcs),
    "const": lambda node, srcs: ops.ConstOp.from_array(node.arg, node.sig),
}


def build_module(nodes: Sequence[UOp], roots: Sequence[UOp], slot_of: Mapping[int, int],
                 arg_sigs: Sequence[Sig], name: str = "main") -> builtin.ModuleOp:
    """A module with one function `name` computing `roots`.

    `nodes` lists every node reachable from `roots`, sources first (`graph.toposort`).
    `slot_of` maps `id(node)` of each buffer node to its argument number and `arg_sigs`
    gives the argument types (several buffer nodes may share one slot).
    """
    fn = func.FuncOp(name, ([tensor_type(s) for s in arg_sigs],
                            [tensor_type(r.sig) for r in roots]))
    block = fn.body.block
    values: dict[int, SSAValue] = {}
    for node in nodes:
        if node.op == "buffer":
            values[id(node)] = block.args[slot_of[id(node)]]
            continue
        build = _BUILDERS.get(node.op)
        if build is None:
            raise ValueError(f"cannot build IR for graph node {node!r}: unknown op {node.op!r}")
        op = build(node, [values[id(s)] for s in node.srcs])
        block.add_op(op)
        values[id(node)] = op.results[0]
    block.add_op(func.ReturnOp(*(values[id(r)] for r in roots)))
    return builtin.ModuleOp([fn])

