"""Random Tensor programs: a generator, their float64 reference and Python source.

A `Program` is a few f32 inputs (shapes; the data comes from `seed`) and a list of `Step`s,
each one Tensor operation on earlier values (inputs are values 0..k-1, step i makes value
k+i; the last step is the result). Every operation kind has one line of Python source
(`SOURCES`), which is both how the step runs on `uopc.Tensor` and how a reproducer prints,
and one float64 rule (`_reference`) on `Bounded` values, so that the check's tolerance
follows from f32 rounding (see `reference.py`). Values are f32 between steps; some steps
compute in other element types and come back: `int_affine` in i8, ui8, i16, i32 or i64,
`double` a libm function in f64, `half` a round trip through f16.

`generate(seed, ops)` draws a program whose every step is valid on its inputs (a step the
reference rejects, e.g. a division by values near 0, is redrawn). `smaller(program)` lists
the programs one shrinking step away (a step dropped, the result taken earlier, an input
axis set to 1); the fuzz driver keeps the first one that still fails.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, replace
from typing import Any

import numpy as np

from uopc.testing.reference import Bounded, Invalid

# The Python source of each operation kind: {0}, {1}, ... are the operands, {name} the params.
SOURCES: dict[str, str] = {
    "add": "{0} + {1}", "sub": "{0} - {1}", "mul": "{0} * {1}", "div": "{0} / {1}",
    "maximum": "{0}.maximum({1})", "minimum": "{0}.minimum({1})",
    "scale": "{0} * {c}", "rsub": "{c} - {0}",
    "neg": "-{0}", "exp": "{0}.exp()", "log": "{0}.log()", "sqrt": "{0}.sqrt()",
    "reciprocal": "{0}.reciprocal()", "sin": "{0}.sin()", "cos": "{0}.cos()",
    "tanh": "{0}.tanh()", "sigmoid": "{0}.sigmoid()", "silu": "{0}.silu()",
    "relu": "{0}.relu()", "abs": "{0}.abs()", "square": "{0}.square()",
    "exp2": "{0}.exp2()", "log2": "{0}.log2()",
    "sum": "{0}.sum(axis={axis}, keepdim={keepdim})",
    "max": "{0}.max(axis={axis}, keepdim={keepdim})",
    "min": "{0}.min(axis={axis}, keepdim={keepdim})",
    "mean": "{0}.mean(axis={axis}, keepdim={keepdim})",
    "reshape": "{0}.reshape({shape})", "permute": "{0}.permute({order})",
    "expand": "{0}.expand({shape})", "flip": "{0}.flip({axes})",
    "pad": "{0}.pad({widths})", "shrink": "{0}.shrink({ranges})",
    "slice": "{0}[{index}]", "cat": "{0}.cat({1}, dim={dim})",
    "matmul": "{0} @ {1}", "gram": "{0} @ {1}.transpose(-1, -2)",
    "where": "({0} < {1}).where({2}, {3})", "less": "({0} < {1}).float()",
    "trunc": "{0}.cast('i32').float()",
    "int_affine": "(({0}.cast('{t}') - {d}) * {c}).float()",
    "half": "{0}.cast('f16').cast('f32')", "double": "{0}.cast('f64').{fn}().cast('f32')",
    "softmax": "{0}.softmax(axis={axis})", "log_softmax": "{0}.log_softmax(axis={axis})",
}
ALL_OPS = tuple(SOURCES)
#: the integer types int_affine computes in (each wraps differently; the reference only
#: keeps programs whose values stay in range, the wrap itself is checked bit for bit in
#: `differential.py`)
INT_AFFINE_TYPES = ("i8", "ui8", "i16", "i32", "i64")
#: the functions "double" applies in f64 (libm's double versions) between two casts
DOUBLE_FUNCTIONS = ("sin", "cos", "tanh", "exp")
# Differentiable (with a gradient finite differences can check) on the reference's domain.
SMOOTH_OPS = ("add", "sub", "mul", "div", "scale", "rsub", "neg", "exp", "log", "sqrt",
              "reciprocal", "sin", "cos", "tanh", "sigmoid", "silu", "square", "exp2", "log2",
              "sum", "mean", "reshape", "permute", "expand", "flip", "pad", "shrink", "slice",
              "cat", "matmul", "gram", "softmax", "log_softmax")

#: an elementwise function of float64 arrays (or a domain test of one)
_Elementwise = Callable[[np.ndarray], np.ndarray]
#: unary op -> (its function, the domain test its argument must pass, if any)
_UNARY: dict[str, tuple[_Elementwise, _Elementwise | None]] = {
    "neg": (np.negative, None), "exp": (np.exp, None), "exp2": (np.exp2, None),
    "log": (np.log, lambda x: x > 0.05), "log2": (np.log2, lambda x: x > 0.05),
    "sqrt": (np.sqrt, lambda x: x > 0.05),
    "reciprocal": (np.reciprocal, lambda x: np.abs(x) > 0.05), "sin": (np.sin, None),
    "cos": (np.cos, None), "tanh": (np.tanh, None),
    "sigmoid": (lambda x: 1 / (1 + np.exp(-x)), None),
    "silu": (lambda x: x / (1 + np.exp(-x)), None),
    "relu": (lambda x: np.maximum(x, 0), None), "abs": (np.abs, None),
    "square": (np.square, None),
}
_BINARY = {"add": Bounded.add, "sub": Bounded.sub, "mul": Bounded.mul, "div": Bounded.div,
           "maximum": Bounded.maximum, "minimum": Bounded.minimum,
           "matmul": Bounded.matmul}


@dataclass(frozen=True)
class Step:
    """One operation: its kind, the value numbers it reads and its parameters."""

    op: str
    args: tuple[int, ...]
    params: tuple[tuple[str, Any], ...] = ()

    def source(self, names: Sequence[str]) -> str:
        return SOURCES[self.op].format(*(names[a] for a in self.args),
                                       **{k: _literal(v) for k, v in self.params})


@dataclass(frozen=True)
class Program:
    """f32 inputs of `shapes` drawn from `seed`, then `steps`; the last step is the result."""

    shapes: tuple[tuple[int, ...], ...]
    steps: tuple[Step, ...]
    seed: int

    def inputs(self) -> list[np.ndarray]:
        rng = np.random.default_rng(self.seed)
        return [np.asarray(rng.uniform(-2, 2, shape), np.float32) for shape in self.shapes]

    def source(self, gradient: bool = False) -> str:
        """A standalone Python script that runs the program on uopc (a reproducer)."""
        names = [f"v{i}" for i in range(len(self.shapes) + len(self.steps))]
        grad = ", requires_grad=True" if gradient else ""
        lines = ["import numpy as np", "from uopc import Tensor", "",
                 f"rng = np.random.default_rng({self.seed})"]
        lines += [f"v{i} = Tensor(np.asarray(rng.uniform(-2, 2, {shape}), np.float32){grad})"
                  for i, shape in enumerate(self.shapes)]
        first = len(self.shapes)
        lines += [f"{names[first + i]} = {step.source(names)}" for i, step in enumerate(self.steps)]
        out = names[-1]
        if gradient:
            inputs = ", ".join(names[:first])
            lines += [f"w = np.asarray(np.random.default_rng({self.seed + 1}).uniform(-1, 1, "
                      f"{out}.shape), np.float32)",
                      f"({out} * Tensor(w)).sum().backward([{inputs}])",
                      f"print([x.grad.numpy() for x in [{inputs}]])"]
        else:
            lines.append(f"print({out}.numpy())")
        return "\n".join(lines) + "\n"

    def run(self, tensor_type: type, gradient: bool = False) -> list[np.ndarray]:
        """The result on uopc (`tensor_type` is `uopc.Tensor`), or with `gradient` the
        gradient of sum(result * weights) with respect to every input."""
        inputs = [tensor_type(x, requires_grad=gradient) for x in self.inputs()]
        out = self.apply(tensor_type, inputs)
        if not gradient:
            return [out.numpy()]
        (out * tensor_type(self.weights())).sum().backward(inputs)
        return [np.zeros(x.shape, np.float32) if x.grad is None else x.grad.numpy()
                for x in inputs]

    def apply(self, tensor_type: type, inputs: Sequence[Any]) -> Any:
        """The steps applied to `inputs` (one tensor of `tensor_type` per input shape):
        the last step's tensor."""
        names = [f"v{i}" for i in range(len(self.shapes) + len(self.steps))]
        scope: dict[str, Any] = {"Tensor": tensor_type}
        scope.update(zip(names, inputs))
        first = len(self.shapes)
        for i, step in enumerate(self.steps):
            scope[names[first + i]] = eval(step.source(names), scope)  # noqa: S307 (own source)
        return scope[names[-1]]

    def weights(self) -> np.ndarray:
        """The fixed weights of the gradient check's scalar loss."""
        shape = self.reference().shape
        return np.asarray(np.random.default_rng(self.seed + 1).uniform(-1, 1, shape), np.float32)

    def reference(self, inputs: Sequence[np.ndarray] | None = None) -> Bounded:
        """The float64 result and its f32 error bound; raises Invalid when a step is."""
        values = [Bounded.exact(x) for x in (self.inputs() if inputs is None else inputs)]
        for step in self.steps:
            try:
                values.append(_reference(step, [values[a] for a in step.args]))
            except (ValueError, IndexError, TypeError) as err:  # shapes numpy refuses
                raise Invalid(str(err)) from err
        return values[-1]

    def gradient_reference(self, h: float = 1e-6) -> list[np.ndarray]:
        """d sum(result * weights) / d input by central differences in float64."""
        w = self.weights().astype(np.float64)
        base = [x.astype(np.float64) for x in self.inputs()]
        grads = []
        for k, x in enumerate(base):
            g = np.zeros_like(x)
            for idx in np.ndindex(x.shape):
                total = []
                for sign in (1, -1):
                    moved = [y.copy() for y in base]
                    moved[k][idx] += sign * h
                    total.append(float((self.reference(moved).value * w).sum()))
                g[idx] = (total[0] - total[1]) / (2 * h)
            grads.append(g)
        return grads


