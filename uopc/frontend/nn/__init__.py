"""Neural-network layers on the lazy Tensor, and `parameters(obj)`.

Layers are `Module`s: plain Python objects holding requires_grad Tensors; calling one
traces its forward pass. Weights are initialized on the host (see
`uopc.frontend.tensor.manual_seed`). `Module.state_dict()` / `load_state_dict()` use
PyTorch's parameter names and layouts, so a torch model's state dict loads directly: the
one layout that differs is Linear's weight, stored (n_in, n_out) here for x @ W and
(out, in) in PyTorch, which these two methods transpose.
"""

from __future__ import annotations

import math
from collections.abc import Iterator, Mapping, Sequence
from typing import Any

import numpy as np

from uopc.frontend.spatial import pair
from uopc.frontend.tensor import Tensor, defer_realize

__all__ = ["Module", "Linear", "Conv1d", "Conv2d", "LayerNorm", "RMSNorm", "GroupNorm",
           "BatchNorm2d", "Embedding", "Dropout", "Sequential", "ModuleList", "parameters"]


def _array(value: Any) -> np.ndarray:
    """A state-dict entry (numpy, a uopc Tensor, or a torch tensor) as a numpy array."""
    if isinstance(value, Tensor):
        return value.numpy()
    if hasattr(value, "detach"):  # a torch tensor, read without importing torch
        value = value.detach().cpu().numpy()
    return np.asarray(value)


class Module:
    """The base of the layers: `forward` on call, train/eval, parameters and state dicts
    with PyTorch's names (attribute paths; list and Sequential entries by index)."""

    training: bool = True

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        return self.forward(*args, **kwargs)

    def forward(self, *args: Any, **kwargs: Any) -> Any:
        raise NotImplementedError(f"{type(self).__name__} has no forward()")

    def children(self) -> Iterator[tuple[str, Module]]:
        for name, value in vars(self).items():
            if isinstance(value, Module):
                yield name, value
            elif isinstance(value, (list, tuple)):
                for i, item in enumerate(value):
                    if isinstance(item, Module):
                        yield f"{name}.{i}", item

    def train(self, mode: bool = True) -> Module:
        self.training = mode
        for _, child in self.children():
            child.train(mode)
        return self

    def eval(self) -> Module:
        return self.train(False)

    def parameters(self) -> list[Tensor]:
        return parameters(self)

    def _own_state(self) -> dict[str, Tensor]:
        """This module's own entries (not its children's) in PyTorch's layout."""
        return {name: value for name, value in vars(self).items()
                if isinstance(value, Tensor) and (value.requires_grad or name in self._buffers())}

    def _buffers(self) -> tuple[str, ...]:
        return ()

    def _load_own(self, name: str, value: np.ndarray) -> None:
        getattr(self, name).assign(Tensor(value))

    def _walk(self, prefix: str = "") -> Iterator[tuple[str, Module]]:
        yield prefix, self
        for name, child in self.children():
            yield from child._walk(f"{prefix}{name}.")

    def state_dict(self) -> dict[str, np.ndarray]:
        """Every parameter and buffer by PyTorch's name, as numpy copies."""
        entries = {f"{prefix}{name}": t for prefix, m in self._walk() for name, t in
                   m._own_state().items()}
        Tensor.realize_all(*entries.values())
        return {name: t.numpy() for name, t in entries.items()}

    def load_state_dict(self, state: Mapping[str, Any], strict: bool = True) -> None:
        """Load a state dict of PyTorch's names and layouts (numpy arrays, Tensors or
        torch tensors); names, shapes and element types are checked first, and every
        mismatch is named."""
        own = {f"{prefix}{name}": (m, name, t) for prefix, m in self._walk() for name, t in
               m._own_state().items()}
        missing = [k for k in own if k not in state]
        unexpected = [k for k in state if k not in own]
        if strict and (missing or unexpected):
            raise KeyError(f"load_state_dict: missing {missing or 'nothing'}, unexpected "
                           f"{unexpected or 'nothing'}")
        values = {}
        for key, (_module, _name, t) in own.items():
            if key not in state:
                continue
            value = _array(state[key])
            if value.shape != t.shape:
                raise ValueError(f"load_state_dict: '{key}' has shape {value.shape}, the "
                                 f"model's is {t.shape}")
            values[key] = value
        for key, value in values.items():
            module, name, t = own[key]
            module._load_own(name, value.astype(np.float32) if t.dtype == "f32" and
                             value.dtype.kind == "f" else value)


def _uniform_init(shape: Sequence[int], fan_in: int) -> Tensor:
    # PyTorch's default for Linear and Conv: U(-1/sqrt(fan_in), 1/sqrt(fan_in))
    bound = 1.0 / math.sqrt(max(fan_in, 1))
    return Tensor.uniform(*shape, low=-bound, high=bound, requires_grad=True)


