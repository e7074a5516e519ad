"""`uop-schedule`: give every kernel a schedule (SPEC §7), chosen by rules.

Runs after `uop-kernelize`. Each `func.func` marked `uop.kernel` that has no
`uop.schedule` yet gets one; a schedule already present (written by hand in text IR, or
set by the runtime's measured search) is kept. `mode=none` gives every kernel the naive
schedule (`OPT=0`), `mode=rules` (the default, `OPT=1`) applies these rules:

- **register tile**: a kernel whose reduction (of at least `MIN_TILE_REDUCE` elements,
  or of 2 when it reads B along the reduction: `_reduce_tiles`) multiplies by a float
  operand broadcast along an output axis and varying along a reduced axis (A@B: A along
  j, B along i; seen through the reshapes and permutes of the reduction's source, as
  when a weight gradient reduces batch x sequence merged into one axis) upcasts those
  axes, the innermost by up to C and the next by up to R (columns: `_tile_factor`, the
  whole axis when no longer, the largest power-of-two divisor of the axis, or C and a
  remainder loop; rows: the whole axis or R and a remainder loop): the copies along one
  axis share the broadcast operand's loads.
  R x C is sized from the CPU (`register_tile`, `uopc.cpu`): C a multiple of the vector
  lanes; for a long reduction (`long_reduce`: `LONG_REDUCE` elements with AVX2's 16
  ymm registers, `WIDE_LONG_REDUCE` with AVX-512's 32 zmm) the accumulators, B's
  vectors and one broadcast value of A in the vector registers, with the fewest loads
  per multiply-add (6x16 f32 on AVX2, 6x64 on AVX-512), for a shorter one as many
  accumulators as fit beside one broadcast per row (3x32, 3x128). Outside strict float
  order the tile's multiply-adds are fused (`fma`) where the CPU has FMA. A mask broadcast over batch
  and heads
  (bool, or a float added to the scores) shares no such load, nor does a row value
  broadcast along the reduced axis. Outside strict order, a plain tile whose copies
  would read a factor strided (its inner axis reads along the reduction and no packed
  panel lays that out: x @ W.T on fewer than `MIN_PANEL_ROWS` rows, a LayerNorm
  backward's row sums) gives way to a split reduction (`_strided_copies`);
- **column sums**: a kernel without that tile whose reduction (as long) reads a kernel
  argument contiguously along the innermost output axis (a bias gradient: the sum of
  dY's rows) upcasts that axis by up to 16: the copies' loads of one row are adjacent
  (vector loads), where a split sum would stride down each column;
- **cache tiles and a packed panel**: a tiled kernel whose reductions all produce the
  output (a matmul, with or without an epilogue) and whose tiled outer axis has at least
  `MIN_PANEL_ROWS` elements is also cache-tiled: the inner tiled axis in blocks of its
  upcast (a panel of C columns of B), the outer one, when its rows of A overflow half
  the CPU's L3 cache, in blocks of the most rows (a power of two) that half holds (the
  rows of A a panel meets stay in the caches; each block packs every panel again, so
  no smaller: 256-row blocks ran a 1024 GEMM 1.3x slower than one block), and the panel is packed
  into a contiguous copy (`pack`) when it fits the CPU's L2 cache; threads then split
  the panels, or, with fewer than two panels a thread, each panel's rows (attention's
  P V, 1024x1024 @ 1024x64: 2 panels; 1.7x faster on 2 cores than one thread). One
  panel as wide as its axis is B as B holds it (unless B is read along the reduction,
  x @ W.T, where the copy transposes it): no cache tile and no copy (the MNIST MLP's
  128x784 @ 784x128 with a 3x128 tile on AVX-512: 320-340 -> 204-218 us); nor is a B
  that fits half the L2 cache and whose panel rows span `STREAMED_PANEL_ROW` bytes
  (`_streams_from_l2`: AVX-512's 64-column panels) tiled or copied. A
  kernel that decodes quantized weights packs the decoded values (`pack` copies the
  value computed from a load, not the load): each panel is decoded once, where the
  register tile decoded each weight again for every tile of rows (SmolLM2's prompt,
  64x576 @ a Q4_1 1536x576 on 2 cores: 23.0 -> 2.1 ms; Q8_0 9.4 -> 2.5 ms), from more
  rows than one register tile holds on;
- **matrix-vector products** (one looped output axis: decode's x @ W.T, M = 1): when
  an operand broadcast along that axis (x) meets one laid out with the reduced axis
  innermost (a weight stored (out, in), or packed codes along the reduction), each
  output's reduction reads contiguous memory into `SPLIT` partial sums (vector lanes),
  and threads split the outputs (from `MIN_MATVEC_THREAD_WORK` element operations: a
  stream two cores read faster than one). A kernel decoding packed weights computes
  `MATVEC_ROWS` outputs together, sharing each load of x among them, its partial sums
  vector lanes over `LANE_ELEMENTS` elements a block (which share one block scale):
  with words of at least `CODE_LANES` codes a lane per code of one word, the words of
  a block in steps (`steps`: a block's codes times x summed before its scale multiplies
  the sum, `uopc.transforms.block_scales`; Q4_1 1536x576 on 2 cores 8-15% faster),
  else a lane per word of the block, each folding its
  word's codes (`lanes`), every lane accumulating by fused multiply-adds (`fma`:
  Q4_1 1536x576 on one core 90 -> 80 us). Codes kept a byte each (int8, q8_0: a cast
  of i8) need no shifts: one output at a time, a lane per element of a block, each
  byte widened by the vector load (SmolLM2's tied 49152x576 Q8_0 head on 2 cores:
  2.5-2.8 ms as 8 rows over words of 4 codes, 1.6-1.7 ms so); an f32 one
  computes one output at a time, so that each thread streams one row after another
  (the C compiler vectorizes a shared tile of jammed copies across its rows, gathering
  every element), its partial sums lanes of one element. Either way the lane loop
  prefetches the row ahead, or a tile of rows the next tile's rows (`uop-apply-schedule`:
  SmolLM2's decode step 12% faster than with its own rows prefetched ahead).
  Not with `strict=true` (the split reassociates sums);
- **split sums**: a reduction of at least `MIN_SPLIT_REDUCE` elements without a register
  tile (a row sum, max, mean) accumulates into `SPLIT` partial results, which the C
  compiler keeps in one vector register (two from `uopc.passes.reduce_rules`'
  WIDE_SPLIT_REDUCE elements on); not with `strict=true` (UOPC_STRICT=1), since
  a float sum's rounding then changes;
- **exp and tanh without libm**: a kernel computing an f32 exp, exp2 or tanh computes
  it by vectorizable polynomials (`approx`, within 1 ulp), and its f32 divisions by
  a value a loop does not change as products with the reciprocal (within 2 ulp: a
  fused softmax 4096x1024 1.95 -> 1.33 ms); not with `strict=true`;
- **reshaped outputs**: a reduction whose result reaches the output through elementwise
  ops and reshapes (torch-mlir's linear on a 3-d input collapses the rows, multiplies
  and expands them back) is read in the output's axes: an axis the reshape splits
  stands for the innermost output axis it becomes, so its register tile still applies;
- **transposing copies**: a kernel without reductions that reads a kernel argument
  strided along its innermost output axis and contiguously along another (a layout
  copy K -> K^T, a permute made contiguous) runs in `TRANSPOSE_BLOCK` x
  `TRANSPOSE_BLOCK` cache tiles of its two innermost axes (when the block divides
  both): a block's strided reads stay in L1 until every column of their lines is
  stored (a 768x768 f32 transpose on one znver3 core: 845 us without, 152 us with
  16 x 16 blocks, 183 with 32 x 32);
- **threads**: a kernel doing at least `MIN_THREAD_WORK` (2^18) element operations (output
  elements times reduction length) runs its outermost looped axis in parallel, when that
  leaves at least two iterations per thread (a thread per core of the CPU, `uopc.cpu`;
  none on one core); below that, waking threads costs more than it saves. When that
  axis is the innermost looped one and its elements reduce less than
  `MIN_SPLIT_REDUCE` each (an elementwise kernel over a vector), it is cache-tiled into
  blocks of up to `THREAD_BLOCK` elements that the threads share: a thread's loop over
  one block vectorizes, where one element per parallel iteration would not.

`candidates(kernel)` lists the schedules the measured search (`OPT=2`) times.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import ClassVar

from xdsl.context import Context
from xdsl.dialects import func
from xdsl.dialects.builtin import ModuleOp
from xdsl.ir import Operation, SSAValue
from xdsl.passes import ModulePass

from uopc.cpu import Cpu, host
from uopc.passes.options import check_option
from uopc.passes.reduce_rules import row_split
from uopc.passes.strides import contiguous_strides, source_strides, view_strides
from uopc.uopdialect import ops as uop
from uopc.uopdialect.contract import KERNEL_ATTR, SCHEDULE_ATTR
from uopc.uopdialect.schedule import Schedule
from uopc.uopdialect.types import sig_of

#: element operations from which a kernel runs on several threads (about 100 us of work
#: on one core: waking a thread costs 5-20 us on an idle machine)
MIN_THREAD_WORK = 1 << 18
#: the element operations from which a matrix-vector product runs on several threads:
#: it streams its matrix, which two cores read faster than one (SmolLM2's int8 k and v
#: projections, 192x576: 14.1 -> 10.5 us a call)
MIN_MATVEC_THREAD_WORK = 1 << 16
#: the element operations from which a packed matmul with too few panels for the threads
#: splits each panel's rows among them: a fork and join per panel, and a register tile
#: computes 2^22 multiply-adds in about 70 us on one core
MIN_ROW_THREAD_WORK = 1 << 22
#: the reductions from which a register tile keeps B's vectors in registers
#: (`register_tile`) on a CPU with 16 vector registers (AVX2: the tile that reads B from
#: memory ran 10-20% faster up to K = 784) ...
LONG_REDUCE = 1024
#: ... and on one with 32 (AVX-512), where 6x64 ran faster than 3x128 from K = 128 on
#: (2-core Zen 4, OPT=2's times at 128x128 outputs: K = 192 94 against 152 us, K = 784
#: 154-267 against 257-354 us; 512x256x512 602 against 1157 us; K = 64 either way)
WIDE_LONG_REDUCE = 128
#: the shortest reduction worth a register tile (`_reduce_tiles`): a shorter one that
#: reads B along the output's columns vectorizes in the naive loop (128x128 outputs on
#: AVX-512, DEBUG=2: K = 2 1.9 us naive against 3.1 tiled, K = 4 2.9 and 2.9, K = 8 8.1
#: and 5.2, K = 12 11.4 and 6.9)
MIN_TILE_REDUCE = 8
#: the most columns of the register tile of a kernel that computes rows apart (not
#: `plain`: a fused softmax over attention scores): its row loops are jammed by the
#: tile's columns too (`uop-apply-schedule`), an exp per score, and AVX-512's 3x64 tile
#: made the char-GPT's fused attention backward 7x slower than 3x32 (1.88 against
#: 0.26 ms on a 2-core Zen 4: 6,000 lines of C in one loop body)
ROW_TILE_COLUMNS = 32
#: the fewest lanes of a vector that register tiles and split sums are built from (the C
#: target's vector types: 128 bits and more)
MIN_VECTOR_LANES = 4
#: the rows of a register tile of one half-width vector (B's rows hold half a vector)
NARROW_TILE_ROWS = 6
MODES = ("rules", "none")
#: reductions at least this long, without a register tile, accumulate into SPLIT
#: partial results (a float sum reassociates: not under strict float order)
MIN_SPLIT_REDUCE = 64
SPLIT = 8
#: a register-tiled kernel with at least this many rows (outer tiled axis) reuses each
#: packed panel enough to pay for copying it
MIN_PANEL_ROWS = 64
#: the most elements of the innermost axis one parallel iteration computes, when threads
#: split that axis itself (an elementwise kernel over a vector)
THREAD_BLOCK = 4096
#: the row block the measured search also tries (the rules size theirs from the L3
#: cache: `_row_block`): 256 rows of a 2048-deep A are 2 MB
ROW_BLOCK = 256
#: the bytes of a panel row from which a B that fits the L2 cache is read in place,
#: not packed (`_streams_from_l2`): four cache lines
STREAMED_PANEL_ROW = 256
#: the block of each of the two innermost axes of a transposing copy's cache tile
TRANSPOSE_BLOCK = 16
#: the f32 functions that `approx` computes by polynomials instead of libm calls
APPROXIMATED = (uop.ExpOp, uop.Exp2Op, uop.TanhOp)
#: the outputs of a matrix-vector product over decoded weights computed together
#: (sharing each load of x): SmolLM2's int8 decode 24 ms/token, 39 with 2 rows. An f32
#: one runs row by row: an f32 1536x576 matvec over 530 MB of weights streamed 20 GB/s
#: that way and 13 GB/s with 8 shared rows (SmolLM2's f32 decode 44 -> 39 ms/token), and
#: GPT-2's 50257x64 head ran 2x slower with 4 or 8
MATVEC_ROWS = 8
#: the elements one block of a decoding matvec's lanes covers: the blocks of the GGUF
#: and MX formats and the default group, so that the lanes share one block scale (a
#: scale index that changes within a block is not affine in the lane: the C compiler
#: leaves the loop scalar)
LANE_ELEMENTS = 32
#: a decoding matvec whose words hold at least this many codes has a lane per code of a
#: word (split = codes, lanes = 1, steps = the words of a block): each lane shifts its
#: code out of one word and reads the next element of x, where lanes over consecutive
#: words (split = words, lanes = codes) read x LANE_ELEMENTS / codes apart. 4-bit
#: codes, one core, Q4_1 1536x576: 157 -> 90 us a call; 8-bit codes (4 a word, half a
#: vector of f32 lanes) ran 1.5x slower that way
CODE_LANES = 8


@dataclass(frozen=True)
class KernelShape:
    """What the rules look at: the output shape, the longest reduction, and the output
    axes along which some reduced operand is broadcast (its loads can be shared)."""

    out: tuple[int, ...]
    reduce: int
    shared_axes: frozenset[int]
    #: every reduction produces the output's index space (no row value computed apart
    #: and broadcast back): the output loops nest with nothing between them
    plain: bool = True
    #: the kernel computes an f32 exp, exp2 or tanh (which `approx` computes without libm)
    exp: bool = False
    #: the codes one element of packed storage holds of the quantized weights the kernel
    #: decodes (`uop.stored_codes`: 4 or 8 an i32 word, 1 a byte of int8 codes; the most
    #: when it decodes several: mxfp4's 4-bit elements, not its e8m0 scales, one a
    #: block), 0 when it decodes none
    word_codes: int = 0
    #: output axes along which a reduction reads a kernel argument contiguously (its
    #: innermost axis: the columns of a column sum, a bias gradient)
    columns: frozenset[int] = frozenset()
    #: output axes along which a reduction reads an operand whose reduced axis is its
    #: innermost in memory (x @ W.T with W stored (out, in): the rows of W along j)
    inner_reduce_axes: frozenset[int] = frozenset()
    #: the bytes of the output's elements as the C code computes them (8 for f64, else 4:
    #: narrower floats are computed in f32)
    element_bytes: int = 4
    #: the kernel reads an argument strided along the innermost output axis and
    #: contiguously along another (a transposing copy)
    transposes: bool = False

    @property
    def decodes(self) -> bool:
        """Does the kernel decode quantized weights?"""
        return self.word_codes > 0

    @property
    def looped(self) -> list[int]:
        return [axis for axis, n in enumerate(self.out) if n > 1]

    @property
    def work(self) -> int:
        return math.prod(self.out) * max(self.reduce, 1)


def kernel_shape(kernel: func.FuncOp) -> KernelShape:
    out = sig_of(kernel.function_type.outputs.data[0]).shape
    reduce = 0
    shared: set[int] = set()
    columns: set[int] = set()
    inner: set[int] = set()
    plain = True
    exp = False
    word_codes = 0
    for op in kernel.walk():
        if isinstance(op, APPROXIMATED) and sig_of(op.result.type).dtype == "f32":
            exp = True
        if (codes := uop.stored_codes(op)) is not None:
            word_codes = max(word_codes, codes[1])
        if not isinstance(op, uop.ReduceOp):
            continue
        src = sig_of(op.src.type).shape
        axes = set(op.ints("axes"))
        reduce = max(reduce, math.prod(src[a] for a in axes))
        result = sig_of(op.result.type).shape
        kept = [a for a in range(len(src)) if a not in axes]
        permuted = None if result == out else _permuted_to_output(op, kernel)
        if result == out:
            outer: list[Label] = list(range(len(out)))
        elif permuted is not None:
            # the output is the reduction's index space, its axes in another order (a
            # gradient's transpose: dK of attention): result axis a is output axis
            # permuted.index(a)
            outer = [permuted.index(a) for a in range(len(result))]
        elif _reshaped_to_output(op, kernel):
            # a matmul whose rows a reshape splits in the output (torch-mlir's linear on a
            # 3-d input: collapse, matmul, bias, expand): its axes through the reshape
            outer = _split_labels(result, out)
            plain = False
        else:
            plain = False
            continue  # the output is not this reduction's index space: no axis mapping
        labels: list[Label] = [REDUCED if a in axes else outer[kept.index(a)]
                               for a in range(len(src))]
        for value, at, factor in _reads(op, labels):
            sig = sig_of(value.type)
            if not isinstance(value.owner, uop.ExpandOp):
                wide = [a for a in range(len(at)) if sig.shape[a] > 1]
                last = at[wide[-1]] if wide else None
                if last is not None and last >= 0:
                    columns.add(last)  # a column sum: contiguous along an output axis
                continue
            before = sig_of(value.owner.src.type).shape
            if not factor or not sig.dtype.startswith("f") or not any(
                    at[a] == REDUCED and before[a] > 1 for a in range(len(at))):
                continue  # a mask, or a value the reduce loop reads once: nothing shared
            shared.update(label for a, label in enumerate(at)
                          if label is not None and label >= 0 and before[a] == 1
                          and sig.shape[a] > 1)
        inner.update(_inner_reduce_axes(op))
    element = 8 if sig_of(kernel.function_type.outputs.data[0]).dtype in ("f64", "i64") else 4
    return KernelShape(out, reduce, frozenset(shared), plain, exp, word_codes,
                       frozenset(columns), frozenset(inner), element,
                       reduce == 0 and _transposes(kernel, out))


def _transposes(kernel: func.FuncOp, out: tuple[int, ...]) -> bool:
    """Does the elementwise tree of `kernel`'s result read a kernel argument through
    views that step along the innermost looped output axis by more than one element
    and along another looped axis by one?"""
    looped = [a for a, n in enumerate(out) if n > 1]
    if len(looped) < 2:
        return False
    (ret,) = [op for op in kernel.body.block.ops if isinstance(op, func.ReturnOp)]
    stack: list[tuple[SSAValue, list[Operation]]] = [(ret.operands[0], [])]
    while stack:
        value, chain = stack.pop()
        op = value.owner
        if isinstance(op, uop.ContiguousOp):
            stack.append((op.operands[0], chain))
        elif isinstance(op, uop.UopOp) and op.INFO.movement:
            stack.append((op.operands[0], [op, *chain]))
        elif isinstance(op, uop.UopOp) and op.INFO.elementwise:
            stack.extend((v, chain) for v in op.operands)
        elif not isinstance(op, Operation):  # a kernel argument
            shape = sig_of(value.type).shape
            strides = view_strides(shape, contiguous_strides(shape), chain)
            if strides is not None and len(strides) == len(out) \
                    and abs(strides[looped[-1]]) > 1 \
                    and any(abs(strides[a]) == 1 for a in looped[:-1]):
                return True
    return False


def _permuted_to_output(reduce: uop.ReduceOp, kernel: func.FuncOp) -> list[int] | None:
    """The permutation (output axis i is result axis perm[i]) by which `reduce`'s result
    becomes the kernel's output, through permutes and same-shape elementwise ops, each
    value read once; None when it reaches the output otherwise (identity when directly)."""
    value: SSAValue = reduce.result
    perm = list(range(len(sig_of(value.type).shape)))
    while True:
        uses = list(value.uses)
        if len(uses) != 1:
            return None
        user = uses[0].operation
        if isinstance(user, func.ReturnOp):
            return perm if user.parent_op() is kernel else None
        if isinstance(user, uop.PermuteOp):
            perm = [perm[p] for p in user.ints("perm")]
        elif not (isinstance(user, uop.UopOp) and user.INFO.elementwise
                  and sig_of(user.results[0].type).shape == sig_of(value.type).shape):
            return None
        value = user.results[0]


def _reshaped_to_output(reduce: uop.ReduceOp, kernel: func.FuncOp) -> bool:
    """Does `reduce`'s result reach the kernel's output only through elementwise ops and
    reshapes (so that each of its elements is one output element)?"""
    stack: list[SSAValue] = [reduce.result]
    while stack:
        value = stack.pop()
        for use in value.uses:
            user = use.operation
            if isinstance(user, func.ReturnOp) and user.parent_op() is kernel:
                continue
            if not (isinstance(user, uop.ReshapeOp) or (
                    isinstance(user, uop.UopOp) and user.INFO.elementwise
                    and sig_of(user.results[0].type).shape == sig_of(value.type).shape)):
                return False
            stack.append(user.results[0])
    return True


def _split_labels(result: tuple[int, ...], out: tuple[int, ...]) -> list[Label]:
    """The output axis each axis of `result` stands for, when a reshape to `out` keeps it
    or splits it (the rows of a (B*T, C) matmul become the axes B, T of the output): the
    innermost axis it splits into, along which it still steps one row at a time. An axis
    merged with others is None."""
    labels: list[Label] = [None] * len(result)
    i = j = 0
    while i < len(result) and j < len(out):
        run_result, run_out = [i], [j]
        n_result, n_out = result[i], out[j]
        i, j = i + 1, j + 1
        while n_result != n_out:
            if n_result < n_out and i < len(result):
                n_result, i = n_result * result[i], i + 1
                run_result.append(i - 1)
            elif n_out < n_result and j < len(out):
                n_out, j = n_out * out[j], j + 1
                run_out.append(j - 1)
            else:
                return labels
        wide_result = [a for a in run_result if result[a] > 1]
        wide_out = [a for a in run_out if out[a] > 1]
        if len(wide_result) == 1 and wide_out:
            labels[wide_result[0]] = wide_out[-1]
    return labels


def _inner_reduce_axes(reduce: uop.ReduceOp) -> set[int]:
    """The output axes along which `reduce` (of one axis, producing the output) reads
    some operand laid out with the reduced axis innermost (stride 1): the operands are
    the leaves of its elementwise source tree, each a kernel input or a decoded weight
    (`uop.decode`, whose codes lie along its rows) seen through a chain of views."""
    src = sig_of(reduce.src.type).shape
    axes = reduce.ints("axes")
    if len(axes) != 1:
        return set()
    kept = [a for a in range(len(src)) if a != axes[0]]
    found: set[int] = set()
    for strides in source_strides(reduce):
        if strides is not None and strides[axes[0]] == 1:
            found.update(kept.index(a) for a in kept if strides[a] != 0 and src[a] > 1)
    return found


#: the label `_reads` gives an axis that is one of the reduced axes
REDUCED = -1
#: an axis's label: an output axis (its index), REDUCED, or None (neither alone: an axis
#: that a reshape merges from output and reduced axes)
Label = int | None


def _reads(reduce: uop.ReduceOp, labels: list[Label]
           ) -> list[tuple[SSAValue, list[Label], bool]]:
    """What the reduction's source tree combines through elementwise ops, reshapes and
    permutes: the results of expands and the kernel's arguments, each with the labels
    of its axes, given the labels of the reduction source's axes (a weight gradient
    X^T dY reduces a reshape of the batch and sequence axes into one), and whether it
    is read as a factor of a product (below a `uop.mul`: A and B of A@B, not an
    additive mask)."""
    found, stack = [], [(reduce.src, labels, False)]
    while stack:
        value, at, factor = stack.pop()
        op = value.owner
        if isinstance(op, uop.ExpandOp) or not isinstance(op, Operation):
            found.append((value, at, factor))
        elif isinstance(op, uop.ReshapeOp):
            stack.append((op.src, _labels_through_reshape(
                sig_of(op.src.type).shape, sig_of(op.result.type).shape, at), factor))
        elif isinstance(op, uop.PermuteOp):
            perm = op.ints("perm")
            before: list[Label] = [None] * len(perm)
            for i, p in enumerate(perm):
                before[p] = at[i]
            stack.append((op.src, before, factor))
        elif isinstance(op, uop.UopOp) and op.INFO.elementwise:
            factor = factor or isinstance(op, uop.MulOp)
            stack.extend((operand, at, factor) for operand in op.operands)
    return found


def _labels_through_reshape(src: tuple[int, ...], dst: tuple[int, ...], at: list[Label]
                            ) -> list[Label]:
    """The labels of the axes of a reshape's operand (shape `src`), given those of its
    result (shape `dst`): the shapes split into the finest runs of axes with equal
    element counts; an axis alone in its run (apart from size-1 axes) keeps its label,
    the axes of a run whose result axes are all reduced are reduced, any other None."""
    before: list[Label] = [None] * len(src)
    if 0 in src:
        return before
    i = j = 0
    while i < len(src) or j < len(dst):
        run_src, run_dst = [], []
        n_src = n_dst = 1
        if i < len(src):
            n_src, i = src[i], i + 1
            run_src.append(i - 1)
        if j < len(dst):
            n_dst, j = dst[j], j + 1
            run_dst.append(j - 1)
        while n_src != n_dst:  # equal element counts: the smaller side has axes left
            if n_src < n_dst:
                n_src, i = n_src * src[i], i + 1
                run_src.append(i - 1)
            else:
                n_dst, j = n_dst * dst[j], j + 1
                run_dst.append(j - 1)
        wide_src = [a for a in run_src if src[a] > 1]
        wide_dst = [a for a in run_dst if dst[a] > 1]
        if len(wide_src) == 1 and len(wide_dst) == 1:
            before[wide_src[0]] = at[wide_dst[0]]
        elif wide_dst and all(at[a] == REDUCED for a in wide_dst):
            for a in wide_src:
                before[a] = REDUCED
    return before


def _largest_divisor(n: int, limit: int) -> int:
    return next(f for f in (128, 64, 32, 16, 8, 4, 2, 1) if f <= limit and n % f == 0)


def _tile_factor(n: int, limit: int, lanes: int = 1) -> int:
    """The upcast of an axis of n elements by at most `limit`: the whole axis when it is
    that short (10 logits: one tile of 10, 2.8x faster than 5 of 2), else the largest
    divisor of n, or `limit` itself (the last n mod limit elements in a remainder loop)
    where that divisor is below half of it (65 columns: 16 + a remainder of 1, not 1);
    past one vector of `lanes`, whole vectors (the rest in a remainder loop): a jammed
    odd column left the C compiler's vectors partly scalar (1024x64 @ 64xN on AVX-512,
    DEBUG=2: N = 24 171 -> 97 us as 16 + 8, 40 202 -> 62, 65 395 -> 186, 100 534 -> 101,
    120 668 -> 332)."""
    if n <= limit:
        factor = n
    else:
        divisor = _largest_divisor(n, limit)
        factor = limit if 2 * divisor < limit else divisor
    return factor // lanes * lanes if factor > lanes else factor


def long_reduce(cpu: Cpu) -> int:
    """The reductions from which `register_tile` keeps B's vectors in registers."""
    return WIDE_LONG_REDUCE if cpu.registers >= 32 else LONG_REDUCE


