"""Workarounds for xDSL 0.75 behaviour that would silently change uop constants, in force
only while uopc itself parses or prints.

Each one is tested in tests/filecheck/dialect/ (constants_exact*.mlir, huge_splat.mlir,
invalid_const.mlir), tests/py/test_side_effects.py and tests/py/test_splat_memory.py; drop
it when the pinned xDSL fixes it.

1. `DenseIntOrFPElementsAttr.is_splat` compares elements with `==`, so the printer
   writes `dense<[0.0, -0.0]>` as the splat `dense<0.0>` and a round trip turns -0.0
   into 0.0 (SPEC §5: 0.0 and -0.0 are different constants). A splat must have
   identical bits in every element.
2. The printer writes non-finite float elements as their bit pattern (`0x7f800000` is
   f32 inf), but the dense-literal parser reads `0x7f800000` as the integer 2139095040
   converted to float, so inf and nan constants do not survive a round trip. As in MLIR,
   a hexadecimal element of a float literal is its bit pattern.
3. The dense-literal parser expands a splat: `dense<1.0> : tensor<2147483648xf32>` becomes
   a Python list of 2**31 floats and then 8 GiB of bytes (a splat hex string,
   `dense<"0x0000803F">`, is repeated as bytes the same way), so parsing a huge splat costs
   memory per element. A splat is read as its one element, stored the way uop.const stores
   splats (and MLIR does): a literal whose data holds one element of a larger type. Any
   other literal is left to xDSL's parser, which reads it from where it starts. Inside
   the block this holds for every dense literal, an `arith.constant`'s or a
   `memref.global`'s too: a reader of one sees one element where the type has more
   (`len()` and `get_values()` count the data; xDSL's printer and uopc's C emitter
   handle it).
4. Resource handles (`dense_resource<key>` and the keys of the `{-# dialect_resources #-}`
   section) are declared in the builtin dialect's blob store, which outlives a parse:
   the second file that names a key (every torch-mlir export names its weights
   `torch_tensor_8_torch.float32`...) gets a fresh key per occurrence, so its attributes
   and its blobs end up under different keys and the weights read as empty. uopc
   declares each handle once per parse and gives every occurrence of it the key it got.

5. `tensor.pad`'s verifier asks a result dimension to be dynamic whenever a pad amount
   on it is an SSA value: `tensor.pad %x low[%c1, 1] high[1, %c2] : tensor<2x3xf32> to
   tensor<4x6xf32>`, which mlir-opt 22 accepts, was rejected. As in MLIR, a static result
   dimension is checked only against a static source size and static pad amounts (it must
   be their sum); the importer then reads pad amounts that are `arith.constant`s.

Scope: `exact_constants()` swaps the fixes into xDSL's classes for the duration of a
`with` block and then puts back what was there, so other users of xDSL in the process
see xDSL's own behaviour. It is reentrant (an inner block finds the fixes in place and
leaves them to the outer one). It is entered by uopc's entry points that read or write
IR text: `uopc-opt`'s run, `uopc.runtime.program.parse_program`, and uop.const's own
parse and print hooks. `parse_uir` needs none of them: it builds literals from numbers,
never through xDSL's dense-literal parser or printer. While a block is active the fixes
are visible to every thread, as any change to a class is.

Why not only in uop.const's hooks: the hooks see the custom form `uop.const dense<...>`,
but the same literals reach xDSL's attribute parser and printer without passing through
them: the generic form (`"uop.const"() <{value = dense<...>}>`, `--print-op-generic`)
and the `memref.global` initializers that uop-rangeify writes. Handling -0.0 and hex bit
patterns inside uop.const alone would mean re-implementing xDSL's dense-literal grammar
(nested lists, hex blobs, splats, booleans) there; instead the hooks enter the same
context, so a uop.const reads and writes exactly, and a splat as one element, even
through a bare xDSL Parser or Printer, and the entry points cover the rest of the module.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any, cast

from xdsl.dialects import tensor
from xdsl.dialects.builtin import (
    DYNAMIC_INDEX,
    AnyDenseElement,
    AnyFloat,
    BytesAttr,
    DenseIntOrFPElementsAttr,
    IndexType,
    IntegerType,
    RankedStructure,
    TensorType,
)
from xdsl.ir import Attribute
from xdsl.parser import AttrParser
from xdsl.utils.exceptions import VerifyException

_Element = AttrParser._TensorLiteralElement
#: xDSL's own conversion of a parsed literal element, which the hex fix falls back to
_to_type_decimal = _Element.to_type
#: xDSL's own dense-literal parser, which the splat fix leaves every other literal to
_parse_dense_expanding = AttrParser.parse_dense_int_or_fp_elements_attr


def _is_splat_bitwise(self: DenseIntOrFPElementsAttr) -> bool:
    raw = self.data.data
    count = len(self)
    if count == 0:
        return False
    size = len(raw) // count
    return raw == raw[:size] * count


def _to_type_hex_bits(self: _Element, parser: AttrParser, element_type: AnyDenseElement) -> Any:
    is_hex = self.span.text.lower().startswith("0x")
    if is_hex and isinstance(element_type, AnyFloat) and type(self.value) is int:
        size = element_type.compile_time_size
        if self.value >= 1 << (8 * size):
            parser.raise_error(f"hexadecimal literal {self.span.text} is wider than "
                               f"{element_type}", at_position=self.span)
        return element_type.unpack(self.value.to_bytes(size, "little"), 1)[0]
    return _to_type_decimal(self, parser, element_type)


def _parse_dense_keeping_splats(
        self: AttrParser, type: RankedStructure[AnyDenseElement] | None) -> DenseIntOrFPElementsAttr:
    """`dense<...>` (`: type` unless `type` is given) with a splat read as one element."""
    start = self.pos
    splat = _parse_splat(self, type)
    if splat is not None:
        return splat
    self._resume_from(start)  # not a splat of several elements: read it again as xDSL does
    return _parse_dense_expanding(self, type)


def _parse_splat(self: AttrParser,
                 type: RankedStructure[AnyDenseElement] | None) -> DenseIntOrFPElementsAttr | None:
    """A splat literal of more than one element, stored as one element; None (with the
    parser somewhere inside the literal) for any other literal. It reads the literal with
    the same xDSL parsing steps, in the same order, as xDSL's parser, so a malformed
    literal gets xDSL's own error message."""
    self.parse_punctuation("<", " in dense attribute")
    if self._current_token.text in (">", "["):
        return None  # empty, or a list of elements
    hex_string = self.parse_optional_str_literal()
    element = self._parse_tensor_literal_element() if hex_string is None else None
    self.parse_punctuation(">", " in dense attribute")
    if type is None:
        self.parse_punctuation(":", " in dense attribute")
        type = self._parse_dense_literal_type()
    element_type = type.get_element_type()
    # vectors stay expanded: they are attribute payloads (conv strides, dilations) whose
    # readers call get_values() and expect every element; uop constants are tensors
    if not isinstance(type, TensorType) or math.prod(type.get_shape()) <= 1 or \
            not isinstance(element_type, AnyFloat | IntegerType | IndexType):
        return None
    if hex_string is not None:
        data = _one_element_hex(hex_string, element_type.compile_time_size)
        return None if data is None else DenseIntOrFPElementsAttr(type, BytesAttr(data))
    assert element is not None  # no hex string, so an element was read
    value = element.to_type(self, element_type)
    # any element kind: from_list's overloads each take one
    one_type: TensorType[Any] = TensorType(element_type, [])
    one = DenseIntOrFPElementsAttr.from_list(one_type, [value])
    return DenseIntOrFPElementsAttr(type, one.data)


