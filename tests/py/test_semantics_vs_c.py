"""Differential tests: the folder and `uopc.uopdialect.semantics` against C compiled by the system compiler.

Two batches, each compiled into ONE C program (compile once, not once per example):

* op level: every unary op and cast on all 65536 f16 bit patterns, and binary ops on
  special and random f32/i32/f16 operand pairs, through `uopc.uopdialect.semantics`;
* expression level: hypothesis draws random expression trees of i32, f32 and f16
  (2,000+ per dtype); each tree becomes uop IR, `uop-fold` folds it, and the literal it
  leaves must equal, bit for bit, what the same expression computes in C (NaN payloads
  excepted). Trees whose reference evaluation is undefined must be left unfolded, and are
  not run in C.

The C side stores every op result in a variable of its type and is built with
`STRICT_FP_FLAGS`, as SPEC §5 asks of the C backend.
"""

from __future__ import annotations

import random

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from xdsl.dialects import func
from xdsl.dialects.builtin import ModuleOp
from xdsl.ir import Block, Region

from uopc.passes.fold import FoldPass
from uopc.testing.csnippet import run_c
from uopc.uopdialect import ops as u
from uopc.uopdialect import semantics
from uopc.uopdialect.dtypes import DTYPES
from uopc.uopdialect.shapes import Sig

HEADER = "#include <stdio.h>\n#include <string.h>\n#include <stdbool.h>\n" + semantics.C_PRELUDE


def bits_of(x: np.ndarray) -> np.ndarray:
    x = np.asarray(x)
    if x.dtype == np.bool_:
        return x.astype(np.uint64)
    return x.view(f"u{DTYPES[semantics.dtype_name(x)].itemsize}").astype(np.uint64)


def same_bits(ours: np.ndarray, c_bits: np.ndarray, dtype: str) -> np.ndarray:
    """Elementwise agreement; any NaN equals any NaN."""
    ours = np.asarray(ours)
    agree = bits_of(ours) == c_bits
    if dtype in ("f32", "f16"):
        theirs = c_bits.astype(f"u{DTYPES[dtype].itemsize}").view(DTYPES[dtype].numpy)
        agree |= np.isnan(ours) & np.isnan(theirs)
    return agree


# ---------------------------------------------------------------------------------------
# C expression text for one op


def c_expr(op: str, dtype: str, args: list[str], arg_dtypes: list[str]) -> str:
    """C for one op whose result has `dtype`."""
    a = args[0]
    if op == "add":
        return {"i32": f"uop_add_i32({a}, {args[1]})", "i1": f"({a} | {args[1]})"}.get(
            dtype, f"{a} + {args[1]}")
    if op == "mul":
        return {"i32": f"uop_mul_i32({a}, {args[1]})", "i1": f"({a} & {args[1]})"}.get(
            dtype, f"{a} * {args[1]}")
    if op == "max":
        return {"i32": f"({a} > {args[1]} ? {a} : {args[1]})", "i1": f"({a} | {args[1]})"}.get(
            dtype, f"uop_max_{dtype}({a}, {args[1]})")
    if op in ("floordiv", "floormod"):
        return f"uop_{op}_i32({a}, {args[1]})"
    infix = {"cmplt": "<", "cmpne": "!=", "cmple": "<=", "cmpeq": "==", "div": "/"}
    if op in infix:
        return f"({a} {infix[op]} {args[1]})"
    if op == "pow":
        return f"powf((float){a}, (float){args[1]})"
    if op == "where":
        return f"({a} ? {args[1]} : {args[2]})"
    if op == "cast":
        return f"({a} != 0)" if dtype == "i1" else f"({DTYPES[dtype].c}){a}"
    f = {"recip": "1.0f / {}", "sqrt": "sqrtf({})", "exp2": "exp2f({})",
         "log2": "log2f({})", "sin": "sinf({})",
         "round": "rintf({})"}.get(op, op + "f({})")
    return f.format(f"(float){a}")


def _width(dtype: str) -> int:
    """Bits of one element in a buffer (i1 takes a byte)."""
    return 8 * DTYPES[dtype].itemsize


