"""Weight-only quantization on the Tensor API: `quantize_weight` and `quantize_model`.

A quantized weight is a `QuantizedTensor`: a lazy Tensor whose value is the dequantized
matrix, computed from graph inputs that hold only packed storage (see
`uopc.uopdialect.quant_formats`): the codes as i32 words (the packed bytes, read as
little-endian words; rows padded to whole words; 4-bit GGUF blocks repacked in element
order), the block scales, and a small pattern of code positions. Its graph is
`uop.decode` of the words broadcast over the codes they hold, times the scales broadcast
over their blocks; codes that are an element type of their own (f16, bf16, and the 8-bit
integers of int8 and q8_0) are instead a tensor of that type cast to f32, which is the
same value and needs no decode. All are
elementwise and movement ops, so kernelize fuses them into whatever reads the weight
(`x @ qw.T`, a `Linear`, an `Embedding` gather) and the kernel decodes bytes inline; no
f32 copy of the weight is made (kernelize never stages or copies a decoded weight). Activations stay f32.

Quantization runs along the last axis of the matrix given (PyTorch's (out, in) weights:
along the inputs, the axis a matmul reduces); `quantize_model` quantizes an `nn.Linear`
weight (stored (n_in, n_out)) through its transpose for the same reason.
"""

from __future__ import annotations

import fnmatch
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

import numpy as np

from uopc.frontend.nn import Linear, Sequential
from uopc.frontend.tensor import Tensor
from uopc.uopdialect.dtypes import BY_NUMPY, DTYPES
from uopc.uopdialect.graph import UOp
from uopc.uopdialect.ops import OP
from uopc.uopdialect.quant_formats import Format, Packed, QuantError, get_format, pack_codes
from uopc.uopdialect.shapes import Sig

__all__ = ["QuantizedTensor", "QuantReport", "quantize_weight", "quantize_model",
           "QuantError"]


