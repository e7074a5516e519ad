"""Data-parallel training over MPI, through mpi4py (`from uopc import distributed as dist`).

    mpirun -n 2 python train.py        # every rank runs the same script

Every rank (process) holds the whole model and trains on its own shard of each global
batch. `init_process_group()` joins the MPI job the launcher started; `get_rank()` and
`get_world_size()` say who this process is. `DistributedOptimizer(optimizer)` wraps an
`SGD` or `AdamW`: its `step()` sums the gradients of all ranks with MPI allreduce after
`backward()` and before the update and divides them by the world size, so that every rank
applies the same update to the same parameters (rank 0's parameters are broadcast when
the wrapper is made). `DistributedSampler` gives each rank its shard of a dataset, and
`is_main_process()` picks the one rank that prints and saves checkpoints.

Where the allreduce sits. A single process runs a training step as one realize: one
cached plan, one native call for forward, backward and the update. Under
`DistributedOptimizer` the step is two cached plans, and the allreduce runs between them:

1. native call 1 computes the loss and every parameter's gradient (the forward and
   backward graph);
2. the gradients are copied into flat buckets of about `bucket_mb` MiB each, in
   parameter order (f64 gradients in f64 buckets, all others in f32 ones, which hold f16
   and bf16 values exactly), and each bucket is summed across ranks by one non-blocking MPI
   allreduce (all buckets are in flight at once); scalars passed to `step(*extra)`, such
   as the loss, ride in the last bucket and come back averaged, so `loss.item()` is the
   loss of the global batch on every rank;
3. native call 2 runs the optimizer update, reading each gradient as a slice of its bucket
   (a buffer of the plan) times 1 / world size, which fuses into the update's kernels.

Both plans are compiled on the first step, on every rank, and reused afterwards: a
steady-state step traces the graph and looks the two plans up, but builds no xDSL IR.
The allreduce is not inside the plan because a plan is one C call that cannot wait on a
peer; for the same reason communication does not overlap the backward pass (all gradients
come out of native call 1 together), but the buckets' allreduces overlap each other. What
the split costs over the one-plan step (the gradients handed out of the first call and
into the second, the copy into the buckets) and what the allreduce costs are measured by
`benchmarks/distributed_bench.py`.

Failure behaviour. Every collective waits with a timeout (`init_process_group(timeout=)`,
else the `UOPC_DIST_TIMEOUT` environment variable, else 300 s, which must cover the first
step's compile): a rank whose peer died or stalled raises `DistributedError` naming the
collective and the step instead of hanging. An uncaught exception on any rank prints its
traceback and aborts the whole MPI job (`MPI_Abort`), so the other ranks do not wait for
the timeout; a rank killed outright is reported by the launcher (MPICH's `mpiexec`: "BAD
TERMINATION"), which then ends the others.

Debug check. `DistributedOptimizer(..., check_every=N)` (or `UOPC_DIST_CHECK=N`) hashes
every parameter after each N-th step and compares the hashes of all ranks (an allgather
of 8-byte digests); parameters that drifted apart raise `DistributedError` naming the step
and the first parameter that differs.
"""

from __future__ import annotations

import hashlib
import math
import os
import sys
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from uopc import settings
from uopc.frontend.optim import Optimizer
from uopc.frontend.tensor import Tensor
from uopc.uopdialect.dtypes import BY_NUMPY, DTYPES, FLOAT_DTYPES
from uopc.uopdialect.graph import UOp
from uopc.uopdialect.shapes import Sig, fmt_shape

__all__ = ["DistributedError", "init_process_group", "is_initialized", "get_rank",
           "get_world_size", "data_parallel", "is_main_process", "barrier", "all_reduce",
           "broadcast", "DistributedSampler", "DistributedOptimizer"]

INSTALL_HINT = ("uopc.distributed needs mpi4py and an MPI library: pip install "
                "'uopc[mpi]' (mpi4py and the mpich wheel, which ships mpiexec), then run "
                "the script under `mpiexec -n N`")


class DistributedError(RuntimeError):
    """A collective that failed or timed out, or ranks whose state disagrees."""


