"""`python -m uopc.testing.fuzz`: random Tensor programs and malformed CLI inputs.

    python -m uopc.testing.fuzz --n 10000 [--cli 1000] [--seed S] [--ops add,mul,...]
        [--threads N] [--caches N] [--manifests N] [--model-files N] [--checkpoints N]

Program i (seed S + i) is a random Tensor program (`programs.py`) run on uopc in a worker
process and compared with its float64 reference within the bound f32 rounding allows; every
`GRADIENT_EVERY`-th program uses only differentiable operations and checks the gradients of
a weighted sum of its result against central finite differences of the reference. Then
`--cli` mutated inputs (`mutations.py`) go through `uopc-opt` / `uopc-run`. The last line
is the summary, `N programs, M mismatches, T tracebacks, C crashes, H hangs`; before it, each
failure is printed with a reproducer shrunk while it still fails the same way (a Python
script for Tensor programs, the input text and command line for the CLIs). The exit status
is 1 when anything failed.

The other flags run the harnesses of `hostile.py`, N cases each: threads realizing random
programs that share cached plans (`--threads`), a tampered compile cache and plan store
(`--caches`), mutated deploy manifests (`--manifests`), model files and configs
(`--model-files`) and checkpoints (`--checkpoints`); each case is one more program in the
summary.
"""

from __future__ import annotations

import argparse
import itertools
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from functools import partial
from typing import TypeVar

import numpy as np

from uopc.testing import hostile, mutations
from uopc.testing.programs import ALL_OPS, SMOOTH_OPS, Program, generate, smaller
from uopc.testing.sandbox import Sandbox
from uopc.testing.shrinking import shrink

GRADIENT_EVERY = 4
PROGRAM_CPU_LIMIT_S = 60.0  # CPU time a program may take before it counts as a hang
# Gradients are computed in f32 through a chain of ops (the finite differences in float64
# are good to about 1e-9): agreement to this fraction of the largest gradient entry (plus
# this fraction of the entry itself), a few thousand f32 roundings, is what f32 allows.
GRADIENT_TOLERANCE = 2e-4

T = TypeVar("T")


@dataclass(frozen=True)
class Finding:
    """One failed case: its class, what went wrong and a reproducer."""

    kind: str  # mismatch, traceback, crash or hang
    what: str
    reproducer: str


@dataclass
class Summary:
    programs: int = 0
    gradients: int = 0
    cli: int = 0
    #: cases run by each harness of `hostile.py`
    cases: dict[str, int] = field(default_factory=dict)
    findings: list[Finding] = field(default_factory=list)

    def count(self, kind: str) -> int:
        return sum(f.kind == kind for f in self.findings)

    def line(self) -> str:
        total = self.programs + self.cli + sum(self.cases.values())
        harnesses = "".join(f", {n} {name} cases" for name, n in self.cases.items())
        return (f"{total} programs, {self.count('mismatch')} mismatches, "
                f"{self.count('traceback')} tracebacks, {self.count('crash')} crashes, "
                f"{self.count('hang')} hangs ({self.programs} Tensor programs of which "
                f"{self.gradients} gradient checks, {self.cli} CLI inputs{harnesses})")


def program_failure(sandbox: Sandbox, program: Program, gradient: bool) -> tuple[str, str] | None:
    """(kind, what) if uopc disagrees with the reference on `program`, else None."""
    result = sandbox.run(program, gradient)
    if result.kind == "error":
        return "traceback", result.detail
    if result.kind in ("crash", "hang"):
        return result.kind, result.detail
    if gradient:
        for k, (got, want) in enumerate(zip(result.arrays, program.gradient_reference())):
            scale = float(np.abs(want).max(initial=1.0))
            excess = np.abs(got - want) - GRADIENT_TOLERANCE * (scale + np.abs(want))
            if got.shape != want.shape or np.any(excess > 0):
                return "mismatch", _worst(f"gradient of input v{k}", got, want)
        return None
    bounded = program.reference()
    (got,) = result.arrays
    if got.shape != bounded.shape:
        return "mismatch", f"result shape {got.shape}, expected {bounded.shape}"
    if np.any(~(np.abs(got - bounded.value) <= 2 * bounded.err + 1e-30)):
        return "mismatch", _worst("result", got, bounded.value, 2 * bounded.err)
    return None


def _fails_as(sandbox: Sandbox, gradient: bool, kind: str, program: Program) -> bool:
    """Whether `program` still fails with this kind of failure (the goal when shrinking)."""
    return (program_failure(sandbox, program, gradient) or ("",))[0] == kind


def _mutant_fails_as(kind: str, mutant: mutations.Mutant) -> bool:
    """Whether the command line `mutant` still fails with this kind of failure."""
    return mutations.check(mutant).kind == kind


def _worst(what: str, got: np.ndarray, want: np.ndarray, bound: np.ndarray | None = None) -> str:
    if got.shape != want.shape:
        return f"{what}: shape {got.shape}, expected {want.shape}"
    diff = np.abs(got.astype(np.float64) - want)
    at = np.unravel_index(int(np.nanargmax(np.where(np.isnan(diff), np.inf, diff))), got.shape)
    limit = "" if bound is None else f" (allowed {float(bound[at]):.3g})"
    return f"{what}[{tuple(int(i) for i in at)}] = {got[at]!r}, expected {want[at]!r}{limit}"