def _load(dtype: str, name: str, source: str) -> str:
    """C that declares `name` of `dtype` from the raw bits in the expression `source`."""
    if dtype == "i1":
        return f"bool {name} = ({source}) != 0;"
    w = _width(dtype)
    return (f"{DTYPES[dtype].c} {name}; {{ uint{w}_t b = (uint{w}_t)({source}); "
            f"memcpy(&{name}, &b, sizeof b); }}")


def _print(dtype: str, name: str) -> str:
    if dtype == "i1":
        return f'printf("%x\\n", (unsigned){name});'
    w = _width(dtype)
    return f'{{ uint{w}_t b; memcpy(&b, &{name}, sizeof b); printf("%x\\n", (unsigned)b); }}'


class CProgram:
    """A C program printing the bits of many results, one hex number per line.

    Literals come from volatile tables, so nothing is folded at compile time. Code is
    split into many small functions (one per expression or op case) and built at -O0:
    a single huge main takes gcc minutes to optimize.
    """

    def __init__(self) -> None:
        self.table: list[int] = []
        self.functions: list[str] = []
        self.lines: list[str] = []
        self.n = 0

    def fresh(self) -> str:
        self.n += 1
        return f"v{self.n}"

    def literal(self, value: np.ndarray, dtype: str) -> str:
        self.table.append(int(bits_of(np.asarray(value))))
        name = self.fresh()
        self.lines.append(_load(dtype, name, f"table[{len(self.table) - 1}]"))
        return name

    def assign(self, dtype: str, text: str) -> str:
        name = self.fresh()
        self.lines.append(f"{DTYPES[dtype].c} {name} = {text};")
        return name

    def emit(self, name: str, dtype: str) -> None:
        """Print `name`; close it after about 400 statements the current function."""
        self.lines.append(_print(dtype, name))
        if len(self.lines) > 400:
            self.close()

    def close(self) -> None:
        if self.lines:
            self.functions.append("\n".join(self.lines))
            self.lines = []

    def loop(self, in_dtypes: list[str], arrays: list[np.ndarray], out_dtype: str, text) -> None:
        """A function printing text(a0, a1, ...) for every index of the input arrays."""
        self.close()
        k, n = len(self.functions), len(arrays[0])
        decls = []
        loads = []
        for j, (dtype, arr) in enumerate(zip(in_dtypes, arrays)):
            data = ", ".join(f"{int(b)}u" for b in bits_of(arr))
            decls.append(f"static volatile uint{_width(dtype)}_t in{k}_{j}[{n}] = {{{data}}};")
            loads.append(_load(dtype, f"a{j}", f"in{k}_{j}[i]"))
        result = text([f"a{j}" for j in range(len(arrays))])
        body = (f"for (int i = 0; i < {n}; i++) {{ {' '.join(loads)} "
                f"{DTYPES[out_dtype].c} r = {result}; {_print(out_dtype, 'r')} }}")
        self.functions.append("\n".join(decls) + "\n" + body)

    def run(self) -> np.ndarray:
        self.close()
        table = ", ".join(f"{v}u" for v in self.table) or "0u"
        parts = [HEADER, f"static volatile uint32_t table[] = {{{table}}};"]
        for k, body in enumerate(self.functions):
            parts.append(f"static void f{k}(void) {{\n{body}\n}}")
        calls = " ".join(f"f{k}();" for k in range(len(self.functions)))
        parts.append(f"int main(void) {{ {calls} return 0; }}")
        out = run_c("\n".join(parts) + "\n", flags=("-O0",))
        return np.array([int(line, 16) for line in out.split()], dtype=np.uint64)


# ---------------------------------------------------------------------------------------
# op level: semantics.py against C on many values


SPECIAL_F = [0.0, -0.0, 1.0, -1.0, 0.5, 2.0, 3.0, -3.5, 1e-3, 65504.0, 1e30, -1e30, 16777216.0,
             2147483520.0, -2147483648.0, 1e-40, np.inf, -np.inf, np.nan]
SPECIAL_I = [0, 1, -1, 2, -2, 7, -7, 3, 2**31 - 1, -(2**31), 65536, -65536, 46341]