@dataclass
class _Group:
    """The MPI communicator this process trains with."""

    mpi: Any  # the mpi4py.MPI module
    comm: Any  # MPI.COMM_WORLD
    rank: int
    size: int
    timeout: float

    def wait(self, requests: list[Any], what: str) -> None:
        """Complete the non-blocking `requests`, or raise after `timeout` seconds.

        Polls `Testall` (which also drives MPI's progress) for the first 50 ms with only
        `sched_yield` between polls: a peer rank that shares this core (a loaded machine
        puts them together) then runs at once, where a busy loop would keep it waiting a
        scheduler tick per round of the allreduce (measured on 2 cores: 0.2 ms either way
        when the ranks have a core each, 4 ms against 20 ms when they share one). After
        that it sleeps 1 ms between polls, so that a rank that waits long for its peers
        (a first step that compiles) leaves the core to them."""
        started = time.monotonic()
        while not self.mpi.Request.Testall(requests):
            waited = time.monotonic() - started
            if waited > self.timeout:
                raise DistributedError(
                    f"rank {self.rank} of {self.size}: {what} did not complete within "
                    f"{self.timeout:g} s: another rank has died or stalled (raise the "
                    f"limit with init_process_group(timeout=...) or UOPC_DIST_TIMEOUT "
                    f"if a step legitimately takes longer)")
            if waited > 0.05:
                time.sleep(0.001)
            else:
                os.sched_yield()


_GROUP: _Group | None = None


def init_process_group(timeout: float | None = None) -> None:
    """Join the MPI job this process was started in (`mpiexec -n N python ...`; a plain
    `python ...` is a job of one rank). Collectives wait at most `timeout` seconds
    (default: `UOPC_DIST_TIMEOUT`, else 300). A second call only updates the timeout."""
    global _GROUP
    if timeout is None:
        timeout = settings.DIST_TIMEOUT.get()
    if not timeout > 0:
        raise ValueError(f"init_process_group: timeout must be positive seconds, got {timeout}")
    if _GROUP is not None:
        _GROUP.timeout = timeout
        return
    try:
        from mpi4py import MPI
    except ImportError as e:
        raise DistributedError(f"{INSTALL_HINT} ({e})") from None
    comm = MPI.COMM_WORLD
    _GROUP = _Group(MPI, comm, comm.Get_rank(), comm.Get_size(), timeout)
    if _GROUP.size > 1:
        sys.excepthook = _aborting_hook(sys.excepthook, _GROUP)


#: how long a failing rank waits, after printing its traceback, before it aborts the job
ABORT_GRACE_SECONDS = 1.0


def _aborting_hook(previous: Any, group: _Group) -> Any:
    """An excepthook that prints the traceback as usual, then aborts the MPI job: the
    other ranks would otherwise wait for this one in their next collective."""
    def hook(kind: type[BaseException], value: BaseException, tb: Any) -> None:
        previous(kind, value, tb)
        print(f"uopc.distributed: rank {group.rank} of {group.size} stopped on an uncaught "
              f"{kind.__name__}; aborting the MPI job", file=sys.stderr, flush=True)
        sys.stdout.flush()
        # mpiexec forwards a rank's output asynchronously and Abort kills the job at once:
        # without this pause the end of the traceback was lost in about 1 run in 10 under
        # load (the report then showed its first line only)
        time.sleep(ABORT_GRACE_SECONDS)
        group.comm.Abort(1)
    return hook


def _group(what: str) -> _Group:
    if _GROUP is None:
        raise DistributedError(f"{what}: call uopc.distributed.init_process_group() first")
    return _GROUP


def is_initialized() -> bool:
    return _GROUP is not None


def get_rank() -> int:
    """This process's rank, 0 .. world size - 1."""
    return _group("get_rank").rank


def get_world_size() -> int:
    """The number of ranks in the job."""
    return _group("get_world_size").size


def data_parallel(enabled: bool, global_batch: int) -> tuple[int, int, int]:
    """(rank, world size, this rank's share of `global_batch`) for a script with a
    `--distributed` switch: with `enabled`, join the job (`init_process_group()`) and split
    the batch evenly over its ranks; else (0, 1, global_batch). Raises DistributedError
    when MPI is missing or the batch does not split evenly."""
    if not enabled:
        return 0, 1, global_batch
    init_process_group()
    rank, world = get_rank(), get_world_size()
    if global_batch % world:
        raise DistributedError(f"a global batch of {global_batch} does not split evenly "
                               f"over {world} ranks: make it a multiple of {world}")
    return rank, world, global_batch // world


def is_main_process() -> bool:
    """True on rank 0, and in a process that never joined a job: the one that prints."""
    return _GROUP is None or _GROUP.rank == 0


