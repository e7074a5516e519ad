"""Losses of the `Tensor` (a mixin class; `Tensor` inherits it), named and defaulted as in
`torch.nn.functional`: one_hot, nll_loss, cross_entropy and the binary cross entropies.

The class axis is the last one (PyTorch's is axis 1 for inputs of rank > 2). Integer
labels select their class by comparison with the class positions (no data-dependent
addressing); labels known on the host are checked against the number of classes.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from uopc.frontend.indexing import host_ids, index_tensor
from uopc.frontend.tensor_protocol import TensorMixin
from uopc.uopdialect.shapes import ShapeError, fmt_shape


class Losses(TensorMixin):
    """one_hot, nll_loss, cross_entropy, binary_cross_entropy(_with_logits)."""

    __slots__ = ()

    def one_hot(self, num_classes: int = -1) -> Any:
        """(..., num_classes) int64 rows with a 1 at each integer label, as PyTorch's
        one_hot. Labels outside [0, num_classes) raise where they are known on the host
        (see `index_tensor`); num_classes=-1 takes the largest label + 1 (the labels must
        be known)."""
        return self.label_mask(num_classes, "one_hot").cast("i64")

    def label_mask(self, num_classes: int, what: str) -> Any:
        """The i1 rows of `one_hot`, for callers that want another type (an embedding
        lookup multiplies them into its table); `what` names the caller in errors."""
        if num_classes == -1:
            values = host_ids(self)
            if values is None:
                raise ValueError(f"{what}: num_classes=-1 needs labels known on the host; "
                                 f"give num_classes")
            num_classes = int(values.max()) + 1 if values.size else 0
        Tensor = self._tensor_class()
        ids = index_tensor(Tensor, self, num_classes, what, wrap=False)
        classes = Tensor(np.arange(num_classes, dtype=np.int32))
        return ids.unsqueeze(-1).eq(classes)

    def nll_loss(self, target: Any, reduction: str = "mean", ignore_index: int = -100) -> Any:
        """Negative log-likelihood of integer `target` under these (..., C) log-probabilities
        (the class axis is the last one; PyTorch's is axis 1 for inputs of rank > 2)."""
        return _nll(self, _labels(self, target, ignore_index, "nll_loss"), reduction,
                    ignore_index, 0.0, "nll_loss")

    def cross_entropy(self, target: Any, reduction: str = "mean",
                      label_smoothing: float = 0.0, ignore_index: int = -100) -> Any:
        """Cross entropy of these (..., C) logits (class axis last) with integer labels, or
        with class probabilities of the logits' shape; `reduction` mean (over the labels
        that are not `ignore_index`), sum or none; `label_smoothing` mixes in the uniform
        distribution, as in PyTorch."""
        Tensor = self._tensor_class()
        logp = self.log_softmax(-1)
        n_classes = self.shape[-1] if self.ndim else 1
        if isinstance(target, (Tensor, np.ndarray)) and target.shape == self.shape and \
                str(target.dtype) in ("f32", "f16", "float32", "float16", "float64"):
            probs = target if isinstance(target, Tensor) else Tensor(target)
            if label_smoothing:
                probs = probs * (1.0 - label_smoothing) + label_smoothing / n_classes
            return _reduced(-(logp * probs).sum(-1), reduction, None, "cross_entropy")
        labels = _labels(self, target, ignore_index, "cross_entropy")
        return _nll(logp, labels, reduction, ignore_index, label_smoothing, "cross_entropy")

    def binary_cross_entropy(self, target: Any, reduction: str = "mean") -> Any:
        """-(y log p + (1 - y) log(1 - p)) of these probabilities; each log is clamped at
        -100, as in PyTorch."""
        p = self._floating()
        y = p._operand(target)
        log_p = p.log().maximum(-100.0)
        log_q = (1.0 - p).log().maximum(-100.0)
        return _reduced(-(y * log_p + (1.0 - y) * log_q), reduction, None,
                        "binary_cross_entropy")

    def binary_cross_entropy_with_logits(self, target: Any, reduction: str = "mean") -> Any:
        """binary_cross_entropy(sigmoid(x), y), computed stably from the logits."""
        x = self._floating()
        y = x._operand(target)
        loss = x.maximum(0.0) - x * y + (-x.abs()).exp().log1p()
        return _reduced(loss, reduction, None, "binary_cross_entropy_with_logits")


def _labels(logits: Any, target: Any, ignore_index: int, what: str) -> Any:
    """Integer class labels for (..., C) scores, checked against C where known (labels
    equal to `ignore_index` are skipped)."""
    Tensor = logits._tensor_class()
    expected = logits.shape[:-1]
    shape = tuple(np.shape(target)) if not isinstance(target, Tensor) else target.shape
    if shape != expected:
        raise ShapeError(f"{what}: scores {fmt_shape(logits.shape)} need labels of shape "
                         f"{fmt_shape(expected)}, got {fmt_shape(shape)}")
    n_classes = logits.shape[-1]
    values = host_ids(target)
    if values is None:
        return target.cast("i32")
    values = np.asarray(values)
    if values.dtype.kind not in "iub":
        raise TypeError(f"{what}: labels must be integers, got {values.dtype} (class "
                        f"probabilities must have the scores' shape {fmt_shape(logits.shape)})")
    keep = values != ignore_index
    index_tensor(Tensor, np.where(keep, values, 0), n_classes, f"{what} labels", wrap=False)
    return target.cast("i32") if isinstance(target, Tensor) else Tensor(np.asarray(target), "i32")


def _reduced(loss: Any, reduction: str, count: Any, what: str) -> Any:
    if reduction == "none":
        return loss
    if reduction == "sum":
        return loss.sum()
    if reduction != "mean":
        raise ValueError(f"{what}: reduction must be 'mean', 'sum' or 'none', got {reduction!r}")
    return loss.mean() if count is None else loss.sum() / count


def _nll(logp: Any, labels: Any, reduction: str, ignore_index: int,
         smoothing: float, what: str) -> Any:
    """The (smoothed) negative log-likelihood of `labels`, 0 where a label is ignored."""
    n_classes = logp.shape[-1]
    ignored = labels.eq(ignore_index)
    safe = ignored.where(0, labels)
    classes = logp._tensor_class()(np.arange(n_classes, dtype=np.int32))
    picked = safe.unsqueeze(-1).eq(classes).where(logp, 0.0).sum(-1)
    loss = -picked
    if smoothing:
        loss = loss * (1.0 - smoothing) - logp.mean(-1) * smoothing
    loss = ignored.where(0.0, loss)
    return _reduced(loss, reduction, ignored.logical_not().sum(dtype="f32"), what)
