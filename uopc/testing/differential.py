"""`python -m uopc.testing.differential`: random uop expressions, folded and compiled C, bit for bit.

    python -m uopc.testing.differential --n 10000 [--seed S] [--types i8,bf16,...] [--compiled]

For each element type, random expression trees of that result type (every op, casts from
every other type, compares of every type, special values: NaN, ±inf, ±0, subnormals, MIN,
MAX) become uop IR on rank-0 tensors; `uop-fold` folds them, and the literal each leaves
must equal, bit for bit, both the reference semantics (`uopc.uopdialect.semantics`) and
what the same expression computes in C (NaN payloads excepted). A tree whose reference
evaluation is undefined must be left unfolded, and is not run in C. `--n` counts the
DEFINED trees compared with C per type. The last line is the summary; the exit status is
1 when anything differed. tests/py/test_semantics_vs_c.py runs the same at 2,000 per type.

With `--compiled`, the trees read function arguments instead (vectors of special and
random values of every type) and go through uopc's whole pipeline and the default
backend (the real emitted C); each lane must equal the reference. `--n` then counts
the compiled trees, all defined on every lane.

The C side is written here from the SPEC §5 rules in C spellings (`int8_t`, `uint8_t`,
`int64_t`, `double`, `_Float16`, bf16 as its bits through `uop_bf16_to_f32` /
`uop_f32_to_bf16`), with `semantics.C_PRELUDE`'s helpers where it has them and this
module's (`ref_floordiv_i8`, ...) for the rest; it stores every op result in a variable of its type,
and is built with `STRICT_FP_FLAGS` as SPEC §5 asks of the C backend. Literals come from
volatile tables, so the C compiler folds nothing.
"""

from __future__ import annotations

import argparse
import random
import sys
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from xdsl.dialects import func
from xdsl.dialects.builtin import ModuleOp
from xdsl.ir import Block, Region, SSAValue

from uopc.passes.fold import FoldPass
from uopc.testing.csnippet import run_c
from uopc.uopdialect import ops as u
from uopc.uopdialect import semantics
from uopc.uopdialect.dtypes import DTYPES, DType
from uopc.uopdialect.shapes import Sig
from uopc.uopdialect.types import tensor_type

#: the unary float ops of the random trees (every one has its C math function)
FLOAT_UNARY = ("recip", "sqrt", "exp2", "log2", "sin", "exp", "tanh")
#: the ones compiled code computes by its own polynomial, within 1 ulp of the C library
#: rather than bit-exact (`uopc.transforms.approx`): left out of compiled trees
APPROXIMATED = frozenset({"exp2", "exp", "tanh"})
#: the binary ops by operand kind, beyond add, mul and max (every type has those)
KIND_BINARY = {"int": ("floordiv", "floormod"), "float": ("div", "pow"), "bool": ()}
COMPARES = ("cmplt", "cmple", "cmpeq", "cmpne")

SPECIAL_F = [0.0, -0.0, 1.0, -1.0, 0.5, 2.0, 3.0, -3.5, 1e-3, 127.5, 255.9, -128.7, 65504.0,
             1e30, -1e30, 16777216.0, 2147483520.0, -2147483648.0, 9.2e18, 1e-40, np.inf,
             -np.inf, np.nan]
SPECIAL_I = [0, 1, -1, 2, -2, 3, 7, -7, 100, 127, -128, 200, 255, 32767, -32768, 65536,
             46341, 2**31 - 1, -(2**31), 2**32, 2**62, 2**63 - 1, -(2**63)]


# ---------------------------------------------------------------------------------------
# bits


def bits_of(x: np.ndarray) -> np.ndarray:
    """The raw bits of each element as uint64 (i1: 0 or 1)."""
    x = np.asarray(x)
    if x.dtype == np.bool_:
        return x.astype(np.uint64)
    return x.view(f"u{x.dtype.itemsize}").astype(np.uint64)


def same_bits(ours: np.ndarray, c_bits: np.ndarray, dtype: str) -> np.ndarray:
    """Elementwise agreement of values with C's bits; any NaN equals any NaN."""
    ours = np.asarray(ours)
    agree = bits_of(ours) == c_bits
    d = DTYPES[dtype]
    if d.is_float:
        theirs = np.asarray(c_bits).astype(f"u{d.itemsize}").view(d.numpy)
        with np.errstate(invalid="ignore"):
            agree |= np.isnan(ours.astype(np.float64)) & np.isnan(theirs.astype(np.float64))
    return agree


