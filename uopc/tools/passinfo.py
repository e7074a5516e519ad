"""What `uopc-opt` says about passes: `--list-passes`, and checked `-p` specs.

A pass describes itself: its docstring's first sentence is its one-line description,
and each option (a dataclass field) is explained by the `#:` comment above it. Options
print in their `-p` spelling (`max-depth`, not `max_depth`), with type and default:

    uop-bound-depth  Materialize every `max-depth`-th op of a fused chain ...
      --max-depth=<int>       default 64: the longest chain of ops fused into one kernel

`check_spec` parses a `-p` string and builds every pass of it as xDSL would, but words
each mistake for the user: an unknown pass (with the closest names), an unknown option
(with the pass's options), a value of the wrong type (with the option's type and
default). A pass rejects out-of-range values itself, in `__post_init__`
(`uopc.passes.options.check_option`), naming the option and the allowed values.
"""

from __future__ import annotations

import dataclasses
import difflib
import inspect
import re
import textwrap
from collections.abc import Callable, Mapping

from xdsl.passes import ModulePass
from xdsl.utils.arg_spec import ArgSpec, parse_pipeline

#: a field line of a dataclass body: `name: type` (with or without a default)
_FIELD = re.compile(r"^\s*([A-Za-z_]\w*)\s*:")


class PassSpecError(ValueError):
    """A `-p` spec names an unknown pass or option, or gives an option a bad value."""


def spelled(option: str) -> str:
    """The `-p` spelling of an option (field) name."""
    return option.replace("_", "-")


def description(cls: type) -> str:
    """The first sentence of `cls`'s docstring, on one line."""
    doc = inspect.getdoc(cls) or ""
    paragraph = " ".join(doc.split("\n\n", 1)[0].split())
    m = re.match(r"(.+?\.)(\s|$)", paragraph)
    return m.group(1) if m else paragraph


def option_comments(cls: type) -> dict[str, str]:
    """The `#:` comment above each field of `cls` (and its bases), by field name."""
    found: dict[str, str] = {}
    for klass in reversed(cls.__mro__):
        if not dataclasses.is_dataclass(klass) or klass.__module__.startswith("xdsl."):
            continue
        try:
            lines = inspect.getsource(klass).splitlines()
        except (OSError, TypeError):
            continue
        comment: list[str] = []
        for line in lines:
            stripped = line.strip()
            if stripped.startswith("#:"):
                comment.append(stripped[2:].strip())
                continue
            m = _FIELD.match(line)
            if m and comment:
                found[m.group(1)] = " ".join(comment)
            comment = []
    return found


@dataclasses.dataclass(frozen=True)
class OptionInfo:
    name: str  # the -p spelling
    type: str
    default: str
    meaning: str


def _type_name(t: object) -> str:
    text = t if isinstance(t, str) else getattr(t, "__name__", None) or str(t)
    return str(text).replace("typing.", "")


def _value_text(value: object) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, str):
        return f'"{value}"'
    if isinstance(value, tuple):
        return ",".join(_value_text(v) for v in value) or "(empty)"
    return "none" if value is None else str(value)


def options(cls: type[ModulePass]) -> list[OptionInfo]:
    """The options of pass class `cls`, in declaration order."""
    comments = option_comments(cls)
    hints = inspect.get_annotations(cls, eval_str=False)
    found = []
    for f in dataclasses.fields(cls):
        if not f.init or f.name == "name":
            continue
        if f.default is not dataclasses.MISSING:
            default = _value_text(f.default)
        elif f.default_factory is not dataclasses.MISSING:
            default = _value_text(f.default_factory())
        else:
            default = "(required)"
        found.append(OptionInfo(spelled(f.name), _type_name(hints.get(f.name, f.type)),
                                default, comments.get(f.name, "")))
    return found


def list_passes(own: Mapping[str, Callable[[], type[ModulePass]]],
                pipelines: Mapping[str, str],
                others: list[str]) -> str:
    """The text of `--list-passes`: uopc's passes with descriptions and options, its
    named pipelines with their passes, then the names of the other (xDSL's) passes."""
    width = max(map(len, (*own, *pipelines)), default=0) + 2
    out = ["uopc passes:"]
    for name, factory in own.items():
        if name in pipelines:
            continue
        cls = factory()
        out.append(f"  {name:<{width}}{description(cls)}")
        for opt in options(cls):
            head = f"--{opt.name}=<{opt.type}>"
            text = f"default {opt.default}" + (f": {opt.meaning}" if opt.meaning else "")
            wrapped = textwrap.wrap(text, 100 - 36) or [""]
            out.append(f"      {head:<30}{wrapped[0]}")
            out.extend(f"      {'':<30}{more}" for more in wrapped[1:])
    out.append("")
    out.append("uopc pipelines (each runs as one pass; they take no options):")
    for name, spec in pipelines.items():
        out.append(f"  {name:<{width}}{spec}")
    out.append("")
    out.append("xDSL passes (see xDSL's documentation):")
    out.extend(textwrap.wrap(", ".join(others), 96, initial_indent="  ",
                             subsequent_indent="  ", break_on_hyphens=False))
    return "\n".join(out) + "\n"


def _build(cls: type[ModulePass], spec: ArgSpec) -> ModulePass:
    """`cls` built from `spec`, every mistake a PassSpecError naming pass and option."""
    known = {spelled(f.name): f for f in dataclasses.fields(cls) if f.init and f.name != "name"}
    for key in spec.parameters:
        if spelled(key) not in known:
            choices = ", ".join(known) or "none"
            raise PassSpecError(f"{spec.name} has no option '{key}': its options are {choices} "
                                f"(uopc-opt --list-passes describes them)")
    try:
        return cls.from_pass_spec(spec)
    except ValueError as err:
        if isinstance(err, PassSpecError) or "Incompatible types" not in str(err):
            raise
    # find the option whose value did not convert, and say what it takes
    infos = {o.name: o for o in options(cls)}
    for key, value in spec.parameters.items():
        try:
            cls.from_pass_spec(ArgSpec(spec.name, {key: value}))
        except ValueError:
            info = infos[spelled(key)]
            given = ",".join(_value_text(v) for v in value) or "nothing"
            raise PassSpecError(
                f"{spec.name}: option {info.name}={given} is not of type {info.type}: give "
                f"{info.name}=<{info.type}> (default {info.default})") from None
    raise PassSpecError(f"{spec.name}: bad options in {str(spec)!r}")


def check_spec(spec: str, available: Mapping[str, Callable[[], type[ModulePass]]]) -> None:
    """Raise PassSpecError for the first mistake in `-p` spec `spec` (see the module
    docstring); an option value a pass rejects raises that pass's ValueError."""
    for entry in parse_pipeline(spec):
        factory = available.get(entry.name)
        if factory is None:
            close = difflib.get_close_matches(entry.name, list(available), n=3)
            hint = f" (did you mean {', '.join(close)}?)" if close else ""
            raise PassSpecError(f"unknown pass '{entry.name}'{hint}: uopc-opt --list-passes "
                                f"lists the passes")
        _build(factory(), entry)
