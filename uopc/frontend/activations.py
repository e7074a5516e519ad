"""Activation functions of the `Tensor` (a mixin class; `Tensor` inherits it).

Each is a short composition of Tensor methods, written in a form that stays finite where
the textbook form overflows, so that values and gradients match PyTorch's also far out
on the tails:

- sigmoid uses z = exp(-|x|) <= 1 and picks 1/(1+z) or z/(1+z) by sign, so neither the
  value nor any gradient term ever sees exp of a large number (the plain 1/(1+exp(-x))
  has an infinite intermediate below x = -88 and a NaN gradient there);
- tanh and erf are ops of their own (C's tanhf, erff) whose gradient rules (1 - tanh^2,
  2/sqrt(pi) exp(-x^2)) are finite everywhere;
- branches of a `where` that would overflow where they are not selected get an input
  clamped to their own side with another `where` (elu's expm1 of x or 0): the unselected
  branch receives a zero gradient, and 0 * inf would still be NaN. (A `minimum` would
  split the gradient at the tie, 0, in half.)

Names, keywords and defaults follow `torch.nn.functional`.
"""

from __future__ import annotations

import math
from typing import Any

from uopc.frontend.tensor_protocol import TensorMixin

#: SELU's constants (Klambauer et al.), as PyTorch rounds them
SELU_ALPHA = 1.6732632423543772848170429916717
SELU_SCALE = 1.0507009873554804934193349852946


class Activations(TensorMixin):
    """Activation methods; every one computes on `self._floating()` (f16 stays f16)."""

    __slots__ = ()

    def relu(self) -> Any:
        """max(x, 0), with PyTorch's gradient: 0 where x <= 0, so at exactly 0 too (max
        alone would split that tie and pass half)."""
        clamped = self.maximum(0)
        if not self.requires_grad:
            return clamped
        return (self <= 0).where(clamped.detach(), self)

    def sigmoid(self) -> Any:
        x = self._floating()
        positive = x >= 0
        z = positive.where(-x, x).exp()  # exp(-|x|), with -|x|'s gradient right at 0 too
        return positive.where(1.0, z) / (z + 1.0)

    def logsigmoid(self) -> Any:
        return -((-self._floating()).softplus())

    def softplus(self, beta: float = 1.0, threshold: float = 20.0) -> Any:
        """log(1 + exp(beta x)) / beta, and x itself where beta x > threshold."""
        x = self._floating()
        bx = x * beta
        soft = bx.maximum(0.0) / beta + (-bx.abs()).exp().log1p() / beta
        return (bx > threshold).where(x, soft)

    def softsign(self) -> Any:
        x = self._floating()
        return x / (x.abs() + 1.0)

    def silu(self) -> Any:
        x = self._floating()
        return x * x.sigmoid()

    def swish(self) -> Any:
        return self.silu()

    def quick_gelu(self) -> Any:
        x = self._floating()
        return x * (x * 1.702).sigmoid()

    def gelu(self, approximate: str = "none") -> Any:
        """GELU: x * Phi(x) with the exact erf form by default, or PyTorch's tanh
        approximation with approximate="tanh"."""
        x = self._floating()
        if approximate == "none":
            return x * 0.5 * ((x * (1.0 / math.sqrt(2.0))).erf() + 1.0)
        if approximate != "tanh":
            raise ValueError(f"gelu: approximate must be 'none' or 'tanh', got {approximate!r}")
        inner = (x + x * x * x * 0.044715) * math.sqrt(2.0 / math.pi)
        return x * 0.5 * (inner.tanh() + 1.0)

    def mish(self) -> Any:
        x = self._floating()
        return x * x.softplus().tanh()

    def _exp_branch(self, alpha: float) -> Any:
        """alpha * expm1(x / alpha) where x <= 0, the input clamped to that side."""
        x = self._floating()
        positive = x > 0
        return positive, x, (positive.where(0.0, x) / alpha).expm1() * alpha

    def elu(self, alpha: float = 1.0) -> Any:
        positive, x, below = self._exp_branch(1.0)
        return positive.where(x, below * alpha)

    def celu(self, alpha: float = 1.0) -> Any:
        positive, x, below = self._exp_branch(alpha)
        return positive.where(x, below)

    def selu(self) -> Any:
        positive, x, below = self._exp_branch(1.0)
        return positive.where(x, below * SELU_ALPHA) * SELU_SCALE

    def leaky_relu(self, negative_slope: float = 0.01) -> Any:
        x = self._floating()
        return (x > 0).where(x, x * negative_slope)

    def hardtanh(self, min_val: float = -1.0, max_val: float = 1.0) -> Any:
        """x clamped to [min_val, max_val]; the gradient is 1 strictly inside, 0 at the
        bounds and outside (PyTorch's rule, unlike clamp's inclusive one)."""
        x = self._floating()
        inside = (x > min_val) * (x < max_val)
        return inside.where(x, x.clamp(min_val, max_val).detach())

    def relu6(self) -> Any:
        return self.hardtanh(0.0, 6.0)

    def hardsigmoid(self) -> Any:
        return ((self._floating() + 3.0) / 6.0).hardtanh(0.0, 1.0)

    def hardswish(self) -> Any:
        """x * relu6(x + 3) / 6 with PyTorch's gradient: (2x + 3) / 6 strictly inside
        (-3, 3), 0 below, 1 above."""
        x = self._floating()
        middle = x * (x + 3.0) / 6.0
        return (x <= -3.0).where(0.0, (x >= 3.0).where(x, middle))
