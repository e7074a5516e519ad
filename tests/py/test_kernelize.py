"""uop-kernelize: kernel counts, stage-broadcast and layout rules, and that the kernelized
program computes what the original graph computes (checked against uopc.uopdialect.reference)."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from xdsl.dialects import builtin, func

from uopc.frontend.tensor import Tensor
from uopc.passes.kernel_graph import is_kernel
from uopc.passes.kernelize import KernelizePass
from uopc.passes.strides import view_strides
from uopc.runtime.engine import trace
from uopc.uopdialect import ops, reference, semantics
from uopc.uopdialect.context import make_context
from uopc.uopdialect.graph import UOp
from uopc.uopdialect.graph_to_ir import build_module
from uopc.uopdialect.ops import OP, ConstOp
from uopc.uopdialect.shapes import Sig

CTX = make_context()


def kernelized(roots: list[UOp], **options) -> builtin.ModuleOp:
    tr = trace(roots)
    module = build_module(tr.nodes, roots, tr.slot_of, tr.sigs)
    KernelizePass(**options).apply(CTX, module)
    module.verify()
    return module


def functions(module: builtin.ModuleOp) -> dict[str, func.FuncOp]:
    return {op.sym_name.data: op for op in module.ops if isinstance(op, func.FuncOp)}


def kernel_calls(module: builtin.ModuleOp) -> list[func.FuncOp]:
    """The kernel called by each call of the plan @main, in call order."""
    funcs = functions(module)
    return [funcs[op.callee.root_reference.data] for op in funcs["main"].body.block.ops
            if isinstance(op, func.CallOp)]


def op_names(kernel: func.FuncOp) -> list[str]:
    return [op.name for op in kernel.body.block.ops]


def run_module(module: builtin.ModuleOp, args: list[np.ndarray]) -> list[np.ndarray]:
    """Evaluate a kernelized module op by op with the reference semantics (a test-only
    interpreter for plans of calls and uop kernel bodies)."""
    funcs = functions(module)

    def call(fn: func.FuncOp, values: list[np.ndarray]) -> list[np.ndarray]:
        env = dict(zip(fn.body.block.args, values))
        for op in fn.body.block.ops:
            ins = [env[v] for v in op.operands]
            if isinstance(op, func.ReturnOp):
                return ins
            if isinstance(op, func.CallOp):
                outs = call(funcs[op.callee.root_reference.data], ins)
            else:
                outs = [_eval_op(op, ins)]
            env.update(zip(op.results, outs))
        raise AssertionError("function without return")

    return call(funcs["main"], args)


def _eval_op(op, ins: list[np.ndarray]) -> np.ndarray:
    if isinstance(op, ConstOp):
        return op.as_array()
    if isinstance(op, ops.BinaryOp):
        return semantics.binary(op.INFO.name, *ins)
    if isinstance(op, ops.UnaryOp):
        return semantics.unary(op.INFO.name, *ins)
    if isinstance(op, ops.ReduceOp):
        return semantics.reduce(op.kind(), ins[0], op.ints("axes"))
    if isinstance(op, ops.WhereOp):
        return semantics.where(*ins)
    out_shape = tuple(op.results[0].type.get_shape())
    args = {
        ops.ReshapeOp: ("reshape", out_shape), ops.ExpandOp: ("expand", out_shape),
        ops.ContiguousOp: ("contiguous", None),
        ops.PermuteOp: ("permute", op.ints("perm") if isinstance(op, ops.PermuteOp) else None),
    }
    name, arg = args[type(op)]
    return semantics.movement(name, ins[0], arg)


def t(shape, seed=0) -> Tensor:
    return Tensor(np.random.default_rng(seed).standard_normal(shape).astype(np.float32))


# ---------------------------------------------------------------------------------------
# kernel counts


def test_elementwise_chain_is_one_kernel():
    a, b = t((4, 8)), t((4, 8), 1)
    y = ((a + b) * a).exp().sqrt() - b
    module = kernelized([y.uop])
    (kernel,) = kernel_calls(module)
    assert "uop.reduce" not in op_names(kernel)
    assert len(kernel.body.block.args) == 2


def test_softmax_is_three_kernels_max_sum_output():
    x = t((4, 8))
    module = kernelized([x.softmax(-1).uop])
    kernels = kernel_calls(module)
    assert len(kernels) == 3
    reduces = [[op.kind() for op in k.body.block.ops if isinstance(op, ops.ReduceOp)]
               for k in kernels]
    assert reduces == [["max"], ["add"], []]
    [got] = run_module(module, [x.numpy()])
    np.testing.assert_allclose(got, reference.evaluate([x.softmax(-1).uop])[0], rtol=1e-6)


@pytest.mark.parametrize("layout, n_kernels", [("none", 2), ("reduce", 4), ("output", 2)])
def test_matmul_chain_is_two_reduce_kernels(layout, n_kernels):
    a, b, c = t((4, 8)), t((8, 16), 1), t((16, 2), 2)
    y = (a @ b) @ c
    module = kernelized([y.uop], layout=layout, min_copy_reads=1)
    kernels = kernel_calls(module)
    with_reduce = [k for k in kernels if "uop.reduce" in op_names(k)]
    assert len(with_reduce) == 2
    # layout copies are pure data movement, never a recomputation of A@B
    assert len(kernels) == n_kernels
    for k in kernels:
        assert op_names(k).count("uop.reduce") <= 1
    got = run_module(module, [a.numpy(), b.numpy(), c.numpy()])[0]
    np.testing.assert_allclose(got, (a.numpy() @ b.numpy()) @ c.numpy(), rtol=1e-5, atol=1e-5)


def test_layernorm_output_feeding_matmul_is_its_own_kernel():
    x, w = t((6, 8)), t((8, 5), 1)
    mean = x.mean(-1, keepdim=True)
    centered = x - mean
    norm = centered * (centered.square().mean(-1, keepdim=True) + 1e-5).rsqrt()
    y = norm @ w
    module = kernelized([y.uop])
    kernels = kernel_calls(module)
    matmul = kernels[-1]
    names = op_names(matmul)
    # the matmul kernel multiplies and sums; it recomputes no normalization per column
    assert names.count("uop.mul") == 1 and "uop.sqrt" not in names and "uop.recip" not in names
    assert any("uop.sqrt" in op_names(k) for k in kernels[:-1])
    got = run_module(module, [x.numpy(), w.numpy()])[0]
    np.testing.assert_allclose(got, reference.evaluate([y.uop])[0], rtol=1e-4, atol=1e-5)


def test_identical_kernels_are_one_function():
    xs = [t((3, 5), i) for i in range(3)]
    ys = [(x * 2.0).exp() for x in xs]
    module = kernelized([y.uop for y in ys])
    calls = kernel_calls(module)
    assert len(calls) == 3 and len({k.sym_name.data for k in calls}) == 1
    assert sum(is_kernel(f) for f in functions(module).values()) == 1


def test_kernel_arguments_follow_reads_not_the_signature():
    x = Tensor(np.arange(5, dtype=np.int32))
    y = Tensor(np.arange(10, 15, dtype=np.int32))
    module = kernelized([(y + y).uop, (x * 2).uop])
    main = functions(module)["main"]
    calls = [op for op in main.body.block.ops if isinstance(op, func.CallOp)]
    args = main.body.block.args
    assert [list(c.arguments) for c in calls] == [[args[0]], [args[1]]]
    got = run_module(module, [y.numpy(), x.numpy()])
    np.testing.assert_array_equal(got[0], np.arange(20, 30, 2))
    np.testing.assert_array_equal(got[1], np.arange(0, 10, 2))


def test_layout_copy_makes_reduce_axis_contiguous():
    a, b = t((4, 8)), t((8, 16), 1)
    module = kernelized([(a @ b).uop], min_copy_reads=1)
    copy, matmul = kernel_calls(module)
    assert "uop.contiguous" in op_names(copy) and "uop.reduce" not in op_names(copy)
    # B^T is copied: its reduce axis (K) becomes the innermost one
    assert tuple(copy.function_type.outputs.data[0].get_shape())[-1] == 8
    got = run_module(module, [a.numpy(), b.numpy()])[0]
    np.testing.assert_allclose(got, a.numpy() @ b.numpy(), rtol=1e-5, atol=1e-5)


def test_contiguous_operand_needs_no_copy():
    a, w = t((4, 8)), t((16, 8), 1)  # x @ w.T with w stored (out, in): K is innermost
    module = kernelized([(a @ w.transpose(0, 1)).uop])
    assert len(kernel_calls(module)) == 1


@pytest.mark.parametrize("rows, copies", [(8, 0), (1024, 1)])
def test_an_operand_read_few_times_is_not_copied(rows, copies):
    """x @ W.T with W stored (out, in) under layout=output: W is copied only when the
    reduce reads each of its elements at least MIN_COPY_READS times (x's rows)."""
    x, w = t((rows, 8)), t((16, 8), 1)
    module = kernelized([(x @ w.transpose(0, 1)).uop], layout="output")
    assert len(kernel_calls(module)) == 1 + copies
    got = run_module(module, [x.numpy(), w.numpy()])[0]
    np.testing.assert_allclose(got, x.numpy() @ w.numpy().T, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("stored_out_in, copies", [(True, 1), (False, 0)])
def test_output_layout_copies_operands_strided_along_the_output(stored_out_in, copies):
    x = t((4, 8))
    w = t((16, 8), 1) if stored_out_in else t((8, 16), 1)
    y = x @ (w.transpose(0, 1) if stored_out_in else w)
    module = kernelized([y.uop], layout="output", min_copy_reads=1)
    kernels = kernel_calls(module)
    assert len(kernels) == 1 + copies
    if copies:
        # the copy holds W.T: the output axis (16) is innermost
        assert tuple(kernels[0].function_type.outputs.data[0].get_shape())[-1] == 16
    got = run_module(module, [x.numpy(), w.numpy()])[0]
    np.testing.assert_allclose(got, reference.evaluate([y.uop])[0], rtol=1e-5, atol=1e-5)


# ---------------------------------------------------------------------------------------
# view strides


@settings(max_examples=60, deadline=None)
@given(st.data())
def test_view_strides_match_numpy(data):
    """view_strides against the strides numpy gives the same view (None exactly where
    numpy's reshape would have to copy)."""
    shape = tuple(data.draw(st.lists(st.integers(1, 4), min_size=1, max_size=4)))
    base = np.arange(int(np.prod(shape)), dtype=np.int32).reshape(shape)
    view, node = base, UOp.buffer(base, Sig(shape, "i32"))
    for _ in range(data.draw(st.integers(1, 4))):
        kind = data.draw(st.sampled_from(["permute", "reshape", "expand", "flip"]))
        if kind == "permute":
            perm = tuple(data.draw(st.permutations(range(view.ndim))))
            view, node = view.transpose(perm), UOp.make(OP.permute, [node], perm)
        elif kind == "flip":
            axes = (data.draw(st.integers(0, view.ndim - 1)),)
            view, node = np.flip(view, axes), UOp.make(OP.flip, [node], axes)
        elif kind == "expand":
            new = tuple(3 if n == 1 else n for n in view.shape)
            view, node = np.broadcast_to(view, new), UOp.make(OP.expand, [node], new)
        else:
            new = tuple(data.draw(st.permutations(_factors(view.size)))) or (1,)
            node = UOp.make(OP.reshape, [node], new)
            try:
                view = view.view()
                view.shape = new  # raises where numpy would need a copy
            except AttributeError:
                assert view_strides(shape, _contiguous(shape), _movement_ops(node)) is None
                return
    got = view_strides(shape, _contiguous(shape), _movement_ops(node))
    want = tuple(s // base.itemsize for s in view.strides)
    assert got is not None
    assert all(g == w for g, w, n in zip(got, want, view.shape) if n > 1)


def _factors(n: int) -> list[int]:
    out, d = [], 2
    while n > 1:
        while n % d == 0:
            out.append(d)
            n //= d
        d += 1
    return out


def _contiguous(shape):
    return tuple(int(np.prod(shape[i + 1:])) for i in range(len(shape)))


def _movement_ops(node: UOp) -> list:
    """The chain of movement nodes ending at `node`, as xDSL ops (innermost first)."""
    tr = trace([node])
    fn = next(iter(build_module(tr.nodes, [node], tr.slot_of, tr.sigs).ops))
    return [op for op in fn.body.block.ops if not isinstance(op, func.ReturnOp)]


# ---------------------------------------------------------------------------------------
# random graphs: the kernelized program computes what the graph computes


@settings(max_examples=40, deadline=None)
@given(st.data())
def test_kernelized_random_graphs_match_reference(data):
    rng = np.random.default_rng(data.draw(st.integers(0, 2**16)))
    rows, cols = data.draw(st.integers(1, 5)), data.draw(st.integers(1, 6))
    inputs = [Tensor(rng.standard_normal((rows, cols)).astype(np.float32)) for _ in range(3)]
    pool = list(inputs)
    for _ in range(data.draw(st.integers(1, 8))):
        kind = data.draw(st.sampled_from(["add", "mul", "exp", "sum", "max", "mm", "sq", "t"]))
        a = data.draw(st.sampled_from(pool))
        b = data.draw(st.sampled_from([p for p in pool if p.shape == a.shape]))
        if kind == "add":
            pool.append(a + b)
        elif kind == "mul":
            pool.append(a * b)
        elif kind == "exp":
            pool.append((a * 0.1).exp())
        elif kind == "sq":
            pool.append(a.square() - b)
        elif kind == "sum" and a.ndim == 2:
            pool.append(a - a.sum(-1, keepdim=True))
        elif kind == "max" and a.ndim == 2:
            pool.append(a * a.max(0, keepdim=True))
        elif kind == "t" and a.ndim == 2:
            pool.append(a.transpose(0, 1).contiguous().transpose(0, 1) + b)
        elif kind == "mm" and a.ndim == 2:
            pool.append(a @ (b.transpose(0, 1) @ b))
    roots = [p.uop for p in pool[3:]] or [(pool[0] + 1.0).uop]
    module = kernelized(roots, broadcast_limit=data.draw(st.sampled_from([2, 4, 64])),
                        layout=data.draw(st.sampled_from(["reduce", "output", "none"])))
    got = run_module(module, trace(roots).arrays)
    want = reference.evaluate(roots)
    for g, w in zip(got, want):
        np.testing.assert_allclose(g, w, rtol=2e-4, atol=2e-4)


@pytest.mark.parametrize("layout", ["reduce", "output"])
def test_non_affine_broadcast_operand_is_gathered_first(layout):
    x, w = t((3, 2, 4, 5)), t((30, 6), 1)
    gathered = x.permute(2, 0, 1, 3).reshape(4, 30)  # merges axes the permute split
    y = gathered @ w
    kernels = kernel_calls(module := kernelized([y.uop], layout=layout, min_copy_reads=1))
    copy = kernels[0]
    assert "uop.reduce" not in op_names(copy) and "uop.contiguous" in op_names(copy)
    matmul = kernels[-1]
    read = [tuple(a.type.get_shape()) for a in matmul.body.block.args]
    assert (3, 2, 4, 5) not in read  # the matmul reads the gathered copy, not x
    got = run_module(module, [x.numpy(), w.numpy()])[0]
    np.testing.assert_allclose(got, reference.evaluate([y.uop])[0], rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("axes", [(0, 1), (1, 2), (0, 1, 2), (0, 2)])
def test_merged_reduce_axes_are_bit_identical(axes):
    x = t((5, 7, 3), 3) * 1000.0  # large magnitudes: any change of order would show
    y = (x * t((5, 7, 3), 4)).sum(axes)
    module = kernelized([y.uop])
    (kernel,) = kernel_calls(module)
    [reduce] = [op for op in kernel.body.block.ops if isinstance(op, ops.ReduceOp)]
    assert len(reduce.ints("axes")) == (2 if axes == (0, 2) else 1)
    np.testing.assert_array_equal(run_module(module, trace([y.uop]).arrays)[0],
                                  reference.evaluate([y.uop])[0])


def test_layout_copy_is_private_to_the_reduce_that_needs_it():
    """x@W and the backward-style reduce over the same broadcast W want different layouts:
    the copy for one must not change what the other reads."""
    x, w, g = t((3, 8)), t((8, 4), 1), t((3, 4), 2)
    b = UOp.make(OP.expand, [UOp.make(OP.reshape, [UOp.make(OP.permute, [w.uop], (1, 0))],
                                     (1, 4, 8))], (3, 4, 8))
    a = UOp.make(OP.expand, [UOp.make(OP.reshape, [x.uop], (3, 1, 8))], (3, 4, 8))
    gx = UOp.make(OP.expand, [UOp.make(OP.reshape, [g.uop], (3, 4, 1))], (3, 4, 8))
    forward = UOp.make(OP.reduce, [UOp.make(OP.mul, [a, b])], ("add", (2,)))
    backward = UOp.make(OP.reduce, [UOp.make(OP.mul, [gx, b])], ("add", (1,)))
    module = kernelized([forward, backward], layout="output", min_copy_reads=1)
    kernels = kernel_calls(module)
    reads = [[tuple(arg.type.get_shape()) for arg in k.body.block.args] for k in kernels]
    assert reads[0] == [(3, 8), (8, 4)]  # the forward reads W itself
    assert len(kernels) == 3 and (8, 4) not in reads[2]  # the backward reads its copy
    got = run_module(module, trace([forward, backward]).arrays)
    np.testing.assert_allclose(got[0], x.numpy() @ w.numpy(), rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(got[1], g.numpy() @ w.numpy().T, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("epilogue", [True, False])
def test_epilogue_fusion_puts_bias_and_activation_in_the_matmul_kernel(epilogue):
    x, w, b = t((5, 8)), t((8, 6), 1), t((6,), 2)
    y = (x @ w + b).relu()
    module = kernelized([y.uop], layout="output", epilogue=epilogue)
    kernels = kernel_calls(module)
    assert len(kernels) == (1 if epilogue else 2)
    assert "uop.max" in op_names(kernels[-1]) and "uop.reduce" in op_names(kernels[0])
    got = run_module(module, trace([y.uop]).arrays)[0]
    np.testing.assert_array_equal(got, reference.evaluate([y.uop])[0])
