"""Workarounds for xDSL 0.75 behaviour that would silently change uop constants, in force
only while uopc itself parses or prints.

Each one is tested in tests/filecheck/dialect/constants_exact*.mlir and
tests/py/test_side_effects.py; drop it when the pinned xDSL fixes it.

1. `DenseIntOrFPElementsAttr.is_splat` compares elements with `==`, so the printer
   writes `dense<[0.0, -0.0]>` as the splat `dense<0.0>` and a round trip turns -0.0
   into 0.0 (SPEC §5: 0.0 and -0.0 are different constants). A splat must have
   identical bits in every element.
2. The printer writes non-finite float elements as their bit pattern (`0x7f800000` is
   f32 inf), but the dense-literal parser reads `0x7f800000` as the integer 2139095040
   converted to float, so inf and nan constants do not survive a round trip. As in MLIR,
   a hexadecimal element of a float literal is its bit pattern.

Scope: `exact_constants()` swaps both fixes into xDSL's classes for the duration of a
`with` block and then puts back what was there, so other users of xDSL in the process
see xDSL's own behaviour. It is reentrant (an inner block finds the fixes in place and
leaves them to the outer one). It is entered by uopc's entry points that read or write
IR text: `uopc-opt`'s run, `uopc.runtime.program.parse_program`, and uop.const's own
parse and print hooks. `parse_uir` needs neither fix: it builds literals from numbers,
never through xDSL's dense-literal parser or printer. While a block is active the fixes
are visible to every thread, as any change to a class is.

Why not only in uop.const's hooks: the hooks see the custom form `uop.const dense<...>`,
but the same literals reach xDSL's attribute parser and printer without passing through
them: the generic form (`"uop.const"() <{value = dense<...>}>`, `--print-op-generic`)
and the `memref.global` initializers that uop-rangeify writes. Handling -0.0 and hex bit
patterns inside uop.const alone would mean re-implementing xDSL's dense-literal grammar
(nested lists, hex blobs, splats, booleans) there; instead the hooks enter the same
context, so a uop.const reads and writes exactly even through a bare xDSL Parser or
Printer, and the entry points cover the rest of the module.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

from xdsl.dialects.builtin import AnyFloat, DenseIntOrFPElementsAttr
from xdsl.ir import Attribute
from xdsl.parser import AttrParser

_Element = AttrParser._TensorLiteralElement
#: xDSL's own conversion of a parsed literal element, which the hex fix falls back to
_to_type_decimal = _Element.to_type


def _is_splat_bitwise(self: DenseIntOrFPElementsAttr) -> bool:
    raw = self.data.data
    count = len(self)
    if count == 0:
        return False
    size = len(raw) // count
    return raw == raw[:size] * count


def _to_type_hex_bits(self, parser: AttrParser, element_type: Attribute):
    is_hex = self.span.text.lower().startswith("0x")
    if is_hex and isinstance(element_type, AnyFloat) and type(self.value) is int:
        size = element_type.compile_time_size
        if self.value >= 1 << (8 * size):
            parser.raise_error(f"hexadecimal literal {self.span.text} is wider than "
                               f"{element_type}", at_position=self.span)
        return element_type.unpack(self.value.to_bytes(size, "little"), 1)[0]
    return _to_type_decimal(self, parser, element_type)


#: (class, attribute, uopc's replacement)
FIXES = (
    (DenseIntOrFPElementsAttr, "is_splat", _is_splat_bitwise),
    (_Element, "to_type", _to_type_hex_bits),
)


@contextmanager
def exact_constants() -> Iterator[None]:
    """Parse and print constants bit-exactly (the fixes above) inside the block."""
    cls, name, fix = FIXES[0]
    if cls.__dict__[name] is fix:  # an enclosing block has installed them
        yield
        return
    saved = [cls.__dict__[name] for cls, name, _ in FIXES]
    for cls, name, fix in FIXES:
        setattr(cls, name, fix)
    try:
        yield
    finally:
        for (cls, name, _), original in zip(FIXES, saved):
            setattr(cls, name, original)
