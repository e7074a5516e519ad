"""Upstream MLIR ops that xDSL 0.75 lacks, defined with MLIR's syntax and properties.

The lowered IR uopc produces is plain upstream IR that `mlir-opt` reads; an op here is
spelled exactly as MLIR spells it, so that this stays true when the lowering uses it.

- `memref.prefetch %m[%i, ...], read|write, locality<0..3>, data|instr : memref<...>`:
  a hint that the element will be read (or written) soon; it computes nothing and
  never faults. `uop-apply-schedule` prefetches the weight rows a matrix-vector
  product's vector lanes stream through (see `split_lanes`).
"""

from __future__ import annotations

from xdsl.dialects.builtin import BoolAttr, IndexType, IntegerAttr, IntegerType, MemRefType
from xdsl.ir import SSAValue
from xdsl.irdl import (
    IRDLOperation,
    irdl_op_definition,
    operand_def,
    prop_def,
    var_operand_def,
)
from xdsl.parser import Parser
from xdsl.printer import Printer
from xdsl.utils.exceptions import VerifyException

I32 = IntegerType(32)


@irdl_op_definition
class PrefetchOp(IRDLOperation):
    """MLIR's `memref.prefetch`: the address of one element of `memref`, with whether it
    is written (`isWrite`), how long to keep it (`localityHint` 0-3, 3: in every cache)
    and whether it is data or instructions (`isDataCache`)."""

    name = "memref.prefetch"

    memref = operand_def(MemRefType)
    indices = var_operand_def(IndexType())
    isWrite = prop_def(BoolAttr)
    localityHint = prop_def(IntegerAttr[IntegerType])
    isDataCache = prop_def(BoolAttr)

    def __init__(self, memref: SSAValue, indices: list[SSAValue], write: bool = False,
                 locality: int = 3, data: bool = True):
        super().__init__(operands=[memref, indices], properties={
            "isWrite": IntegerAttr.from_bool(write),
            "localityHint": IntegerAttr(locality, I32),
            "isDataCache": IntegerAttr.from_bool(data)})

    @property
    def locality(self) -> int:
        return self.localityHint.value.data

    @property
    def is_write(self) -> bool:
        return bool(self.isWrite.value.data)

    def verify_(self) -> None:
        memref_type = self.memref.type
        assert isinstance(memref_type, MemRefType)  # the operand's constraint, checked before
        rank = memref_type.get_num_dims()
        if len(self.indices) != rank:
            raise VerifyException(
                f"{len(self.indices)} indices for a memref of rank "
                f"{rank}; give one index per dimension")
        if not 0 <= self.locality <= 3:
            raise VerifyException(
                f"locality<{self.locality}>: the hint is 0 (no "
                f"locality) to 3 (keep in every cache)")

    @classmethod
    def parse(cls, parser: Parser) -> PrefetchOp:
        memref = parser.parse_operand()
        indices = parser.parse_comma_separated_list(parser.Delimiter.SQUARE,
                                                    parser.parse_operand)
        parser.parse_punctuation(",")
        write = parser.parse_keyword_in(("read", "write"), " in memref.prefetch") == "write"
        parser.parse_punctuation(",")
        parser.parse_keyword("locality")
        parser.parse_punctuation("<")
        locality = parser.parse_integer()
        parser.parse_punctuation(">")
        parser.parse_punctuation(",")
        data = parser.parse_keyword_in(("data", "instr"), " in memref.prefetch") == "data"
        parser.parse_punctuation(":")
        parser.parse_type()
        return cls(memref, indices, write, locality, data)

    def print(self, printer: Printer) -> None:
        printer.print_string(" ")
        printer.print_operand(self.memref)
        printer.print_string("[")
        printer.print_list(self.indices, printer.print_operand)
        printer.print_string(f"], {'write' if self.is_write else 'read'}, "
                             f"locality<{self.locality}>, "
                             f"{'data' if self.isDataCache.value.data else 'instr'} : ")
        printer.print_attribute(self.memref.type)