def barrier() -> None:
    """Wait until every rank has called `barrier()` (with the group's timeout)."""
    group = _group("barrier")
    group.wait([group.comm.Ibarrier()], "a barrier")


_OPS = ("sum", "avg", "max", "min")


def all_reduce(array: np.ndarray, op: str = "sum") -> np.ndarray:
    """Combine `array` (a contiguous numpy array, same shape on every rank) across ranks,
    in place, and return it. `op`: "sum", "avg" (the sum over the world size), "max",
    "min"."""
    group = _group("all_reduce")
    if op not in _OPS:
        raise ValueError(f"all_reduce: op {op!r} is not one of {', '.join(_OPS)}")
    if not (isinstance(array, np.ndarray) and array.flags.c_contiguous
            and array.flags.writeable):
        raise TypeError("all_reduce: reduces a writable, C-contiguous numpy array in place")
    if BY_NUMPY.get(array.dtype) is DTYPES["bf16"]:
        raise TypeError("all_reduce: MPI has no bf16 type; reduce an f32 copy "
                        "(array.astype(np.float32)) and round the result back")
    mpi = group.mpi
    mpi_op = {"sum": mpi.SUM, "avg": mpi.SUM, "max": mpi.MAX, "min": mpi.MIN}[op]
    group.wait([group.comm.Iallreduce(mpi.IN_PLACE, array, op=mpi_op)], f"all_reduce({op})")
    if op == "avg":
        array /= group.size
    return array


def broadcast(array: np.ndarray, src: int = 0) -> np.ndarray:
    """Overwrite `array` (contiguous, same shape everywhere) with rank `src`'s, in place."""
    group = _group("broadcast")
    if not 0 <= src < group.size:
        raise ValueError(f"broadcast: source rank {src} is not in 0..{group.size - 1}")
    group.wait([group.comm.Ibcast(array, root=src)], f"a broadcast from rank {src}")
    return array


class DistributedSampler:
    """The indices of this rank's shard of a dataset, one epoch at a time (PyTorch's
    `torch.utils.data.distributed.DistributedSampler`).

    Each epoch every rank draws the same order of all indices (a permutation seeded by
    `(seed, epoch)` when `shuffle`, else 0..n-1), and rank r takes every world-size-th
    index from position r. Unless `drop_last`, the order is padded with its own first
    indices to a multiple of the world size, so that every rank gets the same count (a
    few samples are then seen twice); with `drop_last` the tail is dropped instead.
    Sharding batch b of a global batch B this way (`order[r::world]` within each block
    of B) gives every rank B / world samples, and the ranks together see exactly the
    block a single process would."""

    def __init__(self, dataset: Any, num_replicas: int | None = None, rank: int | None = None,
                 shuffle: bool = True, seed: int = 0, drop_last: bool = False):
        self.n = dataset if isinstance(dataset, int) else len(dataset)
        self.num_replicas = get_world_size() if num_replicas is None else num_replicas
        self.rank = get_rank() if rank is None else rank
        if self.num_replicas < 1 or not 0 <= self.rank < self.num_replicas:
            raise ValueError(f"DistributedSampler: rank {self.rank} is not in "
                             f"0..{self.num_replicas - 1}")
        self.shuffle, self.seed, self.drop_last = shuffle, seed, drop_last
        self.epoch = 0
        if drop_last:
            self.num_samples = self.n // self.num_replicas
        else:
            self.num_samples = math.ceil(self.n / self.num_replicas)
        self.total_size = self.num_samples * self.num_replicas

    def set_epoch(self, epoch: int) -> None:
        """Use epoch `epoch`'s order next (call it at the start of every epoch)."""
        self.epoch = epoch

    def order(self) -> np.ndarray:
        """The current epoch's order of all indices, the same on every rank."""
        if self.shuffle:
            return np.random.default_rng((self.seed, self.epoch)).permutation(self.n)
        return np.arange(self.n)

    def indices(self) -> np.ndarray:
        """This rank's indices for the current epoch (`num_samples` of them)."""
        order = self.order()
        if self.total_size > self.n:
            order = np.resize(order, self.total_size)  # repeats the order from its start
        return order[self.rank:self.total_size:self.num_replicas]

    def __iter__(self) -> Iterator[int]:
        return iter(self.indices().tolist())

    def __len__(self) -> int:
        return self.num_samples


@dataclass(frozen=True)
class _Slot:
    """Where one parameter's gradient lives in its bucket."""

    param: int  # index into the optimizer's parameters
    offset: int
    size: int
    shape: tuple[int, ...]


