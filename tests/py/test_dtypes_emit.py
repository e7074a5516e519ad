"""Every element type through the whole compiler: uop .mlir text is lowered to loops,
emitted as C, compiled and run, and each output equals the semantics of DTYPES_PLAN /
SPEC §5 bit for bit (integer wrap-around, ui8's unsigned ops, f16 and bf16 computed in
f32 and rounded once, f64 with libm's double functions, casts between every pair through
f32 where the rules say so, bitcasts, reductions from each type's start value).

One program per type holds all of its ops, so each type costs one compile. The expected
values are computed here from the rules with numpy (and the C math library through
ctypes, as the reference semantics does), independently of the compiler. Programs
compile in strict float order (UOPC_STRICT=1): outside it, f32 exp, exp2 and tanh are
`approx`'s polynomials, within 1 ulp of libm but not always its bits."""

from __future__ import annotations

import ctypes
import ctypes.util

import numpy as np
import pytest
from xdsl.dialects import func

from uopc import settings
from uopc.pipelines import LOOP_PIPELINE, run_pipeline
from uopc.runtime.cuda_backend import CudaBackend, CudaUnavailable, compile_cuda, nvrtc_version
from uopc.runtime.driver import compile_program, compile_text, parse_program, schedule_kernels
from uopc.runtime.engine import Engine
from uopc.runtime.gpu_emulation import GpuEmulationBackend
from uopc.runtime.program import CheckFailure
from uopc.targets.emit_c import emit_c_unit
from uopc.testing import with_mlir
from uopc.uopdialect.dtypes import DTYPES, DType
from uopc.uopdialect.graph import UOp
from uopc.uopdialect.ops import OP, UopOp, evaluate
from uopc.uopdialect.shapes import Sig

SHAPE = (4, 4)


_LIBM = ctypes.CDLL(ctypes.util.find_library("m"))
#: the unary float ops, each checked on every float type (on positive operands), by the
#: C math library function that defines it (round: halves to even, C's rint)
MATH = {name: {"round": "rint"}.get(name, name) for name in (
    "exp2", "log2", "sqrt", "sin", "tanh", "erf", "exp", "log", "cos", "tan", "asin", "acos",
    "atan", "sinh", "cosh", "asinh", "log10", "log1p", "expm1", "floor", "ceil", "trunc",
    "round")}


#: the unary ops upstream MLIR lowers to LLVM (--convert-to-llvm has no erf, ...)
LLVM_MATH = ("exp2", "log2", "sqrt", "sin", "exp", "log", "cos", "log10", "floor", "ceil",
             "trunc", "round", "tanh")


def _libm(name: str, d: DType, *xs: np.ndarray) -> np.ndarray:
    """C's `name` (double) or `namef` (f32, and f16/bf16 through f32, rounded once) on
    the elements of `xs`."""
    if d.bits == 64:
        fn, c, wide = getattr(_LIBM, name), ctypes.c_double, np.float64
    else:
        fn, c, wide = getattr(_LIBM, name + "f"), ctypes.c_float, np.float32
    fn.restype, fn.argtypes = c, [c] * len(xs)
    flat = [x.astype(wide).ravel() for x in xs]
    out = np.array([fn(*(float(v) for v in vs)) for vs in zip(*flat)], wide)
    return out.reshape(xs[0].shape).astype(d.numpy)


def _computed(d: DType, fn, *xs: np.ndarray) -> np.ndarray:
    """A float op: in f32 for f16/bf16, rounded once to the type."""
    if d.widened_to:
        return fn(*(x.astype(np.float32) for x in xs)).astype(d.numpy)
    return fn(*xs).astype(d.numpy)


def _cast(z: np.ndarray, src: DType, dst: DType) -> np.ndarray:
    """The plan's cast rules (the inputs avoid the undefined cases)."""
    if dst.kind == "bool":
        return z.astype(np.float64) != 0 if src.is_float else z != 0
    if dst.widened_to and src.name != "f32":
        z = _cast(z, src, DTYPES["f32"])  # to f16/bf16 through f32
    elif src.widened_to:
        z = z.astype(np.float32)  # exact
    if src.is_float and not dst.is_float:
        return np.trunc(z).astype(dst.numpy)
    return z.astype(dst.numpy)


