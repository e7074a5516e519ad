"""Token choice (uopc.frontend.llm.generate.choose): greedy, temperature, top-k, top-p."""

from __future__ import annotations

import numpy as np
import pytest

from uopc.frontend.llm.generate import Sampling, choose

PROBS = np.array([0.05, 0.5, 0.15, 0.3])
LOGITS = np.log(PROBS).astype(np.float32)


def _frequencies(sampling: Sampling, draws: int = 20000) -> np.ndarray:
    rng = np.random.default_rng(sampling.seed)
    counts = np.bincount([choose(LOGITS, sampling, rng) for _ in range(draws)], minlength=4)
    return counts / draws


def test_greedy_takes_the_first_maximum():
    rng = np.random.default_rng(0)
    assert choose(LOGITS, Sampling(), rng) == 1
    assert choose(np.array([1.0, 3.0, 3.0]), Sampling(), rng) == 1


def test_temperature_one_samples_the_distribution():
    np.testing.assert_allclose(_frequencies(Sampling(temperature=1.0, seed=0)), PROBS, atol=0.015)


def test_temperature_sharpens():
    expected = PROBS ** 2 / (PROBS ** 2).sum()
    np.testing.assert_allclose(_frequencies(Sampling(temperature=0.5, seed=1)), expected, atol=0.015)


def test_top_k_keeps_the_k_most_likely():
    f = _frequencies(Sampling(temperature=1.0, top_k=2, seed=2))
    np.testing.assert_allclose(f, [0, 0.5 / 0.8, 0, 0.3 / 0.8], atol=0.015)


def test_top_p_keeps_the_smallest_set_reaching_p():
    # 0.5 alone is short of 0.7; 0.5 + 0.3 reaches it: tokens 1 and 3 remain
    f = _frequencies(Sampling(temperature=1.0, top_p=0.7, seed=3))
    np.testing.assert_allclose(f, [0, 0.5 / 0.8, 0, 0.3 / 0.8], atol=0.015)
    assert _frequencies(Sampling(temperature=1.0, top_p=0.4, seed=4), 500)[1] == 1.0


@pytest.mark.parametrize("kwargs, message", [
    ({"temperature": -1.0}, "temperature -1.0 is negative"),
    ({"top_k": 0}, "top_k 0 must be at least 1"),
    ({"top_p": 1.5}, r"top_p 1.5 must be in \(0, 1\]"),
])
def test_bad_settings(kwargs, message):
    with pytest.raises(ValueError, match=message):
        Sampling(**kwargs)