def _words(data: np.ndarray) -> np.ndarray:
    """Bytes (rows, n) as i32 words (rows, ceil(n / 4)), rows zero-padded to whole words."""
    rows, n = data.shape
    padded = np.zeros((rows, -(-n // 4) * 4), np.uint8)
    padded[:, :n] = data
    return padded.view("<i4").astype(np.int32)


def _decoded(data: np.ndarray, code: str, bits: int, count: int) -> Tensor:
    """The first `count` codes of each row of packed bytes `data`, decoded to f32
    (rows, count): each word broadcast over the codes it holds, with their positions."""
    words = _words(data)
    rows, n = words.shape
    per = 32 // bits
    spread = Tensor(words).reshape(rows, n, 1).expand(rows, n, per).reshape(rows, n * per)
    # the positions are a constant of the graph, not an input: the C compiler then sees
    # every shift amount
    pattern = Tensor._wrap(UOp.const(tuple(range(per)), Sig((per,), "i32")), False)
    pos = pattern.reshape(1, 1, per).expand(rows, n, per)
    values = spread._apply(OP.decode, pos.reshape(rows, n * per), arg=code)
    return values if n * per == count else values.shrink(((0, rows), (0, count)))


#: the codes that are values of an element type of their own, by code name: read as a
#: tensor of that type, cast to f32 (the same value; no `uop.decode`). 8-bit integers
#: are widened by one vector instruction where a decode takes four shifts and masks
CODE_TYPES = {"f16": "f16", "bf16": "bf16", "int8": "i8"}


def _as_floats(data: np.ndarray, dtype: str, count: int) -> Tensor:
    """The first `count` codes of element type `dtype` of each row of little-endian
    bytes `data`, as a tensor of that type cast to f32 (rows, count)."""
    rows = data.shape[0]
    values = np.ascontiguousarray(data).view(DTYPES[dtype].numpy.newbyteorder("<"))
    return Tensor(values.reshape(rows, -1)[:, :count].astype(DTYPES[dtype].numpy)).float()


def _over_blocks(scale: Tensor, group: int) -> Tensor:
    """(rows, blocks) scales broadcast over the elements of their blocks: (rows, cols)."""
    rows, blocks = scale.shape
    return scale.reshape(rows, blocks, 1).expand(rows, blocks, group).reshape(rows, blocks * group)


def dequantized(packed: Packed) -> Tensor:
    """The lazy f32 Tensor of `packed`, decoded from packed storage where it is read."""
    fmt = packed.format
    rows, cols = packed.shape
    g, width = packed.group, packed.padded_cols  # whole blocks; cut to cols at the end
    codes = packed.codes
    if fmt.split_nibbles:
        # ggml's order (byte j of a block holds elements j and j + g/2) repacked in
        # element order, as many bytes: consecutive elements then lie in consecutive
        # nibbles of one word, which a matvec's vector lanes read as consecutive words
        codes = pack_codes(fmt.block_codes(packed), fmt.bits)
    own_type = CODE_TYPES.get(fmt.code.name)
    values = _as_floats(codes, own_type, width) if own_type \
        else _decoded(codes, fmt.code.name, fmt.bits, width)
    if fmt.offset:
        values = values + fmt.offset
    if fmt.scale == "mx":
        scale = _decoded(packed.scales, "e8m0", 8, width // g)
    else:
        scale = Tensor(packed.scales).float()
    out = values * _over_blocks(scale, g)
    if packed.mins is not None:
        out = out + _over_blocks(Tensor(packed.mins).float(), g)
    return out if width == cols else out.shrink(((0, rows), (0, cols)))


class QuantizedTensor(Tensor):
    """A weight in packed storage: a Tensor whose value is `packed`'s dequantized matrix,
    computed inline by the kernels that read it. It never becomes an f32 buffer: realizing
    it (or `numpy()`) computes the values without replacing the packed graph."""

    def __init__(self, packed: Packed):
        super().__init__(dequantized(packed).uop)
        self.packed = packed

    @property
    def format(self) -> Format:
        return self.packed.format

    @property
    def nbytes(self) -> int:
        """Bytes of packed storage (codes, scales and mins)."""
        return self.packed.nbytes

    def _set_value(self, array: np.ndarray) -> None:
        pass  # keep the packed graph: an f32 buffer here would be the full-precision copy

    def numpy(self) -> np.ndarray:
        """The dequantized values, computed by the compiled decode."""
        return Tensor(self.uop).numpy()

    def __repr__(self) -> str:
        return (f"QuantizedTensor(shape={self.shape}, format={self.format.name}, "
                f"group={self.packed.group}, bytes={self.nbytes})")


def quantize_weight(tensor: Any, fmt: str, group_size: int | None = None) -> QuantizedTensor:
    """Quantize a 2-D float weight (a Tensor or array) to weight format `fmt` (see
    `uopc.uopdialect.quant_formats.FORMATS`) in blocks along its last axis: `group_size`
    elements per scale (32 when omitted; MX and GGUF formats have fixed blocks of 32)."""
    value = tensor.numpy() if isinstance(tensor, Tensor) else np.asarray(tensor)
    if value.ndim != 2 or value.dtype not in BY_NUMPY or not BY_NUMPY[value.dtype].is_float:
        raise QuantError(f"quantize_weight takes a 2-D float weight, got shape "
                         f"{value.shape} of {value.dtype}: quantize matrices (reshape "
                         f"others first)")
    return QuantizedTensor(get_format(fmt).quantize(value, group_size))


# ---------------------------------------------------------------------------------------
# whole models


@dataclass(frozen=True)
class QuantEntry:
    """One quantized weight of a model: its name, shape and bytes before and after, and
    its worst error relative to its largest magnitude (max|w - q| / max|w|)."""

    name: str
    shape: tuple[int, ...]
    bytes_before: int
    bytes_after: int
    worst_relative_error: float


@dataclass(frozen=True)
class QuantReport:
    """What `quantize_model` did, one entry per weight."""

    format: str
    entries: tuple[QuantEntry, ...]

    @property
    def bytes_before(self) -> int:
        return sum(e.bytes_before for e in self.entries)

    @property
    def bytes_after(self) -> int:
        return sum(e.bytes_after for e in self.entries)

    def __str__(self) -> str:
        width = max([len(e.name) for e in self.entries] + [6])
        lines = [f"{'weight':<{width}}  {'shape':>14}  {'bytes':>10}  {'quantized':>10}  "
                 f"{'worst rel err':>13}"]
        for e in self.entries:
            lines.append(f"{e.name:<{width}}  {str(e.shape):>14}  {e.bytes_before:>10}  "
                         f"{e.bytes_after:>10}  {e.worst_relative_error:>13.3e}")
        lines.append(f"{'total (' + self.format + ')':<{width}}  {'':>14}  "
                     f"{self.bytes_before:>10}  {self.bytes_after:>10}")
        return "\n".join(lines)


def _is_container(obj: Any) -> bool:
    """A model object, list, tuple or dict (what the model walk enters)."""
    return isinstance(obj, (list, tuple, dict)) or (
        hasattr(obj, "__dict__") and not isinstance(obj, (type, Tensor, np.ndarray)))


def _items(obj: Any) -> list[tuple[Any, Any]]:
    if isinstance(obj, dict):
        return list(obj.items())
    if isinstance(obj, (list, tuple)):
        return list(enumerate(obj))
    return list(vars(obj).items())


def _rewrite(obj: Any, path: str, visit, seen: set[int]) -> Any:
    """`obj` with every value inside it (recursively) replaced by `visit(name, obj, key,
    value)` where that returns something other than None. Lists, dicts and objects change
    in place; a tuple is rebuilt and returned."""
    if id(obj) in seen:
        return obj
    seen.add(id(obj))
    for key, value in _items(obj):
        if isinstance(obj, Sequential) and key == "layers":
            name = path  # entries are named by index, as in state dicts: "net.0.weight"
        else:
            name = f"{path}.{key}" if path else str(key)
        new = visit(name, obj, key, value)
        if new is None and _is_container(value):
            rebuilt = _rewrite(value, name, visit, seen)
            new = rebuilt if rebuilt is not value else None
        if new is None:
            continue
        if isinstance(obj, tuple):
            obj = obj[:key] + (new,) + obj[key + 1:]
        elif isinstance(obj, (list, dict)):
            obj[key] = new
        else:
            setattr(obj, key, new)
    return obj


def _is_matrix(t: Any) -> bool:
    return isinstance(t, Tensor) and not isinstance(t, QuantizedTensor) and t.ndim == 2 \
        and t.dtype == "f32"


def quantize_model(model: Any, fmt: str, group_size: int | None = None,
                   exclude: Iterable[str] = ()) -> QuantReport:
    """Quantize the weights of `model` in place and report what changed.

    In `uopc.nn` layers, every `Linear` weight (through its transpose, so blocks run along
    the inputs) and every `Embedding` weight is quantized; any other 2-D f32 weight the
    model holds in attributes, lists, tuples or dicts (the matrices of the `uopc.frontend.llm`
    models, a position table) is quantized along its last axis, and views of it (a tied
    head `wte.T`) follow; a transposed view held alone (Llama's (out, in) weights, read
    as (in, out)) quantizes the matrix it views, along that matrix's last axis. Names are
    attribute paths (`blocks.0.fc.weight`); `exclude` takes names or fnmatch patterns
    (`head.*`) to keep in f32."""
    patterns = list(exclude)
    entries: list[QuantEntry] = []
    done: dict[UOp, Tensor] = {}  # quantized matrices by their old node (for views)

    def kept(name: str) -> bool:
        return any(fnmatch.fnmatchcase(name, p) for p in patterns)

    def record(name: str, shape: tuple[int, ...], w: np.ndarray) -> QuantizedTensor:
        q = quantize_weight(w, fmt, group_size)
        peak = max(float(np.abs(w).max()), float(np.finfo(np.float32).tiny))
        error = float(np.abs(q.numpy() - w).max()) / peak
        entries.append(QuantEntry(name, shape, w.size * 4, q.nbytes, error))
        return q

    def quantize(name: str, owner: Any, key: Any, t: Any) -> Tensor | None:
        if not _is_matrix(t) or kept(name):
            return None
        node = t.uop
        if node.op is OP.permute and node.srcs[0].op is OP.buffer:
            # a transposed view of a stored matrix (the (out, in) weights of the llm
            # Llama, read as (in, out)): quantize the stored rows, along the inputs
            stored = node.srcs[0]
            if stored not in done:
                done[stored] = record(name, tuple(t.shape), np.asarray(stored.arg))
            return done[stored].permute(node.arg)
        if node.op is not OP.buffer:
            return None
        if node in done:  # met through a view first
            return done[node]
        transposed = isinstance(owner, Linear) and key == "weight"
        w = t.numpy()
        q = record(name, tuple(t.shape), np.ascontiguousarray(w.T) if transposed else w)
        done[node] = new = q.T if transposed else q
        return new

    def repoint(name: str, owner: Any, key: Any, t: Any) -> Tensor | None:
        """Views of quantized matrices (permutes of their old nodes) read the new ones."""
        if _is_matrix(t) and t.uop.op is OP.permute and t.uop.srcs[0] in done:
            return done[t.uop.srcs[0]].permute(t.uop.arg)
        return None

    _rewrite(model, "", quantize, set())
    _rewrite(model, "", repoint, set())
    if not entries:
        raise QuantError(f"quantize_model found no weight to quantize in "
                         f"{type(model).__name__} (excluded: {patterns or 'nothing'})")
    return QuantReport(fmt, tuple(entries))