def register_tile(cpu: Cpu, element_bytes: int = 4, reduce: int = 0) -> tuple[int, int]:
    """(rows, columns) of a matmul's register tile on `cpu` for a reduction of `reduce`
    elements: rows x vectors accumulator registers, with a power-of-two number of vectors
    (columns that divide more axes).

    A long reduction (`long_reduce`: from `LONG_REDUCE` elements with 16 vector
    registers, from `WIDE_LONG_REDUCE` with 32) gets the tile that keeps B's vectors
    in registers: the reduce loop loads each row's value of A just before that row's
    multiply-adds (`uopc.transforms.sink_loads`), so the accumulators, B's vectors and
    one broadcast must fit the vector registers; of the tiles with at least half the
    registers as accumulators (enough independent multiply-adds for their latency), the
    fewest loads per multiply-add win (rows + vectors over their product), then the most
    accumulators. AVX2 (16 registers): 6 rows x 2 vectors (6x16 f32, 6x8 f64, the shape
    of BLIS's Haswell kernels); AVX-512 (32): 6 x 4 (6x64 f32). A 1024 GEMM ran at
    73-82 GFLOP/s on one znver3 core with 6x16, 59-66 with 3x32 (its FMAs read B from
    memory: 15 loads per 12 multiply-adds).

    A shorter reduction gets the widest tile whose accumulators and every row's broadcast
    fit beside one spare register (B read from memory): 3x32 on AVX2 (3x16 f64), 3x128
    on AVX-512; on AVX2 with K = 64 to 784 it ran 10-20% faster than 6x16 (the MLP's
    128x784x128: 71 against 63 GFLOP/s), with K = 2048 1.3x slower."""
    lanes = cpu.lanes(element_bytes)
    best: tuple[float, int, int, int] = (-1e9, 0, 1, 1)
    long = reduce >= long_reduce(cpu)
    for vectors in (1, 2, 4, 8):
        for rows in range(1, 17):
            accumulators = rows * vectors
            if accumulators + (vectors if long else rows) + 1 > cpu.registers:
                break
            if long:
                if 2 * accumulators < cpu.registers and best[1]:
                    continue
                best = max(best, (-(rows + vectors) / accumulators, accumulators, rows, vectors))
            else:
                best = max(best, (accumulators, -rows, rows, vectors))
    return best[2], best[3] * lanes