def _literal(value: Any) -> str:
    return value if isinstance(value, str) else repr(value)


def _axes(axis: Any, ndim: int) -> tuple[int, ...] | None:
    if axis is None:
        return None
    return tuple(sorted(a % ndim for a in ((axis,) if isinstance(axis, int) else axis)))


def _softmax(x: Bounded, axis: int, log: bool) -> Bounded:
    """Composed from the bounded primitives, as uopc composes it: the bound is conservative."""
    shifted = x.sub(x.max((axis % max(x.value.ndim, 1),), True))
    total = shifted.unary(np.exp).sum((axis % max(x.value.ndim, 1),), True)
    if log:
        return shifted.sub(total.unary(np.log, lambda v: v > 0.05))
    return shifted.unary(np.exp).div(total)


def _reference(step: Step, xs: list[Bounded]) -> Bounded:
    p = dict(step.params)
    op = step.op
    if op in _BINARY:
        return _BINARY[op](*xs)
    if op in _UNARY:
        return xs[0].unary(*_UNARY[op])
    x = xs[0]
    if op == "scale":
        return x.mul(Bounded.exact(np.float64(np.float32(p["c"]))))
    if op == "rsub":
        return Bounded.exact(np.float64(np.float32(p["c"]))).sub(x)
    if op in ("sum", "max", "min", "mean"):
        return getattr(x, op)(_axes(p["axis"], x.value.ndim), p["keepdim"])
    if op == "reshape":
        return x.movement(lambda v: v.reshape(p["shape"]))
    if op == "permute":
        return x.movement(lambda v: v.transpose(p["order"]))
    if op == "expand":
        return x.movement(lambda v: np.broadcast_to(v, p["shape"]))
    if op == "flip":
        return x.movement(lambda v: np.flip(v, p["axes"]))
    if op == "pad":
        return x.movement(lambda v: np.pad(v, p["widths"]))
    if op == "shrink":
        return x.movement(lambda v: v[tuple(slice(a, b) for a, b in p["ranges"])])
    if op == "slice":
        return x.movement(lambda v: eval(f"v[{p['index']}]", {"v": v}))  # noqa: S307 (own source)
    if op == "cat":
        return Bounded(np.concatenate([y.value for y in xs], p["dim"]),
                       np.concatenate([y.err for y in xs], p["dim"]))
    if op == "gram":
        return x.matmul(xs[1].movement(lambda v: np.swapaxes(v, -1, -2)))
    if op == "where":
        return xs[0].less(xs[1]).where(xs[2], xs[3])
    if op == "less":
        return xs[0].less(xs[1])
    if op == "trunc":
        return x.truncate()
    if op == "int_affine":
        return x.truncate().affine_in(p["t"], p["d"], p["c"])
    if op == "double":  # computed in f64, rounded once to f32: within the f32 bound
        f, domain = _UNARY[p["fn"]]
        return x.unary(f, domain)
    if op == "half":
        return x.half()
    if op in ("softmax", "log_softmax"):
        return _softmax(x, p["axis"], op == "log_softmax")
    raise AssertionError(f"no reference rule for {op}")


