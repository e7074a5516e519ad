"""The numerics report of weight-only quantization: `python -m uopc.tools.quant_report`.

For each model (the MNIST MLP, briefly trained, on test images; a small random GPT-2 of
`uopc.frontend.llm` on random tokens) and each weight format it compiles the quantized
model and prints: the weight bytes (all parameters, quantized matrices packed), the worst
and the mean relative error of every layer's output against the f32 model (worst:
max|y_q - y| / max|y|; mean: mean|y_q - y| / mean|y|), the top-1 agreement of the final
outputs with the f32 model's, and the milliseconds per forward pass on a cached plan.
"""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from uopc.frontend.quant import quantize_model
from uopc.frontend.tensor import Tensor, manual_seed
from uopc.uopdialect.graph import toposort
from uopc.uopdialect.quant_formats import FORMATS


class Recorder:
    """A layer that remembers its outputs (the report compares them layer by layer)."""

    def __init__(self, layer: Any):
        self.layer = layer
        self.outputs: list[Tensor] = []

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        out = self.layer(*args, **kwargs)
        self.outputs.append(out)
        return out


@dataclass
class Case:
    """A model to quantize: `build()` makes a fresh f32 model (the same each call),
    `layers(model)` wraps its layers in Recorders (returned by name), `run(model)`
    is one forward pass giving the final outputs."""

    name: str
    build: Callable[[], Any]
    layers: Callable[[Any], dict[str, Recorder]]
    run: Callable[[Any], Tensor]


def _weight_bytes(model: Any) -> int:
    """Bytes of the data every weight of the model reads: the buffers of the graphs of
    the tensors it holds (packed words and scales for quantized weights)."""
    arrays: dict[int, int] = {}
    seen: set[int] = set()
    stack = [model]
    while stack:
        obj = stack.pop()
        if id(obj) in seen:
            continue
        seen.add(id(obj))
        if isinstance(obj, Tensor):
            for node in toposort([obj.uop]):
                if node.op.name == "buffer":
                    arrays[id(node.arg)] = node.arg.nbytes
        elif isinstance(obj, dict):
            stack.extend(obj.values())
        elif isinstance(obj, (list, tuple)):
            stack.extend(obj)
        elif hasattr(obj, "__dict__") and not isinstance(obj, type):
            stack.extend(vars(obj).values())
    return sum(arrays.values())


def mnist_case(train_steps: int = 200, samples: int = 512) -> Case:
    from uopc.datasets import load_mnist
    from uopc.frontend import nn
    from uopc.frontend.optim import AdamW

    digits = load_mnist()
    images = Tensor(digits.test_images[:samples])
    manual_seed(0)
    init = nn.Sequential(nn.Linear(784, 128), nn.Linear(128, 10))
    opt = AdamW(nn.parameters(init), lr=1e-3)
    rng = np.random.default_rng(0)
    for _ in range(train_steps):
        pick = rng.integers(0, len(digits.train_images), 128)
        x = Tensor(digits.train_images[pick])
        opt.zero_grad()
        loss = init[1](init[0](x).relu()).cross_entropy(Tensor(digits.train_labels[pick]))
        loss.backward()
        opt.step(loss)
    trained = init.state_dict()

    def build():
        model = nn.Sequential(nn.Linear(784, 128), nn.Linear(128, 10))
        model.load_state_dict(trained)
        return model

    def layers(model):
        model.layers = [Recorder(layer) for layer in model.layers]
        return {"fc1": model.layers[0], "fc2": model.layers[1]}

    def run(model):
        return model[1](model[0](images).relu())

    return Case("MNIST MLP 784-128-10", build, layers, run)


def gpt2_case(layers: int = 2, dim: int = 64, vocab: int = 512, tokens: int = 32) -> Case:
    from uopc.frontend.llm.gpt2 import GPT2

    ids = np.random.default_rng(1).integers(0, vocab, (2, tokens))

    def record(model):
        model.blocks = [Recorder(b) for b in model.blocks]
        return {f"block{i}": r for i, r in enumerate(model.blocks)}

    return Case(f"GPT-2 {layers}x{dim}, vocab {vocab}",
                lambda: GPT2.random(layers, dim, heads=4, vocab=vocab, positions=64),
                record, lambda model: model(ids))


def _forward(case: Case, model: Any) -> tuple[dict[str, np.ndarray], np.ndarray, float]:
    """Every recorded layer output and the final outputs of one pass, and the median
    ms of a pass (the same plan again, cached)."""
    recorders = case.layers(model)

    def once() -> tuple[Tensor, list[Tensor]]:
        out = case.run(model)
        layers = [r.outputs.pop() for r in recorders.values()]
        Tensor.realize_all(out, *layers)
        return out, layers

    out, layers = once()
    times = []
    for _ in range(5):
        start = time.perf_counter()
        once()
        times.append((time.perf_counter() - start) * 1e3)
    outputs = {name: t.numpy() for name, t in zip(recorders, layers)}
    return outputs, out.numpy(), float(np.median(times))


def report(case: Case, formats: Sequence[str], out=sys.stdout) -> list[dict[str, Any]]:
    """Print the table of `case` for f32 and `formats`; return its rows."""
    reference = case.build()
    ref_layers, ref_final, ref_ms = _forward(case, reference)
    names = list(ref_layers) + ["output"]
    rows: list[dict[str, Any]] = [{"format": "f32", "bytes": _weight_bytes(case.build()),
                                   "agree": 1.0, "ms": ref_ms,
                                   "errors": {n: (0.0, 0.0) for n in names}}]
    for fmt in formats:
        model = case.build()
        quantize_model(model, fmt)
        weight_bytes = _weight_bytes(model)
        layers, final, ms = _forward(case, model)
        errors = {}
        for name in names:
            got, want = (final, ref_final) if name == "output" else (layers[name], ref_layers[name])
            diff = np.abs(got - want)
            errors[name] = (float(diff.max() / np.abs(want).max()),
                            float(diff.mean() / np.abs(want).mean()))
        agree = float((final.argmax(-1) == ref_final.argmax(-1)).mean())
        rows.append({"format": fmt, "bytes": weight_bytes, "agree": agree, "ms": ms,
                     "errors": errors})
    print(f"\n{case.name}: layer errors are worst / mean relative to the f32 model", file=out)
    head = f"{'format':<7} {'weight bytes':>12} {'top-1':>6} {'ms':>7}  " + \
        "  ".join(f"{n:>17}" for n in names)
    print(head, file=out)
    for row in rows:
        cells = "  ".join(f"{w:8.2e}/{m:8.2e}" for w, m in (row["errors"][n] for n in names))
        print(f"{row['format']:<7} {row['bytes']:>12} {row['agree']:>6.3f} {row['ms']:>7.2f}  "
              f"{cells}", file=out)
    return rows


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--formats", default=",".join(FORMATS),
                    help="comma-separated weight formats (default: all)")
    ap.add_argument("--model", choices=("mlp", "gpt2", "both"), default="both")
    args = ap.parse_args(argv)
    formats = [f for f in args.formats.split(",") if f]
    unknown = [f for f in formats if f not in FORMATS]
    if unknown:
        ap.error(f"unknown formats {unknown}: choose from {', '.join(FORMATS)}")
    cases: dict[str, list[Callable[[], Case]]] = {"mlp": [mnist_case], "gpt2": [gpt2_case],
                                                  "both": [mnist_case, gpt2_case]}
    for make in cases[args.model]:
        report(make(), formats)
    return 0


if __name__ == "__main__":
    sys.exit(main())