# ---------------------------------------------------------------------------------------
# C text of one op


def _widen(dtype: str, x: str) -> str:
    """C for the value `x` of `dtype` in its compute type (f16/bf16: f32)."""
    d = DTYPES[dtype]
    return d.c_widen.format(x) if d.c_widen else x


def _narrow(dtype: str, x: str) -> str:
    """C rounding a compute-type value `x` to `dtype`."""
    d = DTYPES[dtype]
    return d.c_narrow.format(x) if d.c_narrow else x


def _math(dtype: str, name: str) -> str:
    """The C math function `name` of the compute type of `dtype` (`expf` or `exp`)."""
    return name if dtype == "f64" else name + "f"


def c_expr(op: str, dtype: str, args: Sequence[str], arg_dtypes: Sequence[str]) -> str:
    """C for one op whose result has `dtype`, on C variables `args` of `arg_dtypes`."""
    src = arg_dtypes[0]
    kind = DTYPES[src].kind
    if op == "where":
        return f"({args[0]} ? {args[1]} : {args[2]})"
    if op == "cast":
        return c_cast(src, dtype, args[0])
    w = [_widen(src, a) for a in args]
    infix = {"cmplt": "<", "cmple": "<=", "cmpeq": "==", "cmpne": "!="}
    if op in infix:
        return f"({w[0]} {infix[op]} {w[1]})"
    if kind == "bool":
        return f"({args[0]} {'&' if op == 'mul' else '|'} {args[1]})"
    if kind == "int":
        if op == "max":
            return f"({args[0]} > {args[1]} ? {args[0]} : {args[1]})"
        return f"{helper(op, src)}({args[0]}, {args[1]})"
    if op == "max":
        return f"{helper('max', src)}({args[0]}, {args[1]})"
    if op in ("add", "mul", "div"):
        return _narrow(dtype, f"({w[0]} {dict(add='+', mul='*', div='/')[op]} {w[1]})")
    if op == "pow":
        return _narrow(dtype, f"{_math(src, 'pow')}({w[0]}, {w[1]})")
    if op == "recip":
        one = "1.0" if src == "f64" else "1.0f"
        return _narrow(dtype, f"({one} / {w[0]})")
    name = {"round": "rint"}.get(op, op)
    return _narrow(dtype, f"{_math(src, name)}({w[0]})")


def c_cast(src: str, dst: str, x: str) -> str:
    """C for `uop.cast` of `x` from `src` to `dst`: f16/bf16 targets through f32, bf16
    sources read as f32 (exact)."""
    s, d = DTYPES[src], DTYPES[dst]
    value = _widen(src, x)  # bf16 and f16 widen exactly
    if d.kind == "bool":
        return f"({value} != 0)"
    if d.widened_to is not None:
        return _narrow(dst, f"(float)({value})")
    if s.kind == "bool":
        return f"({d.c})({x})"
    return f"({d.c})({value})"


def _width(dtype: str) -> int:
    """Bits of one element in a buffer (i1 takes a byte)."""
    return 8 * DTYPES[dtype].itemsize


def c_load(dtype: str, name: str, source: str) -> str:
    """C that declares `name` of `dtype` from the raw bits in the expression `source`."""
    if dtype == "i1":
        return f"bool {name} = ({source}) != 0;"
    w = _width(dtype)
    return (f"{DTYPES[dtype].c} {name}; {{ uint{w}_t b = (uint{w}_t)({source}); "
            f"memcpy(&{name}, &b, sizeof b); }}")


def c_print(dtype: str, name: str) -> str:
    """C printing the bits of `name` as one hex number on a line."""
    if dtype == "i1":
        return f'printf("%x\\n", (unsigned){name});'
    w = _width(dtype)
    return (f'{{ uint{w}_t b; memcpy(&b, &{name}, sizeof b); '
            f'printf("%llx\\n", (unsigned long long)b); }}')


def helper(op: str, dtype: str) -> str:
    """The C helper computing `op` on `dtype`: the prelude's `uop_op_T` where
    `semantics.C_PRELUDE` has one (i32 arithmetic, f32/f16 max), else this harness's
    `ref_op_T` (the emitters write their own forms of these; this is the rule in C)."""
    name = f"uop_{op}_{dtype}"
    return name if name + "(" in semantics.C_PRELUDE else f"ref_{op}_{dtype}"


