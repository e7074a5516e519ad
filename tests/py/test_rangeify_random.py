"""Differential tests: random programs compiled to C agree with `uopc.uopdialect.semantics`.

Each seed builds one function with several results; every result is a random chain of
ALU ops, movement ops, reductions (also broadcast back, like x - max(x)), casts and
where over three inputs. The reference evaluates the same IR op by op with the numpy
definitions of SPEC §5, so the comparison is exact: the programs compile in strict float
order (UOPC_STRICT=1: sums in order, libm's exp2 rather than the `approx` polynomial, which
is within 1 ulp of it but not always the same bits).
A second generator writes well-formed `.uir` programs (SPEC §11, with its broadcasting and
literal sugar) and runs them the same way.
"""

from __future__ import annotations

import random

import numpy as np
import pytest
from xdsl.dialects import func
from xdsl.dialects.builtin import ModuleOp
from xdsl.ir import Block, Region, SSAValue

from uopc import settings
from uopc.importers.uir import parse_uir
from uopc.passes.constprop import evaluate as evaluate_op
from uopc.runtime import compile_entries, compile_program
from uopc.uopdialect import ops as uop
from uopc.uopdialect.semantics import UndefinedBehavior
from uopc.uopdialect.shapes import Sig
from uopc.uopdialect.types import sig_of, tensor_type

SHAPE = (2, 3, 4)


@pytest.fixture(autouse=True)
def strict_float_order():
    """Every program of this file compiles in strict float order (see the docstring)."""
    with settings.override(UOPC_STRICT=True):
        yield


# ---- reference: evaluate uop IR op by op with the semantics module ----------------------------------


def evaluate(fn: func.FuncOp, inputs: list[np.ndarray]) -> list[np.ndarray]:
    env: dict[SSAValue, np.ndarray] = dict(zip(fn.body.block.args, inputs))
    for op in fn.body.block.ops:
        if isinstance(op, func.ReturnOp):
            return [env[v] for v in op.operands]
        if isinstance(op, uop.ConstOp):
            value = op.as_array()
        else:
            value = evaluate_op(op, [env[v] for v in op.operands])
        env[op.results[0]] = np.asarray(value).reshape(sig_of(op.results[0].type).shape)
    raise AssertionError("no return")


# ---- random programs ---------------------------------------------------------------------------------


