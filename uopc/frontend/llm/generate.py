"""Text generation: one prefill step over the prompt (padded to a bucket of positions,
`kv_cache.prefill_width`, so that prompt lengths share compiled plans), then one decode
step per token on a KV cache (see `kv_cache`), choosing each token on the host from the
last logits.

Every decode step runs the same graph on new data, so the decode step is captured
(`uopc.capture`): the first two steps trace and record the plan, every later one only
runs it, with no Python graph building per token.

Greedy (temperature 0) takes the first maximum, as transformers' greedy search does.
Sampling divides the logits by the temperature, keeps the `top_k` most likely tokens
and then the smallest set whose probabilities reach `top_p`, and draws from the
renormalized rest with a numpy Generator seeded by `seed` (same seed, same text).
"""

from __future__ import annotations

import functools
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

import numpy as np

from uopc.frontend.capture import capture
from uopc.frontend.llm.causal_lm import CausalLM
from uopc.frontend.llm.kv_cache import KVCache, prefill_width
from uopc.frontend.tensor import Tensor

#: cache sizes are rounded up to this many positions, so that runs of similar lengths
#: share compiled plans
CACHE_QUANTUM = 64


@dataclass(frozen=True)
class Sampling:
    temperature: float = 0.0  # 0: greedy
    top_k: int | None = None
    top_p: float | None = None
    seed: int | None = None

    def __post_init__(self) -> None:
        if self.temperature < 0:
            raise ValueError(f"temperature {self.temperature} is negative (0 is greedy)")
        if self.top_k is not None and self.top_k < 1:
            raise ValueError(f"top_k {self.top_k} must be at least 1")
        if self.top_p is not None and not 0 < self.top_p <= 1:
            raise ValueError(f"top_p {self.top_p} must be in (0, 1]")


def choose(logits: np.ndarray, sampling: Sampling, rng: np.random.Generator) -> int:
    """The next token from one position's logits (vocab,)."""
    if sampling.temperature == 0:
        return int(np.argmax(logits))
    scaled = logits.astype(np.float64) / sampling.temperature
    if sampling.top_k is not None and sampling.top_k < scaled.size:
        kth = np.partition(scaled, -sampling.top_k)[-sampling.top_k]
        scaled = np.where(scaled >= kth, scaled, -np.inf)
    probs = np.exp(scaled - scaled.max())
    probs /= probs.sum()
    if sampling.top_p is not None and sampling.top_p < 1:
        order = np.argsort(-probs, kind="stable")
        before = np.cumsum(probs[order]) - probs[order]  # mass of the more likely tokens
        dropped = order[before >= sampling.top_p]
        probs[dropped] = 0.0
        probs /= probs.sum()
    return int(rng.choice(probs.size, p=probs))


@dataclass
class Generation:
    tokens: list[int] = field(default_factory=list)  # the new tokens, not the prompt
    step_seconds: list[float] = field(default_factory=list)  # the time to each token

    @property
    def first_token_seconds(self) -> float:
        """The prefill: the latency of the first token, compiles included."""
        return self.step_seconds[0] if self.step_seconds else 0.0

    @property
    def decode_tokens_per_second(self) -> float:
        """Tokens/s of the decode steps after the first one (which may compile the decode
        plan): the speed of a warm generation loop."""
        warm = self.step_seconds[2:] or self.step_seconds[1:]
        return len(warm) / sum(warm) if warm and sum(warm) > 0 else 0.0


def generate(model: CausalLM, prompt: Sequence[int], max_new_tokens: int,
             sampling: Sampling = Sampling(), stop: Sequence[int] = (),
             on_token: Callable[[int], None] | None = None) -> Generation:
    """Continue `prompt` (token ids) by up to `max_new_tokens`, stopping after a token in
    `stop`. `model` is a GPT2 or Llama; `on_token` sees each token as it is chosen."""
    if not prompt:
        raise ValueError("generate needs a prompt of at least one token")
    if max_new_tokens < 0:
        raise ValueError(f"max_new_tokens is {max_new_tokens}: give 0 or more")
    outside = [t for t in prompt if not 0 <= int(t) < model.vocab]
    if outside:
        raise ValueError(f"token id {outside[0]} of the prompt is outside the model's "
                         f"vocabulary [0, {model.vocab})")
    out = Generation()
    if max_new_tokens == 0:
        return out
    # the positions the model reads: the prompt and every new token but the last, which
    # is chosen from the logits and never fed back (as transformers counts them)
    needed = len(prompt) + max_new_tokens - 1
    cache = model.new_cache(-(-needed // CACHE_QUANTUM) * CACHE_QUANTUM)
    if cache.max_length < needed:
        raise ValueError(f"prompt of {len(prompt)} tokens + {max_new_tokens} new ones "
                         f"needs {needed} positions, more than the model's context of "
                         f"{cache.max_length}")
    rng = np.random.default_rng(sampling.seed)
    ids = np.asarray([prompt], np.int32)
    prefill = functools.partial(_step, model, cache)
    decode = capture(prefill)  # the same step, replayed from the third token on
    start = time.perf_counter()
    for n in range(max_new_tokens):
        if n:
            logits = decode(*model.step_inputs(ids, cache))
        else:  # padded to a bucket: prompts of similar lengths share one plan
            width = prefill_width(ids.shape[1], cache.max_length)
            logits = prefill(*model.step_inputs(ids, cache, width))
        cache.advance()
        token = choose(logits.numpy()[0, -1], sampling, rng)
        now = time.perf_counter()
        out.step_seconds.append(now - start)
        start = now
        out.tokens.append(token)
        if on_token is not None:
            on_token(token)
        if token in stop:
            break
        ids = np.asarray([[token]], np.int32)
    return out


def _step(model: CausalLM, cache: KVCache, *inputs: np.ndarray) -> Tensor:
    """The realized last-position logits of one step from its `step_inputs`."""
    logits = model.forward(cache, *inputs, last_only=True)
    cache.realize(logits)
    return logits
