"""The numerics report (`python -m uopc.tools.quant_report`) on a tiny GPT-2."""

from __future__ import annotations

import io

import pytest

from uopc.tools import quant_report


def test_report_rows_of_a_tiny_gpt2():
    out = io.StringIO()
    rows = quant_report.report(quant_report.gpt2_case(layers=1, dim=32, vocab=64, tokens=8),
                               ["int8", "q4_0"], out=out)
    f32, int8, q4 = rows
    assert [r["format"] for r in rows] == ["f32", "int8", "q4_0"]
    assert f32["agree"] == 1.0 and all(e == (0.0, 0.0) for e in f32["errors"].values())
    assert list(int8["errors"]) == ["block0", "output"]
    # fewer bits, larger errors, fewer bytes; 8-bit keeps the top-1 choice
    assert 0 < int8["errors"]["output"][0] < q4["errors"]["output"][0] < 0.5
    assert q4["bytes"] < int8["bytes"] < f32["bytes"] / 3
    assert int8["agree"] >= 0.9
    text = out.getvalue()
    assert "GPT-2 1x32, vocab 64" in text and "q4_0" in text and "top-1" in text


def test_unknown_formats_are_refused(capsys):
    with pytest.raises(SystemExit) as exit_info:
        quant_report.main(["--formats", "int8,int3"])
    assert exit_info.value.code == 2
    assert "unknown formats ['int3']" in capsys.readouterr().err