def _one_element_hex(text: str, size: int) -> bytes | None:
    """The bytes of a hex string `0x...` of one element of `size` bytes; None for the
    data of every element (or a malformed string, which xDSL reports)."""
    if len(text) != 2 + 2 * size or not text.lower().startswith("0x"):
        return None
    try:
        return bytes.fromhex(text[2:])
    except ValueError:
        return None


def _resource_handle_once(self: AttrParser, dialect_name: str, interface: Any) -> str:
    """The stored key of a resource handle: declared on its first occurrence in this
    parse, the same key on every later one (the `dense_resource` use or the blob)."""
    key = self.parse_identifier(context_msg=" for resource handle")
    keys: dict[tuple[str, str], str] = self.__dict__.setdefault("_uopc_resource_keys", {})
    if (dialect_name, key) not in keys:
        keys[dialect_name, key] = interface.declare_resource(key)
        self.dialect_resources.add((dialect_name, keys[dialect_name, key]))
    return keys[dialect_name, key]


def _verify_pad(self: tensor.PadOp) -> None:
    low, high = self.static_low.get_values(), self.static_high.get_values()
    source = cast(TensorType[Attribute], self.source.type).get_shape()
    if not len(low) == len(high) == len(source):
        raise VerifyException(f"pad sizes low ({len(low)}) and high ({len(high)}) must "
                              f"each have one entry per source dimension ({len(source)})")
    for kind, statics, values in (("low", low, self.low), ("high", high, self.high)):
        if sum(p == DYNAMIC_INDEX for p in statics) != len(values):
            raise VerifyException(f"{kind} has {len(values)} SSA pad amounts for "
                                  f"{sum(p == DYNAMIC_INDEX for p in statics)} dynamic entries")
    result = self.result.type.get_shape()
    if len(result) != len(source):
        raise VerifyException(f"the result has rank {len(result)}, the source {len(source)}")
    for dim, sizes in enumerate(zip(source, low, high, result, strict=True)):
        if DYNAMIC_INDEX not in sizes and sizes[3] != sum(sizes[:3]):
            raise VerifyException(f"result dimension {dim} is {sizes[3]}, expected source "
                                  f"{sizes[0]} + low {sizes[1]} + high {sizes[2]} = "
                                  f"{sum(sizes[:3])}")


#: (class, attribute, uopc's replacement)
FIXES: tuple[tuple[type, str, Callable[..., Any]], ...] = (
    (DenseIntOrFPElementsAttr, "is_splat", _is_splat_bitwise),
    (_Element, "to_type", _to_type_hex_bits),
    (AttrParser, "parse_dense_int_or_fp_elements_attr", _parse_dense_keeping_splats),
    (AttrParser, "_parse_dialect_resource_handle", _resource_handle_once),
    (tensor.PadOp, "verify_", _verify_pad),
)


@contextmanager
def exact_constants() -> Iterator[None]:
    """Parse and print constants bit-exactly, and splats in memory independent of their
    size (the fixes above), inside the block."""
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
