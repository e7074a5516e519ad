"""Workarounds for xDSL 0.75 behaviour that would silently change uop constants.

Applied once, when the uop dialect is imported. Each one is tested in
tests/filecheck/dialect/constants_exact.mlir; drop it when the pinned xDSL fixes it.

1. `DenseIntOrFPElementsAttr.is_splat` compares elements with `==`, so the printer
   writes `dense<[0.0, -0.0]>` as the splat `dense<0.0>` and a round trip turns -0.0
   into 0.0 (SPEC §5: 0.0 and -0.0 are different constants). A splat must have
   identical bits in every element.
2. The printer writes non-finite float elements as their bit pattern (`0x7f800000` is
   f32 inf), but the dense-literal parser reads `0x7f800000` as the integer 2139095040
   converted to float, so inf and nan constants do not survive a round trip. As in MLIR,
   a hexadecimal element of a float literal is its bit pattern.
"""

from xdsl.dialects.builtin import AnyFloat, DenseIntOrFPElementsAttr
from xdsl.ir import Attribute
from xdsl.parser import AttrParser


def _is_splat_bitwise(self: DenseIntOrFPElementsAttr) -> bool:
    raw = self.data.data
    count = len(self)
    if count == 0:
        return False
    size = len(raw) // count
    return raw == raw[:size] * count


_Element = AttrParser._TensorLiteralElement
_to_type_decimal = _Element.to_type


def _to_type_hex_bits(self, parser: AttrParser, element_type: Attribute):
    is_hex = self.span.text.lower().startswith("0x")
    if is_hex and isinstance(element_type, AnyFloat) and type(self.value) is int:
        size = element_type.compile_time_size
        if self.value >= 1 << (8 * size):
            parser.raise_error(f"hexadecimal literal {self.span.text} is wider than "
                               f"{element_type}", at_position=self.span)
        return element_type.unpack(self.value.to_bytes(size, "little"), 1)[0]
    return _to_type_decimal(self, parser, element_type)


DenseIntOrFPElementsAttr.is_splat = _is_splat_bitwise
_Element.to_type = _to_type_hex_bits