def _c_int_helpers(d: DType) -> str:
    """Wrapping add/mul and floor division/remainder of one integer type. The arithmetic
    runs on an unsigned type of at least 32 bits (narrower ones would promote to a signed
    int, where a product can overflow), and the result converts back modulo 2^bits."""
    t = d.c
    wide = f"uint{max(d.bits, 32)}_t"
    bodies = {"add": f"return ({t})(({wide})a + ({wide})b);",
              "mul": f"return ({t})(({wide})a * ({wide})b);"}
    if d.signed:
        bodies["floordiv"] = (f"{t} q = ({t})(a / b); "
                              f"return (q * b != a && ((a < 0) != (b < 0))) ? ({t})(q - 1) : q;")
        bodies["floormod"] = (f"{t} r = ({t})(a % b); "
                              f"return (r != 0 && ((r < 0) != (b < 0))) ? ({t})(r + b) : r;")
    else:
        bodies["floordiv"], bodies["floormod"] = "return a / b;", "return a % b;"
    return "".join(f"static inline {t} {helper(op, d.name)}({t} a, {t} b) {{ {body} }}\n"
                   for op, body in bodies.items() if helper(op, d.name).startswith("ref_"))


def _c_max_helper(d: DType) -> str:
    """max of one float type with the NaN and signed-zero rules, compared in its compute
    type."""
    if not helper("max", d.name).startswith("ref_"):
        return ""
    t = d.c
    x, y = _widen(d.name, "a"), _widen(d.name, "b")
    return (f"static inline {t} {helper('max', d.name)}({t} a, {t} b) {{\n"
            f"  return ({x} > {y} || {x} != {x} || ({x} == {y} && !signbit({x}))) ? a : b;\n}}\n")


#: bf16 as its 16 bits: to f32 exactly, from f32 rounding to nearest even (a NaN stays a
#: quiet NaN of the same sign); the names `DType.c_widen`/`c_narrow` spell
_C_BF16 = r"""typedef uint16_t uop_bf16;
static inline float uop_bf16_to_f32(uop_bf16 h) {
  uint32_t u = (uint32_t)h << 16; float f; memcpy(&f, &u, sizeof f); return f;
}
static inline uop_bf16 uop_f32_to_bf16(float f) {
  uint32_t u; memcpy(&u, &f, sizeof u);
  if ((u & 0x7fffffffu) > 0x7f800000u) return (uop_bf16)((u >> 16) | 0x40u);
  return (uop_bf16)((u + 0x7fffu + ((u >> 16) & 1u)) >> 16);
}
"""


def _header() -> str:
    parts = ["#include <stdio.h>\n#include <stdbool.h>\n#include <string.h>\n",
             semantics.C_PRELUDE, _C_BF16]
    parts += [_c_int_helpers(d) for d in DTYPES.values() if d.is_int]
    parts += [_c_max_helper(d) for d in DTYPES.values() if d.is_float]
    return "".join(parts)


#: the text before every test program: the C prelude and the helpers above
HEADER = _header()