# ------------------------------------------------------------------ generation
def _broadcastable(a: tuple[int, ...], b: tuple[int, ...]) -> bool:
    return all(x == y or 1 in (x, y) for x, y in zip(reversed(a), reversed(b)))


def _random_axis(rng: np.random.Generator, ndim: int) -> Any:
    """None, an axis (maybe negative) or a tuple of distinct axes."""
    if ndim == 0 or rng.random() < 0.2:
        return None
    if rng.random() < 0.6:
        return int(rng.integers(-ndim, ndim))
    k = int(rng.integers(1, ndim + 1))
    return tuple(int(a) for a in rng.choice(ndim, k, replace=False))


def _factor_shape(rng: np.random.Generator, n: int) -> tuple[int, ...]:
    """A random shape with n elements."""
    primes, m, f = [], n, 2
    while m > 1:
        while m % f == 0:
            primes.append(f)
            m //= f
        f += 1
    dims = [1] * int(rng.integers(1, 4))
    for q in primes:
        dims[int(rng.integers(len(dims)))] *= q
    return tuple(dims)


def _slice_index(rng: np.random.Generator, shape: tuple[int, ...]) -> str:
    parts = []
    for n in shape[: int(rng.integers(1, len(shape) + 1))]:
        kind = rng.random()
        if kind < 0.25:
            parts.append(str(int(rng.integers(-n, n))))
        else:
            start = int(rng.integers(0, n))
            step = int(rng.choice([1, 2, 3, -1, -2]))
            parts.append(f"{start}::{step}" if step > 0 else f"::{step}")
    return ", ".join(parts)


