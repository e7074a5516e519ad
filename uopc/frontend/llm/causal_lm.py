"""What GPT2 and Llama share: a step of token ids on a KV cache, split into its host
inputs (`step_inputs`: arrays, which may change every step) and the lazy graph built from
them (`forward`: reads nothing else but the weights and the cache), so that `generate`
can capture the decode step and replay it without tracing."""

from __future__ import annotations

from abc import ABC, abstractmethod
from typing import Any

import numpy as np

from uopc.frontend.llm.kv_cache import KVCache
from uopc.frontend.tensor import Tensor


class CausalLM(ABC):
    """Token ids (B, T) -> next-token logits (B, T, vocab)."""

    #: the number of token ids (rows of the embedding)
    vocab: int

    @abstractmethod
    def new_cache(self, max_length: int | None = None, batch: int = 1) -> KVCache:
        """An empty cache for up to `max_length` positions (the model's context if None)."""

    @abstractmethod
    def step_inputs(self, ids: np.ndarray, cache: KVCache,
                    width: int | None = None) -> tuple[np.ndarray, ...]:
        """Begin a step of `ids` (B, T) int32 on `cache`: the arrays `forward` reads.
        With `width`, the step is padded to `width` positions and its inputs end with
        the row of the last real token (`StepData.last`), which `forward` reads its
        `last_only` logits at: every T up to `width` is then one graph (kv_cache)."""

    @abstractmethod
    def forward(self, cache: KVCache, *inputs: Any, **options: Any) -> Tensor:
        """The lazy logits of one step from its `step_inputs` (only the last position's
        with `last_only=True`). Each model names the arrays it takes, so this signature
        leaves them open (an override may spell them out)."""

    def __call__(self, ids: Any, cache: KVCache | None = None, last_only: bool = False) -> Tensor:
        """Logits of the tokens `ids` (B, T) following those already in `cache` (a fresh
        cache of T positions when None). Lazy; with a cache, `cache.commit(logits)`
        realizes the step."""
        ids = np.asarray(ids, np.int32)
        cache = cache if cache is not None else self.new_cache(ids.shape[1], ids.shape[0])
        return self.forward(cache, *self.step_inputs(ids, cache), last_only=last_only)
