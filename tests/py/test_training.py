"""End-to-end training on the compiled path: an MLP and a tiny GPT learn."""

import numpy as np

from uopc import Tensor, manual_seed, nn
from uopc.frontend.nn.gpt import GPT
from uopc.frontend.optim import SGD, AdamW, train


def test_mlp_learns_separable_problem():
    manual_seed(1)
    rng = np.random.default_rng(1)
    x = rng.standard_normal((64, 2)).astype(np.float32)
    y = (x[:, 0] + 2 * x[:, 1] > 0).astype(np.int32)
    model = [nn.Linear(2, 16), nn.Linear(16, 2)]
    opt = SGD(nn.parameters(model), lr=0.2, momentum=0.9)
    xs, ys = Tensor(x), Tensor(y)
    losses = train(opt, lambda step: model[1](model[0](xs).tanh()).cross_entropy(ys), 40)
    assert len(losses) == 40
    assert losses[-1] < 0.3 * losses[0], losses


def test_tiny_gpt_learns_periodic_sequence():
    manual_seed(2)
    vocab, context = 11, 8
    model = GPT(vocab=vocab, context=context, dim=16, heads=2, layers=1)
    opt = AdamW(nn.parameters(model), lr=0.02, wd=0.0)
    stream = np.arange(200) % vocab
    starts = np.arange(16) * 3
    ids = np.stack([stream[s:s + context] for s in starts]).astype(np.int32)
    targets = np.stack([stream[s + 1:s + context + 1] for s in starts]).astype(np.int32)
    losses = train(opt, lambda step: model.loss(Tensor(ids), Tensor(targets)), 30)
    assert losses[-1] < 0.25 * losses[0], losses


def test_attention_is_causal():
    manual_seed(3)
    model = GPT(vocab=11, context=8, dim=16, heads=2, layers=1)
    ids = np.array([[1, 2, 3, 4, 5, 6, 7, 8]], np.int32)
    changed = ids.copy()
    changed[0, 5:] = [0, 10, 9]
    a = model(Tensor(ids)).numpy()
    b = model(Tensor(changed)).numpy()
    np.testing.assert_allclose(a[0, :5], b[0, :5], rtol=1e-5, atol=1e-6)
    assert not np.allclose(a[0, 5:], b[0, 5:])