@dataclass
class _Bucket:
    """Consecutive parameters whose gradients travel in one flat array of `dtype` (f64 for
    f64 parameters, f32 for the others: f16 and bf16 widen to it exactly)."""

    dtype: str
    slots: list[_Slot]

    @property
    def size(self) -> int:
        return self.slots[-1].offset + self.slots[-1].size


def _wire_dtype(dtype: str) -> str:
    return "f64" if dtype == "f64" else "f32"


class DistributedOptimizer:
    """An optimizer whose `step(*extra)` averages the gradients of all ranks before the
    update (see the module docstring). Gradients go into flat buckets of at least
    `bucket_mb` MiB (the last one smaller), one allreduce each. `check_every=N` compares
    parameter hashes across ranks after every N-th step (default: `UOPC_DIST_CHECK`, else
    off). The wrapped optimizer's `params`, `lr`, `steps`, `zero_grad`, `state_dict` and
    `load_state_dict` are this object's too, so `train()` and `TrainingCheckpoint` take
    it in place of the optimizer."""

    def __init__(self, optimizer: Optimizer, bucket_mb: float = 25.0,
                 check_every: int | None = None):
        if not isinstance(optimizer, Optimizer):
            raise TypeError(f"DistributedOptimizer wraps a uopc optimizer (SGD, AdamW), "
                            f"not {type(optimizer).__name__}")
        if not bucket_mb > 0:
            raise ValueError(f"DistributedOptimizer: bucket_mb must be positive, got {bucket_mb}")
        self.group = _group("DistributedOptimizer")
        self.optimizer = optimizer
        if check_every is None:
            check_every = settings.DIST_CHECK.get()
        self.check_every = check_every
        self.buckets = _buckets([(p.shape, p.dtype) for p in optimizer.params], bucket_mb)
        # time of the gradient allreduces and of copying gradients into the buckets, over
        # the steps after the first (whose allreduce waits for every rank's compile)
        self.allreduce_seconds = 0.0
        self.pack_seconds = 0.0
        self.timed_steps = 0
        self._stepped = False
        self._broadcast_parameters()

    # ---- the wrapped optimizer's interface
    @property
    def params(self) -> list[Tensor]:
        return self.optimizer.params

    @property
    def steps(self) -> int:
        return self.optimizer.steps

    @property
    def lr(self) -> float:
        return self.optimizer.lr

    @lr.setter
    def lr(self, value: float) -> None:
        self.optimizer.lr = value

    def zero_grad(self) -> None:
        self.optimizer.zero_grad()

    def state_dict(self) -> dict:
        return self.optimizer.state_dict()

    def load_state_dict(self, state: dict) -> None:
        self.optimizer.load_state_dict(state)

    def checked_load(self, state: dict) -> Callable[[], None]:
        return self.optimizer.checked_load(state)

    @property
    def allreduce_ms_per_step(self) -> float:
        """The mean gradient allreduce time of a step (after the first), in ms."""
        return self.allreduce_seconds / max(self.timed_steps, 1) * 1e3

    # ---- the step
    def step(self, *extra: Tensor) -> None:
        """Realize the gradients and `extra` (native call 1), average the gradients and the
        float `extra` tensors across ranks, then update (native call 2)."""
        opt, group = self.optimizer, self.group
        grads = opt._grads()
        Tensor.realize_all(*grads, *extra)
        averaged = [e for e in extra if e.dtype in FLOAT_DTYPES]
        started = time.perf_counter()
        arrays = self._pack(grads, averaged)
        packed = time.perf_counter()
        mpi = group.mpi
        requests = [group.comm.Iallreduce(mpi.IN_PLACE, a, op=mpi.SUM) for a in arrays]
        group.wait(requests, f"the gradient allreduce of step {opt.steps + 1} "
                             f"({len(arrays)} buckets)")
        if self._stepped:
            self.pack_seconds += packed - started
            self.allreduce_seconds += time.perf_counter() - packed
            self.timed_steps += 1
        self._stepped = True
        self._unpack(arrays, grads, averaged)
        opt.step(*extra)
        if self.check_every and opt.steps % self.check_every == 0:
            self.check_parameters()

    def _pack(self, grads: list[Tensor], averaged: list[Tensor]) -> list[np.ndarray]:
        """Fresh bucket arrays holding the realized gradients (and, at the end of the
        last bucket, the float `averaged` tensors)."""
        tail = sum(e.numel() for e in averaged)
        arrays = []
        for b, bucket in enumerate(self.buckets):
            flat = np.empty(bucket.size + (tail if b == len(self.buckets) - 1 else 0),
                            DTYPES[bucket.dtype].numpy)
            for s in bucket.slots:
                flat[s.offset:s.offset + s.size] = grads[s.param].uop.arg.reshape(-1)
            arrays.append(flat)
        at = len(arrays[-1]) - tail
        for e in averaged:
            arrays[-1][at:at + e.numel()] = e.uop.arg.reshape(-1)
            at += e.numel()
        return arrays

    def _unpack(self, arrays: list[np.ndarray], grads: list[Tensor],
                averaged: list[Tensor]) -> None:
        """Point every parameter's gradient at its slice of the summed bucket (times
        1 / world size, traced into the update), and set the `averaged` tensors."""
        scale = 1.0 / self.group.size
        params = self.optimizer.params
        for bucket, flat in zip(self.buckets, arrays):
            whole = Tensor(UOp.buffer(flat, Sig((flat.size,), bucket.dtype)))  # no copy
            for s in bucket.slots:
                g = whole.shrink([(s.offset, s.offset + s.size)]).reshape(*s.shape)
                if scale != 1.0:
                    g = g * scale
                params[s.param].grad = g.cast(grads[s.param].dtype)
        at = len(arrays[-1]) - sum(e.numel() for e in averaged)
        for e in averaged:
            mean = arrays[-1][at:at + e.numel()].reshape(e.shape) * arrays[-1].dtype.type(scale)
            e.assign(Tensor(mean.astype(e.uop.arg.dtype)))
            at += e.numel()

    def _broadcast_parameters(self) -> None:
        """Give every rank rank 0's parameters (each bucket in one broadcast)."""
        params = self.optimizer.params
        Tensor.realize_all(*params)
        for bucket in self.buckets:
            flat = np.concatenate([params[s.param].uop.arg.reshape(-1).astype(
                DTYPES[bucket.dtype].numpy) for s in bucket.slots])
            self.group.wait([self.group.comm.Ibcast(flat, root=0)],
                            "the broadcast of rank 0's parameters")
            for s in bucket.slots:
                p = params[s.param]
                value = flat[s.offset:s.offset + s.size].reshape(s.shape)
                p.assign(Tensor(value.astype(p.uop.arg.dtype)))

    def check_parameters(self) -> None:
        """Raise DistributedError unless every rank holds bit-identical parameters (one
        allgather of per-parameter 8-byte hashes)."""
        params = self.optimizer.params
        Tensor.realize_all(*params)
        mine = np.array([int.from_bytes(hashlib.blake2b(
            np.ascontiguousarray(p.uop.arg).tobytes(), digest_size=8).digest(), "little")
            for p in params], np.uint64)
        group = self.group
        everyone = np.empty((group.size, len(params)), np.uint64)
        group.wait([group.comm.Iallgather(mine, everyone)],
                   f"the parameter check after step {self.optimizer.steps}")
        for i, p in enumerate(params):
            seen = everyone[:, i]
            if (seen != seen[0]).any():
                raise DistributedError(
                    f"rank {group.rank} of {group.size}: parameters differ across ranks "
                    f"after step {self.optimizer.steps}: parameter {i} "
                    f"({fmt_shape(p.shape)} {p.dtype}) hashes "
                    + ", ".join(f"rank {r}: {int(h):016x}" for r, h in enumerate(seen))
                    + "; every rank must run the same steps on the same model")


def _buckets(params: Sequence[tuple[tuple[int, ...], str]], bucket_mb: float) -> list[_Bucket]:
    """Consecutive parameters (shape, dtype) grouped into buckets of at least `bucket_mb`
    MiB, a new bucket wherever the gradients' wire type changes."""
    buckets: list[_Bucket] = []
    offset = 0
    for i, (shape, dtype) in enumerate(params):
        wire = _wire_dtype(dtype)
        limit = max(1, int(bucket_mb * 2**20) // DTYPES[wire].itemsize)
        if not buckets or offset >= limit or buckets[-1].dtype != wire:
            buckets.append(_Bucket(wire, []))
            offset = 0
        size = math.prod(shape)
        buckets[-1].slots.append(_Slot(i, offset, size, tuple(shape)))
        offset += size
    return buckets
