"""Checkpoints: `save(obj, path)` / `load(path)` for state dicts, in safetensors format.

A state dict is a tree of dicts (string keys) whose leaves are tensors (`Tensor` or numpy
arrays) or JSON values (numbers, strings, lists: step counters, hyperparameters, RNG
states). `save` stores every tensor leaf under its key path joined by "/" (e.g.
`model/blocks.0.attn.qkv.weight`) and the tree itself, with tensors replaced by references,
as JSON in the safetensors metadata; `load` rebuilds the same tree with numpy arrays. No
pickle is involved, so loading a file never runs code from it.

Writes are atomic: the file is written to a temporary file in the same directory, flushed
to disk (fsync) and renamed over `path` (os.replace), so a crash mid-write leaves the
previous checkpoint intact; the temporary file a killed save leaves (`.<name>.<pid>.*.tmp`)
is removed by a later save once its writer is gone (`cache_trust.sweep_stale_checkpoints`).

`state_dict(module)` / `load_state_dict(module, state)` name a model's parameters by
attribute path (`blocks.0.attn.qkv.weight`), the way `uopc.nn.parameters` walks it;
optimizers have `state_dict()` / `load_state_dict()` methods. `TrainingCheckpoint` saves
and resumes a whole training run (what the examples' `--checkpoint` / `--resume` use).
"""

from __future__ import annotations

import copy
import json
import os
import tempfile
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path
from typing import Any

import numpy as np
import safetensors.numpy
from safetensors import SafetensorError

from uopc.frontend.dtypes import numpy_dtype
from uopc.frontend.safetensors_file import read_safetensors
from uopc.frontend.tensor import Tensor
from uopc.runtime.cache_trust import sweep_stale_checkpoints

__all__ = ["CheckpointError", "save", "load", "state_dict", "load_state_dict", "check_tensor",
           "check_keys", "named_parameters", "TrainingCheckpoint"]

_TREE_KEY = "uopc.tree"  # safetensors metadata key holding the JSON tree
_TENSOR_REF = "$tensor"  # a tree leaf {"$tensor": name} refers to the stored tensor `name`
#: how deep a loaded tree may nest (a state dict nests a few levels; a file nesting
#: thousands would overflow the stack of the JSON parser or of `_join`)
MAX_DEPTH = 64


class CheckpointError(ValueError):
    """A checkpoint that cannot be written, read, or does not fit what it is loaded into."""


# ---------------------------------------------------------------------- files
def save(obj: Mapping[str, Any], path: str | os.PathLike) -> None:
    """Write the state dict `obj` to `path` atomically (see the module docstring)."""
    path = Path(path)
    tensors: dict[str, np.ndarray] = {}
    tree = _split(obj, (), tensors)
    metadata = {_TREE_KEY: json.dumps(tree)}
    try:
        sweep_stale_checkpoints(path.parent, path.name)
        fd, temp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.{os.getpid()}.",
                                    suffix=".tmp")
    except OSError as e:
        raise CheckpointError(f"{path}: cannot write a checkpoint there ({e})") from None
    os.close(fd)
    try:
        safetensors.numpy.save_file(tensors, temp, metadata)
        with open(temp, "rb+") as written:
            os.fsync(written.fileno())
        os.replace(temp, path)
    except OSError as e:
        Path(temp).unlink(missing_ok=True)
        raise CheckpointError(f"{path}: writing the checkpoint failed ({e}); the previous "
                              f"checkpoint, if any, is unchanged") from None
    except BaseException:
        Path(temp).unlink(missing_ok=True)
        raise
    _fsync_directory(path.parent)


def load(path: str | os.PathLike) -> dict[str, Any]:
    """The state dict saved at `path`, tensors as numpy arrays."""
    path = Path(path)
    if not path.is_file():
        raise CheckpointError(f"{path}: no such checkpoint file")
    try:
        tensors = read_safetensors(path)
        with safetensors.safe_open(path, "np") as opened:
            metadata = opened.metadata() or {}
    except (SafetensorError, OSError, ValueError) as e:
        raise CheckpointError(f"{path}: not a readable safetensors checkpoint ({e})") from None
    if _TREE_KEY not in metadata:
        raise CheckpointError(f"{path}: a safetensors file without uopc's '{_TREE_KEY}' "
                              f"metadata; save it with uopc.save")
    try:
        tree = json.loads(metadata[_TREE_KEY])
    except RecursionError:
        raise CheckpointError(f"{path}: metadata '{_TREE_KEY}' nests deeper than the JSON "
                              f"parser can follow: the file is damaged or not uopc's") from None
    except (ValueError, TypeError) as e:  # bad JSON, an integer of thousands of digits
        raise CheckpointError(f"{path}: metadata '{_TREE_KEY}' is not valid JSON ({e})") from None
    if not isinstance(tree, dict) or set(tree) == {_TENSOR_REF}:
        raise CheckpointError(f"{path}: metadata '{_TREE_KEY}' is a "
                              f"{'tensor reference' if isinstance(tree, dict) else type(tree).__name__}"
                              f", expected a dict (a state dict's tree)")
    return _join(tree, tensors, path, ())