def _operands(dtype: str, rng: np.random.Generator, n: int) -> tuple[np.ndarray, np.ndarray]:
    if dtype == "i32":
        special = np.array(SPECIAL_I, dtype=np.int32)
        rand = rng.integers(-(2**31), 2**31, n, dtype=np.int64).astype(np.int32)
        small = rng.integers(-20, 20, n).astype(np.int32)
        pool = np.concatenate([special, rand, small])
    else:
        np_dtype = DTYPES[dtype].numpy
        with np.errstate(over="ignore"):
            special = np.array(SPECIAL_F, dtype=np_dtype)
        raw = rng.integers(0, 2**16 if dtype == "f16" else 2**32, n, dtype=np.uint64)
        rand = raw.astype(np.uint16 if dtype == "f16" else np.uint32).view(np_dtype)
        pool = np.concatenate([special, rand])
    a = np.concatenate([np.repeat(pool[: len(special)], len(special)),
                        rng.permutation(pool)])
    b = np.concatenate([np.tile(pool[: len(special)], len(special)), rng.permutation(pool)])
    return a, b


def _defined(fn, *arrays):
    """fn elementwise; the elements where it is undefined are dropped."""
    keep = []
    for i in range(len(arrays[0])):
        try:
            fn(*(np.asarray(a[i]) for a in arrays))
            keep.append(i)
        except semantics.UndefinedBehavior:
            pass
    kept = [a[keep] for a in arrays]
    return kept, fn(*kept)


def test_ops_match_c_bit_for_bit():
    rng = np.random.default_rng(1234)
    prog = CProgram()
    cases: list[tuple[str, str, list[np.ndarray], np.ndarray]] = []

    def case(label, in_dtypes, arrays, out_dtype, ours, text):
        prog.loop(in_dtypes, arrays, out_dtype, text)
        cases.append((label, out_dtype, arrays, ours))

    all_f16 = np.arange(2**16, dtype=np.uint32).astype(np.uint16).view(np.float16)
    for op in ("recip", "sqrt", "exp2", "log2", "sin", "tanh", "erf", "exp", "log", "cos",
               "tan", "asin", "acos", "atan", "sinh", "cosh", "asinh", "log10", "log1p", "expm1",
               "floor", "ceil",
               "trunc", "round"):
        for dtype, xs in (("f16", all_f16), ("f32", _operands("f32", rng, 3000)[0])):
            case(f"{op}:{dtype}", [dtype], [xs], dtype, semantics.unary(op, xs),
                 lambda n, op=op, d=dtype: c_expr(op, d, n, [d]))
    for dtype in ("i32", "f32", "f16"):
        a, b = _operands(dtype, rng, 3000)
        for op in ("add", "mul", "max", "cmplt", "cmple", "cmpeq", "cmpne", "floordiv",
                   "floormod", "div", "pow"):
            if (op.startswith("floor") and dtype != "i32") or \
                    (op in ("div", "pow") and dtype == "i32"):
                continue
            (x, y), ours = _defined(lambda p, q, op=op: semantics.binary(op, p, q), a, b)
            rtype = "i1" if op.startswith("cmp") else dtype
            case(f"{op}:{dtype}", [dtype, dtype], [x, y], rtype, ours,
                 lambda n, op=op, d=dtype, r=rtype: c_expr(op, r, n, [d, d]))
    for src, dst in (("f32", "i32"), ("f16", "i32"), ("f32", "f16"), ("i32", "f16"),
                     ("i32", "f32"), ("f16", "f32"), ("f32", "i1"), ("i32", "i1"),
                     ("i1", "f16"), ("i1", "i32")):
        xs = all_f16 if src == "f16" else (
            np.array([True, False]) if src == "i1" else _operands(src, rng, 3000)[0])
        (x,), ours = _defined(lambda p, d=dst: semantics.cast(p, d), xs)
        case(f"cast:{src}->{dst}", [src], [x], dst, ours,
             lambda n, d=dst, s=src: c_expr("cast", d, n, [s]))

    c_bits = prog.run()
    total = sum(len(c[3]) for c in cases)
    assert len(c_bits) == total > 200000
    pos, bad = 0, []
    for label, dtype, arrays, ours in cases:
        theirs = c_bits[pos: pos + len(ours)]
        pos += len(ours)
        for i in np.flatnonzero(~same_bits(ours, theirs, dtype))[:3]:
            args = ", ".join(repr(a[i]) for a in arrays)
            bad.append(f"{label}({args}): ours {bits_of(ours)[i]:#x}, C {int(theirs[i]):#x}")
    assert not bad, f"{len(bad)} mismatches, e.g.:\n" + "\n".join(bad[:30])