class CProgram:
    """A C program printing the bits of many results, one hex number per line.

    Literals come from a volatile table, so nothing is folded at compile time. Code is
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
        self.lines.append(c_load(dtype, name, f"table[{len(self.table) - 1}]"))
        return name

    def assign(self, dtype: str, text: str) -> str:
        name = self.fresh()
        self.lines.append(f"{DTYPES[dtype].c} {name} = {text};")
        return name

    def emit(self, name: str, dtype: str) -> None:
        """Print `name`; close the current function after about 400 statements."""
        self.lines.append(c_print(dtype, name))
        if len(self.lines) > 400:
            self.close()

    def close(self) -> None:
        if self.lines:
            self.functions.append("\n".join(self.lines))
            self.lines = []

    def loop(self, in_dtypes: Sequence[str], arrays: Sequence[np.ndarray], out_dtype: str,
             text: Callable[[list[str]], str]) -> None:
        """A function printing text(a0, a1, ...) for every index of the input arrays."""
        self.close()
        k, n = len(self.functions), len(arrays[0])
        decls = []
        loads = []
        for j, (dtype, arr) in enumerate(zip(in_dtypes, arrays)):
            data = ", ".join(f"{int(b)}u" for b in bits_of(arr))
            w = _width(dtype)
            decls.append(f"static volatile uint{w}_t in{k}_{j}[{n}] = {{{data}}};")
            loads.append(c_load(dtype, f"a{j}", f"in{k}_{j}[i]"))
        result = text([f"a{j}" for j in range(len(arrays))])
        body = (f"for (int i = 0; i < {n}; i++) {{ {' '.join(loads)} "
                f"{DTYPES[out_dtype].c} r = {result}; {c_print(out_dtype, 'r')} }}")
        self.functions.append("\n".join(decls) + "\n" + body)

    def run(self) -> np.ndarray:
        """Compile and run; the printed bits as uint64."""
        self.close()
        table = ", ".join(f"{v}ull" for v in self.table) or "0u"
        parts = [HEADER, f"static volatile uint64_t table[] = {{{table}}};"]
        for k, body in enumerate(self.functions):
            parts.append(f"static void f{k}(void) {{\n{body}\n}}")
        calls = " ".join(f"f{k}();" for k in range(len(self.functions)))
        parts.append(f"int main(void) {{ {calls} return 0; }}")
        out = run_c("\n".join(parts) + "\n", flags=("-O0",))
        return np.array([int(line, 16) for line in out.split()], dtype=np.uint64)


# ---------------------------------------------------------------------------------------
# random trees: (op, dtype, children); leaves are ("const", dtype, value)

Tree = tuple[str, str, Any]


def random_value(rng: random.Random, dtype: str) -> Any:
    """Special values, small values and random bit patterns (NaNs, subnormals included)."""
    d = DTYPES[dtype]
    if d.kind == "bool":
        return rng.random() < 0.5
    kind = rng.randrange(3)
    if d.kind == "int":
        if kind == 0:
            return rng.choice([v for v in SPECIAL_I if d.fits(v)])
        if kind == 1:
            return rng.randint(max(-50, int(d.min)), 50)
        return rng.randint(int(d.min), int(d.max))
    if kind == 0:
        return rng.choice(SPECIAL_F)
    if kind == 1:
        return round(rng.uniform(-300, 300), rng.randrange(4))
    raw = np.array(rng.getrandbits(d.bits), dtype=f"u{d.itemsize}")
    return raw.view(d.numpy).item()


def random_tree(rng: random.Random, dtype: str, depth: int = 3, args: int = 0,
                unary: Sequence[str] = FLOAT_UNARY) -> Tree:
    """A random expression tree of result type `dtype` with the float functions `unary`;
    with `args`, most leaves are ("arg", dtype, k), argument k < args of that type,
    instead of constants."""
    d = DTYPES[dtype]
    if depth == 0 or rng.random() < 0.25:
        if args and rng.random() < 0.7:
            return ("arg", dtype, rng.randrange(args))
        return ("const", dtype, random_value(rng, dtype))
    ops = ["add", "mul", "max", "where", "cast", *(2 * KIND_BINARY[d.kind])]
    ops += list(unary) if d.is_float else []
    ops += list(COMPARES) if d.kind == "bool" else []
    op = rng.choice(ops)

    def sub(t: str) -> Tree:
        return random_tree(rng, t, depth - 1, args, unary)

    if op in COMPARES:
        operand = rng.choice([t for t in DTYPES if t != "i1"])
        return (op, dtype, (sub(operand), sub(operand)))
    if op == "where":
        return (op, dtype, (sub("i1"), sub(dtype), sub(dtype)))
    if op == "cast":
        return (op, dtype, (sub(rng.choice([t for t in DTYPES if t != dtype])),))
    if op in FLOAT_UNARY:
        return (op, dtype, (sub(dtype),))
    return (op, dtype, (sub(dtype), sub(dtype)))


#: the argument arrays of compiled trees, by (dtype, k)
Env = dict[tuple[str, int], np.ndarray]


def reference(tree: Tree, env: Env | None = None) -> np.ndarray:
    """Tree evaluation with uopc.uopdialect.semantics (raises UndefinedBehavior); the
    arguments' values come from `env`, and constants then take their shape."""
    op, dtype, payload = tree
    if op == "arg":
        assert env is not None
        return env[dtype, payload]
    if op == "const":
        value = semantics.array(payload, dtype)
        if env:
            return np.full(next(iter(env.values())).shape, value)
        return value
    args = [reference(c, env) for c in payload]
    if op == "where":
        return semantics.where(*args)
    if op == "cast":
        return semantics.cast(args[0], dtype)
    if op in FLOAT_UNARY:
        return semantics.unary(op, args[0])
    return semantics.binary(op, *args)


