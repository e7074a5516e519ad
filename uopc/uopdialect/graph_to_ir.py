"""Build uop xDSL IR from a traced `UOp` graph (done on a plan-cache miss only).

The graph becomes one `func.func` whose arguments are the graph's input buffers, in slot
order, and whose results are the requested roots. Nodes are visited in a given
topological order, so graphs of any depth build without recursion; every op is created
with its class's builder (`XOp.make`, found through the node's record), which applies the
same shape rule the frontend used to type the node.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from xdsl.dialects import builtin, func
from xdsl.ir import Operation, SSAValue

from uopc.uopdialect.graph import UOp
from uopc.uopdialect.ops import OP, ConstOp, UopOp
from uopc.uopdialect.shapes import Sig
from uopc.uopdialect.types import tensor_type


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
        info = node.op
        if info is OP.buffer:
            values[id(node)] = block.args[slot_of[id(node)]]
            continue
        if info is OP.const:
            op: Operation = ConstOp.from_array(node.arg, node.sig)
        else:
            op_class = info.op
            if op_class is None or not issubclass(op_class, UopOp):
                raise TypeError(f"{info.name} has no uop builder")
            # reshape, expand and cast take their target from the node's type; the other
            # builders compute it with the rule that typed the node
            op = op_class.make(*[values[id(s)] for s in node.srcs], result=node.sig,
                               **info.params_of(node.arg))
        block.add_op(op)
        values[id(node)] = op.results[0]
    block.add_op(func.ReturnOp(*(values[id(r)] for r in roots)))
    return builtin.ModuleOp([fn])