def test_reduce_is_sequential_from_zero():
    x = np.array([[1e8, 1.0, -1e8, 1.0], [-0.0, -0.0, -0.0, -0.0]], dtype=np.float32)
    total = semantics.reduce("add", x, (1,))
    # ((((0 + 1e8) + 1) - 1e8) + 1) in f32 is 1; and an all -0.0 sum starting at +0.0 is +0.0
    assert total.tolist() == [1.0, 0.0] and not np.signbit(total[1])
    assert semantics.reduce("max", np.array([-0.0, 0.0], np.float32), (0,)).item() == 0.0
    assert not np.signbit(semantics.reduce("max", np.array([-0.0, 0.0], np.float32), (0,)))
    assert np.isnan(semantics.reduce("max", np.array([1.0, np.nan], np.float32), (0,)))
    assert semantics.reduce("max", np.zeros((2, 0), np.int32), (1,)).tolist() == [-(2**31)] * 2


# ---------------------------------------------------------------------------------------
# expression level: hypothesis trees, folded by uop-fold, against C

FLOAT_OPS_1 = ("recip", "sqrt", "exp2", "log2", "sin")


CASTS_FROM = ("i1", "i32", "f32", "f16")


def random_value(rng: random.Random, dtype: str):
    """Special values, small values and random bit patterns (NaNs, subnormals included)."""
    if dtype == "i1":
        return rng.random() < 0.5
    kind = rng.randrange(3)
    if dtype == "i32":
        return (rng.choice(SPECIAL_I), rng.randint(-50, 50),
                rng.randint(-(2**31), 2**31 - 1))[kind]
    if kind == 0:
        return rng.choice(SPECIAL_F)
    if kind == 1:
        return round(rng.uniform(-100, 100), rng.randrange(4))
    bits = np.array(rng.getrandbits(16 if dtype == "f16" else 32),
                    dtype=np.uint16 if dtype == "f16" else np.uint32)
    return bits.view(DTYPES[dtype].numpy).item()


def random_tree(rng: random.Random, dtype: str, depth: int = 3):
    """An (op, dtype, children) tree of result type `dtype`; leaves are ("const", dtype, value)."""
    if depth == 0 or rng.random() < 0.25:
        return ("const", dtype, random_value(rng, dtype))
    ops = ["add", "mul", "max", "where", "cast"]
    ops += {"i1": ["cmplt", "cmpne"] * 2, "i32": ["floordiv", "floormod"] * 2}.get(dtype, [])
    ops += list(FLOAT_OPS_1) if dtype in ("f32", "f16") else []
    op = rng.choice(ops)
    sub = lambda d: random_tree(rng, d, depth - 1)  # noqa: E731
    if op in ("cmplt", "cmpne"):
        operand = rng.choice(["i32", "f32", "f16"])
        return (op, dtype, (sub(operand), sub(operand)))
    if op == "where":
        return (op, dtype, (sub("i1"), sub(dtype), sub(dtype)))
    if op == "cast":
        return (op, dtype, (sub(rng.choice([d for d in CASTS_FROM if d != dtype])),))
    if op in FLOAT_OPS_1:
        return (op, dtype, (sub(dtype),))
    return (op, dtype, (sub(dtype), sub(dtype)))


def reference(tree) -> np.ndarray:
    """Tree evaluation with uopc.uopdialect.semantics (raises UndefinedBehavior)."""
    op, dtype, payload = tree
    if op == "const":
        return semantics.array(payload, dtype)
    args = [reference(c) for c in payload]
    if op == "where":
        return semantics.where(*args)
    if op == "cast":
        return semantics.cast(args[0], dtype)
    if op in FLOAT_OPS_1:
        return semantics.unary(op, args[0])
    return semantics.binary(op, *args)