def _fsync_directory(directory: Path) -> None:
    """Make the rename itself durable (POSIX; a no-op where directories cannot be opened)."""
    try:
        fd = os.open(directory, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def _split(node: Any, where: tuple[str, ...], tensors: dict[str, np.ndarray]) -> Any:
    """The JSON tree of `node`, its tensor leaves moved into `tensors` by key path."""
    if isinstance(node, (Tensor, np.ndarray)):
        name = "/".join(where)
        tensors[name] = np.asarray(node.numpy() if isinstance(node, Tensor) else node, order="C")
        return {_TENSOR_REF: name}
    if isinstance(node, Mapping):
        out = {}
        for key, value in node.items():
            if not isinstance(key, str) or "/" in key or key == _TENSOR_REF:
                raise CheckpointError(f"save: key {key!r} at '{'/'.join(where)}' is not "
                                      f"allowed: keys are strings without '/' and not "
                                      f"'{_TENSOR_REF}'")
            out[key] = _split(value, (*where, key), tensors)
        return out
    if isinstance(node, (list, tuple)):
        return [_split(value, (*where, str(i)), tensors) for i, value in enumerate(node)]
    if node is None or isinstance(node, (bool, int, float, str)):
        return node
    if isinstance(node, np.generic):
        return node.item()
    raise CheckpointError(f"save: '{'/'.join(where)}' is a {type(node).__name__}; a state "
                          f"dict holds tensors, numpy arrays, dicts, lists and JSON scalars")


def _join(node: Any, tensors: dict[str, np.ndarray], path: Path,
          where: tuple[str, ...]) -> Any:
    """The tree `node` (at key path `where`) with its tensor references replaced by the
    file's tensors."""
    if len(where) > MAX_DEPTH:
        raise CheckpointError(f"{path}: the metadata nests deeper than {MAX_DEPTH} levels at "
                              f"'{'/'.join(where[:8])}/...': the file is damaged or not uopc's")
    if isinstance(node, dict):
        if set(node) == {_TENSOR_REF}:
            name = node[_TENSOR_REF]
            if not isinstance(name, str):
                raise CheckpointError(f"{path}: the tensor reference at '{'/'.join(where)}' "
                                      f"is a {type(name).__name__}, expected a tensor name")
            if name not in tensors:
                raise CheckpointError(f"{path}: the metadata refers to tensor '{name}', "
                                      f"which the file does not hold")
            return tensors[name]
        return {key: _join(value, tensors, path, (*where, key)) for key, value in node.items()}
    if isinstance(node, list):
        return [_join(value, tensors, path, (*where, str(i))) for i, value in enumerate(node)]
    return node


# ---------------------------------------------------------------------- checking
def check_tensor(what: str, found: Any, shape: tuple[int, ...], dtype: str) -> np.ndarray:
    """`found` as an array of `shape` and uopc element type `dtype`, else a CheckpointError
    naming `what` (the tensor), what was expected and what was found."""
    if isinstance(found, Tensor):
        found = found.numpy()
    if not isinstance(found, np.ndarray):
        raise CheckpointError(f"{what}: expected a tensor of shape {shape} and dtype "
                              f"{dtype}, found a {type(found).__name__}")
    if found.shape != shape:
        raise CheckpointError(f"{what}: expected shape {shape}, found {found.shape}")
    if found.dtype != np.dtype(numpy_dtype(dtype)):
        raise CheckpointError(f"{what}: expected dtype {dtype} "
                              f"({np.dtype(numpy_dtype(dtype))}), found {found.dtype}")
    return found


def check_keys(what: str, found: Mapping[str, Any], expected: list[str]) -> None:
    """A CheckpointError naming the missing and unexpected keys of `found` (a dict)."""
    if not isinstance(found, Mapping):
        raise CheckpointError(f"{what}: expected a dict with keys {expected}, found a "
                              f"{type(found).__name__}")
    missing = [k for k in expected if k not in found]
    unexpected = [k for k in found if k not in expected]
    if missing or unexpected:
        raise CheckpointError(f"{what}: missing {missing or 'nothing'}, unexpected "
                              f"{unexpected or 'nothing'}; was the checkpoint saved from "
                              f"the same model and optimizer?")


# ---------------------------------------------------------------------- modules
def named_parameters(obj: Any, trainable_only: bool = True) -> dict[str, Tensor]:
    """Every requires_grad Tensor reachable from `obj` (as `uopc.nn.parameters` finds them),
    by attribute path: attribute names, list indices and dict keys joined by '.'. With
    `trainable_only=False`, every Tensor reachable (constant weights too)."""
    found: dict[str, Tensor] = {}
    seen: set[int] = set()

    def visit(item: Any, name: str) -> None:
        if id(item) in seen:
            return
        seen.add(id(item))
        if isinstance(item, Tensor):
            if item.requires_grad or not trainable_only:
                found[name] = item
            return
        children: Iterable[tuple[Any, Any]]
        if isinstance(item, dict):
            children = item.items()
        elif isinstance(item, (list, tuple)):
            children = enumerate(item)
        elif hasattr(item, "__dict__") and not isinstance(item, type):
            children = vars(item).items()
        else:
            return
        for key, child in children:
            visit(child, f"{name}.{key}" if name else str(key))

    visit(obj, "")
    return found


def state_dict(module: Any) -> dict[str, np.ndarray]:
    """The module's parameters by attribute path, as numpy copies (a snapshot)."""
    named = named_parameters(module)
    Tensor.realize_all(*named.values())
    return {name: p.numpy() for name, p in named.items()}


def load_state_dict(module: Any, state: Mapping[str, Any]) -> None:
    """Set the module's parameters from `state` (as `state_dict` makes it), after checking
    that the names, shapes and dtypes all match."""
    checked_load(module, state)()


def checked_load(module: Any, state: Mapping[str, Any]) -> Callable[[], None]:
    """Check `state` as `load_state_dict` does and return what loads it, changing nothing
    before (so that a resume checks the model, the optimizer and the rest first)."""
    named = named_parameters(module)
    check_keys("load_state_dict", state, list(named))
    values = {name: check_tensor(f"parameter '{name}'", state[name], p.shape, p.dtype)
              for name, p in named.items()}

    def assign() -> None:
        for name, p in named.items():
            p.assign(Tensor(values[name]))

    return assign


# ---------------------------------------------------------------------- training runs
class TrainingCheckpoint:
    """Save and resume a training run: the model's parameters, the optimizer's state, the
    numpy generator that draws the data, if any (its bit-generator state), and the losses
    so far.

    Pass the object as `train(..., after_step=checkpoint)` to save every `every` steps
    and after `last_step`; `resume()` restores a saved run and returns the step to go on
    from, so the resumed run draws the same batches and computes the same losses."""

    def __init__(self, path: str | os.PathLike, model: Any, optimizer: Any,
                 rng: np.random.Generator | None, every: int, last_step: int):
        if every < 1:
            raise CheckpointError(f"checkpoint interval {every}: save every N >= 1 steps")
        self.path, self.model, self.optimizer, self.rng = Path(path), model, optimizer, rng
        if not self.path.parent.is_dir():
            raise CheckpointError(f"{self.path}: the folder {self.path.parent} does not exist")
        self.every, self.last_step = every, last_step
        self.losses: list[float] = []

    def resume(self) -> int:
        """Load the checkpoint into the model, optimizer and generator; the next step.
        Everything is checked before anything is loaded: a refused checkpoint (a
        CheckpointError naming the file) leaves the run as it was, never half loaded."""
        state = load(self.path)
        check_keys(f"{self.path}", state, ["model", "optimizer", "rng", "losses"])
        try:
            load_model = checked_load(self.model, state["model"])
            load_optimizer = self.optimizer.checked_load(state["optimizer"])
        except CheckpointError as e:
            raise CheckpointError(f"{self.path}: {e}") from None
        generator = None
        if self.rng is not None:
            generator = copy.deepcopy(self.rng.bit_generator)
            try:
                generator.state = state["rng"]
            except (TypeError, ValueError, KeyError, OverflowError) as e:
                raise CheckpointError(f"{self.path}: 'rng' is not a state of this run's "
                                      f"{type(self.rng.bit_generator).__name__} ({e})") from None
        losses = state["losses"]
        if not isinstance(losses, list) or not all(isinstance(x, float) for x in losses):
            raise CheckpointError(f"{self.path}: 'losses' is not a list of numbers")
        load_model()
        load_optimizer()
        if self.rng is not None and generator is not None:
            self.rng.bit_generator.state = generator.state
        self.losses = losses
        return self.optimizer.steps + 1

    @staticmethod
    def start(path: str | os.PathLike | None, resume: bool, model: Any, optimizer: Any,
              rng: np.random.Generator | None, every: int,
              last_step: int, log: Callable[[str], None] = print
              ) -> tuple[int, TrainingCheckpoint | None]:
        """(first step, checkpoint) of a run: (1, None) without a `path`, the step after
        the saved one when resuming (reported through `log`), else step 1 with a
        checkpoint that will be written."""
        if path is None:
            return 1, None
        checkpoint = TrainingCheckpoint(path, model, optimizer, rng, every, last_step)
        if not resume:
            return 1, checkpoint
        first_step = checkpoint.resume()
        log(f"resumed {path} after step {first_step - 1}")
        return first_step, checkpoint

    def __call__(self, step: int, loss: float) -> None:
        self.losses.append(loss)
        if step % self.every == 0 or step == self.last_step:
            save({"model": state_dict(self.model), "optimizer": self.optimizer.state_dict(),
                  "rng": None if self.rng is None else self.rng.bit_generator.state,
                  "losses": self.losses}, self.path)
