"""Fuzzers for what uopc trusts besides programs: threads sharing plans, and files it
reads from disk (compile cache and plan store, deployed artifacts, model files, checkpoints).

Each harness is a module with a `NAME`, `edits(rng)` (a random list of mutations, each a
tuple whose first item names it; the list is what shrinking cuts down) and
`check(work, edits)`, which applies the edits to fixtures it builds once per worker
process under the folder `work`, runs uopc on the result and returns a one-line account
of a correct outcome. A wrong outcome (a wrong result, a wrong kind of error, an error
that does not name the file and field, planted code that ran, a half-loaded state)
raises `Wrong`; any other exception escaping is a traceback, and a dead or stuck worker a
crash or a hang (`sandbox.Sandbox`).

    python -m uopc.testing.fuzz --n 0 --threads 500 --caches 500 --manifests 500 \\
        --model-files 500 --checkpoints 500

A case is (harness, seed, the indices of the edits kept); its reproducer is a Python line
running it again (`Case.run`), shrunk to the fewest edits that fail the same way.
"""

from __future__ import annotations

import contextlib
import importlib
import os
import resource
import tempfile
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import numpy as np

from uopc.testing.sandbox import Sandbox
from uopc.testing.shrinking import shrink

#: option name -> the module of its harness
HARNESSES = {
    "threads": "uopc.testing.harness_threads",
    "caches": "uopc.testing.harness_caches",
    "manifests": "uopc.testing.harness_manifests",
    "model-files": "uopc.testing.harness_model_files",
    "checkpoints": "uopc.testing.harness_checkpoints",
}
#: option name -> what its cases are (for --help)
DESCRIPTIONS = {
    "threads": "threads realizing random programs that share cached plans",
    "caches": "a tampered compile cache and plan store",
    "manifests": "deployed artifacts with mutated manifests and files",
    "model-files": "mutated GGUF, safetensors, index, config.json and torch zip files",
    "checkpoints": "training checkpoints with mutated trees, tensors and bytes",
}
#: CPU time one case may take before it counts as a hang (fixtures are built on the first)
CASE_CPU_LIMIT_S = 120.0
#: address space a case may add to its worker: a header asking for terabytes must be
#: refused, not answered with a MemoryError (or by squeezing the machine)
CASE_MEMORY_BYTES = 4 << 30


class Wrong(Exception):
    """A case whose outcome is wrong (not an error escaping: that is a traceback)."""


def harness(name: str) -> Any:
    return importlib.import_module(HARNESSES[name])


@dataclass(frozen=True)
class Case:
    """One case of harness `name` drawn from `seed`; `keep`: the indices of the edits
    kept (None: all), which shrinking reduces."""

    name: str
    seed: int
    work: str
    keep: tuple[int, ...] | None = None
    #: edits a harness's own `smaller` made (they replace the drawn ones)
    shrunk: tuple[tuple, ...] | None = None

    def edits(self) -> list[tuple]:
        if self.shrunk is not None:
            return list(self.shrunk)
        drawn = harness(self.name).edits(np.random.default_rng(self.seed))
        return drawn if self.keep is None else [drawn[i] for i in self.keep]

    def run(self, tensor_type: type | None = None, gradient: bool = False) -> list[str]:
        """['ok', what happened] or ['wrong', what was wrong] (the sandbox's program
        protocol: `tensor_type` and `gradient` are not used)."""
        _limit_memory()
        work = Path(self.work)
        work.mkdir(parents=True, exist_ok=True)
        edits = self.edits()
        try:
            return ["ok", harness(self.name).check(work, edits)]
        except Wrong as wrong:
            return ["wrong", f"{wrong} (edits {edits})"]

    def reproducer(self) -> str:
        own = getattr(harness(self.name), "reproducer", None)
        if own is not None:
            return own(self.edits())
        return (f"python -c \"from uopc.testing.hostile import Case; "
                f"print(Case({self.name!r}, {self.seed}, '/tmp/uopc-hostile', "
                f"{self.keep!r}).run())\"\n# edits: {self.edits()}\n")


_memory_limited = False


def _limit_memory() -> None:
    """Cap the worker's address space at what it maps now plus CASE_MEMORY_BYTES."""
    global _memory_limited
    if _memory_limited:
        return
    _memory_limited = True
    with open("/proc/self/statm") as f:
        mapped = int(f.read().split()[0]) * os.sysconf("SC_PAGE_SIZE")
    limit = mapped + CASE_MEMORY_BYTES
    _, hard = resource.getrlimit(resource.RLIMIT_AS)
    if hard != resource.RLIM_INFINITY:
        limit = min(limit, hard)
    resource.setrlimit(resource.RLIMIT_AS, (limit, hard))


def case_failure(sandbox: Sandbox, case: Case) -> tuple[str, str] | None:
    """(kind, what) if `case` fails, else None."""
    result = sandbox.run(case)  # type: ignore[arg-type]  # a Case runs like a Program
    if result.kind == "error":
        return "traceback", result.detail
    if result.kind in ("crash", "hang"):
        return result.kind, result.detail
    verdict, what = result.arrays
    return ("mismatch", what) if verdict == "wrong" else None


