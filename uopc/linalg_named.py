"""Named linalg ops that xDSL 0.75 does not register, as MLIR spells and defines them.

Frontends print their contractions, convolutions and poolings as named ops
(`linalg.batch_matmul`, `linalg.depthwise_conv_2d_nchw_chw`, ...); xDSL 0.75 registers
only `matmul`, a few NCHW/NHWC 2-D convolutions and `pooling_nchw_max`, so any other name
is a parse error. Each op here is a structured op like xDSL's own named ops: its operands
(`ins`, `outs`), its indexing maps (MLIR's, from the op's definition in
`LinalgNamedStructuredOps.yaml`: loop dimensions in the same order), its iterator kinds
and its hidden body (multiply-accumulate, or max / sum for the poolings). `uop-from-linalg`
reads them through these maps like any `linalg.generic`.

One parser fix goes with them: xDSL 0.75's `linalg.generic` reads its result types as a
bare list, so the parenthesized list MLIR prints for two or more results
(`-> (tensor<4xf32>, tensor<4xi64>)`, an argmax) is read as the start of a function type
and fails with "Expected '->'" on the next line; uopc reads a parenthesized list there.
It only turns that parse error into the parse MLIR does.

`install_linalg_extensions` puts both into xDSL's linalg dialect; uopc's context and its
plugin entry point (`uopc.pipelines`, which the stock `xdsl-opt` loads) call it, so both
tools read the same linalg.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, ClassVar

from xdsl.builder import Builder
from xdsl.dialects import arith
from xdsl.dialects.builtin import AnyFloat, ArrayAttr, IntegerType
from xdsl.dialects.linalg.abstract_ops import ConvOperation, NamedOperation, PoolingOperation
from xdsl.dialects.linalg.attrs import IteratorTypeAttr
from xdsl.dialects.linalg.ops import GenericOp, YieldOp
from xdsl.ir import BlockArgument, Operation, Region, SSAValue
from xdsl.ir.affine import AffineDimExpr, AffineExpr, AffineMap
from xdsl.irdl import irdl_op_definition
from xdsl.parser import Parser

PARALLEL, REDUCTION = "parallel", "reduction"


def _maps(num_dims: int, *results: Sequence[AffineExpr]) -> tuple[AffineMap, ...]:
    return tuple(AffineMap(num_dims, 0, tuple(r)) for r in results)


def _dims(n: int) -> tuple[AffineDimExpr, ...]:
    return tuple(AffineDimExpr(k) for k in range(n))


def _iterators(kinds: Sequence[str]) -> ArrayAttr[IteratorTypeAttr]:
    return ArrayAttr(IteratorTypeAttr.parallel() if k == PARALLEL else
                     IteratorTypeAttr.reduction() for k in kinds)


def _mac_region(inputs: Sequence[SSAValue], outputs: Sequence[SSAValue]) -> Region:
    """out += in0 * in1 (integer inputs sign-extended to the accumulator's type)."""
    types = NamedOperation.body_arg_types((*inputs, *outputs))
    floating = isinstance(types[-1], AnyFloat)
    add = arith.AddfOp if floating else arith.AddiOp
    mul = arith.MulfOp if floating else arith.MuliOp

    @Builder.implicit_region(types)
    def region(args: tuple[BlockArgument, ...]) -> None:
        a: SSAValue = args[0]
        b: SSAValue = args[1]
        if not floating and types[0] != types[-1]:
            assert isinstance(types[-1], IntegerType)
            a = arith.ExtSIOp(a, types[-1]).result
            b = arith.ExtSIOp(b, types[-1]).result
        YieldOp(add(mul(a, b), args[2]))

    return region


def combine_region(inputs: Sequence[SSAValue], outputs: Sequence[SSAValue],
                    combine: tuple[type[Operation], type[Operation]]) -> Region:
    """out = combine(out, in0): the float or the integer op of `combine`."""
    types = NamedOperation.body_arg_types((*inputs, *outputs))
    op = combine[0] if isinstance(types[-1], AnyFloat) else combine[1]

    @Builder.implicit_region(types)
    def region(args: tuple[BlockArgument, ...]) -> None:
        YieldOp(op.create(operands=[args[-1], args[0]], result_types=[types[-1]]))

    return region


class _Contraction(NamedOperation):
    """A multiply-accumulate named op with fixed maps (no strides)."""

    PRINT_ATTRS_IN_FRONT: ClassVar[bool] = True
    KINDS: ClassVar[tuple[str, ...]] = ()

    @classmethod
    def get_hidden_region(cls, inputs: Sequence[SSAValue],
                          outputs: Sequence[SSAValue]) -> Region:
        return _mac_region(inputs, outputs)

    def get_iterator_types(self) -> ArrayAttr[IteratorTypeAttr]:
        return _iterators(self.KINDS)


@irdl_op_definition
class BatchMatmulOp(_Contraction):
    name = "linalg.batch_matmul"
    KINDS: ClassVar[tuple[str, ...]] = (PARALLEL, PARALLEL, PARALLEL, REDUCTION)

    def get_default_indexing_maps(self) -> Sequence[AffineMap]:
        b, m, n, k = _dims(4)
        return _maps(4, (b, m, k), (b, k, n), (b, m, n))


@irdl_op_definition
class MatvecOp(_Contraction):
    name = "linalg.matvec"
    KINDS: ClassVar[tuple[str, ...]] = (PARALLEL, REDUCTION)

    def get_default_indexing_maps(self) -> Sequence[AffineMap]:
        m, k = _dims(2)
        return _maps(2, (m, k), (k,), (m,))


@irdl_op_definition
class VecmatOp(_Contraction):
    name = "linalg.vecmat"
    KINDS: ClassVar[tuple[str, ...]] = (PARALLEL, REDUCTION)

    def get_default_indexing_maps(self) -> Sequence[AffineMap]:
        n, k = _dims(2)
        return _maps(2, (k,), (k, n), (n,))


@irdl_op_definition
class BatchMatvecOp(_Contraction):
    name = "linalg.batch_matvec"
    KINDS: ClassVar[tuple[str, ...]] = (PARALLEL, PARALLEL, REDUCTION)

    def get_default_indexing_maps(self) -> Sequence[AffineMap]:
        b, m, k = _dims(3)
        return _maps(3, (b, m, k), (b, k), (b, m))


@irdl_op_definition
class DotOp(_Contraction):
    name = "linalg.dot"
    KINDS: ClassVar[tuple[str, ...]] = (REDUCTION,)

    def get_default_indexing_maps(self) -> Sequence[AffineMap]:
        (k,) = _dims(1)
        return _maps(1, (k,), (k,), ())


@irdl_op_definition
class Mmt4DOp(_Contraction):
    """C[m1, n1, m0, n0] += A[m1, k1, m0, k0] * B[n1, k1, n0, k0] (packed tiles)."""

    name = "linalg.mmt4d"
    KINDS: ClassVar[tuple[str, ...]] = (PARALLEL, PARALLEL, REDUCTION, PARALLEL, PARALLEL, REDUCTION)

    def get_default_indexing_maps(self) -> Sequence[AffineMap]:
        m1, n1, k1, m0, n0, k0 = _dims(6)
        return _maps(6, (m1, k1, m0, k0), (n1, k1, n0, k0), (m1, n1, m0, n0))


@irdl_op_definition
class Conv1DOp(_Contraction):
    name = "linalg.conv_1d"
    KINDS: ClassVar[tuple[str, ...]] = (PARALLEL, REDUCTION)

    def get_default_indexing_maps(self) -> Sequence[AffineMap]:
        ow, kw = _dims(2)
        return _maps(2, (ow + kw,), (kw,), (ow,))


@irdl_op_definition
class Conv2DOp(_Contraction):
    name = "linalg.conv_2d"
    KINDS: ClassVar[tuple[str, ...]] = (PARALLEL, PARALLEL, REDUCTION, REDUCTION)

    def get_default_indexing_maps(self) -> Sequence[AffineMap]:
        oh, ow, kh, kw = _dims(4)
        return _maps(4, (oh + kh, ow + kw), (kh, kw), (oh, ow))


def _strided(op: ConvOperation | PoolingOperation) -> tuple[list[int], list[int]]:
    return list(op.strides.get_values()), list(op.dilations.get_values())


@irdl_op_definition
class Conv1DNcwFcwOp(ConvOperation):
    name = "linalg.conv_1d_ncw_fcw"

    def get_default_indexing_maps(self) -> Sequence[AffineMap]:
        n, f, ow, c, kw = _dims(5)
        (s,), (d,) = _strided(self)
        return _maps(5, (n, c, ow * s + kw * d), (f, c, kw), (n, f, ow))

    def get_iterator_types(self) -> ArrayAttr[IteratorTypeAttr]:
        return _iterators((PARALLEL,) * 3 + (REDUCTION,) * 2)


@irdl_op_definition
class DepthwiseConv2DNchwChwOp(ConvOperation):
    """out[n, c, oh, ow] += in[n, c, oh*s + kh*d, ow*s + kw*d] * w[c, kh, kw]."""

    name = "linalg.depthwise_conv_2d_nchw_chw"

    def get_default_indexing_maps(self) -> Sequence[AffineMap]:
        n, oh, ow, c, kh, kw = _dims(6)
        (sh, sw), (dh, dw) = _strided(self)
        return _maps(6, (n, c, oh * sh + kh * dh, ow * sw + kw * dw), (c, kh, kw),
                     (n, c, oh, ow))

    def get_iterator_types(self) -> ArrayAttr[IteratorTypeAttr]:
        return _iterators((PARALLEL,) * 4 + (REDUCTION,) * 2)


class _Pooling(PoolingOperation):
    COMBINE: ClassVar[tuple[type[Operation], type[Operation]]] = (arith.AddfOp, arith.AddiOp)
    NHWC: ClassVar[bool] = False

    @classmethod
    def get_hidden_region(cls, inputs: Sequence[SSAValue],
                          outputs: Sequence[SSAValue]) -> Region:
        return combine_region(inputs, outputs, cls.COMBINE)

    def get_default_indexing_maps(self) -> Sequence[AffineMap]:
        (sh, sw), (dh, dw) = _strided(self)
        if self.NHWC:
            n, oh, ow, c, kh, kw = _dims(6)
            return _maps(6, (n, oh * sh + kh * dh, ow * sw + kw * dw, c), (kh, kw),
                         (n, oh, ow, c))
        n, c, oh, ow, kh, kw = _dims(6)
        return _maps(6, (n, c, oh * sh + kh * dh, ow * sw + kw * dw), (kh, kw),
                     (n, c, oh, ow))


@irdl_op_definition
class PoolingNchwSumOp(_Pooling):
    name = "linalg.pooling_nchw_sum"


@irdl_op_definition
class PoolingNhwcSumOp(_Pooling):
    name = "linalg.pooling_nhwc_sum"
    NHWC: ClassVar[bool] = True


@irdl_op_definition
class PoolingNhwcMaxOp(_Pooling):
    name = "linalg.pooling_nhwc_max"
    COMBINE: ClassVar[tuple[type[Operation], type[Operation]]] = (arith.MaximumfOp, arith.MaxSIOp)
    NHWC: ClassVar[bool] = True


@irdl_op_definition
class PoolingNchwMinOp(_Pooling):
    name = "linalg.pooling_nchw_min"
    COMBINE: ClassVar[tuple[type[Operation], type[Operation]]] = (arith.MinimumfOp, arith.MinSIOp)


#: the ops `register_uopc_dialects` loads
NAMED_OPS: tuple[type[Operation], ...] = (
    BatchMatmulOp, MatvecOp, VecmatOp, BatchMatvecOp, DotOp, Mmt4DOp, Conv1DOp, Conv2DOp,
    Conv1DNcwFcwOp, DepthwiseConv2DNchwChwOp, PoolingNchwSumOp, PoolingNhwcSumOp,
    PoolingNhwcMaxOp, PoolingNchwMinOp)


class _ResultTypesInParens:
    """A view of a parser for GenericOp.parse: its bare list of result types may be a
    parenthesized one; everything else goes to the parser itself."""

    def __init__(self, parser: Parser):
        self._parser = parser

    def __getattr__(self, name: str) -> Any:
        return getattr(self._parser, name)

    def parse_comma_separated_list(self, delimiter: Parser.Delimiter, parse: Callable[[], Any],
                                   context_msg: str = "") -> list[Any]:
        p = self._parser
        if delimiter is Parser.Delimiter.NONE and parse == p.parse_attribute and \
                p._current_token.text == "(":
            delimiter = Parser.Delimiter.PAREN
        return p.parse_comma_separated_list(delimiter, parse, context_msg)


_parse_generic = GenericOp.parse.__func__  # type: ignore[attr-defined]


def _parse_generic_results_in_parens(cls: type[GenericOp], parser: Parser) -> GenericOp:
    return _parse_generic(cls, _ResultTypesInParens(parser))


def install_linalg_extensions() -> None:
    """Add `NAMED_OPS` to xDSL's `linalg` dialect and give `linalg.generic` the result
    list fix (once; idempotent), so that every context that loads the dialect reads
    them: uopc's own, and the stock `xdsl-opt` that imports uopc's plugin entry point
    (`uopc.pipelines.UNIVERSE`). A plugin cannot bring its own `linalg` dialect (xDSL
    refuses two dialects of one name), so they go into the existing one; only names xDSL
    does not define are added, and only a parse that failed changes."""
    from xdsl.dialects.linalg import Linalg

    known = {op.name for op in Linalg.operations}
    Linalg._operations.extend(op for op in NAMED_OPS if op.name not in known)
    GenericOp.parse = classmethod(_parse_generic_results_in_parens)  # type: ignore[assignment]