def build_ir(tree: Tree, block: Block, literals: dict,
             args: Mapping[tuple[str, int], SSAValue] | None = None,
             shape: tuple[int, ...] = ()) -> SSAValue:
    """The tree as uop ops on tensors of `shape` appended to `block`; its result value.
    `args` are the block arguments of ("arg", dtype, k) leaves. Equal literals share one
    `uop.const` (building literals dominates the cost)."""
    op, dtype, payload = tree
    if op == "arg":
        assert args is not None
        return args[dtype, payload]
    if op == "const":
        value = semantics.array(payload, dtype)
        key = (dtype, int(bits_of(value)))
        if key not in literals:
            literals[key] = u.ConstOp.from_array(np.full(shape, value), Sig(shape, dtype))
            block.add_op(literals[key])
        return literals[key].results[0]
    operands = [build_ir(c, block, literals, args, shape) for c in payload]
    if op == "cast":
        new = u.CastOp.make(*operands, result=Sig(shape, dtype))
    elif op == "where":
        new = u.WhereOp.make(*operands)
    else:
        family = u.UNARY_BY_NAME if op in FLOAT_UNARY else u.BINARY_BY_NAME
        op_class = family[op]
        assert op_class is not None and issubclass(op_class, u.UopOp)
        new = op_class.make(*operands)
    block.add_op(new)
    return new.results[0]


def build_c(tree: Tree, prog: CProgram) -> str:
    """The tree as C statements appended to `prog`; the variable holding its value."""
    op, dtype, payload = tree
    if op == "const":
        return prog.literal(semantics.array(payload, dtype), dtype)
    names = [build_c(c, prog) for c in payload]
    return prog.assign(dtype, c_expr(op, dtype, names, [c[1] for c in payload]))


# ---------------------------------------------------------------------------------------
# one run


@dataclass
class Outcome:
    """What one type's run compared, and every disagreement found."""

    dtype: str
    compared: int = 0
    undefined: int = 0
    seconds: float = 0.0
    failures: list[str] = field(default_factory=list)

    def line(self) -> str:
        return (f"{self.dtype}: {self.compared} programs compared, {len(self.failures)} "
                f"mismatches ({self.undefined} undefined ones not run in C), {self.seconds:.1f} s")


def _draw(dtype: str, n: int, seed: int) -> tuple[list[Tree], list[Tree]]:
    """Non-trivial trees of `dtype` until n are defined: (defined, undefined)."""
    rng = random.Random(f"{dtype}:{seed}")
    defined: list[Tree] = []
    undefined: list[Tree] = []
    while len(defined) < n:
        tree = random_tree(rng, dtype)
        if tree[0] == "const":
            continue
        try:
            reference(tree)
            defined.append(tree)
        except semantics.UndefinedBehavior:
            undefined.append(tree)
    return defined, undefined


def check_type(dtype: str, n: int, seed: int = 0, batch: int = 4000) -> Outcome:
    """Fold n defined random trees of `dtype` (and the undefined ones drawn on the way)
    and compare them with the reference and with C, `batch` trees per C program."""
    start = time.perf_counter()
    outcome = Outcome(dtype)
    defined, undefined = _draw(dtype, n, seed)
    outcome.undefined = len(undefined)
    trees = undefined + defined
    for lo in range(0, len(trees), batch):
        _check_batch(trees[lo: lo + batch], outcome)
    outcome.seconds = time.perf_counter() - start
    return outcome