def build_ir(tree, block: Block, literals: dict):
    """The tree as uop ops on rank-0 tensors appended to `block`; its result value.
    Equal literals share one `uop.const` (building literals dominates the cost)."""
    op, dtype, payload = tree
    if op == "const":
        value = semantics.array(payload, dtype)
        key = (dtype, int(bits_of(value)))
        if key not in literals:
            literals[key] = u.ConstOp.from_array(value, Sig((), dtype))
            block.add_op(literals[key])
        return literals[key].results[0]
    operands = [build_ir(c, block, literals) for c in payload]
    if op == "cast":
        new = u.CastOp.make(*operands, result=Sig((), dtype))
    elif op == "where":
        new = u.WhereOp.make(*operands)
    elif op in FLOAT_OPS_1:
        new = u.UNARY_BY_NAME[op].make(*operands)
    else:
        new = u.BINARY_BY_NAME[op].make(*operands)
    block.add_op(new)
    return new.results[0]


def build_c(tree, prog: CProgram) -> str:
    op, dtype, payload = tree
    if op == "const":
        return prog.literal(semantics.array(payload, dtype), dtype)
    names = [build_c(c, prog) for c in payload]
    return prog.assign(dtype, c_expr(op, dtype, names, [c[1] for c in payload]))


def collect(dtype: str, n: int) -> list:
    """At least n non-trivial trees. Hypothesis draws the seeds (a failure message names
    the tree); a seeded generator draws the trees, 200 per seed: drawing every node
    through hypothesis costs milliseconds per tree, too slow for thousands."""
    found: list = []

    @settings(max_examples=n // 200 + 1, database=None, deadline=None,
              suppress_health_check=list(HealthCheck))
    @given(st.integers(0, 2**64 - 1))
    def draw(seed):
        rng = random.Random(seed)
        trees = (random_tree(rng, dtype) for _ in range(200))
        found.extend(t for t in trees if t[0] != "const")

    draw()
    return found


@pytest.mark.parametrize("dtype", ["i32", "f32", "f16"])
def test_folded_expressions_match_c(dtype):
    trees = collect(dtype, 4000)  # i32: about a quarter are undefined (x floordiv 0...)
    assert len(trees) >= 2000
    block = Block()
    literals: dict = {}
    roots = [build_ir(t, block, literals) for t in trees]
    block.add_op(func.ReturnOp(*roots))
    types = [r.type for r in roots]
    module = ModuleOp([func.FuncOp("exprs", ([], types), Region(block))])
    FoldPass().apply(None, module)
    results = list(block.last_op.operands)

    prog = CProgram()
    defined: list[tuple[object, np.ndarray]] = []
    for tree, value in zip(trees, results):
        try:
            expected = reference(tree)
        except semantics.UndefinedBehavior:
            assert not isinstance(value.owner, u.ConstOp), f"undefined {tree} was folded"
            continue
        assert isinstance(value.owner, u.ConstOp), f"{tree} was not folded"
        folded = value.owner.as_array()
        assert same_bits(folded, bits_of(expected), dtype), f"{tree}: {folded} vs {expected}"
        prog.emit(build_c(tree, prog), dtype)
        defined.append((tree, folded))
    c_bits = prog.run()
    bad = [f"{tree}: folded {folded!r} C {int(c):#x}"
           for (tree, folded), c in zip(defined, c_bits) if not same_bits(folded, c, dtype)]
    assert not bad, f"{len(bad)} of {len(defined)} differ, e.g.:\n" + "\n".join(bad[:10])
    assert len(defined) >= 2000  # defined expressions actually compared with C


