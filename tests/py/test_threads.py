"""Realizes, captured steps and Program.run from several threads at once (issue 29.1)."""

from __future__ import annotations

import threading

import numpy as np

from uopc import Tensor, reduce_fusion
from uopc.runtime import compile_text


def _in_threads(work, threads: int = 4) -> list[BaseException]:
    errors: list[BaseException] = []

    def run(k: int) -> None:
        try:
            work(k)
        except BaseException as err:  # reported by the test, in the main thread
            errors.append(err)

    pool = [threading.Thread(target=run, args=(k,)) for k in range(threads)]
    for t in pool:
        t.start()
    for t in pool:
        t.join()
    return errors


def test_threads_realizing_one_plan_each_get_their_own_results():
    rng = np.random.default_rng(0)
    w = rng.standard_normal((64, 64)).astype(np.float32)
    (Tensor(rng.standard_normal((64, 64)).astype(np.float32)) @ Tensor(w)).relu().sum(0).numpy()
    wrong: list[int] = []

    def work(k: int) -> None:
        data = np.random.default_rng(k + 1)
        for _ in range(60):
            a = data.standard_normal((64, 64)).astype(np.float32)
            got = (Tensor(a) @ Tensor(w)).relu().sum(0).numpy()
            want = np.maximum(a.astype(np.float64) @ w, 0).sum(0)
            if not np.allclose(got, want, rtol=1e-3, atol=1e-3):
                wrong.append(k)

    assert not _in_threads(work)
    assert not wrong, f"{len(wrong)} of 240 concurrent realizes gave wrong results"


def test_threads_running_one_program_with_an_arena():
    # without reduce fusion, the relu of the product is a temporary in the arena (fused by
    # rule, it never leaves its kernel)
    with reduce_fusion(False):
        program = compile_text("""
        func.func @main(%a: tensor<64x64xf32>, %w: tensor<64x64xf32>) -> tensor<64xf32> {
          %p = uop.reshape %a : tensor<64x64xf32> -> tensor<64x64x1xf32>
          %pe = uop.expand %p : tensor<64x64x1xf32> -> tensor<64x64x64xf32>
          %q = uop.reshape %w : tensor<64x64xf32> -> tensor<1x64x64xf32>
          %qe = uop.expand %q : tensor<1x64x64xf32> -> tensor<64x64x64xf32>
          %m = uop.mul %pe, %qe : tensor<64x64x64xf32>
          %s = uop.reduce add %m axes [1] : tensor<64x64x64xf32> -> tensor<64x64xf32>
          %z = uop.const dense<0.0> : tensor<64x64xf32>
          %r = uop.max %s, %z : tensor<64x64xf32>
          %t = uop.reduce add %r axes [0] : tensor<64x64xf32> -> tensor<64xf32>
          func.return %t : tensor<64xf32>
        }""")
    assert program.arena_bytes > 0  # the relu of the product is a temporary
    w = np.random.default_rng(0).standard_normal((64, 64)).astype(np.float32)
    wrong: list[int] = []

    def work(k: int) -> None:
        data = np.random.default_rng(k + 1)
        out = np.empty(64, np.float32)
        for _ in range(200):
            a = data.standard_normal((64, 64)).astype(np.float32)
            program.run([out], [a, w])
            if not np.allclose(out, np.maximum(a.astype(np.float64) @ w, 0).sum(0),
                               rtol=1e-3, atol=1e-3):
                wrong.append(k)

    assert not _in_threads(work)
    assert not wrong, f"{len(wrong)} of 800 concurrent runs gave wrong results"


def test_threads_compiling_new_plans_at_once():
    # each thread meets graph structures nobody compiled yet: one engine, misses at once
    wrong: list[int] = []

    def work(k: int) -> None:
        data = np.random.default_rng(k)
        for n in range(3):
            a = data.standard_normal((5 + k, 7 + n)).astype(np.float32)
            got = (Tensor(a).exp() * (k + 1.5)).sum(1).numpy()
            if not np.allclose(got, (np.exp(a.astype(np.float64)) * (k + 1.5)).sum(1),
                               rtol=1e-4):
                wrong.append(k)

    errors = _in_threads(work)
    assert not errors, errors
    assert not wrong