def _check_batch(trees: list[Tree], outcome: Outcome) -> None:
    dtype = outcome.dtype
    block = Block()
    literals: dict = {}
    roots = [build_ir(t, block, literals) for t in trees]
    block.add_op(func.ReturnOp(*roots))
    module = ModuleOp([func.FuncOp("exprs", ([], [r.type for r in roots]), Region(block))])
    FoldPass().apply(None, module)  # type: ignore[arg-type]
    results = list(block.last_op.operands)  # type: ignore[union-attr]
    prog = CProgram()
    folded_trees: list[tuple[Tree, np.ndarray]] = []
    for tree, value in zip(trees, results):
        owner = value.owner
        try:
            expected = reference(tree)
        except semantics.UndefinedBehavior:
            if isinstance(owner, u.ConstOp):
                outcome.failures.append(f"undefined {tree} was folded")
            continue
        if not isinstance(owner, u.ConstOp):
            outcome.failures.append(f"{tree} was not folded")
            continue
        folded = owner.as_array()
        if not same_bits(folded, bits_of(expected), dtype):
            outcome.failures.append(f"{tree}: folded {folded!r}, reference {expected!r}")
        prog.emit(build_c(tree, prog), dtype)
        folded_trees.append((tree, folded))
    c_bits = prog.run()
    if len(c_bits) != len(folded_trees):
        raise RuntimeError(f"the C program printed {len(c_bits)} results for "
                           f"{len(folded_trees)} expressions")
    for (tree, folded), c in zip(folded_trees, c_bits):
        if not same_bits(folded, c, dtype):
            outcome.failures.append(f"{tree}: folded {folded!r}, C {int(c):#x}")
    outcome.compared += len(folded_trees)


def _argument_values(rng: random.Random, dtype: str, lanes: int) -> np.ndarray:
    return np.array([semantics.array(random_value(rng, dtype), dtype) for _ in range(lanes)])


def check_compiled(dtype: str, n: int, seed: int = 0, lanes: int = 32, args: int = 2,
                   batch: int = 250) -> Outcome:
    """n random trees of `dtype` over function arguments (`args` vectors of `lanes`
    values per element type: specials, small and random bits), compiled by uopc's
    pipeline for the default backend and run; every lane must equal the reference bit
    for bit (the `APPROXIMATED` functions are left out). A tree undefined on any lane is
    not compiled (C would trap or differ)."""
    from uopc.runtime.driver import compile_program

    start = time.perf_counter()
    outcome = Outcome(dtype)
    rng = random.Random(f"compiled:{dtype}:{seed}")
    keys = [(t, k) for t in DTYPES for k in range(args)]
    env = {key: _argument_values(rng, key[0], lanes) for key in keys}
    trees: list[tuple[Tree, np.ndarray]] = []
    while len(trees) < n:
        tree = random_tree(rng, dtype, args=args,
                           unary=[f for f in FLOAT_UNARY if f not in APPROXIMATED])
        if tree[0] in ("const", "arg"):
            continue
        try:
            trees.append((tree, reference(tree, env)))
        except semantics.UndefinedBehavior:
            outcome.undefined += 1
    shape = (lanes,)
    types = [tensor_type(Sig(shape, t)) for t, _ in keys]
    inputs = [env[key] for key in keys]
    for lo in range(0, n, batch):
        part = trees[lo: lo + batch]
        block = Block(arg_types=types)
        values = dict(zip(keys, block.args))
        roots = [build_ir(t, block, {}, values, shape) for t, _ in part]
        block.add_op(func.ReturnOp(*roots))
        module = ModuleOp([func.FuncOp("main", (types, [r.type for r in roots]), Region(block))])
        results = compile_program(module)(*inputs)
        for (tree, expected), got in zip(part, results):
            bad = ~same_bits(expected, bits_of(np.asarray(got, expected.dtype)), dtype)
            if bad.any():
                lane = int(np.flatnonzero(bad)[0])
                args_at = {f"{t}#{k}": env[t, k][lane].item() for t, k in keys}
                outcome.failures.append(f"{tree} at lane {lane}: compiled {got[lane]!r}, "
                                        f"reference {expected[lane]!r}; arguments {args_at}")
        outcome.compared += len(part)
    outcome.seconds = time.perf_counter() - start
    return outcome


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m uopc.testing.differential",
                                     description=__doc__.split("\n\n")[0])
    parser.add_argument("--n", type=int, default=10000, help="defined programs per type")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--types", default=",".join(DTYPES), help="comma-separated IR names")
    parser.add_argument("--compiled", action="store_true",
                        help="trees over function arguments, compiled by uopc and run, "
                             "instead of folded and compared with C written from the rules")
    args = parser.parse_args(argv)
    failed = 0
    for dtype in args.types.split(","):
        check = check_compiled if args.compiled else check_type
        outcome = check(dtype, args.n, args.seed)
        for failure in outcome.failures[:20]:
            print(f"  {failure}")
        print(outcome.line(), flush=True)
        failed += len(outcome.failures)
    print(f"{failed} mismatches")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
