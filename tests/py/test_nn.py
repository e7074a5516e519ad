"""uopc.frontend.nn layers and the optimizers."""

import subprocess
import sys

import numpy as np
import pytest

from uopc import Tensor, manual_seed, nn
from uopc.frontend.optim import SGD, AdamW
from uopc.runtime.engine import default_engine

rng = np.random.default_rng(5)


def randf(*shape):
    return rng.standard_normal(shape).astype(np.float32)


def test_linear_is_x_at_w_plus_b():
    layer = nn.Linear(4, 3)
    assert layer.weight.shape == (4, 3) and layer.bias.shape == (3,)
    x = randf(5, 4)
    want = x @ layer.weight.numpy() + layer.bias.numpy()
    np.testing.assert_allclose(layer(Tensor(x)).numpy(), want, rtol=1e-5, atol=1e-5)
    assert nn.Linear(4, 3, bias=False).bias is None


def test_layernorm_matches_numpy():
    norm = nn.LayerNorm(6)
    norm.weight.assign(Tensor(randf(6)))
    norm.bias.assign(Tensor(randf(6)))
    x = randf(2, 3, 6) * 3 + 1
    mean = x.mean(-1, keepdims=True)
    var = x.var(-1, keepdims=True)
    want = (x - mean) / np.sqrt(var + 1e-5) * norm.weight.numpy() + norm.bias.numpy()
    np.testing.assert_allclose(norm(Tensor(x)).numpy(), want, rtol=1e-4, atol=1e-4)
    with pytest.raises(ValueError, match="trailing axes"):
        norm(Tensor(randf(6, 2)))


def test_embedding_picks_rows():
    emb = nn.Embedding(7, 3)
    ids = np.array([[1, 6], [0, 1]], np.int32)
    np.testing.assert_allclose(emb(Tensor(ids)).numpy(), emb.weight.numpy()[ids], rtol=1e-6)


def test_conv2d_layer_shape_and_value():
    conv = nn.Conv2d(2, 3, 3, stride=1, padding=1)
    x = randf(1, 2, 4, 4)
    out = conv(Tensor(x)).numpy()
    assert out.shape == (1, 3, 4, 4)
    w, b = conv.weight.numpy(), conv.bias.numpy()
    centre = np.einsum("chw,ochw->o", x[0, :, 0:3, 0:3], w) + b
    np.testing.assert_allclose(out[0, :, 1, 1], centre, rtol=1e-4, atol=1e-5)


def test_parameters_walks_attributes_lists_and_dicts():
    class Block:
        def __init__(self):
            self.fc = nn.Linear(2, 2)
            self.norms = [nn.LayerNorm(2), {"inner": nn.Linear(2, 1, bias=False)}]
            self.frozen = Tensor(np.ones(2, np.float32))
            self.again = self.fc

    block = Block()
    params = nn.parameters(block)
    assert len(params) == 5
    assert len({id(p) for p in params}) == 5
    assert all(p.requires_grad for p in params)


def test_sgd_momentum_two_steps():
    w = Tensor(np.array([1.0, -2.0], np.float32), requires_grad=True)
    opt = SGD([w], lr=0.1, momentum=0.9)
    for _ in range(2):
        opt.zero_grad()
        (w * w).sum().backward()
        opt.step()
    np.testing.assert_allclose(w.numpy(), [0.46, -0.92], rtol=1e-5)


def test_adamw_matches_reference_update():
    w0 = randf(3)
    w = Tensor(w0, requires_grad=True)
    opt = AdamW([w], lr=0.1, b1=0.9, b2=0.99, eps=1e-8, wd=0.1)
    ref, m, v = w0.astype(np.float64), 0.0, 0.0
    for t in range(1, 4):
        opt.zero_grad()
        (w * w * w).sum().backward()
        opt.step()
        g = 3 * ref**2
        m = 0.9 * m + 0.1 * g
        v = 0.99 * v + 0.01 * g * g
        update = (m / (1 - 0.9**t)) / (np.sqrt(v / (1 - 0.99**t)) + 1e-8)
        ref = ref - 0.1 * update - 0.1 * 0.1 * ref
    np.testing.assert_allclose(w.numpy(), ref, rtol=1e-4, atol=1e-5)


def test_adamw_params_sharing_a_shape_each_follow_the_reference():
    # parameters of one shape share the step's constants and broadcasts in the graph
    starts = [randf(3), randf(3), randf(2, 2)]
    params = [Tensor(w, requires_grad=True) for w in starts]
    opt = AdamW(params, lr=0.1, b1=0.8, b2=0.95, eps=1e-6, wd=0.05)
    refs = [w.astype(np.float64) for w in starts]
    ms = [np.zeros_like(r) for r in refs]
    vs = [np.zeros_like(r) for r in refs]
    scales = [1.0, -2.0, 0.5]
    for t in range(1, 4):
        opt.zero_grad()
        sum((p * p * p).sum() * s for p, s in zip(params, scales)).backward()
        opt.step()
        for i, s in enumerate(scales):
            g = 3 * s * refs[i] ** 2
            ms[i] = 0.8 * ms[i] + 0.2 * g
            vs[i] = 0.95 * vs[i] + 0.05 * g * g
            update = (ms[i] / (1 - 0.8**t)) / (np.sqrt(vs[i] / (1 - 0.95**t)) + 1e-6)
            refs[i] = refs[i] - 0.1 * update - 0.1 * 0.05 * refs[i]
    for p, ref in zip(params, refs):
        np.testing.assert_allclose(p.numpy(), ref, rtol=1e-4, atol=1e-5)


def test_step_without_backward_says_so():
    w = Tensor(np.ones(2, np.float32), requires_grad=True)
    with pytest.raises(RuntimeError, match="backward"):
        SGD([w], lr=0.1).step()


def test_repeated_steps_compile_nothing_new():
    manual_seed(0)
    model = [nn.Linear(4, 8), nn.Linear(8, 3)]
    opt = AdamW(nn.parameters(model), lr=0.01)
    engine = default_engine()
    x, y = Tensor(randf(16, 4)), Tensor(rng.integers(0, 3, 16).astype(np.int32))
    compiles = []
    for step in range(5):
        opt.zero_grad()
        loss = model[1](model[0](x).relu()).cross_entropy(y)
        loss.backward()
        opt.step(loss)
        compiles.append(engine.compiles)
        if step == 3:
            opt.lr = 0.005  # a learning-rate change is data, not structure
    assert compiles[2:] == [compiles[1]] * 3, compiles


def test_pytorch_style_imports_name_the_frontend_modules():
    script = ("import uopc.nn as nn, uopc.optim as optim\n"
              "from uopc.nn import Linear\n"
              "from uopc.optim import AdamW\n"
              "import uopc, uopc.frontend.nn, uopc.frontend.optim\n"
              "assert nn is uopc.frontend.nn is uopc.nn and optim is uopc.frontend.optim\n"
              "assert Linear is nn.Linear and AdamW is optim.AdamW\n")
    proc = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