def _row_factor(n: int, limit: int) -> int:
    """The upcast of a register tile's rows: the whole axis when no longer than `limit`,
    else `limit` (the last n mod limit rows in a remainder loop, one row at a time)."""
    return min(n, limit)


def _thread_axis(shape: KernelShape, upcast: list[int], cores: int,
                 min_work: int = MIN_THREAD_WORK) -> int | None:
    """The output axis the threads (one per core) split, or None (module docstring)."""
    if shape.work < min_work or cores < 2:
        return None
    for axis in shape.looped:
        if shape.out[axis] // upcast[axis] >= 2 * cores:
            return axis
    return None


def _thread_blocks(shape: KernelShape, thread: int | None, cores: int) -> tuple[int, ...]:
    """The cache tile that gives the threads blocks of the innermost looped axis when
    they split that axis itself and its elements are cheap (module docstring), else ()."""
    if thread is None or thread != shape.looped[-1] or shape.reduce >= MIN_SPLIT_REDUCE:
        return ()
    n = shape.out[thread]
    block = next((b for b in (THREAD_BLOCK >> s for s in range(9))
                  if n % b == 0 and n // b >= 2 * cores), 0)
    if not block:
        return ()
    return (0,) * thread + (block,)


def _transpose_blocks(shape: KernelShape) -> tuple[int, ...]:
    """The cache tile of a transposing copy (module docstring), or () for none."""
    if not shape.transposes:
        return ()
    inner = shape.looped[-2:]
    if any(shape.out[a] % TRANSPOSE_BLOCK or shape.out[a] == TRANSPOSE_BLOCK for a in inner):
        return ()
    return tuple(TRANSPOSE_BLOCK if a in inner else 0 for a in range(len(shape.out)))


def _fits_l2(shape: KernelShape, upcast: list[int], cpu: Cpu) -> bool:
    """Does a packed panel (the reduction's length x the inner tile's columns) fit the
    CPU's L2 cache? A bigger copy would be evicted before its rows reuse it."""
    inner = max(a for a, f in enumerate(upcast) if f > 1)
    return shape.reduce * upcast[inner] * shape.element_bytes <= cpu.l2


def _cache_tile(shape: KernelShape, upcast: list[int], cpu: Cpu, row_block: int = ROW_BLOCK
                ) -> tuple[int, ...]:
    """The cache tile of a register-tiled kernel (see the module docstring), or () for
    none."""
    tiled = [a for a in shape.looped if upcast[a] > 1]
    if len(tiled) != 2 or not shape.plain or shape.out[tiled[1]] % upcast[tiled[1]]:
        return ()  # (panels must divide their axis)
    # a decoded panel pays once two register tiles of rows share it: the decode it saves
    # costs more than the copy (1536x576 Q4_1 on 2 cores, 4 rows 1.74 -> 0.68 ms, 16 rows
    # 4.86 -> 0.78 ms); a plain copy needs more rows to pay
    if shape.out[tiled[0]] < (upcast[tiled[0]] + 1 if shape.decodes else MIN_PANEL_ROWS):
        return ()
    if shape.decodes and len(shape.looped) > 2:
        return ()  # a loop above the rows may hold computations, which tile refuses (a
        #          quantized GPT on a batch of 2 x 8 tokens)
    outer, inner = tiled
    if ((shape.out[inner] == upcast[inner] or _streams_from_l2(shape, upcast, inner, cpu))
            and not shape.decodes and inner not in shape.inner_reduce_axes):
        return ()  # one panel of B's rows as B holds them, or a B its tiles read well in
        #          place: a copy costs more than it saves
    tile = [0] * len(shape.out)
    tile[inner] = upcast[inner]
    rows = shape.out[outer]
    if rows > row_block and rows % row_block == 0:
        tile[outer] = row_block
    return tuple(tile)


def _streams_from_l2(shape: KernelShape, upcast: list[int], inner: int, cpu: Cpu) -> bool:
    """Do the register tiles read B well enough where it lies: all of B (the reduction x
    the inner tiled axis) fits half the CPU's L2 cache, and a panel's row is at least
    `STREAMED_PANEL_ROW` bytes? Panels copied from it, a fork and join each, then cost
    more than they save (2 Zen 4 cores, OPT=2's times: 128x784 @ 784x128 with 6x64
    tiles, 206-209 us with 64-column panels packed, 154-161 us without; with 3x32 or
    6x16 tiles the packed 32- and 16-column panels ran faster: 228 against 284 us and
    204 against 249)."""
    return (shape.reduce * shape.out[inner] * shape.element_bytes <= cpu.l2 // 2
            and upcast[inner] * shape.element_bytes >= STREAMED_PANEL_ROW)


def _row_block(shape: KernelShape, cpu: Cpu) -> int:
    """The rows of a cache tile's row block (module docstring); 1 << 30 for none."""
    fit = cpu.l3 // 2 // max(shape.reduce * shape.element_bytes, 1)
    return 1 << max(fit.bit_length() - 1, 0) if fit >= MIN_PANEL_ROWS else 1 << 30


def _tiled(shape: KernelShape, upcast: list[int], tile: tuple[int, ...], cores: int,
           pack: bool = True) -> Schedule:
    """A register tile `upcast` with cache tile `tile` (packed when `pack`) and threads:
    on the panels when the tile makes them, else as `_thread_axis` says."""
    if not tile:
        return Schedule(tuple(upcast), thread=_thread_axis(shape, upcast, cores))
    inner = max(a for a, t in enumerate(tile) if t)
    panels = shape.out[inner] // tile[inner]
    thread = inner if shape.work >= MIN_THREAD_WORK and cores > 1 \
        and panels >= 2 * cores else None
    if thread is None:
        # too few panels for the threads (attention's P V: 64 columns): the rows of each
        # panel, when they are enough
        outer = min(a for a, f in enumerate(upcast) if f > 1)
        thread = _thread_axis(shape, upcast, cores) \
            if outer < inner and shape.work >= MIN_ROW_THREAD_WORK else None
    return Schedule(tuple(upcast), thread=thread, tile=tile, pack=pack)


def _matvec(shape: KernelShape, cores: int) -> Schedule | None:
    """The matrix-vector product rule of the module docstring, or None when the kernel is
    not one (outside strict float order)."""
    if len(shape.looped) != 1 or shape.reduce < MIN_SPLIT_REDUCE or not shape.plain:
        return None
    axis = shape.looped[0]
    if axis not in shape.shared_axes or axis not in shape.inner_reduce_axes:
        return None
    upcast = [1] * len(shape.out)
    # f32 rows: one element a lane (SmolLM2's f32 decode 34.3-35.0 -> 30.5-31.2 ms/token
    # against jammed partial sums)
    split, lanes = SPLIT, 1
    steps = 1
    if shape.word_codes == 1:
        # codes a byte each: a lane per element of a block, each widened from its byte
        # by a vector load, one output at a time (as f32 rows are)
        split, lanes = LANE_ELEMENTS, 1
    elif shape.decodes:
        upcast[axis] = min(MATVEC_ROWS, shape.out[axis])
        if shape.word_codes >= CODE_LANES:
            split, lanes, steps = shape.word_codes, 1, LANE_ELEMENTS // shape.word_codes
        else:
            split, lanes = max(2, LANE_ELEMENTS // shape.word_codes), shape.word_codes
    return Schedule(tuple(upcast) if upcast[axis] > 1 else (),
                    thread=_thread_axis(shape, upcast, cores, MIN_MATVEC_THREAD_WORK),
                    split=split, lanes=lanes,
                    steps=steps, approx=shape.exp, fma=shape.decodes)


def _reduce_tiles(shape: KernelShape) -> bool:
    """Is the reduction long enough for a register tile? From `MIN_TILE_REDUCE` on, and
    from 2 when it reads B along the reduction (x @ W.T), which the naive loop reads
    strided along the output's columns (128x128 outputs: K = 2 17.7 us naive against
    2.6 tiled, K = 10 49-90 against 11-13: the MNIST MLP's dY @ W2^T)."""
    if shape.reduce >= MIN_TILE_REDUCE:
        return True
    return shape.reduce >= 2 and bool(shape.looped) and shape.looped[-1] in shape.inner_reduce_axes


def _register_upcast(shape: KernelShape, cpu: Cpu) -> list[int]:
    """The upcast of the register tile rule (module docstring): all 1s for none."""
    upcast = [1] * len(shape.out)
    if _reduce_tiles(shape):
        tiled = [a for a in shape.looped if a in shape.shared_axes][-2:]
        lanes = cpu.lanes(shape.element_bytes)
        # B's rows narrower than one vector leave no vectors to keep in registers: the
        # short reduction's tile (the MNIST MLP's 128x128 @ 128x10: 32-41 us with 6x10,
        # 21 us with 3x10), or, when they hold half a vector, NARROW_TILE_ROWS rows of one
        # half-width vector, the last columns a scalar remainder (6x8 and 2: 9.6-10.2 us)
        narrow = bool(tiled) and shape.out[tiled[-1]] < lanes
        rows, columns = register_tile(cpu, shape.element_bytes, 0 if narrow else shape.reduce)
        if not shape.plain:
            columns = min(columns, ROW_TILE_COLUMNS)
        half = lanes // 2
        if narrow and half >= MIN_VECTOR_LANES and _tile_factor(
                shape.out[tiled[-1]], half, lanes) == half:
            rows, columns = NARROW_TILE_ROWS, half
        if tiled:
            upcast[tiled[-1]] = _tile_factor(shape.out[tiled[-1]], columns, lanes)
        if len(tiled) == 2:
            upcast[tiled[0]] = _row_factor(shape.out[tiled[0]], rows)
        if not tiled and shape.looped and shape.looped[-1] in shape.columns:
            inner = shape.looped[-1]
            upcast[inner] = _tile_factor(shape.out[inner], 16)
    return upcast


def _strided_copies(shape: KernelShape, upcast: list[int], tile: tuple[int, ...]) -> bool:
    """Would the register tile `upcast` (with cache tile `tile`) read a factor strided
    across its copies? Its inner axis reads a factor along the reduction (x @ W.T: W's
    rows; a LayerNorm backward's row sums: each output's own row) and no packed panel
    lays those rows out along the axis: the copies gather where a split reduction reads
    each row contiguously (not under strict float order, which splits nothing: there the
    tile is what vectorizes; DEBUG=2 on AVX-512: 14x576 @ W.T 1536x576 1276 -> 335 us,
    48x256 @ W.T 64x256 214 -> 50, 16x64 @ W.T 192x64 17.6 -> 14.4, 32x64 @ W.T 64x64 7.4
    -> 10.1; the char-GPT's five 16x64 LayerNorm row sums 647 -> 68 us together). A
    kernel that decodes keeps its tile (decoded weights have rules of their own), as does
    one computing rows apart (attention's fused scores: `uop-layout-copies` lays K out for
    its tile)."""
    if shape.decodes or not shape.plain or tile or not any(f > 1 for f in upcast):
        return False
    return max(a for a, f in enumerate(upcast) if f > 1) in shape.inner_reduce_axes


def _vector_lanes(shape: KernelShape, upcast: Sequence[int], cpu: Cpu, split: int = 1) -> int:
    """The lanes of the vectors that the innermost output axis's upcast is built from:
    the CPU's vector of the kernel's elements, when the factor is a multiple of it; or,
    without an upcast, those of a split's partial results, when a vector of the CPU
    holds them all (0: scalar copies). `uop-apply-schedule` jams scalar copies anyway
    where the body has an op without a vector form."""
    lanes = cpu.lanes(shape.element_bytes)
    if not any(f > 1 for f in upcast):
        return split if MIN_VECTOR_LANES <= split <= lanes and shape.element_bytes in (4, 8) \
            else 0
    if not shape.looped:
        return 0
    inner = shape.looped[-1]
    factor = upcast[inner] if inner < len(upcast) else 1
    if lanes > 1 and factor > 1 and factor % lanes == 0:
        return lanes
    # a tile of half-width vectors (B's rows narrower than a vector: `_register_upcast`)
    return factor if factor == lanes // 2 >= MIN_VECTOR_LANES else 0


def rules(shape: KernelShape, strict: bool = False, cpu: Cpu | None = None) -> Schedule:
    """The schedule the rules of the module docstring give a kernel of this shape on
    `cpu` (default: `uopc.cpu.host()`)."""
    cpu = cpu or host()
    matvec = None if strict else _matvec(shape, cpu.cores)
    if matvec is not None:
        return matvec
    upcast = _register_upcast(shape, cpu)
    approx = shape.exp and not strict
    tile = _cache_tile(shape, upcast, cpu, _row_block(shape, cpu))  # () without a tile
    if not strict and _strided_copies(shape, upcast, tile):
        upcast = [1] * len(shape.out)
    if any(f > 1 for f in upcast):
        # a matmul's tile (a column sum's has no multiply to fuse)
        fma = cpu.fma and not strict and any(upcast[a] > 1 for a in shape.shared_axes)
        return replace(_tiled(shape, upcast, tile, cpu.cores, pack=bool(tile) and _fits_l2(
            shape, upcast, cpu)), approx=approx, fma=fma,
            vector=_vector_lanes(shape, upcast, cpu))
    parts = 1 if strict else row_split(shape.reduce, SPLIT, MIN_SPLIT_REDUCE)
    thread = _thread_axis(shape, upcast, cpu.cores)
    tile = _transpose_blocks(shape) or _thread_blocks(shape, thread, cpu.cores)
    return Schedule(thread=thread, split=parts, tile=tile, approx=approx,
                    vector=_vector_lanes(shape, upcast, cpu, parts))


def candidates(shape: KernelShape, strict: bool = False, cpu: Cpu | None = None
               ) -> list[Schedule]:
    """The schedules the measured search tries: the naive one, the rules' choice, and
    register tiles of other sizes on the shared axes (from the CPU's own tile and its
    tile for the other reduction length, with fewer rows and columns, to the tiles a
    16-register machine holds), each with and
    without threads and cache tiles (or, without a tile and unless `strict`, split
    reductions), a cache tile whose panels are too few for the threads both with its
    rows on threads and single-threaded; all but the naive one with `approx` and `fma`
    where the rules use them."""
    cpu = cpu or host()
    chosen = rules(shape, strict, cpu)
    found = [Schedule(), chosen]
    tiled = [a for a in shape.looped if a in shape.shared_axes][-2:]
    if _reduce_tiles(shape) and tiled:
        inner = tiled[-1]
        outer = tiled[0] if len(tiled) == 2 else None
        rows, columns = register_tile(cpu, shape.element_bytes, shape.reduce)
        lanes = cpu.lanes(shape.element_bytes)
        # the tile of the other reduction length (`register_tile`): where the two cross
        # depends on more than K
        other = register_tile(cpu, shape.element_bytes,
                              0 if shape.reduce >= long_reduce(cpu) else long_reduce(cpu))
        shapes = [(rows, columns), other, (rows, columns // 2), (rows + 1, columns // 2),
                  (rows // 2, columns), (4, 2 * lanes), (2, 4 * lanes), (8, lanes),
                  (1, 4 * lanes)]
        for fo, fi in shapes:
            upcast = [1] * len(shape.out)
            if fi < 1 or fo < 1 or shape.out[inner] % fi or outer is None and fo > 1:
                continue
            upcast[inner] = fi
            if outer is not None:
                upcast[outer] = _row_factor(shape.out[outer], fo)
            for rows_block in (ROW_BLOCK, 1 << 30):  # 1 << 30: no row blocks
                tile = _cache_tile(shape, upcast, cpu, rows_block)
                if tile:
                    tiled_schedule = _tiled(shape, upcast, tile, cpu.cores)
                    found.append(tiled_schedule)
                    if tiled_schedule.thread == outer:  # rows on threads: also none
                        found.append(replace(tiled_schedule, thread=None))
            found.append(Schedule(tuple(upcast), thread=_thread_axis(shape, upcast, cpu.cores)))
    elif shape.looped:
        found.append(Schedule(thread=shape.looped[0]))
        if not strict and shape.reduce >= MIN_SPLIT_REDUCE:
            for parts in (4, 8, 16):
                found.append(Schedule(split=parts))
                found.append(Schedule(thread=_thread_axis(shape, [1] * len(shape.out),
                                                          cpu.cores), split=parts))
    unique: list[Schedule] = []
    for s in found:
        if not s.is_naive and s is not chosen:
            s = replace(s, approx=chosen.approx, fma=chosen.fma and bool(s.upcast),
                        vector=_vector_lanes(shape, s.upcast, cpu, s.split))
        if s not in unique:
            unique.append(s)
    return unique


@dataclass(frozen=True)
class SchedulePass(ModulePass):
    """Give each kernel without a schedule one (see the module docstring)."""

    name: ClassVar[str] = "uop-schedule"

    #: how kernels get schedules: "rules" (OPT=1) or "none" (OPT=0: the naive nest)
    mode: str = "rules"
    #: strict float order (UOPC_STRICT=1): never split a reduction into partial sums
    strict: bool = False
    #: the CPU to size tiles for, spelled as the UOPC_CPU knob (`uopc.cpu`: "avx512",
    #: "avx2,l2=1M", ...); empty: the knob, else this machine
    cpu: str = ""

    def __post_init__(self) -> None:
        check_option(self, "mode", self.mode in MODES, f"one of {', '.join(MODES)}")
        try:
            host(self.cpu)
        except ValueError as err:
            check_option(self, "cpu", False, f"a CPU description ({err})")

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        for kernel in op.body.block.ops:
            if (isinstance(kernel, func.FuncOp) and KERNEL_ATTR in kernel.attributes
                    and SCHEDULE_ATTR not in kernel.attributes):
                schedule = rules(kernel_shape(kernel), self.strict, host(self.cpu)) \
                    if self.mode == "rules" else Schedule()
                kernel.attributes[SCHEDULE_ATTR] = schedule.to_attr()