class Builder:
    def __init__(self, r: random.Random, block: Block):
        self.r = r
        self.ops: list = []

    def add(self, op):
        self.ops.append(op)
        return op.results[0]

    def movement(self, v: SSAValue) -> SSAValue:
        r, sig = self.r, sig_of(v.type)
        rank = len(sig.shape)
        kind = r.choice(["permute", "flip", "pad", "shrink", "reshape"])
        if kind == "permute":
            perm = list(range(rank))
            r.shuffle(perm)
            return self.add(uop.PermuteOp.make(v, perm=perm))
        if kind == "flip":
            return self.add(uop.FlipOp.make(v, axes=sorted(r.sample(range(rank), r.randint(1, rank)))))
        if kind == "pad":
            return self.add(uop.PadOp.make(v, before=[r.randint(0, 1) for _ in range(rank)],
                                           after=[r.randint(0, 1) for _ in range(rank)]))
        if kind == "shrink" and all(n > 1 for n in sig.shape):
            begin = [r.randint(0, 1) for _ in sig.shape]
            return self.add(uop.ShrinkOp.make(v, begin=begin, end=list(sig.shape)))
        n = sig.numel
        d = r.choice([k for k in range(1, n + 1) if n % k == 0])
        return self.add(uop.ReshapeOp.make(v, result=Sig((n // d, d), sig.dtype)))

    def broadcast_reduce(self, v: SSAValue) -> SSAValue:
        """reduce over one axis, then reshape + expand back to v's shape."""
        sig = sig_of(v.type)
        axis = self.r.randrange(len(sig.shape))
        red = self.add(uop.ReduceOp.make(v, kind=self.r.choice(["add", "max"]), axes=[axis]))
        kept = tuple(1 if k == axis else n for k, n in enumerate(sig.shape))
        back = self.add(uop.ReshapeOp.make(red, result=Sig(kept, sig.dtype)))
        return self.add(uop.ExpandOp.make(back, result=sig))

    def step(self, v: SSAValue, others: list[SSAValue]) -> SSAValue:
        r, sig = self.r, sig_of(v.type)
        kind = r.choice(["unary", "binary", "binary", "movement", "movement", "reduce",
                         "cast", "where"])
        if kind == "unary":
            return self.add(uop.UNARY_BY_NAME[r.choice(["exp2", "sin", "recip", "sqrt"])].make(v))
        if kind == "movement":
            return self.movement(v)
        if kind == "reduce" and len(sig.shape) > 1:
            axes = sorted(r.sample(range(len(sig.shape)), r.randint(1, len(sig.shape) - 1)))
            return self.add(uop.ReduceOp.make(v, kind=r.choice(["add", "max"]), axes=axes))
        same = [w for w in others if w.type == v.type]
        w = r.choice(same) if same and r.random() < 0.5 else self.broadcast_reduce(v)
        if kind == "cast":
            half = self.add(uop.CastOp.make(v, result=Sig(sig.shape, "f16")))
            return self.add(uop.CastOp.make(half, result=sig))
        if kind == "where":
            cond = self.add(uop.CmpLtOp.make(v, w))
            return self.add(uop.WhereOp.make(cond, w, v))
        return self.add(uop.BINARY_BY_NAME[r.choice(["add", "mul", "max"])].make(v, w))


def random_program(seed: int, results: int = 6, depth: int = 6) -> ModuleOp:
    r = random.Random(seed)
    t = tensor_type(Sig(SHAPE, "f32"))
    ti = tensor_type(Sig(SHAPE, "i32"))
    block = Block(arg_types=[t, t, ti])
    x, y, n = block.args
    b = Builder(r, block)
    outs = []
    for _ in range(results):
        v = r.choice([x, y])
        if r.random() < 0.3:  # an integer chain: floor division by n, then to float
            q = b.add(uop.BINARY_BY_NAME[r.choice(["floordiv", "floormod"])].make(
                b.add(uop.CastOp.make(v, result=Sig(SHAPE, "i32"))), n))
            v = b.add(uop.CastOp.make(q, result=Sig(SHAPE, "f32")))
        for _ in range(depth):
            v = b.step(v, [x, y])
        outs.append(v)
    block.add_ops([*b.ops, func.ReturnOp(*outs)])
    fn = func.FuncOp("main", ([t, t, ti], [o.type for o in outs]), Region(block))
    return ModuleOp([fn])


@pytest.mark.parametrize("seed", range(6))
def test_random_programs_match_semantics(seed):
    module = random_program(seed)
    rng = np.random.default_rng(seed)
    x = (rng.standard_normal(SHAPE) * 3).astype(np.float32)
    y = (rng.standard_normal(SHAPE) * 3).astype(np.float32)
    n = rng.choice(np.array([-3, -2, -1, 1, 2, 5], np.int32), SHAPE)
    (fn,) = module.body.block.ops
    expected = evaluate(fn, [x, y, n])
    got = compile_program(module)(x, y, n)
    for k, (g, e) in enumerate(zip(got, expected)):
        assert g.shape == e.shape
        np.testing.assert_array_equal(g, e, err_msg=f"result {k} of seed {seed}")


# ---- random .uir programs -------------------------------------------------------------------------

FLOAT_BINARY = ["add", "mul", "max", "sub", "div"]
UNARY = ["exp2", "sin", "sqrt", "recip", "log2"]


def random_uir(r: random.Random) -> str:
    lines = ["%a = buffer 12 : dtype=f32 slot=0", "%b = buffer 4 : dtype=f32 slot=1",
             "%n = buffer 12 : dtype=i32 slot=2",
             "%x = reshape %a, (3, 4)", "%k = reshape %n, (3, 4)"]
    floats: dict[str, tuple[int, ...]] = {"%x": (3, 4), "%b": (4,)}
    ints: dict[str, tuple[int, ...]] = {"%k": (3, 4)}
    last = "%x"
    for step in range(r.randint(4, 9)):
        name = f"%t{step}"
        kind = r.choice(["binary", "binary", "unary", "reduce", "move", "where", "int"])
        a = last if r.random() < 0.7 else r.choice(sorted(floats))  # mostly a chain
        shape = floats[a]
        if kind == "binary":
            b = r.choice(sorted(floats))
            op = r.choice(FLOAT_BINARY)
            try:
                out = np.broadcast_shapes(shape, floats[b])
                lines.append(f"{name} = {op} {a}, {b}")
            except ValueError:
                out = shape
                lines.append(f"{name} = {op} {a}, {r.choice(['2', '0.5', '-1.5'])}")
        elif kind == "unary":
            out = shape
            lines.append(f"{name} = {r.choice(UNARY)} {a}")
        elif kind == "reduce" and shape:
            out = shape[:-1]
            lines.append(f"{name} = reduce {a} : op={r.choice(['add', 'max'])} pop=1")
        elif kind == "move" and len(shape) >= 1:
            move = r.choice(["permute", "flip", "pad", "shrink"])
            rank = len(shape)
            if move == "permute":
                perm = list(range(rank))[::-1]
                out = tuple(shape[p] for p in perm)
                lines.append(f"{name} = permute {a}, ({', '.join(map(str, perm))},)")
            elif move == "flip":
                out = shape
                lines.append(f"{name} = flip {a}, (0,)")
            elif move == "pad":
                out = tuple(n + 2 for n in shape)
                pads = ", ".join("(1, 1)" for _ in shape)
                lines.append(f"{name} = pad {a}, ({pads},)")
            else:
                out = tuple(max(n - 1, 1) for n in shape)
                cut = ", ".join(f"({min(1, n - 1)}, {n})" for n in shape)
                lines.append(f"{name} = shrink {a}, ({cut},)")
        elif kind == "where":
            out = shape
            lines.append(f"%c{step} = cmplt {a}, 0.25")
            lines.append(f"{name} = where %c{step}, {a}, -2.0")
        else:
            k = r.choice(sorted(ints))
            lines.append(f"%q{step} = {r.choice(['floordiv', 'floormod'])} {k}, {r.choice([3, -2])}")
            lines.append(f"{name} = cast %q{step} : dtype=f32")
            out = ints[k]
        floats[name] = tuple(out)
        last = name
    lines.append(f"%result = add {last}, 0.0")
    return "\n".join(lines) + "\n"


def test_random_uir_programs_match_the_reference():
    r = random.Random(2024)
    texts = [random_uir(r) for _ in range(16)]
    funcs = []
    for k, text in enumerate(texts):
        (fn,) = parse_uir(text, name=f"p{k}").body.block.ops
        fn.detach()
        funcs.append(fn)
    module = ModuleOp(funcs)
    programs = compile_entries(module, [f"p{k}" for k in range(len(texts))])
    rng = np.random.default_rng(3)
    a = (rng.standard_normal(12) * 2).astype(np.float32)
    b = (rng.standard_normal(4) * 2).astype(np.float32)
    n = rng.integers(-20, 20, 12).astype(np.int32)
    checked = 0
    for fn, prog, text in zip(funcs, programs, texts):
        try:
            (expected,) = evaluate(fn, [a, b, n])
        except UndefinedBehavior:
            continue
        (got,) = prog(a, b, n)
        np.testing.assert_array_equal(got, expected, err_msg=text)
        checked += 1
    assert checked >= 12
