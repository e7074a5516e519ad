"""Data-parallel training over MPI (uopc.distributed).

Runs of two ranks on this machine (`mpiexec -n 2`, loopback/shared memory) check that a
2-rank run gives the losses of a 1-process run on the same global batches, up to the
float reassociation of splitting the batch, that the ranks' parameters stay bit-identical
(the hash check), that each rank compiles its two plans once, and that a rank that dies,
stalls or raises ends the job with a clear error instead of a hang. They are skipped,
saying why, without mpi4py or an MPI launcher (`pip install -e '.[test]'` brings both);
`UOPC_REQUIRE_MPI=1` (set by .ci/run) turns the skip into a failure.

The MPI side of these tests is this file run as a script: `python test_distributed.py
MODE OUT [TIMEOUT]`, one process per rank (see `worker`).
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = ROOT / "examples"

# the model and data of the worker runs: small, so that two ranks compile in seconds
SIZES, GLOBAL_BATCH, STEPS, LR = (20, 16, 4), 32, 8, 0.5
# f32 sums of the 32-sample batch reassociated (two half-batch means averaged, gradients
# summed across ranks): about batch * eps = 32 * 6e-8 = 2e-6 relative per reduction,
# compounding over the 8 steps' parameter updates
LOSS_RTOL, PARAM_ATOL = 1e-5, 1e-5
# the collectives' timeout of a stall job until its stall: time for both ranks to compile
STARTUP_TIMEOUT = 120.0


def launcher() -> str | None:
    """The MPI launcher: the one installed beside this Python (the mpich wheel), else PATH."""
    for name in ("mpiexec", "mpirun"):
        beside = Path(sys.executable).parent / name
        if beside.exists():
            return str(beside)
    return shutil.which("mpiexec") or shutil.which("mpirun")


def need_mpi() -> str:
    """The launcher, or skip (fail under UOPC_REQUIRE_MPI=1) saying what is missing."""
    try:
        import mpi4py  # noqa: F401
    except ImportError:
        missing = "mpi4py is not installed (pip install -e '.[test]' brings it)"
    else:
        found = launcher()
        if found is not None:
            return found
        missing = "no MPI launcher (mpiexec) on PATH or beside python (the mpich wheel has one)"
    if os.environ.get("UOPC_REQUIRE_MPI") == "1":
        pytest.fail(f"UOPC_REQUIRE_MPI=1 but {missing}")
    pytest.skip(missing)


def run_ranks(ranks: int, args: list[str], timeout: float = 240) -> tuple[int, str, float]:
    """(exit status, stdout + stderr, seconds) of `args` run on `ranks` ranks. The job
    runs in its own session so that a hung one is killed whole."""
    command = [need_mpi(), "-n", str(ranks), sys.executable, *args]
    started = time.monotonic()
    process = subprocess.Popen(command, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                               stderr=subprocess.STDOUT, text=True, start_new_session=True,
                               cwd=ROOT)
    try:
        out, _ = process.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        os.killpg(process.pid, signal.SIGKILL)
        out, _ = process.communicate()
        pytest.fail(f"{' '.join(command)} hung for {timeout} s:\n{out}")
    seconds = time.monotonic() - started
    # the whole output, every rank's traceback in full, in the report of a failed test
    # ("Captured stdout"; pytest cuts an assertion's message to a few lines)
    print(f"---- {' '.join(command)}: exit status {process.returncode} after "
          f"{seconds:.1f} s ----\n{out}---- end of the job's output ----", flush=True)
    return process.returncode, out, seconds


def worker_job(ranks: int, mode: str, out: Path, timeout: float = 120) -> tuple[int, str, float]:
    return run_ranks(ranks, [__file__, mode, str(out), str(timeout)])


# ---------------------------------------------------------------------- the training


def batches(steps: int):
    """The global batches of the worker runs: (inputs, labels), the same in every process."""
    rng = np.random.default_rng(1)
    for _ in range(steps):
        x = rng.standard_normal((GLOBAL_BATCH, SIZES[0]), dtype=np.float32)
        yield x, x[:, :SIZES[-1]].argmax(1).astype(np.int32)  # learnable labels


def make_model(seed: int) -> list:
    from uopc import manual_seed, nn

    manual_seed(seed)
    return [nn.Linear(a, b) for a, b in zip(SIZES, SIZES[1:])]


def train_steps(model: list, opt, rank: int, world: int, after_step=None) -> list[float]:
    """SGD with momentum on each rank's shard of every global batch: the gradient's scale
    matters to SGD, so an average that forgot to divide by the world size shows."""
    from uopc import Tensor

    losses = []
    for step, (x, y) in enumerate(batches(STEPS), 1):
        opt.zero_grad()
        hidden = model[0](Tensor(x[rank::world])).relu()
        loss = model[1](hidden).cross_entropy(Tensor(y[rank::world]))
        loss.backward()
        opt.step(loss)
        losses.append(float(loss.item()))
        if after_step is not None:
            after_step(step)
    return losses


def reference_run() -> tuple[list[float], list[np.ndarray]]:
    """The 1-process run: the whole global batch, the plain optimizer."""
    from uopc import nn
    from uopc.frontend.optim import SGD

    model = make_model(0)
    losses = train_steps(model, SGD(nn.parameters(model), lr=LR, momentum=0.9), 0, 1)
    return losses, [p.numpy() for p in nn.parameters(model)]


def worker(mode: str, out: Path, timeout: float) -> None:
    """One rank of a worker job. Every rank starts from its own initialization (seed =
    rank): the wrapper must broadcast rank 0's. Modes:
      train     train STEPS steps in buckets of ~64 floats, checking parameter hashes
                after every step; after step 2 building any xDSL IR is an error; each rank
                saves its losses, parameters and compile count to OUT/rank<r>.npz
      die       rank 1 kills itself (SIGKILL) in step 3
      stall     rank 1 stops itself (SIGSTOP) in step 3: rank 0 must time out
      diverge   rank 1 nudges a parameter after step 2: the hash check must catch it
      raise     rank 1 raises an uncaught ValueError in step 3
      collectives  all_reduce (each op), broadcast and barrier on small arrays, saved"""
    from uopc import Tensor, nn
    from uopc import distributed as dist
    from uopc.frontend.optim import SGD
    from uopc.runtime import engine

    # stall: the short timeout only from step 4 on, where the test waits for it. Before,
    # the ranks compile, and under load one reaches a collective seconds after the
    # other (a 3 s timeout from the start failed about 2 runs in 17: "the gradient
    # allreduce of step 1 did not complete within 3 s")
    dist.init_process_group(timeout=STARTUP_TIMEOUT if mode == "stall" else timeout)
    rank, world = dist.get_rank(), dist.get_world_size()
    if mode == "collectives":
        mine = np.array([1.0, -2.0, 3.5], np.float32) * (rank + 1)
        found = {op: dist.all_reduce(mine.copy(), op) for op in ("sum", "avg", "max", "min")}
        found["broadcast"] = dist.broadcast(mine.copy(), src=1)
        # 64-bit values travel as themselves: nothing narrowed to f32 on the way
        found["sum_f64"] = dist.all_reduce(np.array([0.1, 2.0**60]) * (rank + 1))
        found["sum_i64"] = dist.all_reduce(np.array([2**40 + 1, -3]) * (rank + 1))
        found["max_i64"] = dist.all_reduce(np.array([2**62, -(2**62)]) * (1 - 2 * rank), "max")
        dist.barrier()
        np.savez(out / f"rank{rank}.npz", **found)
        return
    model = make_model(rank)
    opt = dist.DistributedOptimizer(SGD(nn.parameters(model), lr=LR, momentum=0.9),
                                    bucket_mb=64 * 4 / 2**20, check_every=1)
    compiled = {}

    def after_step(step: int) -> None:
        if step == 2:
            compiled["after 2 steps"] = engine.default_engine().compiles

            def no_ir(*args, **kwargs):
                raise AssertionError("a steady-state step built xDSL IR")
            engine.build_module = no_ir
            if mode == "diverge" and rank == 1:
                p = opt.params[0]
                p.assign(Tensor(p.numpy() + np.float32(1e-3)))
        if step == 3 and rank == 0 and mode == "stall":
            dist.init_process_group(timeout=timeout)  # a second call sets the timeout
        if step == 3 and rank == 1:
            if mode == "die":
                os.kill(os.getpid(), signal.SIGKILL)
            if mode == "stall":
                os.kill(os.getpid(), signal.SIGSTOP)
            if mode == "raise":
                raise ValueError("rank 1 failed on purpose")

    losses = train_steps(model, opt, rank, world, after_step)
    np.savez(out / f"rank{rank}.npz", losses=np.array(losses),
             compiles=np.array([compiled["after 2 steps"], engine.default_engine().compiles]),
             buckets=np.array(len(opt.buckets)),
             **{f"p{i}": p.numpy() for i, p in enumerate(opt.params)})
    print(f"rank {rank} finished", flush=True)


# ---------------------------------------------------------------------- 2 ranks


def test_two_ranks_give_the_losses_of_one_process_and_identical_parameters(tmp_path):
    rc, out, _ = worker_job(2, "train", tmp_path)
    assert rc == 0, out
    ranks = [np.load(tmp_path / f"rank{r}.npz") for r in range(2)]
    losses, params = reference_run()
    for r, saved in enumerate(ranks):
        assert int(saved["buckets"]) == 3  # 320 | 16 + 64 | 4 floats (and the loss)
        np.testing.assert_allclose(saved["losses"], losses, rtol=LOSS_RTOL, err_msg=f"rank {r}")
        for i, p in enumerate(params):
            np.testing.assert_allclose(saved[f"p{i}"], p, atol=PARAM_ATOL,
                                       err_msg=f"rank {r} parameter {i}")
        # the two plans (gradients, update) compiled in the first step, never again
        assert saved["compiles"].tolist() == [2, 2], f"rank {r}"
    # both ranks report the global batch's loss and hold bit-identical parameters
    assert np.array_equal(ranks[0]["losses"], ranks[1]["losses"])
    for i in range(len(params)):
        assert np.array_equal(ranks[0][f"p{i}"], ranks[1][f"p{i}"]), i
    assert losses[-1] < losses[0] - 0.2, "the reference run did not learn"


def test_a_rank_killed_mid_step_ends_the_job(tmp_path):
    rc, out, seconds = worker_job(2, "die", tmp_path)
    assert rc != 0 and "finished" not in out, out
    assert seconds < 120, f"the job took {seconds:.0f} s to end"
    from mpi4py import MPI

    if MPI.Get_library_version().startswith("MPICH"):  # the launcher names the dead rank
        assert "BAD TERMINATION" in out and "EXIT CODE: 9" in out, out


def test_a_stalled_rank_makes_the_others_exit_after_the_timeout(tmp_path):
    rc, out, seconds = worker_job(2, "stall", tmp_path, timeout=3)
    assert rc != 0 and "finished" not in out, out
    assert "rank 0 of 2: the gradient allreduce of step 4 (3 buckets) did not complete " \
           "within 3 s: another rank has died or stalled" in out, out
    assert "rank 0 of 2 stopped on an uncaught DistributedError; aborting the MPI job" in out
    assert seconds < 120, f"the job took {seconds:.0f} s to end"


def test_an_uncaught_error_on_one_rank_aborts_the_others_at_once(tmp_path):
    rc, out, seconds = worker_job(2, "raise", tmp_path, timeout=300)
    assert rc != 0 and "finished" not in out, out
    assert "ValueError: rank 1 failed on purpose" in out, out
    assert "rank 1 of 2 stopped on an uncaught ValueError; aborting the MPI job" in out, out
    assert seconds < 120, "rank 0 waited for its timeout instead of being aborted"


def test_the_hash_check_catches_ranks_whose_parameters_drift_apart(tmp_path):
    rc, out, _ = worker_job(2, "diverge", tmp_path)
    assert rc != 0 and "finished" not in out, out
    assert "parameters differ across ranks after step 3: parameter 0 ((20, 16) f32) " \
           "hashes rank 0: " in out, out


def test_collectives_combine_the_ranks_arrays(tmp_path):
    rc, out, _ = worker_job(2, "collectives", tmp_path)
    assert rc == 0, out
    base = np.array([1.0, -2.0, 3.5], np.float32)
    expected = {"sum": base * 3, "avg": base * 1.5, "max": np.maximum(base, base * 2),
                "min": np.minimum(base, base * 2), "broadcast": base * 2,
                "sum_f64": np.array([0.1 + 0.2, 3 * 2.0**60]),
                "sum_i64": np.array([3 * (2**40 + 1), -9]),
                "max_i64": np.array([2**62, 2**62])}
    for r in range(2):
        saved = np.load(tmp_path / f"rank{r}.npz")
        for name, value in expected.items():
            np.testing.assert_array_equal(saved[name], value, err_msg=f"rank {r} {name}")
            assert saved[name].dtype == value.dtype, (r, name)


# ---------------------------------------------------------------------- the examples


def checkpoint_losses_and_model(path: Path) -> tuple[np.ndarray, dict[str, np.ndarray]]:
    import uopc

    state = uopc.load(path)
    return np.array(state["losses"]), state["model"]


def test_mnist_example_on_two_ranks_matches_one_process(tmp_path):
    from test_datasets import fake_mnist, run_example

    fake_mnist(tmp_path)
    run = ["examples/mnist_mlp.py", "--data", str(tmp_path), "--steps", "12", "--batch", "64",
           "--log-every", "4", "--checkpoint-every", "6", "--distributed", "--checkpoint"]
    rc, out, _ = run_ranks(2, [*run, str(tmp_path / "two")])
    assert rc == 0, out
    assert out.count("MNIST: 512 training") == 1 and out.count("test accuracy") == 1, out
    assert "2 ranks: gradient allreduce" in out
    assert run_example("mnist_mlp", [*run[1:-2], "--checkpoint", str(tmp_path / "one")]) == 0
    one, one_model = checkpoint_losses_and_model(tmp_path / "one")
    two, two_model = checkpoint_losses_and_model(tmp_path / "two")
    assert len(two) == 12
    np.testing.assert_allclose(two, one, rtol=LOSS_RTOL)
    for name, value in one_model.items():
        np.testing.assert_allclose(two_model[name], value, atol=PARAM_ATOL, err_msg=name)


def test_gpt_example_on_two_ranks_matches_one_process(tmp_path):
    from test_datasets import run_example

    corpus = tmp_path / "abc.txt"
    corpus.write_text("abcdefgh " * 200)
    run = ["examples/gpt.py", str(corpus), "--steps", "6", "--context", "8", "--dim", "16",
           "--heads", "2", "--layers", "1", "--batch", "4", "--sample", "5",
           "--log-every", "3", "--checkpoint"]
    rc, out, _ = run_ranks(2, [*run, str(tmp_path / "two"), "--distributed"])
    assert rc == 0, out
    assert out.count("---- sample ----") == 1 and out.count("vocabulary 9") == 1, out
    assert run_example("gpt", [*run[1:], str(tmp_path / "one")]) == 0
    one, _ = checkpoint_losses_and_model(tmp_path / "one")
    two, _ = checkpoint_losses_and_model(tmp_path / "two")
    # losses only: the key bias of attention has an exactly-zero true gradient (softmax
    # ignores a shift shared by all keys), so AdamW turns its rounding noise into steps
    # of about lr whose sign differs between the runs
    assert len(two) == 6
    np.testing.assert_allclose(two, one, rtol=LOSS_RTOL)


# ---------------------------------------------------------------------- in one process


def test_sampler_shards_partition_each_epoch_like_one_process():
    from uopc.frontend.distributed import DistributedSampler

    one = DistributedSampler(10, num_replicas=1, rank=0, seed=3)
    shards = [DistributedSampler(10, num_replicas=2, rank=r, seed=3) for r in range(2)]
    order = one.indices()
    assert sorted(order.tolist()) == list(range(10))
    assert np.array_equal(order, np.random.default_rng((3, 0)).permutation(10))
    # block b of a global batch of 4 is what the ranks' local batches b of 2 hold together
    for b in range(2):
        together = np.concatenate([s.indices()[2 * b:2 * b + 2] for s in shards])
        assert sorted(together.tolist()) == sorted(order[4 * b:4 * b + 4].tolist())
    for s in (one, *shards):
        s.set_epoch(1)
    assert not np.array_equal(one.indices(), order)
    assert sorted(np.concatenate([s.indices() for s in shards]).tolist()) == list(range(10))
    assert [len(s) for s in shards] == [5, 5] and list(shards[0]) == shards[0].indices().tolist()


def test_sampler_pads_or_drops_an_uneven_tail():
    from uopc.frontend.distributed import DistributedSampler

    padded = [DistributedSampler(7, 3, r, shuffle=False) for r in range(3)]
    assert [s.indices().tolist() for s in padded] == [[0, 3, 6], [1, 4, 0], [2, 5, 1]]
    dropped = [DistributedSampler(7, 3, r, shuffle=False, drop_last=True) for r in range(3)]
    assert [s.indices().tolist() for s in dropped] == [[0, 3], [1, 4], [2, 5]]
    with pytest.raises(ValueError, match="rank 3 is not in 0..2"):
        DistributedSampler(7, 3, 3)


def test_use_before_init_and_a_missing_mpi4py_say_what_to_do(monkeypatch):
    from uopc import Tensor
    from uopc import distributed as dist
    from uopc.frontend.optim import SGD

    monkeypatch.setattr(dist, "_GROUP", None)
    with pytest.raises(dist.DistributedError, match="get_rank: call uopc.distributed."
                                                    "init_process_group\\(\\) first"):
        dist.get_rank()
    assert dist.is_main_process() and not dist.is_initialized()
    with pytest.raises(dist.DistributedError, match="DistributedOptimizer: call"):
        dist.DistributedOptimizer(SGD([Tensor(np.zeros(2, np.float32))]))
    monkeypatch.setitem(sys.modules, "mpi4py", None)  # import mpi4py now fails
    with pytest.raises(dist.DistributedError, match="needs mpi4py and an MPI library: "
                                                    "pip install"):
        dist.init_process_group()
    assert not dist.is_initialized()


def test_data_parallel_splits_the_global_batch_evenly_or_says_why(monkeypatch):
    from uopc import distributed as dist

    assert dist.data_parallel(False, 63) == (0, 1, 63)
    monkeypatch.setattr(dist, "_GROUP", dist._Group(None, None, 1, 2, 1.0))  # rank 1 of 2
    assert dist.data_parallel(True, 64) == (1, 2, 32)
    with pytest.raises(dist.DistributedError, match="a global batch of 63 does not split "
                                                    "evenly over 2 ranks"):
        dist.data_parallel(True, 63)


if __name__ == "__main__":
    worker(sys.argv[1], Path(sys.argv[2]), float(sys.argv[3]))


def test_buckets_keep_f64_gradients_in_f64_and_split_where_the_wire_type_changes():
    from uopc.frontend.distributed import _buckets

    buckets = _buckets([((2, 3), "f32"), ((4,), "bf16"), ((5,), "f64"), ((1,), "f64"),
                        ((2,), "f16")], bucket_mb=1.0)
    assert [(b.dtype, [s.param for s in b.slots], b.size) for b in buckets] == [
        ("f32", [0, 1], 10), ("f64", [2, 3], 6), ("f32", [4], 2)]


def test_all_reduce_of_bf16_says_how_to_reduce_it(monkeypatch):
    import ml_dtypes

    from uopc.frontend import distributed as dist

    monkeypatch.setattr(dist, "_group", lambda what: None)
    with pytest.raises(TypeError, match="MPI has no bf16 type; reduce an f32 copy"):
        dist.all_reduce(np.zeros(2, ml_dtypes.bfloat16))