def fuzz_programs(n: int, seed: int, ops: Sequence[str], shrink_budget_s: float,
                  summary: Summary, log: Callable[[str], None]) -> None:
    smooth = [op for op in ops if op in SMOOTH_OPS]
    with Sandbox(PROGRAM_CPU_LIMIT_S) as sandbox:
        for i in range(n):
            gradient = bool(smooth) and i % GRADIENT_EVERY == GRADIENT_EVERY - 1
            program = generate(seed + i, smooth if gradient else ops)
            summary.programs += 1
            summary.gradients += gradient
            failure = program_failure(sandbox, program, gradient)
            if failure is None:
                continue
            kind = failure[0]
            small = shrink(program, partial(_fails_as, sandbox, gradient, kind), smaller, shrink_budget_s)
            what = (program_failure(sandbox, small, gradient) or failure)[1]
            label = "gradient program" if gradient else "program"
            finding = Finding(kind, f"{label} seed {seed + i}: {what}", small.source(gradient))
            summary.findings.append(finding)
            log(report(finding))


def fuzz_cli(n: int, seed: int, shrink_budget_s: float, summary: Summary,
             log: Callable[[str], None]) -> None:
    for mutant in itertools.islice(mutations.mutants(seed), n):
        summary.cli += 1
        outcome = mutations.check(mutant)
        if outcome.kind == "ok":
            continue
        small = shrink(mutant, partial(_mutant_fails_as, outcome.kind), mutations.smaller,
                       shrink_budget_s)
        finding = Finding(outcome.kind, f"{mutant.origin}: {mutations.check(small).detail}",
                          cli_reproducer(small))
        summary.findings.append(finding)
        log(report(finding))


def fuzz_hostile(name: str, n: int, seed: int, shrink_budget_s: float, summary: Summary,
                 log: Callable[[str], None], sandbox: Sandbox | None = None,
                 work: str | None = None) -> None:
    """`n` cases of the `hostile.py` harness `name` (a key of `hostile.HARNESSES`), in
    `sandbox` with fixtures under `work` if given (see `hostile.fuzz_harness`)."""

    def record(kind: str, what: str, reproducer: str) -> None:
        finding = Finding(kind, what, reproducer)
        summary.findings.append(finding)
        log(report(finding))

    ran = hostile.fuzz_harness(name, n, seed, shrink_budget_s, record, sandbox, work)
    if ran:
        summary.cases[name] = summary.cases.get(name, 0) + ran


def cli_reproducer(mutant: mutations.Mutant) -> str:
    """The input (as text, or as a Python line writing its bytes) and the command."""
    name = f"input{mutant.suffix}"
    command = " ".join(name if a == "FILE" else a for a in mutant.command)
    try:
        text = mutant.data.decode("utf-8")
    except UnicodeDecodeError:
        return f"python -c \"open('{name}', 'wb').write({mutant.data!r})\"\n{command}\n"
    return f"cat > {name} <<'EOF'\n{text}\nEOF\n{command}\n"


def report(finding: Finding) -> str:
    return f"FAIL {finding.kind}: {finding.what}\n--- reproducer ---\n{finding.reproducer}---"


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="python -m uopc.testing.fuzz", description=__doc__.split("\n")[0])
    p.add_argument("--n", type=int, default=1000, help="random Tensor programs to run")
    p.add_argument("--cli", type=int, default=0, help="mutated uopc-opt/uopc-run inputs to run")
    p.add_argument("--seed", type=int, default=0, help="seed of the first program")
    p.add_argument("--ops", default=",".join(ALL_OPS),
                   help="comma-separated operation kinds (default: all)")
    for name, what in hostile.DESCRIPTIONS.items():
        p.add_argument(f"--{name}", type=int, default=0, metavar="N", help=f"cases: {what}")
    p.add_argument("--shrink-budget", type=float, default=120.0, metavar="SECONDS",
                   help="time spent shrinking each failure")
    return p


def main(argv: Sequence[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    ops = [op for op in args.ops.split(",") if op]
    unknown = sorted(set(ops) - set(ALL_OPS))
    if unknown:
        print(f"fuzz: error: unknown operation kinds {', '.join(unknown)}; "
              f"known: {', '.join(ALL_OPS)}", file=sys.stderr)
        return 1
    summary = Summary()
    log = lambda text: print(text, flush=True)  # noqa: E731
    fuzz_programs(args.n, args.seed, ops, args.shrink_budget, summary, log)
    fuzz_cli(args.cli, args.seed, args.shrink_budget, summary, log)
    for name in hostile.HARNESSES:
        fuzz_hostile(name, getattr(args, name.replace("-", "_")), args.seed,
                     args.shrink_budget, summary, log)
    print(summary.line())
    return 1 if summary.findings else 0


if __name__ == "__main__":
    sys.exit(main())