def smaller(case: Case) -> Iterator[Case]:
    """The case with one of its edits left out, each in turn (or, for a harness with a
    `smaller` of its own, the smaller edit lists it makes)."""
    own = getattr(harness(case.name), "smaller", None)
    if own is not None:
        for edits in own(case.edits()):
            yield replace(case, shrunk=tuple(edits))
        return
    kept = case.keep if case.keep is not None else tuple(range(len(case.edits())))
    if len(kept) > 1:
        for i in range(len(kept)):
            yield replace(case, keep=kept[:i] + kept[i + 1:])


def fuzz_harness(name: str, n: int, seed: int, shrink_budget_s: float,
                 record: Callable[[str, str, str], None], sandbox: Sandbox | None = None,
                 work: str | None = None) -> int:
    """Run `n` cases of harness `name` (seeds `seed`...) in `sandbox` (default: a worker
    of its own) with fixtures under `work` (default: a temporary folder);
    `record(kind, what, reproducer)` gets each failure; returns the number of cases run."""
    if n <= 0:
        return 0
    with contextlib.ExitStack() as stack:
        if work is None:
            work = stack.enter_context(tempfile.TemporaryDirectory(prefix=f"uopc-{name}-"))
        if sandbox is None:
            sandbox = stack.enter_context(Sandbox(CASE_CPU_LIMIT_S))
        for i in range(n):
            case = Case(name, seed + i, work)
            failure = case_failure(sandbox, case)
            if failure is None:
                continue
            kind = failure[0]

            def fails(candidate: Case, kind: str = kind) -> bool:
                return (case_failure(sandbox, candidate) or ("",))[0] == kind

            small = shrink(case, fails, smaller, shrink_budget_s)
            what = (case_failure(sandbox, small) or failure)[1]
            record(kind, f"{name} seed {seed + i}: {what}", small.reproducer())
    return n


# ---------------------------------------------------------------------- shared mutations
#: values a hostile file puts where a count, a size or a name belongs
HOSTILE_VALUES: tuple[Any, ...] = (
    0, -1, 1, 3, 2**31, 2**63, -(2**63), 10**30, 1.5, -0.0, float("nan"), float("inf"), True,
    None, "", "8", "../x", "/etc/passwd", [], [0], [[1]], {}, {"a": 1}, "x" * 300,
)


def json_paths(tree: Any, where: tuple = ()) -> list[tuple]:
    """The paths (tuples of keys and indices) of every node of a JSON tree but the root."""
    found = []
    items = tree.items() if isinstance(tree, dict) else (
        enumerate(tree) if isinstance(tree, list) else ())
    for key, value in items:
        found.append((*where, key))
        found.extend(json_paths(value, (*where, key)))
    return found


def json_edit(rng: np.random.Generator, tree: Any, values: Sequence[Any] = HOSTILE_VALUES
              ) -> tuple:
    """A random edit of a JSON tree: ("set", path, value), ("drop", path) or ("add", path,
    value) (a new key beside the node at `path`)."""
    paths = json_paths(tree)
    path = paths[int(rng.integers(len(paths)))]
    how = rng.random()
    if how < 0.75:
        return ("set", path, values[int(rng.integers(len(values)))])
    if how < 0.9:
        return ("drop", path)
    return ("add", path, values[int(rng.integers(len(values)))])


def apply_json_edit(tree: Any, edit: tuple) -> None:
    """Apply one `json_edit` (a path that an earlier edit removed is skipped)."""
    kind, path = edit[0], edit[1]
    parent = tree
    try:
        for key in path[:-1]:
            parent = parent[key]
        if kind == "set":
            parent[path[-1]] = edit[2]
        elif kind == "drop":
            del parent[path[-1]]
        elif isinstance(parent, dict):
            parent[f"{path[-1]}_extra"] = edit[2]
        elif isinstance(parent, list):
            parent.append(edit[2])
    except (KeyError, IndexError, TypeError):
        pass


def byte_edit(rng: np.random.Generator, size: int) -> tuple:
    """("truncate", at), ("flip", offset, byte) or ("put", offset, bytes) for a file of
    `size` bytes."""
    how = rng.random()
    if how < 0.3:
        return ("truncate", int(rng.integers(0, max(size, 1))))
    if how < 0.7:
        return ("flip", int(rng.integers(0, max(size, 1))), int(rng.integers(256)))
    width = int(rng.choice([1, 4, 8]))
    value = int(rng.choice([0, 1, 255, 2**31, 2**32 - 1, 2**63, 2**64 - 1]))
    return ("put", int(rng.integers(0, max(size, 1))), (value % 2 ** (8 * width)).to_bytes(
        width, "little"))


def apply_byte_edit(data: bytes, edit: tuple) -> bytes:
    if edit[0] == "truncate":
        return data[:edit[1]]
    out = bytearray(data)
    if edit[0] == "flip" and edit[1] < len(out):
        out[edit[1]] = edit[2]
    elif edit[0] == "put":
        out[edit[1]:edit[1] + len(edit[2])] = edit[2]
    return bytes(out)


def expect_error(err: BaseException, kinds: type | tuple[type, ...], *names: str) -> str:
    """The account of an expected refusal: `err` must be one of `kinds` (else it is
    raised again: a traceback) and its message must name every one of `names` (else
    `Wrong`)."""
    if not isinstance(err, kinds):
        raise err
    message = str(err)
    missing = [n for n in names if n not in message]
    if missing:
        raise Wrong(f"{type(err).__name__} does not name {missing}: {message[:300]!r}")
    return f"{type(err).__name__}: {message.splitlines()[0][:200] if message else ''}"
