"""Jamming: emit several copies of a loop body as one body, walking it once.

Copy c maps the body's values through its own map. An op whose operands are the same in
every copy (a load of A[i, p] when upcasting the axis j of A@B) is emitted once and
shared; a loop whose bounds are the same in every copy (the reduce loop) becomes ONE
loop carrying every copy's accumulators, its body jammed in turn. Shared ops come before
the copies' own pure ops that precede them (never past a store, an allocation or a
loop). `upcast` and `split` build their bodies this way.
"""

from __future__ import annotations

from collections.abc import Sequence

from xdsl.dialects import memref, scf, vector
from xdsl.ir import Block, Operation, SSAValue

from uopc.transforms.loops import INDEX, terminator


def _shareable(op: Operation) -> bool:
    """Can one op serve every copy that would compute it from the same operands? Pure
    scalar ops, broadcasts and loads can (the copies read memory nobody writes during
    the loop, or each copy its own buffer); a store or an allocation (each copy's row
    buffer) cannot."""
    return isinstance(op, (memref.LoadOp, vector.LoadOp, vector.BroadcastOp)) or (
        not op.regions and op.dialect_name() in ("arith", "math"))


def jam(ops: Sequence[Operation], maps: list[dict[SSAValue, SSAValue]], block: Block) -> None:
    """Append to `block` the jammed copies of `ops`: copy c maps values through maps[c]
    (and records its results there)."""
    # the copies' own pure ops wait until the next op that is not pure, so that the ops
    # all copies share come first: gcc's SLP vectorizer left a register tile scalar when
    # a copy's load of B came before the load of A that the copies share (a 3x128 tile:
    # 384 scalar FMAs instead of 24 vector ones)
    waiting: list[Operation] = []
    for op in ops:
        operands = [[m.get(v, v) for v in op.operands] for m in maps]
        same = all(o == operands[0] for o in operands[1:])
        if isinstance(op, scf.ForOp) and all(o[:3] == operands[0][:3] for o in operands[1:]):
            block.add_ops(waiting)
            waiting = []
            _jam_loop(op, operands, maps, block)
        elif same and _shareable(op):
            new = op.clone_without_regions(dict(zip(op.operands, operands[0])))
            block.add_op(new)
            for m in maps:
                m.update(zip(op.results, new.results))
        else:
            copies = [op.clone_without_regions(m) if not op.regions else op.clone(value_mapper=m)
                      for m in maps]
            if _shareable(op):
                waiting.extend(copies)
            else:
                block.add_ops([*waiting, *copies])
                waiting = []
    block.add_ops(waiting)


def _jam_loop(loop: scf.ForOp, operands: list[list[SSAValue]],
              maps: list[dict[SSAValue, SSAValue]], block: Block) -> None:
    """One loop with the (shared) bounds of `loop`, carrying every copy's accumulators."""
    old = loop.body.block
    carried = len(loop.iter_args)
    body = Block(arg_types=[INDEX, *(a.type for _ in maps for a in old.args[1:])])
    body.args[0].name_hint = old.args[0].name_hint
    inner_maps = []
    for c, m in enumerate(maps):
        inner = dict(m)
        inner[old.args[0]] = body.args[0]
        inner.update(zip(old.args[1:], body.args[1 + c * carried: 1 + (c + 1) * carried]))
        inner_maps.append(inner)
    jam(list(old.ops)[:-1], inner_maps, body)
    yielded = terminator(old).operands
    body.add_op(scf.YieldOp(*(inner.get(v, v) for inner in inner_maps for v in yielded)))
    lb, ub, step = operands[0][:3]
    new = scf.ForOp(lb, ub, step, [v for o in operands for v in o[3:]], body)
    new.attributes.update(loop.attributes)
    block.add_op(new)
    for c, m in enumerate(maps):
        m.update(zip(loop.results, new.results[c * carried: (c + 1) * carried]))