def _propose(rng: np.random.Generator, op: str, shapes: list[tuple[int, ...]]) -> Step | None:
    """A step of kind `op` on values of `shapes`, or None if none fits."""
    last = len(shapes) - 1
    a = last if rng.random() < 0.6 else int(rng.integers(len(shapes)))
    sa = shapes[a]
    partners = [i for i, s in enumerate(shapes) if _broadcastable(sa, s)]
    pick = lambda pool: int(rng.choice(pool))  # noqa: E731
    if op in ("add", "sub", "mul", "div", "maximum", "minimum", "less"):
        return Step(op, (a, pick(partners)))
    if op == "where":
        return Step(op, (a, pick(partners), pick(partners), pick(partners)))
    if op in ("scale", "rsub"):
        return Step(op, (a,), (("c", float(rng.choice([0.5, -1.5, 3.0, 0.25]))),))
    if op == "int_affine":
        return Step(op, (a,), (("c", int(rng.integers(-3, 4))), ("d", int(rng.integers(-3, 4))),
                               ("t", str(rng.choice(INT_AFFINE_TYPES)))))
    if op == "double":
        return Step(op, (a,), (("fn", str(rng.choice(DOUBLE_FUNCTIONS))),))
    if op in _UNARY or op in ("trunc", "half"):
        return Step(op, (a,))
    nd = len(sa)
    if op in ("sum", "max", "min", "mean"):
        return Step(op, (a,), (("axis", _random_axis(rng, nd)), ("keepdim", bool(rng.random() < 0.5))))
    if op in ("softmax", "log_softmax"):
        return Step(op, (a,), (("axis", int(rng.integers(-nd, nd))),)) if nd else None
    if op == "reshape":
        return Step(op, (a,), (("shape", _factor_shape(rng, math.prod(sa))),))
    if op == "permute":
        return Step(op, (a,), (("order", tuple(int(i) for i in rng.permutation(nd))),)) if nd else None
    if op == "expand":
        if 1 not in sa and rng.random() < 0.5:
            return Step(op, (a,), (("shape", (int(rng.integers(2, 4)), *sa)),))
        return Step(op, (a,), (("shape", tuple(int(rng.integers(1, 4)) if d == 1 else d for d in sa)),))
    if op == "flip":
        if not nd:
            return None
        axes = rng.choice(nd, int(rng.integers(1, nd + 1)), replace=False)
        return Step(op, (a,), (("axes", tuple(int(i) for i in axes)),))
    if op == "pad":
        if not nd:
            return None
        widths = tuple((int(rng.integers(0, 3)), int(rng.integers(0, 3))) for _ in sa)
        return Step(op, (a,), (("widths", widths),))
    if op == "shrink":
        ranges = []
        for n in sa:
            begin = int(rng.integers(0, n))
            ranges.append((begin, int(rng.integers(begin + 1, n + 1))))
        return Step(op, (a,), (("ranges", tuple(ranges)),)) if nd else None
    if op == "slice":
        return Step(op, (a,), (("index", _slice_index(rng, sa)),)) if nd else None
    if op == "cat":
        dim = int(rng.integers(-nd, nd)) if nd else 0
        fits = [i for i, s in enumerate(shapes) if len(s) == nd and nd and all(
            x == y for k, (x, y) in enumerate(zip(sa, s)) if k != dim % nd)]
        return Step(op, (a, pick(fits)), (("dim", dim),)) if fits else None
    if op == "matmul":
        fits = [i for i, s in enumerate(shapes) if nd and s and (
            (len(s) == 1 and s[0] == sa[-1]) or (len(s) >= 2 and s[-2] == sa[-1]
                                                 and _broadcastable(sa[:-2], s[:-2])))]
        return Step(op, (a, pick(fits))) if fits else None
    if op == "gram":
        fits = [i for i, s in enumerate(shapes) if nd >= 2 and s == sa]
        return Step(op, (a, pick(fits))) if fits else None
    raise AssertionError(f"no generator for {op}")


