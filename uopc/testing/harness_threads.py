"""Concurrent realizes: several threads run one random Tensor program (`programs.py`) on
different data of the same shapes, so they share its cached plan (and its arena), three
ways at once: through the Tensor API (a realize), through a `uopc.capture`d step
replaying the plan, and through the plan's `Program.run` itself. Each result must equal,
bit for bit, what the same data gave when run alone in one thread first; a thread that
gets another's result, or a mix of two, is a mismatch (issue 29.1: a plan's runs
shared its arena unserialized). A failing program is shrunk as the program
fuzzer shrinks it; a program uopc cannot capture is still run the other two ways."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path
from typing import Any

import numpy as np

from uopc.testing.hostile import Wrong
from uopc.testing.programs import ALL_OPS, Program, _live, generate
from uopc.testing.programs import smaller as smaller_programs

NAME = "threads"
THREADS = 4
ROUNDS = 20
VARIANTS = 4  # data sets of the same shapes
#: the inputs' sizes per dimension (2 or 3 of them): kernels that run long enough for
#: the threads' runs to overlap (the program fuzzer's 1-4 make runs of a microsecond)
DIMS = (8, 40)
#: half the programs draw from these: reductions and matmuls whose results feed further
#: kernels, so that the plan has temporaries in its arena (the memory runs share)
STAGED_OPS = ("matmul", "gram", "sum", "max", "mean", "softmax", "log_softmax", "relu", "exp",
              "add", "mul", "where", "cat")


def edits(rng: np.random.Generator) -> list[tuple]:
    """One edit: the program (seeded from `rng`)."""
    ops = ALL_OPS if rng.random() < 0.5 else STAGED_OPS
    with np.errstate(all="ignore"):  # the reference's bounds of a step it then refuses
        program = generate(int(rng.integers(2**31)), ops, dims=DIMS, min_rank=2)
    return [("program", program)]


def smaller(edit_list: list[tuple]) -> Iterator[list[tuple]]:
    """The program's own smaller forms (`programs.smaller`)."""
    for program in smaller_programs(edit_list[0][1]):
        yield [("program", program)]


def reproducer(edit_list: list[tuple]) -> str:
    program = edit_list[0][1]
    return (f"# run this program's realize, Program.run and captured step from "
            f"{THREADS} threads at once (uopc.testing.harness_threads.check)\n"
            f"{program.source()}")


def _same(a: np.ndarray, b: np.ndarray) -> bool:
    return a.shape == b.shape and a.dtype == b.dtype and bool(
        np.array_equal(a, b, equal_nan=a.dtype.kind in "fc"))


def check(work: Path, edit_list: list[tuple]) -> str:
    from uopc.frontend.capture import capture
    from uopc.frontend.tensor import Tensor
    from uopc.runtime import engine

    program: Program = _live(edit_list[0][1])  # capture needs every input used
    if not program.steps:
        return "no steps left"
    variants = [replace(program, seed=program.seed * VARIANTS + k + 1) for k in range(VARIANTS)]
    inputs = [v.inputs() for v in variants]

    def realize(k: int) -> np.ndarray:
        return np.asarray(program.apply(Tensor, [Tensor(x) for x in inputs[k]]).numpy())

    # each variant alone, in this thread: the references, and each one's plan and inputs
    expected: list[np.ndarray] = []
    plans: list[tuple[Any, list[np.ndarray]] | None] = []
    for k in range(VARIANTS):
        expected.append(realize(k))
        last = engine.default_engine().last
        plan_run = None
        if last is not None:
            plan, arrays = last
            outs = plan.run(arrays)
            if len(outs) == 1 and _same(np.asarray(outs[0]), expected[k]):
                plan_run = (plan, arrays)  # the realize ran this plan (not a view alone)
        plans.append(plan_run)

    # the step realizes its result itself: what capture records are realizes
    step = capture(lambda *xs: program.apply(Tensor, [Tensor(x) for x in xs]).realize())
    captured = True
    try:
        for k in (0, 1):  # the two recording calls, alone
            if not _same(np.asarray(step(*inputs[k]).numpy()), expected[k]):
                raise Wrong(f"the captured step's recording call {k} differs from a realize")
    except Wrong:
        raise
    except Exception:  # noqa: BLE001  (what capture refuses is not this harness's concern)
        captured = False

    wrong: list[str] = []
    errors: list[BaseException] = []

    def work_on(t: int) -> None:
        try:
            for r in range(ROUNDS):
                k = (t + r) % VARIANTS
                got = {"realize": realize(k)}
                ran = plans[k]
                if ran is not None:
                    plan, arrays = ran
                    got["Program.run"] = np.asarray(plan.run(arrays)[0])
                if captured:
                    got["capture"] = np.asarray(step(*inputs[k]).numpy())
                for how, value in got.items():
                    if not _same(value, expected[k]):
                        wrong.append(f"thread {t} round {r} ({how}) on data {k}")
        except BaseException as err:  # re-raised in the main thread: a traceback
            errors.append(err)

    pool = [threading.Thread(target=work_on, args=(t,)) for t in range(THREADS)]
    for thread in pool:
        thread.start()
    for thread in pool:
        thread.join()
    if errors:
        raise errors[0]
    if wrong:
        raise Wrong(f"{len(wrong)} concurrent results differ from the same data run alone, "
                    f"e.g. {wrong[0]}")
    ways = ["realize", *(["Program.run"] if any(plans) else []),
            *(["capture"] if captured else [])]
    return f"{THREADS} threads x {ROUNDS} rounds right ({', '.join(ways)})"
