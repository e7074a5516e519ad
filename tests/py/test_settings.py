"""Knobs (`uopc.settings`): read on every use, though a value parsed from unchanged text
is kept (the realize path reads four knobs per call)."""

from __future__ import annotations

import os

import pytest

from uopc import settings


def test_a_knob_follows_every_change_of_the_environment(monkeypatch):
    monkeypatch.delenv("OPT", raising=False)
    assert settings.OPT.get() == 1
    monkeypatch.setenv("OPT", "2")
    assert settings.OPT.get() == 2
    assert settings.OPT.get() == 2  # the kept value of the same text
    monkeypatch.setenv("OPT", "0")
    assert settings.OPT.get() == 0
    monkeypatch.delenv("OPT")
    assert settings.OPT.get() == 1
    with settings.override(OPT=2):
        assert settings.OPT.get() == 2
    assert settings.OPT.get() == 1


def test_a_malformed_value_raises_on_every_read_even_after_a_good_one(monkeypatch):
    monkeypatch.setenv("OPT", "1")
    assert settings.OPT.get() == 1
    monkeypatch.setenv("OPT", "3")
    for _ in range(2):
        with pytest.raises(ValueError, match="OPT='3': use OPT=0"):
            settings.OPT.get()
    monkeypatch.setenv("OPT", "1")
    assert settings.OPT.get() == 1


def test_a_list_value_is_new_on_every_read(monkeypatch):
    # the compiler command is a list its callers may extend: a kept one would be shared
    monkeypatch.setenv("CC", "cc -m64")
    first = settings.CC.get()
    first.append("-O3")
    assert settings.CC.get() == ["cc", "-m64"]


def test_a_replaced_os_environ_is_read(monkeypatch):
    # knobs read the process environment's own store while `os.environ` is the one it
    # had at import, and through `os.environ` when it is replaced: either way, and when
    # it switches back, the value in force
    monkeypatch.setenv("OPT", "2")
    assert settings.OPT.get() == 2
    real = os.environ
    monkeypatch.setattr(os, "environ", {"OPT": "0"})
    assert settings.OPT.get() == 0
    os.environ["OPT"] = "2"
    assert settings.OPT.get() == 2
    monkeypatch.setattr(os, "environ", real)
    real["OPT"] = "0"
    assert settings.OPT.get() == 0
