"""Greedy shrinking of a failing fuzz case, shared by the fuzzers (`fuzz.py`,
`hostile.py`): the reproducer a finding prints is the smallest case found that still
fails the same way."""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from typing import TypeVar

T = TypeVar("T")


def shrink(case: T, fails: Callable[[T], bool], smaller_cases: Callable[[T], Iterator[T]],
           budget_s: float) -> T:
    """Greedy shrinking: take the first smaller case that still fails, until none does or
    the time budget is spent."""
    deadline = time.monotonic() + budget_s
    progress = True
    while progress and time.monotonic() < deadline:
        progress = False
        for candidate in smaller_cases(case):
            if time.monotonic() >= deadline:
                break
            if fails(candidate):
                case, progress = candidate, True
                break
    return case