def _inputs(d: DType, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """x and y for the arithmetic (y: no 0, no -1, and positive for floats: the math
    ops take it; float x has a row of NaN, ±inf and -0), z for the casts (floats: in
    [0, 120), which every integer type holds, and -0)."""
    if d.kind == "bool":
        x, y = rng.integers(0, 2, SHAPE).astype(bool), rng.integers(0, 2, SHAPE).astype(bool)
        return x, y, x
    if d.is_int:
        x = rng.integers(int(d.min), int(d.max), SHAPE, dtype=d.numpy, endpoint=True)
        x.flat[:2] = [d.min, d.max]
        x[1] = d.min  # a row whose max is the least value
        y = rng.integers(int(d.min), int(d.max), SHAPE, dtype=d.numpy, endpoint=True)
        y[(y == 0) | (y == -1)] = 3
        y.flat[:3] = [2, 7, -7 if d.signed else 200]
        return x, y, x
    x = (rng.integers(-32, 32, SHAPE) / 4).astype(d.numpy)
    x[0] = -np.abs(x[0]) - 1  # a row whose max is negative
    y = (rng.integers(2, 32, SHAPE) / 4).astype(d.numpy)
    x[2] = [np.nan, np.inf, -0.0, -np.inf]  # NaN propagates through max, sum and compares
    z = (rng.integers(0, 480, SHAPE) / 4).astype(d.numpy)
    z.flat[0] = -0.0  # false as i1, 0 as an integer, its sign bit kept by float casts
    return x, y, z


def _program(d: DType, x, y, z, keep=lambda name: True, math=tuple(MATH)
             ) -> tuple[str, list[np.ndarray], list[str]]:
    """The program text of type `d` and its expected outputs (those whose element type's
    numpy dtype `keep` accepts), with the unary float ops `math`."""
    t = f"tensor<4x4x{d.name}>"
    b = "tensor<4x4xi1>"
    lines: list[str] = []
    results: list[tuple[str, str, np.ndarray]] = []  # (name, type, expected)

    def op(name: str, text: str, rtype: str, expected: np.ndarray) -> None:
        lines.append(f"  %{name} = {text}")
        if keep(np.asarray(expected).dtype):
            results.append((name, rtype, np.asarray(expected)))

    if d.kind == "bool":
        add, mul, big = x | y, x & y, x | y
    elif d.is_int:
        add, mul, big = x + y, x * y, np.maximum(x, y)
    else:
        add, mul = _computed(d, np.add, x, y), _computed(d, np.multiply, x, y)
        big = _computed(d, np.maximum, x, y)
    op("add", f"uop.add %x, %y : {t}", t, add)
    op("mul", f"uop.mul %x, %y : {t}", t, mul)
    op("max", f"uop.max %x, %y : {t}", t, big)
    wx, wy = (x.astype(np.float32), y.astype(np.float32)) if d.widened_to else (x, y)
    for name, fn in (("cmplt", np.less), ("cmple", np.less_equal), ("cmpeq", np.equal),
                     ("cmpne", np.not_equal)):
        op(name, f"uop.{name} %x, %y : {t}", b, fn(wx, wy))
    op("where", f"uop.where %cmplt, %x, %y : {b}, {t}", t, np.where(wx < wy, x, y))
    if d.is_int:
        op("floordiv", f"uop.floordiv %x, %y : {t}", t, x // y)
        op("floormod", f"uop.floormod %x, %y : {t}", t, x % y)
    if d.kind != "bool":
        r = f"tensor<4x{d.name}>"
        if d.is_int:
            total = x.sum(axis=1, dtype=d.numpy)
        else:  # sums of quarters: exact in every order and type
            total = _computed(d, lambda v: v.sum(axis=1), x)
        op("sum", f"uop.reduce add %x axes [1] : {t} -> {r}", r, total)
        op("rowmax", f"uop.reduce max %x axes [1] : {t} -> {r}", r, x.max(axis=1))
    if d.is_float:
        op("div", f"uop.div %x, %y : {t}", t, _computed(d, np.divide, x, y))
        for name in math:
            op(name, f"uop.{name} %y : {t}", t, _libm(MATH[name], d, y))
        op("recip", f"uop.recip %y : {t}", t, _computed(d, np.reciprocal, y))
        op("pow", f"uop.pow %y, %x : {t}", t, _libm("pow", d, y, x))
    for other in DTYPES.values():
        if other is d:
            continue
        u = f"tensor<4x4x{other.name}>"
        op(f"to_{other.name}", f"uop.cast %z : {t} to {u}", u, _cast(z, d, other))
        if d.kind != "bool" and other.kind != "bool" and other.bits == d.bits:
            op(f"bits_{other.name}", f"uop.bitcast %z : {t} to {u}", u, z.view(other.numpy))
    names = ", ".join(f"%{n}" for n, _, _ in results)
    types = ", ".join(rt for _, rt, _ in results)
    text = (f"func.func @main(%x: {t}, %y: {t}, %z: {t}) -> ({types}) {{\n"
            + "\n".join(lines) + f"\n  func.return {names} : {types}\n}}\n")
    return text, [e for _, _, e in results], [n for n, _, _ in results]


def _same_bits(got: np.ndarray, want: np.ndarray) -> bool:
    if got.dtype != want.dtype or got.shape != want.shape:
        return False
    if got.dtype.kind == "f" or got.dtype == DTYPES["bf16"].numpy:
        g, w = got.astype(np.float64), want.astype(np.float64)
        both_nan = np.isnan(g) & np.isnan(w)
        same = got.view(f"u{got.itemsize}") == want.view(f"u{want.itemsize}")
        return bool(np.all(both_nan | same))
    return bool(np.array_equal(got, want))


def _case(dtype: str):
    """Type `dtype`'s inputs, program text, expected outputs and their names."""
    d = DTYPES[dtype]
    x, y, z = _inputs(d, np.random.default_rng(sum(map(ord, dtype))))
    with np.errstate(all="ignore"):  # casts that overflow to inf (i64 -> f16) are meant
        text, expected, names = _program(d, x, y, z)
    return (x, y, z), text, expected, names


def _check(dtype: str, got, expected, names) -> None:
    wrong = [f"{name}: got {g!r}, expected {w!r}" for name, g, w in zip(names, got, expected)
             if not _same_bits(g, w)]
    assert not wrong, f"{dtype}:\n" + "\n".join(wrong)


def _reference(text: str, inputs) -> list[np.ndarray]:
    """The outputs of program `text` by the reference semantics (`uopc.uopdialect.ops.
    evaluate`, each op's record), op by op."""
    (fn,) = parse_program(text, "mlir").ops
    assert isinstance(fn, func.FuncOp)
    values = dict(zip(fn.body.block.args, inputs))
    for op in fn.body.block.ops:
        if isinstance(op, func.ReturnOp):
            return [np.asarray(values[v]) for v in op.operands]
        assert isinstance(op, UopOp)
        values[op.results[0]] = evaluate(op, [values[v] for v in op.operands])
    raise AssertionError("no func.return")


@pytest.fixture(autouse=True)
def strict_float_order():
    """Every program of this file compiles in strict float order (see the docstring)."""
    with settings.override(UOPC_STRICT=True):
        yield


@pytest.mark.parametrize("dtype", list(DTYPES))
def test_every_type_compiles_and_runs_bit_exact(dtype):
    """Compiled C equals the reference semantics on every output."""
    inputs, text, _, names = _case(dtype)
    with np.errstate(all="ignore"):
        reference = _reference(text, inputs)
    _check(dtype, compile_text(text)(*inputs), reference, names)


@pytest.mark.parametrize("dtype", list(DTYPES))
def test_the_rules_written_here_are_the_reference_semantics(dtype):
    """The expectations this module derives from the plan's rules with numpy and libm
    (which the mlir-runner and GPU checks use) are the reference semantics' values."""
    inputs, text, expected, names = _case(dtype)
    with np.errstate(all="ignore"):
        _check(dtype, _reference(text, inputs), expected, names)


@pytest.mark.parametrize("dtype", list(DTYPES))
def test_every_type_under_the_checked_c_emitter(dtype):
    """Check mode prints the same arithmetic with bounds and divisor checks (i8's
    MIN / -1 too): no check fires on these inputs, and the results are the same."""
    inputs, text, expected, names = _case(dtype)
    checked = compile_program(parse_program(text, "mlir"), "main", check=True)
    _check(dtype, checked(*inputs), expected, names)


def test_checked_c_names_an_i8_division_overflow():
    text = """func.func @main(%x: tensor<2xi8>, %y: tensor<2xi8>) -> tensor<2xi8> {
      %q = uop.floordiv %x, %y : tensor<2xi8>
      func.return %q : tensor<2xi8>
    }"""
    checked = compile_program(parse_program(text, "mlir"), "main", check=True)
    with pytest.raises(CheckFailure, match="overflows i8"):
        checked(np.array([6, -128], np.int8), np.array([3, -1], np.int8))


@pytest.mark.parametrize("dtype", list(DTYPES))
def test_every_type_on_the_gpu_path(dtype):
    """The GPU path: the kernels mapped to threads run exactly through the CPU emulation,
    and their CUDA source (`__nv_bfloat16`, double, the integer types, their bit casts)
    compiles to PTX with NVRTC where it is installed."""
    inputs, text, expected, names = _case(dtype)
    emulated = compile_program(parse_program(text, "mlir"), "main", GpuEmulationBackend())
    _check(dtype, emulated(*inputs), expected, names)
    _compiles_to_ptx(text)


@pytest.mark.parametrize("dtype", list(DTYPES))
def test_lowered_ir_of_every_type_verifies_with_mlir_opt(dtype):
    """The loops of each type's program are upstream MLIR: signless integers only (ui8
    is i8 there), every cast and op one that mlir-opt's verifiers accept."""
    if with_mlir.tool("mlir-opt") is None:
        pytest.skip("mlir-opt not installed (apt-get install mlir-22-tools)")
    _, text, _, _ = _case(dtype)
    loops = parse_program(text, "mlir")
    run_pipeline(LOOP_PIPELINE, loops)
    with_mlir.verify(str(loops))


@pytest.mark.parametrize("dtype", [d for d in DTYPES if d != "i1"])
def test_every_type_matches_mlir_runner(dtype):
    """MLIR's own lowering of the same loops (mlir-opt to LLVM, run by mlir-runner)
    computes what uopc's C computes: exactly for integers (ui8's unsigned ops on signless
    i8 included), to printMemref's 6 digits for floats; i1 outputs have no printer."""
    if with_mlir.tool("mlir-opt") is None or with_mlir.tool("mlir-runner") is None:
        pytest.skip("mlir-opt/mlir-runner not installed (apt-get install mlir-22-tools)")
    d = DTYPES[dtype]
    x, y, z = _inputs(d, np.random.default_rng(sum(map(ord, dtype))))
    with np.errstate(all="ignore"):
        text, expected, names = _program(d, x, y, z, keep=lambda t: t in with_mlir.PRINTERS,
                                         math=LLVM_MATH)
    loops = parse_program(text, "mlir")
    run_pipeline(LOOP_PIPELINE, loops)
    theirs = with_mlir.run(loops, "main", [x, y, z], [(e.shape, e.dtype) for e in expected])
    for name, got, want in zip(names, theirs, expected):
        if want.dtype.kind in "iu":
            np.testing.assert_array_equal(got, want, err_msg=f"{dtype} {name}")
        else:
            np.testing.assert_allclose(got.astype(np.float64), want.astype(np.float64),
                                       rtol=1e-5, err_msg=f"{dtype} {name}")


@pytest.mark.parametrize("dtype", ["ui8", "i64", "bf16", "f64"])
def test_the_engine_realizes_every_type_in_its_numpy_dtype(dtype):
    """Traced graphs of a type run as kernels whose buffers are the type's numpy arrays
    (a ui8 kernel's loops see signless i8, its buffers are still uint8)."""
    d = DTYPES[dtype]
    x, y, _ = _inputs(d, np.random.default_rng(1))
    a, b = UOp.buffer(x, Sig(SHAPE, dtype)), UOp.buffer(y, Sig(SHAPE, dtype))
    ops = [OP.add, OP.max] + ([OP.floordiv] if d.is_int else [])
    got = Engine().realize([UOp.make(op, [a, b], None) for op in ops])
    with np.errstate(all="ignore"):
        want = [x + y, np.maximum(x, y)] if d.is_int or not d.widened_to else \
            [_computed(d, np.add, x, y), _computed(d, np.maximum, x, y)]
    if d.is_int:
        want.append(x // y)
    for g, w in zip(got, want):
        assert _same_bits(g, w.astype(d.numpy)), (dtype, g, w)


def test_float_conversions_round_to_nearest_even_on_every_bit_pattern():
    """f32 -> bf16 and f32 -> f16 on random bit patterns (normals, subnormals, ties,
    infinities, NaNs): C's conversions round to nearest even and keep NaN a NaN, as
    ml_dtypes and numpy do; f64 -> bf16 rounds to f32 first, and wide integers reach
    bf16 through f32 too (PyTorch's rule)."""
    rng = np.random.default_rng(7)
    bits = rng.integers(0, 2**32, 4096, dtype=np.uint64).astype(np.uint32)
    bits[:8] = [0x7F800000, 0xFF800000, 0x7FC00001, 0xFF812345, 0x00000001, 0x80000000,
                0x3F808000, 0x3F818000]  # inf, -inf, NaNs, the least subnormal, -0, ties
    f32 = bits.view(np.float32)
    f64 = rng.standard_normal(4096) * 2.0 ** rng.integers(-140, 140, 4096)
    i64 = rng.integers(-(2**62), 2**62, 4096, dtype=np.int64)
    n = len(bits)
    text = f"""func.func @main(%f: tensor<{n}xf32>, %d: tensor<{n}xf64>, %i: tensor<{n}xi64>)
        -> (tensor<{n}xbf16>, tensor<{n}xf16>, tensor<{n}xbf16>, tensor<{n}xbf16>, tensor<{n}xf32>) {{
      %a = uop.cast %f : tensor<{n}xf32> to tensor<{n}xbf16>
      %b = uop.cast %f : tensor<{n}xf32> to tensor<{n}xf16>
      %c = uop.cast %d : tensor<{n}xf64> to tensor<{n}xbf16>
      %e = uop.cast %i : tensor<{n}xi64> to tensor<{n}xbf16>
      %w = uop.cast %a : tensor<{n}xbf16> to tensor<{n}xf32>
      func.return %a, %b, %c, %e, %w : tensor<{n}xbf16>, tensor<{n}xf16>, tensor<{n}xbf16>,
          tensor<{n}xbf16>, tensor<{n}xf32>
    }}"""
    bf16 = DTYPES["bf16"].numpy
    got = compile_text(text)(f32, f64, i64)
    with np.errstate(all="ignore"):
        want = [f32.astype(bf16), f32.astype(np.float16), f64.astype(np.float32).astype(bf16),
                i64.astype(np.float32).astype(bf16), f32.astype(bf16).astype(np.float32)]
    for k, (g, w) in enumerate(zip(got, want)):
        assert _same_bits(g, w), f"output {k}: got {g[:8]!r}, expected {w[:8]!r}"


def _dense(values: np.ndarray) -> str:
    """An MLIR dense literal of the 4x4 array `values`."""
    def text(v) -> str:
        if values.dtype == bool:
            return "true" if v else "false"
        if values.dtype.kind in "iu":
            return str(int(v))
        if np.isfinite(float(v)):
            return repr(float(v))
        return f"0x{int(np.array(v).view(f'u{values.itemsize}')):0{2 * values.itemsize}X}"
    return "dense<[" + ", ".join("[" + ", ".join(text(v) for v in row) + "]"
                                 for row in values) + "]>"


@pytest.mark.parametrize("dtype", list(DTYPES))
def test_constant_tables_of_every_type(dtype):
    """A constant of several values becomes a global table: C prints its values (bf16 as
    bit patterns, ui8 as the signless bytes, INT64_MIN by name), CUDA's table compiles."""
    d = DTYPES[dtype]
    x, _, _ = _inputs(d, np.random.default_rng(3))
    t = f"tensor<4x4x{d.name}>"
    text = f"""func.func @main(%x: {t}) -> ({t}, {t}) {{
      %k = uop.const {_dense(x)} : {t}
      %m = uop.max %k, %x : {t}
      func.return %k, %m : {t}, {t}
    }}"""
    table, biggest = compile_text(text)(x)
    assert _same_bits(table, x) and _same_bits(biggest, x)
    _compiles_to_ptx(text)


def test_scalar_16_bit_float_functions_get_no_cffi_declaration():
    """cffi can pass neither `_Float16` nor `uop_bf16` scalars: such functions are left
    out of the declarations (buffers of them are void pointers and pass)."""
    text = """
    func.func @half(%x: f16) -> f16 { func.return %x : f16 }
    func.func @brain(%x: bf16) -> bf16 { func.return %x : bf16 }
    func.func @wide(%x: f64, %m: memref<2xbf16>) -> f64 { func.return %x : f64 }"""
    _, declarations, _, _ = emit_c_unit(parse_program(text, "mlir"))
    assert "half" not in declarations and "brain" not in declarations
    assert "double wide(double, void *);" in declarations


@pytest.mark.parametrize("dtype", sorted(d.name for d in DTYPES.values() if d.is_float))
def test_a_float_truncated_to_an_integer_and_back_is_never_minus_zero(dtype):
    """float -> int -> float of -0.5 and -0.0 is +0.0 through every integer type (gcc
    folds the round trip into one rounding toward zero, which keeps the sign)."""
    d = DTYPES[dtype]
    t = f"tensor<4x{dtype}>"
    ints = [i.name for i in DTYPES.values() if i.is_int]
    lines = [f"  %i_{i} = uop.cast %x : {t} to tensor<4x{i}>\n"
             f"  %r_{i} = uop.cast %i_{i} : tensor<4x{i}> to {t}" for i in ints]
    text = (f"func.func @main(%x: {t}) -> ({', '.join([t] * len(ints))}) {{\n"
            + "\n".join(lines) + f"\n  func.return {', '.join(f'%r_{i}' for i in ints)} : "
            + ", ".join([t] * len(ints)) + "\n}")
    x = np.array([-0.5, -0.0, -0.75, 2.5], d.numpy)
    for i, got in zip(ints, compile_text(text)(x)):
        assert _same_bits(got, np.array([0, 0, 0, 2], d.numpy)), (i, got)


@pytest.mark.parametrize("dtype", sorted(d.name for d in DTYPES.values() if d.is_float))
def test_pow_of_one_half_is_pow_at_minus_inf_and_minus_zero(dtype):
    """pow(x, 0.5) in a loop: gcc's vectorizer makes it sqrt, which differs from C's pow
    at -inf (+inf) and -0.0 (+0.0); the emitted C keeps pow's values."""
    d = DTYPES[dtype]
    t = f"tensor<32x{dtype}>"
    text = f"""func.func @main(%x: {t}) -> {t} {{
      %h = uop.const dense<0.5> : {t}
      %p = uop.pow %x, %h : {t}
      func.return %p : {t}
    }}"""
    x = np.linspace(0, 40, 32).astype(d.numpy)
    x[:5] = [-np.inf, -0.0, np.nan, -1.0, np.inf]
    (got,) = compile_text(text)(x)
    assert _same_bits(got, _libm("pow", d, x, np.full_like(x, 0.5)))


def _compiles_to_ptx(text: str) -> None:
    """The CUDA source of program `text` compiles to PTX with NVRTC (where installed)."""
    try:
        nvrtc_version()
    except CudaUnavailable:
        return
    cuda, module = CudaBackend(), parse_program(text, "mlir")
    schedule_kernels(module, cuda)
    run_pipeline(cuda.stages().loops, module)
    run_pipeline(cuda.pipeline_tail(), module)
    assert b".entry" in compile_cuda(cuda.emit(module).text, "compute_90")