def generate(seed: int, ops: Sequence[str] = ALL_OPS, max_steps: int = 6,
             dims: tuple[int, int] = (1, 4), min_rank: int = 0) -> Program:
    """A random valid program over `ops` (every step accepted by the reference), its
    inputs of `min_rank` to 3 dimensions, each of a size in the range `dims`."""
    rng = np.random.default_rng(seed)
    base = tuple(int(d) for d in rng.integers(dims[0], dims[1] + 1,
                                              int(rng.integers(min_rank, 4))))
    shapes = []
    for _ in range(int(rng.integers(1, 4))):
        drop = int(rng.integers(0, len(base) + 1)) if rng.random() < 0.3 else 0
        shapes.append(tuple(1 if rng.random() < 0.25 else d for d in base[drop:]))
    program = Program(tuple(shapes), (), seed)
    value_shapes = list(program.shapes)
    for _ in range(int(rng.integers(1, max_steps + 1))):
        for _attempt in range(20):
            step = _propose(rng, str(rng.choice(list(ops))), value_shapes)
            if step is None:
                continue
            candidate = replace(program, steps=program.steps + (step,))
            try:
                value_shapes.append(candidate.reference().shape)
            except Invalid:
                continue
            program = candidate
            break
    return program


# ------------------------------------------------------------------ shrinking
def _live(program: Program) -> Program:
    """Drop the steps and inputs the result does not depend on, renumbering the rest."""
    first = len(program.shapes)
    n = first + len(program.steps)
    used = {n - 1}
    for i in range(n - 1, first - 1, -1):
        if i in used:
            used.update(program.steps[i - first].args)
    keep = sorted(used)
    number = {old: new for new, old in enumerate(keep)}
    shapes = tuple(s for i, s in enumerate(program.shapes) if i in used)
    steps = tuple(replace(s, args=tuple(number[a] for a in s.args))
                  for i, s in enumerate(program.steps, first) if i in used)
    return replace(program, shapes=shapes, steps=steps)


def _bypass(program: Program, index: int, by: int) -> Program:
    """Step `index` removed, its readers reading value `by` instead."""
    first = len(program.shapes)
    value = first + index
    renumber = lambda a: by if a == value else (a - 1 if a > value else a)  # noqa: E731
    steps = [replace(s, args=tuple(renumber(a) for a in s.args))
             for k, s in enumerate(program.steps) if k != index]
    return replace(program, steps=tuple(steps))


def smaller(program: Program) -> Iterator[Program]:
    """Valid programs one shrinking step smaller than `program`, smallest changes last."""
    first = len(program.shapes)
    seen = set()
    candidates = itertools.chain(
        (_live(replace(program, steps=program.steps[:k])) for k in range(1, len(program.steps))),
        (_live(_bypass(program, k, a)) for k in range(len(program.steps) - 1)
         for a in program.steps[k].args if a < first + k),
        (_live(replace(program, shapes=tuple(
            tuple(1 if (j, ax) == (i, axis) else d for ax, d in enumerate(s))
            for j, s in enumerate(program.shapes))))
         for i, s in enumerate(program.shapes) for axis, d in enumerate(s) if d > 1))
    for candidate in candidates:
        if candidate in seen or not candidate.steps:
            continue
        seen.add(candidate)
        try:
            candidate.reference()
        except Invalid:
            continue
        yield candidate
