"""Model configs and file metadata read field by field, each field checked: a hostile or
damaged `config.json` or GGUF header gives a `ModelFileError` naming the file and the
field, never a KeyError, a TypeError from `int(None)`, a ZeroDivisionError from zero
heads or a model built with no blocks.

    fields = Fields(config)                      # config: read_config's ModelConfig, or a dict
    layers = fields.count("n_layer")             # an int >= 1 (no bool, no string, no float)
    eps = fields.epsilon("layer_norm_epsilon", 1e-5)  # a finite float >= 0
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

import numpy as np

#: no count in a model config is larger (2^31: a vocabulary, a context, a width)
MAX_COUNT = 1 << 31
_MISSING = object()


class ModelFileError(ValueError):
    """A model file or config that cannot be a model; the message names the file, the
    field, what it holds and what was expected."""


class ModelConfig(dict):
    """A config dict that knows the file it was read from (for messages)."""

    def __init__(self, values: Mapping[str, Any], source: str):
        super().__init__(values)
        self.source = source


def _shown(value: Any) -> str:
    if isinstance(value, int) and value.bit_length() > 100:
        return f"an integer of {value.bit_length()} bits"
    text = repr(value)
    return text if len(text) <= 40 else text[:37] + "..."


class Fields:
    """Checked reads of a config mapping (`source`: the file named in errors; default
    the config's own `.source`, else "config"). `prefix` is put before every key
    (a GGUF file's "llama.")."""

    def __init__(self, config: Any, source: str | None = None, prefix: str = ""):
        self.source = source or getattr(config, "source", None) or "config"
        if not isinstance(config, Mapping):
            raise ModelFileError(f"{self.source}: expected a JSON object of settings, found "
                                 f"a {type(config).__name__}")
        self.config, self.prefix = config, prefix

    def error(self, key: str, problem: str) -> ModelFileError:
        return ModelFileError(f"{self.source}: field {self.prefix}{key} {problem}")

    def raw(self, key: str, default: Any = _MISSING) -> Any:
        value = self.config.get(self.prefix + key, _MISSING)
        if value is _MISSING or (value is None and default is not _MISSING):
            if default is _MISSING:
                raise self.error(key, "is missing")
            return default
        return value

    def count(self, key: str, default: Any = _MISSING, minimum: int = 1) -> int:
        """A whole number from `minimum` to MAX_COUNT."""
        value = self.raw(key, default)
        if isinstance(value, (bool, np.bool_)) or not isinstance(value, (int, np.integer)):
            raise self.error(key, f"is {type(value).__name__} {_shown(value)}, expected a "
                                  f"whole number")
        if not minimum <= value <= MAX_COUNT:
            raise self.error(key, f"is {_shown(value)}, expected a whole number from "
                                  f"{minimum} to {MAX_COUNT}")
        return int(value)

    def number(self, key: str, default: Any = _MISSING, minimum: float = 0.0,
               above: bool = False) -> float:
        """A finite real number >= `minimum` (> with `above`)."""
        value = self.raw(key, default)
        number = None
        if not isinstance(value, (bool, np.bool_)) and isinstance(
                value, (int, float, np.integer, np.floating)):
            try:
                number = float(value)
            except OverflowError:
                number = None
        if number is None or not math.isfinite(number):
            raise self.error(key, f"is {type(value).__name__} {_shown(value)}, expected a "
                                  f"finite number")
        if number < minimum or (above and number == minimum):
            raise self.error(key, f"is {_shown(value)}, expected a number "
                                  f"{'>' if above else '>='} {minimum}")
        return number

    def epsilon(self, key: str, default: float) -> float:
        """A normalization's epsilon: a finite number >= 0."""
        return self.number(key, default)

    def flag(self, key: str, default: bool = False) -> bool:
        value = self.raw(key, default)
        if not isinstance(value, (bool, np.bool_)):
            raise self.error(key, f"is {type(value).__name__} {_shown(value)}, expected "
                                  f"true or false")
        return bool(value)

    def text(self, key: str, default: Any = _MISSING) -> str:
        value = self.raw(key, default)
        if not isinstance(value, str):
            raise self.error(key, f"is {type(value).__name__} {_shown(value)}, expected a "
                                  f"string")
        return value

    def divides(self, key: str, value: int, other_key: str, other: int) -> None:
        """`value` (field `key`) must divide `other` (field `other_key`)."""
        if other % value:
            raise self.error(key, f"is {value}, which does not divide {self.prefix}"
                                  f"{other_key} ({other})")