@pytest.mark.parametrize("dtype", ["f32", "f16", "i32"])
def test_reduce_matches_a_sequential_c_loop(dtype):
    """reduce add/max equal C loops that start at 0 / -inf (INT_MIN) and accumulate in
    the element type, in row-major order (the strict order SPEC §5 defines)."""
    rng = np.random.default_rng(7)
    rows, n = 40, 300
    if dtype == "i32":
        x = rng.integers(-(2**31), 2**31, (rows, n), dtype=np.int64).astype(np.int32)
    else:
        x = (rng.standard_normal((rows, n)) * rng.choice([1e-3, 1.0, 1e3], (rows, 1))).astype(
            DTYPES[dtype].numpy)
        x[0, 5], x[1, :] = np.nan, -0.0  # NaN propagates through max; an all -0.0 sum is +0.0
    t, w = DTYPES[dtype].c, _width(dtype)
    add = "uop_add_i32(acc, v)" if dtype == "i32" else "acc + v"
    mx = "(v > acc ? v : acc)" if dtype == "i32" else f"uop_max_{dtype}(acc, v)"
    start_max = "INT32_MIN" if dtype == "i32" else f"({t})-INFINITY"
    data = ", ".join(f"{int(b)}u" for b in bits_of(x.reshape(-1)))
    source = f"""{HEADER}
static volatile uint{w}_t data[{rows * n}] = {{{data}}};
static {t} at(int i) {{ uint{w}_t b = data[i]; {t} v; memcpy(&v, &b, sizeof v); return v; }}
int main(void) {{
  for (int r = 0; r < {rows}; r++) {{
    {t} acc = 0;
    for (int i = 0; i < {n}; i++) {{ {t} v = at(r * {n} + i); acc = {add}; }}
    {_print(dtype, "acc")}
  }}
  for (int r = 0; r < {rows}; r++) {{
    {t} acc = {start_max};
    for (int i = 0; i < {n}; i++) {{ {t} v = at(r * {n} + i); acc = {mx}; }}
    {_print(dtype, "acc")}
  }}
  return 0;
}}
"""
    c_bits = np.array([int(v, 16) for v in run_c(source, flags=("-O0",)).split()], dtype=np.uint64)
    ours = np.concatenate([semantics.reduce("add", x, (1,)), semantics.reduce("max", x, (1,))])
    assert np.all(same_bits(ours, c_bits, dtype))


def _near_midpoints(dtype: str, rng: np.random.Generator, n: int) -> list[str]:
    """Decimal literals at, just above and just below midpoints between adjacent values
    of the type (where rounding through f64 first goes wrong), plus the range ends."""
    from decimal import Decimal, getcontext
    from fractions import Fraction

    getcontext().prec = 220
    np_dtype = DTYPES[dtype].numpy
    bits = np.uint16 if dtype == "f16" else np.uint32
    top = 0x7BFF if dtype == "f16" else 0x7F7FFFFF
    texts = ["0.1", "1e-3", "-0.0", "65504.0", "65520.0", "65519.99", "3.4028235e38",
             "3.4028236e38", "1e39", "7e-46", "1.4e-45", "6e-8", "2.98e-8", "1e-8"]
    for raw in rng.integers(1, top, n):
        a = np.asarray(raw, dtype=bits).view(np_dtype)[()]
        b = np.nextafter(a, np_dtype.type(np.inf))
        mid = (Fraction(float(a)) + Fraction(float(b))) / 2
        exact = Decimal(mid.numerator) / Decimal(mid.denominator)
        texts.append(f"{exact:e}")                           # the tie itself
        for digits in (12, 20, 45):                          # near it, either side
            texts.append(f"{exact:.{digits}e}")
            texts.append(f"{exact.next_plus():.{digits}e}" if digits > 40
                         else f"{exact * Decimal('1.0000000000001'):.{digits}e}")
    return texts


@pytest.mark.parametrize("dtype", ["f32", "f16"])
def test_literals_round_like_c(dtype):
    texts = _near_midpoints(dtype, np.random.default_rng(11), 400)
    suffix = "f" if dtype == "f32" else "f16"
    values = ", ".join(f"{t}{suffix}" for t in texts)
    w = _width(dtype)
    source = f"""{HEADER}
static const {DTYPES[dtype].c} lits[] = {{{values}}};
int main(void) {{
  for (unsigned i = 0; i < sizeof lits / sizeof lits[0]; i++) {{
    uint{w}_t b; memcpy(&b, &lits[i], sizeof b); printf("%x\\n", (unsigned)b);
  }}
  return 0;
}}
"""
    c_bits = [int(v, 16) for v in run_c(source, flags=("-O0",)).split()]
    ours = [int(bits_of(semantics.literal(t, dtype))) for t in texts]
    bad = [(t, hex(a), hex(b)) for t, a, b in zip(texts, ours, c_bits) if a != b]
    assert not bad, bad[:10]
    # going through a Python float (f64) first would have got some of these wrong
    naive = [int(bits_of(semantics.array(float(t), dtype))) for t in texts]
    assert any(a != b for a, b in zip(naive, c_bits))
