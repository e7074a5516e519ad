"""Checking a pass's options when the pass is built, in the words `uopc-opt` shows.

A pass checks its options in `__post_init__`, so that `-p 'uop-kernelize{max-depth=-3}'`
fails before any IR is read, naming the pass, the option in its `-p` spelling and what
it allows:

    def __post_init__(self) -> None:
        check_option(self, "max_depth", self.max_depth >= 1, "an integer >= 1")
"""

from __future__ import annotations

from xdsl.passes import ModulePass


class PassOptionError(ValueError):
    """A pass option has a value the pass does not accept."""


def check_option(pass_: ModulePass, field: str, ok: bool, allowed: str) -> None:
    """Raise PassOptionError unless `ok`: option `field` of `pass_` must be `allowed`."""
    if ok:
        return
    value = getattr(pass_, field)
    shown = f'"{value}"' if isinstance(value, str) else str(value).lower() \
        if isinstance(value, bool) else str(value)
    raise PassOptionError(f"{pass_.name}: option {field.replace('_', '-')}={shown} is not "
                          f"allowed: expected {allowed}")