class Linear(Module):
    """y = x @ weight + bias with weight of shape (n_in, n_out) (PyTorch's is (out, in);
    state dicts hold PyTorch's)."""

    def __init__(self, n_in: int, n_out: int, bias: bool = True):
        self.weight = _uniform_init((n_in, n_out), n_in)
        self.bias = _uniform_init((n_out,), n_in) if bias else None

    def forward(self, x: Tensor) -> Tensor:
        return x.linear(self.weight, self.bias)

    def _own_state(self) -> dict[str, Tensor]:
        own = {"weight": self.weight.T}
        return own if self.bias is None else {**own, "bias": self.bias}

    def _load_own(self, name: str, value: np.ndarray) -> None:
        if name == "weight":
            self.weight.assign(Tensor(np.ascontiguousarray(value.T)))
        else:
            super()._load_own(name, value)


class Conv2d(Module):
    """2-D convolution of (N, C, H, W) inputs; weight of shape (out, in/groups, KH, KW)."""

    def __init__(self, in_channels: int, out_channels: int, kernel_size: int | Sequence[int],
                 stride: int | Sequence[int] = 1, padding: int | Sequence[int] = 0,
                 dilation: int | Sequence[int] = 1, groups: int = 1, bias: bool = True):
        kh, kw = pair(kernel_size, "Conv2d kernel_size")
        fan_in = in_channels // groups * kh * kw
        self.weight = _uniform_init((out_channels, in_channels // groups, kh, kw), fan_in)
        self.bias = _uniform_init((out_channels,), fan_in) if bias else None
        self.stride, self.padding, self.dilation, self.groups = stride, padding, dilation, groups

    def forward(self, x: Tensor) -> Tensor:
        return x.conv2d(self.weight, self.bias, self.stride, self.padding, self.dilation,
                        self.groups)


class Conv1d(Module):
    """1-D convolution of (N, C, L) inputs; weight of shape (out, in/groups, K)."""

    def __init__(self, in_channels: int, out_channels: int, kernel_size: int,
                 stride: int = 1, padding: int = 0, dilation: int = 1, groups: int = 1,
                 bias: bool = True):
        fan_in = in_channels // groups * kernel_size
        self.weight = _uniform_init((out_channels, in_channels // groups, kernel_size), fan_in)
        self.bias = _uniform_init((out_channels,), fan_in) if bias else None
        self.stride, self.padding, self.dilation, self.groups = stride, padding, dilation, groups

    def forward(self, x: Tensor) -> Tensor:
        return x.conv1d(self.weight, self.bias, self.stride, self.padding, self.dilation,
                        self.groups)


class LayerNorm(Module):
    """Normalize over the trailing `normalized_shape` axes, then scale and shift."""

    def __init__(self, normalized_shape: int | Sequence[int], eps: float = 1e-5,
                 elementwise_affine: bool = True):
        self.shape = ((normalized_shape,) if isinstance(normalized_shape, int)
                      else tuple(normalized_shape))
        self.eps = eps
        self.weight = self.bias = None
        if elementwise_affine:
            self.weight = Tensor(np.ones(self.shape, np.float32), requires_grad=True)
            self.bias = Tensor(np.zeros(self.shape, np.float32), requires_grad=True)

    def forward(self, x: Tensor) -> Tensor:
        if x.shape[x.ndim - len(self.shape):] != self.shape:
            raise ValueError(f"LayerNorm over {self.shape} applied to a tensor of shape "
                             f"{x.shape}: its trailing axes must match")
        return x.layer_norm(self.shape, self.weight, self.bias, self.eps)


class RMSNorm(Module):
    """x / sqrt(mean(x^2) + eps) over the trailing axes, times a weight."""

    def __init__(self, normalized_shape: int | Sequence[int], eps: float | None = None,
                 elementwise_affine: bool = True):
        self.shape = ((normalized_shape,) if isinstance(normalized_shape, int)
                      else tuple(normalized_shape))
        self.eps = eps
        self.weight = Tensor(np.ones(self.shape, np.float32), requires_grad=True) \
            if elementwise_affine else None

    def forward(self, x: Tensor) -> Tensor:
        return x.rms_norm(self.shape, self.weight, self.eps)


class GroupNorm(Module):
    """Normalize (N, C, ...) over groups of C / num_groups channels and the other axes."""

    def __init__(self, num_groups: int, num_channels: int, eps: float = 1e-5,
                 affine: bool = True):
        if num_channels % num_groups:
            raise ValueError(f"GroupNorm: {num_channels} channels do not split into "
                             f"{num_groups} groups")
        self.num_groups, self.eps = num_groups, eps
        self.weight = self.bias = None
        if affine:
            self.weight = Tensor(np.ones(num_channels, np.float32), requires_grad=True)
            self.bias = Tensor(np.zeros(num_channels, np.float32), requires_grad=True)

    def forward(self, x: Tensor) -> Tensor:
        n, c = x.shape[:2]
        y = x.reshape(n, self.num_groups, -1).layernorm(-1, self.eps).reshape(x.shape)
        if self.weight is None or self.bias is None:  # both or neither (affine)
            return y
        shape = (1, c) + (1,) * (x.ndim - 2)
        return y * self.weight.reshape(shape) + self.bias.reshape(shape)


class BatchNorm2d(Module):
    """Batch normalization of (N, C, H, W) over (N, H, W): batch statistics in training
    (updating the running ones with `momentum`, the variance unbiased, as PyTorch), the
    running statistics in eval mode. The running statistics are realized with the next
    optimizer step (or any realize), in the same compiled plan."""

    def __init__(self, num_features: int, eps: float = 1e-5, momentum: float = 0.1,
                 affine: bool = True, track_running_stats: bool = True):
        self.eps, self.momentum, self.track = eps, momentum, track_running_stats
        self.weight = self.bias = None
        if affine:
            self.weight = Tensor(np.ones(num_features, np.float32), requires_grad=True)
            self.bias = Tensor(np.zeros(num_features, np.float32), requires_grad=True)
        self.running_mean = Tensor(np.zeros(num_features, np.float32))
        self.running_var = Tensor(np.ones(num_features, np.float32))
        self.num_batches_tracked = Tensor(np.zeros((), np.int32))

    def _buffers(self) -> tuple[str, ...]:
        return ("running_mean", "running_var", "num_batches_tracked") if self.track else ()

    def forward(self, x: Tensor) -> Tensor:
        if x.ndim != 4:
            raise ValueError(f"BatchNorm2d takes (N, C, H, W) inputs, got {x.shape}")
        c = x.shape[1]
        if self.training or not self.track:
            mean = x.mean((0, 2, 3))
            var = x.var((0, 2, 3), correction=0)
            if self.training and self.track:
                count = x.numel() // c
                unbiased = var.detach() * (count / max(count - 1, 1))
                m = self.momentum
                self.running_mean.assign(self.running_mean * (1 - m) + mean.detach() * m)
                self.running_var.assign(self.running_var * (1 - m) + unbiased * m)
                self.num_batches_tracked.assign(self.num_batches_tracked + 1)
                defer_realize(self.running_mean, self.running_var, self.num_batches_tracked)
        else:
            mean, var = self.running_mean, self.running_var
        shape = (1, c, 1, 1)
        y = (x - mean.reshape(shape)) * (var.reshape(shape) + self.eps).rsqrt()
        if self.weight is None or self.bias is None:  # both or neither (affine)
            return y
        return y * self.weight.reshape(shape) + self.bias.reshape(shape)


class Embedding(Module):
    """Rows of a (vocab_size, dim) table picked by integer ids (a one-hot matmul)."""

    def __init__(self, vocab_size: int, dim: int):
        self.vocab_size = vocab_size
        self.weight = Tensor.randn(vocab_size, dim, requires_grad=True)

    def forward(self, ids: Any) -> Tensor:
        """Rows for integer `ids` (a Tensor, array or list); an id outside
        [0, vocab_size) raises where the ids are known on the host."""
        ids = ids if isinstance(ids, Tensor) else Tensor(np.asarray(ids), "i32")
        return ids.label_mask(self.vocab_size, "Embedding").cast(self.weight.dtype) @ self.weight


class Dropout(Module):
    """Zero elements with probability p while training (seeded: see manual_seed)."""

    def __init__(self, p: float = 0.5):
        self.p = p

    def forward(self, x: Tensor) -> Tensor:
        return x.dropout(self.p, self.training)


class Sequential(Module):
    """Modules (or callables) applied in order; entries are named "0", "1", ..."""

    def __init__(self, *layers: Any):
        self.layers = list(layers)

    def children(self) -> Iterator[tuple[str, Module]]:
        for i, layer in enumerate(self.layers):
            if isinstance(layer, Module):
                yield str(i), layer

    def forward(self, x: Any) -> Any:
        for layer in self.layers:
            x = layer(x)
        return x

    def __getitem__(self, i: int) -> Any:
        return self.layers[i]

    def __len__(self) -> int:
        return len(self.layers)

    def __iter__(self) -> Iterator[Any]:
        return iter(self.layers)


class ModuleList(Sequential):
    """A list of modules (named "0", "1", ...), without a forward of its own."""

    def __init__(self, modules: Sequence[Any] = ()):
        super().__init__(*modules)

    def append(self, module: Any) -> ModuleList:
        self.layers.append(module)
        return self

    def forward(self, *args: Any) -> Any:
        raise NotImplementedError("ModuleList has no forward(): iterate over its modules")


def parameters(obj: Any) -> list[Tensor]:
    """Every requires_grad Tensor reachable from `obj` through attributes, lists,
    tuples and dicts, each once, in discovery order."""
    found: list[Tensor] = []
    seen: set[int] = set()
    stack = [obj]
    while stack:
        item = stack.pop()
        if id(item) in seen:
            continue
        seen.add(id(item))
        if isinstance(item, Tensor):
            if item.requires_grad:
                found.append(item)
        elif isinstance(item, dict):
            stack.extend(reversed(list(item.values())))
        elif isinstance(item, (list, tuple)):
            stack.extend(reversed(item))
        elif hasattr(item, "__dict__") and not isinstance(item, type):
            stack.extend(reversed(list(vars(item).values())))
    return found
