// uop-schedule gives each kernel a schedule by rules; a schedule already there is kept.
// The rules size register tiles and cache blocks for a CPU: pinned here to the AVX2
// preset (16 ymm registers, 512 KiB L2), the knob UOPC_CPU's spelling of it, and to the
// AVX-512 one (32 zmm registers, 1.25 MiB L2).
// RUN: uopc-opt %s -p 'uop-schedule{cpu="avx2"}' | filecheck %s
// RUN: env UOPC_CPU=avx2 uopc-opt %s -p uop-schedule | filecheck %s
// RUN: uopc-opt %s -p 'uop-schedule{cpu="avx512"}' | filecheck %s --check-prefix=AVX512
// RUN: uopc-opt %s -p 'uop-schedule{mode=none}' | filecheck %s --check-prefix=NONE
// RUN: uopc-opt %s -p 'uop-schedule{cpu="avx2" strict=true}' | filecheck %s --check-prefix=STRICT
// RUN: uopc-opt %s -p 'uop-schedule{cpu="avx2"}' --print-op-generic | uopc-opt | filecheck %s
// RUN: uopc-opt %s -p 'uop-schedule{cpu="avx2,l2=32K"}' | filecheck %s --check-prefix=SMALL-L2
// RUN: uopc-opt %s -p 'uop-schedule{cpu="avx2,cores=1"}' | filecheck %s --check-prefix=ONE-CORE

// A matmul: A is broadcast along j, B along i, so both output axes are upcast: a 3x32
// register tile on AVX2 (12 ymm accumulators, 3 broadcasts of A), 3x64 on AVX-512 (the
// whole 64 columns; up to 3x128: 24 zmm accumulators), its multiply-adds fused except
// under strict order; 64 rows reuse each panel of B's columns, which is packed (a
// 64-deep panel of 32 f32 columns is 8 KiB, within the L2 cache); 2 panels are too few
// to split among 2 threads. AVX-512's one panel of all 64 columns is B as B holds it:
// no cache tile and no copy, and the threads split the rows.
// CHECK-LABEL: func.func @matmul
// CHECK-SAME:    attributes {uop.kernel, uop.schedule = #uop.schedule<upcast = [3, 32], tile = [0, 32], pack = 1, fma = 1, vector = 8>}
// AVX512-LABEL: func.func @matmul
// AVX512-SAME:    uop.schedule = #uop.schedule<upcast = [3, 64], thread = 0, fma = 1, vector = 16>}
// STRICT-LABEL: func.func @matmul
// STRICT-SAME:    uop.schedule = #uop.schedule<upcast = [3, 32], tile = [0, 32], pack = 1, vector = 8>}
// NONE-LABEL:  func.func @matmul
// NONE-SAME:     uop.schedule = #uop.schedule<>}
func.func @matmul(%a: tensor<64x64xf32>, %b: tensor<64x64xf32>) -> tensor<64x64xf32> attributes {uop.kernel} {
  %a3 = uop.reshape %a : tensor<64x64xf32> -> tensor<64x1x64xf32>
  %ae = uop.expand %a3 : tensor<64x1x64xf32> -> tensor<64x64x64xf32>
  %bt = uop.permute %b perm [1, 0] : tensor<64x64xf32> -> tensor<64x64xf32>
  %b3 = uop.reshape %bt : tensor<64x64xf32> -> tensor<1x64x64xf32>
  %be = uop.expand %b3 : tensor<1x64x64xf32> -> tensor<64x64x64xf32>
  %p = uop.mul %ae, %be : tensor<64x64x64xf32>
  %r = uop.reduce add %p axes [2] : tensor<64x64x64xf32> -> tensor<64x64xf32>
  func.return %r : tensor<64x64xf32>
}

// The MNIST MLP's first layer, 128x784 @ 784x128: on AVX-512 a reduction of 784 keeps
// B's vectors in registers (6x64; 3x128 from memory ran 1.7x slower), and B (392 KiB)
// stays in the L2 cache as it lies, its 256-byte panel rows read in place: no cache tile
// and no copies. AVX2's 3x32 tile packs its 128-byte panel rows.
// CHECK-LABEL: func.func @mlp_layer
// CHECK-SAME:    uop.schedule = #uop.schedule<upcast = [3, 32], thread = 1, tile = [0, 32], pack = 1, fma = 1, vector = 8>}
// AVX512-LABEL: func.func @mlp_layer
// AVX512-SAME:    uop.schedule = #uop.schedule<upcast = [6, 64], thread = 0, fma = 1, vector = 16>}
func.func @mlp_layer(%a: tensor<128x784xf32>, %b: tensor<784x128xf32>) -> tensor<128x128xf32> attributes {uop.kernel} {
  %a3 = uop.reshape %a : tensor<128x784xf32> -> tensor<128x1x784xf32>
  %ae = uop.expand %a3 : tensor<128x1x784xf32> -> tensor<128x128x784xf32>
  %bt = uop.permute %b perm [1, 0] : tensor<784x128xf32> -> tensor<128x784xf32>
  %b3 = uop.reshape %bt : tensor<128x784xf32> -> tensor<1x128x784xf32>
  %be = uop.expand %b3 : tensor<1x128x784xf32> -> tensor<128x128x784xf32>
  %p = uop.mul %ae, %be : tensor<128x128x784xf32>
  %r = uop.reduce add %p axes [2] : tensor<128x128x784xf32> -> tensor<128x128xf32>
  func.return %r : tensor<128x128xf32>
}

// Its second layer, 128x128 @ 128x10: B's rows are narrower than one vector but hold
// half of one: 6 rows of one 8-lane vector, the last 2 columns a scalar remainder (9.6-10.2
// us; the 10 columns jammed as scalars, 3x10, 19 us; 6x10 31 us).
// AVX512-LABEL: func.func @mlp_head
// AVX512-SAME:    uop.schedule = #uop.schedule<upcast = [6, 8], fma = 1, vector = 8>}
func.func @mlp_head(%a: tensor<128x128xf32>, %b: tensor<128x10xf32>) -> tensor<128x10xf32> attributes {uop.kernel} {
  %a3 = uop.reshape %a : tensor<128x128xf32> -> tensor<128x1x128xf32>
  %ae = uop.expand %a3 : tensor<128x1x128xf32> -> tensor<128x10x128xf32>
  %bt = uop.permute %b perm [1, 0] : tensor<128x10xf32> -> tensor<10x128xf32>
  %b3 = uop.reshape %bt : tensor<10x128xf32> -> tensor<1x10x128xf32>
  %be = uop.expand %b3 : tensor<1x10x128xf32> -> tensor<128x10x128xf32>
  %p = uop.mul %ae, %be : tensor<128x10x128xf32>
  %r = uop.reduce add %p axes [2] : tensor<128x10x128xf32> -> tensor<128x10xf32>
  func.return %r : tensor<128x10xf32>
}

// torch-mlir's linear on a 3-d input: collapse to rows, matmul, bias, expand the rows
// back. The rows axis (256) is split into the output axes 0 and 1 (4x64), and along
// axis 1 it still steps one row at a time: axes 1 and 2 get the register tile (without
// the reshape's axis mapping the kernel got no tile, 9x slower).
// CHECK-LABEL: func.func @linear_rows_split
// CHECK-SAME:    uop.schedule = #uop.schedule<upcast = [1, 3, 32], thread = 0, fma = 1, vector = 8>}
// STRICT-LABEL: func.func @linear_rows_split
// STRICT-SAME:    uop.schedule = #uop.schedule<upcast = [1, 3, 32], thread = 0, vector = 8>}
func.func @linear_rows_split(%x: tensor<256x64xf32>, %w: tensor<64x64xf32>, %bias: tensor<64xf32>) -> tensor<4x64x64xf32> attributes {uop.kernel} {
  %a3 = uop.reshape %x : tensor<256x64xf32> -> tensor<256x1x64xf32>
  %ae = uop.expand %a3 : tensor<256x1x64xf32> -> tensor<256x64x64xf32>
  %b3 = uop.reshape %w : tensor<64x64xf32> -> tensor<1x64x64xf32>
  %be = uop.expand %b3 : tensor<1x64x64xf32> -> tensor<256x64x64xf32>
  %p = uop.mul %ae, %be : tensor<256x64x64xf32>
  %r = uop.reduce add %p axes [2] : tensor<256x64x64xf32> -> tensor<256x64xf32>
  %b2 = uop.reshape %bias : tensor<64xf32> -> tensor<1x64xf32>
  %bb = uop.expand %b2 : tensor<1x64xf32> -> tensor<256x64xf32>
  %s = uop.add %r, %bb : tensor<256x64xf32>
  %y = uop.reshape %s : tensor<256x64xf32> -> tensor<4x64x64xf32>
  func.return %y : tensor<4x64x64xf32>
}

// A row sum shares no load between rows: no register tile; 12 rows of 8 is too little
// work for threads.
// CHECK-LABEL: func.func @rowsum
// CHECK-SAME:    uop.schedule = #uop.schedule<>}
func.func @rowsum(%x: tensor<12x8xf32>) -> tensor<12xf32> attributes {uop.kernel} {
  %r = uop.reduce add %x axes [1] : tensor<12x8xf32> -> tensor<12xf32>
  func.return %r : tensor<12xf32>
}

// A large elementwise kernel runs its first looped axis (axis 0 has size 1) on threads,
// one per core of the CPU: none on a machine of one core.
// CHECK-LABEL: func.func @big_add
// CHECK-SAME:    uop.schedule = #uop.schedule<thread = 1>}
// ONE-CORE-LABEL: func.func @big_add
// ONE-CORE-SAME:    uop.schedule = #uop.schedule<>}
func.func @big_add(%x: tensor<1x1024x256xf32>) -> tensor<1x1024x256xf32> attributes {uop.kernel} {
  %y = uop.add %x, %x : tensor<1x1024x256xf32>
  func.return %y : tensor<1x1024x256xf32>
}

// A vector's threads split its only axis into blocks of 4096 elements (a loop over one
// block vectorizes); a length with no power-of-two block leaving 4 blocks runs as before.
// CHECK-LABEL: func.func @big_vector
// CHECK-SAME:    uop.schedule = #uop.schedule<thread = 0, tile = [4096]>}
// CHECK-LABEL: func.func @odd_vector
// CHECK-SAME:    uop.schedule = #uop.schedule<thread = 0>}
func.func @big_vector(%x: tensor<1048576xf32>) -> tensor<1048576xf32> attributes {uop.kernel} {
  %y = uop.add %x, %x : tensor<1048576xf32>
  func.return %y : tensor<1048576xf32>
}
func.func @odd_vector(%x: tensor<262147xf32>) -> tensor<262147xf32> attributes {uop.kernel} {
  %y = uop.add %x, %x : tensor<262147xf32>
  func.return %y : tensor<262147xf32>
}

// An odd-sized matmul: its 10 columns are one vector of 8 and a remainder loop of 2
// (whole vectors; on AVX-512, B's rows hold half a vector: the same 8 lanes, 6 rows and a
// remainder of 3); 9 rows get 3 (the tile's rows, here without a remainder; 10 rows would
// get 3 and a remainder row).
// The same with B stored (n, k), x @ W.T: too few rows for a packed panel, so the tile's
// copies would read W's rows strided: no tile (a split needs 64 elements).
// CHECK-LABEL: func.func @odd
// CHECK-SAME:    uop.schedule = #uop.schedule<upcast = [3, 8], fma = 1, vector = 8>}
// AVX512-LABEL: func.func @odd(
// AVX512-SAME:    uop.schedule = #uop.schedule<upcast = [6, 8], fma = 1, vector = 8>}
// CHECK-LABEL: func.func @odd_transposed
// CHECK-SAME:    uop.schedule = #uop.schedule<>}
func.func @odd(%a: tensor<9x20xf32>, %b: tensor<20x10xf32>) -> tensor<9x10xf32> attributes {uop.kernel} {
  %a3 = uop.reshape %a : tensor<9x20xf32> -> tensor<9x1x20xf32>
  %ae = uop.expand %a3 : tensor<9x1x20xf32> -> tensor<9x10x20xf32>
  %bt = uop.permute %b perm [1, 0] : tensor<20x10xf32> -> tensor<10x20xf32>
  %b3 = uop.reshape %bt : tensor<10x20xf32> -> tensor<1x10x20xf32>
  %be = uop.expand %b3 : tensor<1x10x20xf32> -> tensor<9x10x20xf32>
  %p = uop.mul %ae, %be : tensor<9x10x20xf32>
  %r = uop.reduce add %p axes [2] : tensor<9x10x20xf32> -> tensor<9x10xf32>
  func.return %r : tensor<9x10xf32>
}
func.func @odd_transposed(%a: tensor<9x20xf32>, %b: tensor<1x10x20xf32>) -> tensor<9x10xf32> attributes {uop.kernel} {
  %a3 = uop.reshape %a : tensor<9x20xf32> -> tensor<9x1x20xf32>
  %ae = uop.expand %a3 : tensor<9x1x20xf32> -> tensor<9x10x20xf32>
  %be = uop.expand %b : tensor<1x10x20xf32> -> tensor<9x10x20xf32>
  %p = uop.mul %ae, %be : tensor<9x10x20xf32>
  %r = uop.reduce add %p axes [2] : tensor<9x10x20xf32> -> tensor<9x10xf32>
  func.return %r : tensor<9x10xf32>
}

// A schedule written by hand stays; functions that are not kernels get none.
// CHECK-LABEL: func.func @by_hand
// CHECK-SAME:    uop.schedule = #uop.schedule<upcast = [2], unroll = 2>}
// CHECK-LABEL: func.func @not_a_kernel
// CHECK-NOT:     uop.schedule
func.func @by_hand(%x: tensor<12x8xf32>) -> tensor<12xf32> attributes {uop.kernel, uop.schedule = #uop.schedule<unroll = 2, upcast = [2, 1]>} {
  %r = uop.reduce add %x axes [1] : tensor<12x8xf32> -> tensor<12xf32>
  func.return %r : tensor<12xf32>
}
func.func @not_a_kernel(%x: tensor<4xf32>) -> tensor<4xf32> {
  func.return %x : tensor<4xf32>
}

// An exp: computed without libm (approx), unless strict.
// CHECK-LABEL: func.func @exp
// CHECK-SAME:    uop.schedule = #uop.schedule<approx = 1>}
// STRICT-LABEL: func.func @exp
// STRICT-SAME:    uop.schedule = #uop.schedule<>}
func.func @exp(%x: tensor<12xf32>) -> tensor<12xf32> attributes {uop.kernel} {
  %y = uop.exp %x : tensor<12xf32>
  func.return %y : tensor<12xf32>
}

// A weight gradient dW = X^T dY of a (16, 64) batch of rows: the reduction runs over a
// reshape that merges the batch and sequence axes (1024 = 16 * 64); through it, X is
// still broadcast along the columns j and dY along the rows i, so it gets a matmul's
// register tile, packed panels and threads (not a split sum per output element). Its
// 1024-long reduction gets the tile that keeps B's vectors in registers (6x16 on AVX2,
// 6x64 on AVX-512). A 1024-deep panel of 16 columns (64 KiB) overflows a 32 KiB L2:
// panels, not packed.
// CHECK-LABEL: func.func @weight_gradient
// CHECK-SAME:    uop.schedule = #uop.schedule<upcast = [6, 16], thread = 1, tile = [0, 16], pack = 1, fma = 1, vector = 8>}
// AVX512-LABEL: func.func @weight_gradient
// AVX512-SAME:    uop.schedule = #uop.schedule<upcast = [6, 64], thread = 1, tile = [0, 64], pack = 1, fma = 1, vector = 16>}
// ONE-CORE-LABEL: func.func @weight_gradient
// ONE-CORE-SAME:    uop.schedule = #uop.schedule<upcast = [6, 16], tile = [0, 16], pack = 1, fma = 1, vector = 8>}
// SMALL-L2-LABEL: func.func @weight_gradient
// SMALL-L2-SAME:    uop.schedule = #uop.schedule<upcast = [6, 16], thread = 1, tile = [0, 16], fma = 1, vector = 8>}
func.func @weight_gradient(%x: tensor<16x64x64xf32>, %dy: tensor<16x64x256xf32>) -> tensor<64x256xf32> attributes {uop.kernel} {
  %x4 = uop.reshape %x : tensor<16x64x64xf32> -> tensor<16x64x64x1xf32>
  %xe = uop.expand %x4 : tensor<16x64x64x1xf32> -> tensor<16x64x64x256xf32>
  %d4 = uop.reshape %dy : tensor<16x64x256xf32> -> tensor<16x64x1x256xf32>
  %de = uop.expand %d4 : tensor<16x64x1x256xf32> -> tensor<16x64x64x256xf32>
  %p = uop.mul %xe, %de : tensor<16x64x64x256xf32>
  %p3 = uop.reshape %p : tensor<16x64x64x256xf32> -> tensor<1024x64x256xf32>
  %r = uop.reduce add %p3 axes [0] : tensor<1024x64x256xf32> -> tensor<64x256xf32>
  func.return %r : tensor<64x256xf32>
}

// The head's weight gradient has 65 columns: 16 (the 1024-long reduction's tile) at a
// time and a remainder column, not 1; panels must divide the columns, so none (threads
// on the rows instead). AVX-512's 6x64 tile: 64 columns and a remainder, no panels either.
// CHECK-LABEL: func.func @odd_columns
// CHECK-SAME:    uop.schedule = #uop.schedule<upcast = [6, 16], thread = 0, fma = 1, vector = 8>}
// AVX512-LABEL: func.func @odd_columns
// AVX512-SAME:    uop.schedule = #uop.schedule<upcast = [6, 64], thread = 0, fma = 1, vector = 16>}
func.func @odd_columns(%x: tensor<16x64x64xf32>, %dy: tensor<16x64x65xf32>) -> tensor<64x65xf32> attributes {uop.kernel} {
  %x4 = uop.reshape %x : tensor<16x64x64xf32> -> tensor<16x64x64x1xf32>
  %xe = uop.expand %x4 : tensor<16x64x64x1xf32> -> tensor<16x64x64x65xf32>
  %d4 = uop.reshape %dy : tensor<16x64x65xf32> -> tensor<16x64x1x65xf32>
  %de = uop.expand %d4 : tensor<16x64x1x65xf32> -> tensor<16x64x64x65xf32>
  %p = uop.mul %xe, %de : tensor<16x64x64x65xf32>
  %p3 = uop.reshape %p : tensor<16x64x64x65xf32> -> tensor<1024x64x65xf32>
  %r = uop.reduce add %p3 axes [0] : tensor<1024x64x65xf32> -> tensor<64x65xf32>
  func.return %r : tensor<64x65xf32>
}

// A causal softmax's row sum: the bool mask is broadcast over batch and heads, but a
// mask shares no float load of the reduce loop (nor does the row max, broadcast along
// the reduced axis only): no register tile on the batch and head axes, a split sum.
// CHECK-LABEL: func.func @masked_softmax_sum
// CHECK-SAME:    uop.schedule = #uop.schedule<thread = 0, split = 8, approx = 1, vector = 8>}
// STRICT-LABEL: func.func @masked_softmax_sum
// STRICT-SAME:    uop.schedule = #uop.schedule<thread = 0>}
func.func @masked_softmax_sum(%mask: tensor<1x1x64x64xi1>, %s: tensor<16x4x64x64xf32>, %m: tensor<16x4x64xf32>) -> tensor<16x4x64xf32> attributes {uop.kernel} {
  %mt = uop.permute %mask perm [0, 1, 3, 2] : tensor<1x1x64x64xi1> -> tensor<1x1x64x64xi1>
  %me = uop.expand %mt : tensor<1x1x64x64xi1> -> tensor<16x4x64x64xi1>
  %q = uop.const dense<2.500000e-01> : tensor<16x4x64x64xf32>
  %sq = uop.mul %s, %q : tensor<16x4x64x64xf32>
  %ninf = uop.const dense<0xff800000> : tensor<16x4x64x64xf32>
  %w = uop.where %me, %sq, %ninf : tensor<16x4x64x64xi1>, tensor<16x4x64x64xf32>
  %m4 = uop.reshape %m : tensor<16x4x64xf32> -> tensor<16x4x64x1xf32>
  %neg = uop.const dense<-1.000000e+00> : tensor<16x4x64x1xf32>
  %mn = uop.mul %m4, %neg : tensor<16x4x64x1xf32>
  %mne = uop.expand %mn : tensor<16x4x64x1xf32> -> tensor<16x4x64x64xf32>
  %d = uop.add %w, %mne : tensor<16x4x64x64xf32>
  %e = uop.exp %d : tensor<16x4x64x64xf32>
  %r = uop.reduce add %e axes [3] : tensor<16x4x64x64xf32> -> tensor<16x4x64xf32>
  func.return %r : tensor<16x4x64xf32>
}

// A tanh (GELU's tanh form) is computed without libm too, unless strict.
// CHECK-LABEL: func.func @tanh
// CHECK-SAME:    uop.schedule = #uop.schedule<approx = 1>}
// STRICT-LABEL: func.func @tanh
// STRICT-SAME:    uop.schedule = #uop.schedule<>}
func.func @tanh(%x: tensor<12xf32>) -> tensor<12xf32> attributes {uop.kernel} {
  %y = uop.tanh %x : tensor<12xf32>
  func.return %y : tensor<12xf32>
}

// A bias gradient sums the rows of dY: no operand is broadcast, but the reduce loop
// reads each row contiguously along the output axis, so 16 columns are summed at a time
// (vector loads; strict too: each column's sum keeps its order), not a split sum
// striding down each column.
// CHECK-LABEL: func.func @bias_gradient
// CHECK-SAME:    uop.schedule = #uop.schedule<upcast = [16], thread = 0, vector = 8>}
// STRICT-LABEL: func.func @bias_gradient
// STRICT-SAME:    uop.schedule = #uop.schedule<upcast = [16], thread = 0, vector = 8>}
func.func @bias_gradient(%dy: tensor<16x64x256xf32>) -> tensor<256xf32> attributes {uop.kernel} {
  %d = uop.reshape %dy : tensor<16x64x256xf32> -> tensor<1024x256xf32>
  %r = uop.reduce add %d axes [0] : tensor<1024x256xf32> -> tensor<256xf32>
  func.return %r : tensor<256xf32>
}

// The same with a float mask added to the scores (an attention bias broadcast over
// batch and heads): the reduce loop reads it, but as a term, not a factor of a product
// that copies along batch and heads could share: no register tile either.
// CHECK-LABEL: func.func @biased_softmax_sum
// CHECK-SAME:    uop.schedule = #uop.schedule<thread = 0, split = 8, approx = 1, vector = 8>}
func.func @biased_softmax_sum(%bias: tensor<1x1x64x64xf32>, %s: tensor<16x4x64x64xf32>) -> tensor<16x4x64xf32> attributes {uop.kernel} {
  %be = uop.expand %bias : tensor<1x1x64x64xf32> -> tensor<16x4x64x64xf32>
  %d = uop.add %s, %be : tensor<16x4x64x64xf32>
  %e = uop.exp %d : tensor<16x4x64x64xf32>
  %r = uop.reduce add %e axes [3] : tensor<16x4x64x64xf32> -> tensor<16x4x64xf32>
  func.return %r : tensor<16x4x64xf32>
}

// A matrix-vector product x @ W.T with W stored (out, in): x is broadcast along the
// outputs and W's rows lie along the reduction, so each row's sum runs in 8 partial sums,
// one row after another (f32: rows share x only when they decode packed weights), and
// threads split the outputs. Strict float order keeps the register tile over the
// outputs, unsplit.
// CHECK-LABEL: func.func @matvec_rows
// CHECK-SAME:    uop.schedule = #uop.schedule<thread = 0, split = 8, lanes = 1>}
// STRICT-LABEL: func.func @matvec_rows
// STRICT-SAME:    uop.schedule = #uop.schedule<upcast = [32], thread = 0, vector = 8>}
func.func @matvec_rows(%x: tensor<1x576xf32>, %w: tensor<1536x576xf32>) -> tensor<1536xf32> attributes {uop.kernel} {
  %xe = uop.expand %x : tensor<1x576xf32> -> tensor<1536x576xf32>
  %p = uop.mul %xe, %w : tensor<1536x576xf32>
  %r = uop.reduce add %p axes [1] : tensor<1536x576xf32> -> tensor<1536xf32>
  func.return %r : tensor<1536xf32>
}

// W stored (in, out) (GPT-2's Conv1D): its rows lie along the outputs, so the register
// tile over 32 outputs (4 ymm accumulators) reads them contiguously and stays.
// CHECK-LABEL: func.func @matvec_columns
// CHECK-SAME:    uop.schedule = #uop.schedule<upcast = [32], thread = 0, fma = 1, vector = 8>}
func.func @matvec_columns(%x: tensor<576x1xf32>, %w: tensor<576x1536xf32>) -> tensor<1536xf32> attributes {uop.kernel} {
  %xe = uop.expand %x : tensor<576x1xf32> -> tensor<576x1536xf32>
  %p = uop.mul %xe, %w : tensor<576x1536xf32>
  %r = uop.reduce add %p axes [0] : tensor<576x1536xf32> -> tensor<1536xf32>
  func.return %r : tensor<1536xf32>
}

// The same product over int8 weights decoded in the kernel (4 codes an i32 word, a
// scale per 32): 8 outputs share each load of x, and the split's 8 partial sums are
// vector lanes taking the 4 codes of one word each, so that the lanes read 8
// consecutive words (32 elements, one block scale), each lane accumulating by fused
// multiply-adds. Strict float order: no split, no fma.
// CHECK-LABEL: func.func @matvec_int8
// CHECK-SAME:    uop.schedule = #uop.schedule<upcast = [8], thread = 0, split = 8, lanes = 4, fma = 1>}
// STRICT-LABEL: func.func @matvec_int8
// STRICT-SAME:    uop.schedule = #uop.schedule<upcast = [32], thread = 0, vector = 8>}
func.func @matvec_int8(%x: tensor<1x576xf32>, %words: tensor<1536x144xi32>, %pos: tensor<4xi32>, %scales: tensor<1536x18xf32>) -> tensor<1536xf32> attributes {uop.kernel} {
  %xe = uop.expand %x : tensor<1x576xf32> -> tensor<1536x576xf32>
  %wr = uop.reshape %words : tensor<1536x144xi32> -> tensor<1536x144x1xi32>
  %we = uop.expand %wr : tensor<1536x144x1xi32> -> tensor<1536x144x4xi32>
  %w = uop.reshape %we : tensor<1536x144x4xi32> -> tensor<1536x576xi32>
  %pr = uop.reshape %pos : tensor<4xi32> -> tensor<1x1x4xi32>
  %pe = uop.expand %pr : tensor<1x1x4xi32> -> tensor<1536x144x4xi32>
  %p = uop.reshape %pe : tensor<1536x144x4xi32> -> tensor<1536x576xi32>
  %codes = uop.decode int8 %w, %p : tensor<1536x576xi32> -> tensor<1536x576xf32>
  %sr = uop.reshape %scales : tensor<1536x18xf32> -> tensor<1536x18x1xf32>
  %se = uop.expand %sr : tensor<1536x18x1xf32> -> tensor<1536x18x32xf32>
  %s = uop.reshape %se : tensor<1536x18x32xf32> -> tensor<1536x576xf32>
  %wd = uop.mul %codes, %s : tensor<1536x576xf32>
  %prod = uop.mul %xe, %wd : tensor<1536x576xf32>
  %r = uop.reduce add %prod axes [1] : tensor<1536x576xf32> -> tensor<1536xf32>
  func.return %r : tensor<1536xf32>
}

// int8 weights kept a code a byte (what `quantize_weight` makes of int8 and q8_0): the
// cast of i8 to f32 decodes them, and the product runs one output at a time, a lane per
// element of a 32-element block (one block scale), each lane widened from its byte by
// the vector load. ui8 bytes alike; an i16 cast is no decode (f32 rows' split).
// CHECK-LABEL: func.func @matvec_bytes
// CHECK-SAME:    uop.schedule = #uop.schedule<thread = 0, split = 32, lanes = 1, fma = 1>}
// STRICT-LABEL: func.func @matvec_bytes
// STRICT-SAME:    uop.schedule = #uop.schedule<upcast = [32], thread = 0, vector = 8>}
func.func @matvec_bytes(%x: tensor<1x576xf32>, %codes: tensor<1536x576xi8>, %scales: tensor<1536x18xf32>) -> tensor<1536xf32> attributes {uop.kernel} {
  %xe = uop.expand %x : tensor<1x576xf32> -> tensor<1536x576xf32>
  %c = uop.cast %codes : tensor<1536x576xi8> to tensor<1536x576xf32>
  %sr = uop.reshape %scales : tensor<1536x18xf32> -> tensor<1536x18x1xf32>
  %se = uop.expand %sr : tensor<1536x18x1xf32> -> tensor<1536x18x32xf32>
  %s = uop.reshape %se : tensor<1536x18x32xf32> -> tensor<1536x576xf32>
  %wd = uop.mul %c, %s : tensor<1536x576xf32>
  %prod = uop.mul %xe, %wd : tensor<1536x576xf32>
  %r = uop.reduce add %prod axes [1] : tensor<1536x576xf32> -> tensor<1536xf32>
  func.return %r : tensor<1536xf32>
}

// A smaller product (192 outputs of 576: SmolLM2's k and v projections) still streams
// its matrix on both cores.
// CHECK-LABEL: func.func @matvec_bytes_small
// CHECK-SAME:    uop.schedule = #uop.schedule<thread = 0, split = 32, lanes = 1, fma = 1>}
// ONE-CORE-LABEL: func.func @matvec_bytes_small
// ONE-CORE-SAME:    uop.schedule = #uop.schedule<split = 32, lanes = 1, fma = 1>}
func.func @matvec_bytes_small(%x: tensor<1x576xf32>, %codes: tensor<192x576xi8>) -> tensor<192xf32> attributes {uop.kernel} {
  %xe = uop.expand %x : tensor<1x576xf32> -> tensor<192x576xf32>
  %c = uop.cast %codes : tensor<192x576xi8> to tensor<192x576xf32>
  %prod = uop.mul %xe, %c : tensor<192x576xf32>
  %r = uop.reduce add %prod axes [1] : tensor<192x576xf32> -> tensor<192xf32>
  func.return %r : tensor<192xf32>
}

// CHECK-LABEL: func.func @matvec_unsigned_bytes
// CHECK-SAME:    uop.schedule = #uop.schedule<thread = 0, split = 32, lanes = 1, fma = 1>}
func.func @matvec_unsigned_bytes(%x: tensor<1x576xf32>, %codes: tensor<1536x576xui8>) -> tensor<1536xf32> attributes {uop.kernel} {
  %xe = uop.expand %x : tensor<1x576xf32> -> tensor<1536x576xf32>
  %c = uop.cast %codes : tensor<1536x576xui8> to tensor<1536x576xf32>
  %prod = uop.mul %xe, %c : tensor<1536x576xf32>
  %r = uop.reduce add %prod axes [1] : tensor<1536x576xf32> -> tensor<1536xf32>
  func.return %r : tensor<1536xf32>
}

// CHECK-LABEL: func.func @matvec_i16
// CHECK-SAME:    uop.schedule = #uop.schedule<thread = 0, split = 8, lanes = 1>}
func.func @matvec_i16(%x: tensor<1x576xf32>, %codes: tensor<1536x576xi16>) -> tensor<1536xf32> attributes {uop.kernel} {
  %xe = uop.expand %x : tensor<1x576xf32> -> tensor<1536x576xf32>
  %c = uop.cast %codes : tensor<1536x576xi16> to tensor<1536x576xf32>
  %prod = uop.mul %xe, %c : tensor<1536x576xf32>
  %r = uop.reduce add %prod axes [1] : tensor<1536x576xf32> -> tensor<1536xf32>
  func.return %r : tensor<1536xf32>
}

// int4 weights (8 codes a word): a lane per code of a word, 8 lanes, the 4 words of a
// 32-element block in steps (x read contiguously, the block scale once a block).
// CHECK-LABEL: func.func @matvec_int4
// CHECK-SAME:    uop.schedule = #uop.schedule<upcast = [8], thread = 0, split = 8, lanes = 1, steps = 4, fma = 1>}
func.func @matvec_int4(%x: tensor<1x576xf32>, %words: tensor<1536x72xi32>, %pos: tensor<8xi32>) -> tensor<1536xf32> attributes {uop.kernel} {
  %xe = uop.expand %x : tensor<1x576xf32> -> tensor<1536x576xf32>
  %wr = uop.reshape %words : tensor<1536x72xi32> -> tensor<1536x72x1xi32>
  %we = uop.expand %wr : tensor<1536x72x1xi32> -> tensor<1536x72x8xi32>
  %w = uop.reshape %we : tensor<1536x72x8xi32> -> tensor<1536x576xi32>
  %pr = uop.reshape %pos : tensor<8xi32> -> tensor<1x1x8xi32>
  %pe = uop.expand %pr : tensor<1x1x8xi32> -> tensor<1536x72x8xi32>
  %p = uop.reshape %pe : tensor<1536x72x8xi32> -> tensor<1536x576xi32>
  %codes = uop.decode int4 %w, %p : tensor<1536x576xi32> -> tensor<1536x576xf32>
  %prod = uop.mul %xe, %codes : tensor<1536x576xf32>
  %r = uop.reduce add %prod axes [1] : tensor<1536x576xf32> -> tensor<1536xf32>
  func.return %r : tensor<1536xf32>
}

// A matmul over int4 weights with more rows than one register tile (a short prompt's
// projection, 4 rows): cache-tiled with a packed panel, which holds the decoded values
// (decoded once per panel, not once per tile of rows); 3 rows, one tile, decode in place.
// CHECK-LABEL: func.func @prompt_int4
// CHECK-SAME:    uop.schedule = #uop.schedule<upcast = [3, 32], thread = 1, tile = [0, 32], pack = 1, fma = 1, vector = 8>}
// CHECK-LABEL: func.func @tile_int4
// CHECK-SAME:    uop.schedule = #uop.schedule<upcast = [3, 32], thread = 1, fma = 1, vector = 8>}
func.func @prompt_int4(%x: tensor<4x576xf32>, %words: tensor<1536x72xi32>, %pos: tensor<8xi32>) -> tensor<4x1536xf32> attributes {uop.kernel} {
  %xr = uop.reshape %x : tensor<4x576xf32> -> tensor<4x1x576xf32>
  %xe = uop.expand %xr : tensor<4x1x576xf32> -> tensor<4x1536x576xf32>
  %wr = uop.reshape %words : tensor<1536x72xi32> -> tensor<1536x72x1xi32>
  %we = uop.expand %wr : tensor<1536x72x1xi32> -> tensor<1536x72x8xi32>
  %w = uop.reshape %we : tensor<1536x72x8xi32> -> tensor<1536x576xi32>
  %pr = uop.reshape %pos : tensor<8xi32> -> tensor<1x1x8xi32>
  %pe = uop.expand %pr : tensor<1x1x8xi32> -> tensor<1536x72x8xi32>
  %p = uop.reshape %pe : tensor<1536x72x8xi32> -> tensor<1536x576xi32>
  %codes = uop.decode int4 %w, %p : tensor<1536x576xi32> -> tensor<1536x576xf32>
  %cr = uop.reshape %codes : tensor<1536x576xf32> -> tensor<1x1536x576xf32>
  %ce = uop.expand %cr : tensor<1x1536x576xf32> -> tensor<4x1536x576xf32>
  %prod = uop.mul %xe, %ce : tensor<4x1536x576xf32>
  %r = uop.reduce add %prod axes [2] : tensor<4x1536x576xf32> -> tensor<4x1536xf32>
  func.return %r : tensor<4x1536xf32>
}
func.func @tile_int4(%x: tensor<3x576xf32>, %words: tensor<1536x72xi32>, %pos: tensor<8xi32>) -> tensor<3x1536xf32> attributes {uop.kernel} {
  %xr = uop.reshape %x : tensor<3x576xf32> -> tensor<3x1x576xf32>
  %xe = uop.expand %xr : tensor<3x1x576xf32> -> tensor<3x1536x576xf32>
  %wr = uop.reshape %words : tensor<1536x72xi32> -> tensor<1536x72x1xi32>
  %we = uop.expand %wr : tensor<1536x72x1xi32> -> tensor<1536x72x8xi32>
  %w = uop.reshape %we : tensor<1536x72x8xi32> -> tensor<1536x576xi32>
  %pr = uop.reshape %pos : tensor<8xi32> -> tensor<1x1x8xi32>
  %pe = uop.expand %pr : tensor<1x1x8xi32> -> tensor<1536x72x8xi32>
  %p = uop.reshape %pe : tensor<1536x72x8xi32> -> tensor<1536x576xi32>
  %codes = uop.decode int4 %w, %p : tensor<1536x576xi32> -> tensor<1536x576xf32>
  %cr = uop.reshape %codes : tensor<1536x576xf32> -> tensor<1x1536x576xf32>
  %ce = uop.expand %cr : tensor<1x1536x576xf32> -> tensor<3x1536x576xf32>
  %prod = uop.mul %xe, %ce : tensor<3x1536x576xf32>
  %r = uop.reduce add %prod axes [2] : tensor<3x1536x576xf32> -> tensor<3x1536xf32>
  func.return %r : tensor<3x1536xf32>
}

// A transposing copy (attention's K -> K^T: the innermost output axis reads K with a
// stride of 64, the other axis contiguously) runs in 16 x 16 cache tiles of its two axes;
// a permuted copy that keeps the innermost axis contiguous, and one whose axes the
// block does not divide, get none.
// CHECK-LABEL: func.func @transpose
// CHECK-SAME:    uop.schedule = #uop.schedule<tile = [0, 16, 16]>}
// STRICT-LABEL: func.func @transpose
// STRICT-SAME:    uop.schedule = #uop.schedule<tile = [0, 16, 16]>}
// CHECK-LABEL: func.func @heads
// CHECK-SAME:    uop.schedule = #uop.schedule<>}
// CHECK-LABEL: func.func @transpose_odd
// CHECK-SAME:    uop.schedule = #uop.schedule<>}
func.func @transpose(%0: tensor<256x64xf32>) -> tensor<1x64x256xf32> attributes {uop.kernel} {
  %1 = uop.reshape %0 : tensor<256x64xf32> -> tensor<1x256x64xf32>
  %2 = uop.permute %1 perm [0, 2, 1] : tensor<1x256x64xf32> -> tensor<1x64x256xf32>
  %3 = uop.contiguous %2 : tensor<1x64x256xf32>
  func.return %3 : tensor<1x64x256xf32>
}
func.func @heads(%0: tensor<8x4x16xf32>) -> tensor<4x8x16xf32> attributes {uop.kernel} {
  %1 = uop.permute %0 perm [1, 0, 2] : tensor<8x4x16xf32> -> tensor<4x8x16xf32>
  %2 = uop.contiguous %1 : tensor<4x8x16xf32>
  func.return %2 : tensor<4x8x16xf32>
}
func.func @transpose_odd(%0: tensor<40x24xf32>) -> tensor<24x40xf32> attributes {uop.kernel} {
  %1 = uop.permute %0 perm [1, 0] : tensor<40x24xf32> -> tensor<24x40xf32>
  %2 = uop.contiguous %1 : tensor<24x40xf32>
  func.return %2 : tensor<24x40xf32>
}

// A fused softmax over attention scores (P = exp2(S - rowmax S), S = Q K^T): the row
// max is computed apart from the output's index space (the kernel is not plain), so its
// row loops are jammed by the register tile's columns too; their width stays 32 on
// AVX-512 as on AVX2 (3x32, not 3x64: an exp per jammed score).
// CHECK-LABEL: func.func @softmax_scores
// CHECK-SAME:    uop.schedule = #uop.schedule<upcast = [3, 32], thread = 0, approx = 1, fma = 1, vector = 8>}
// AVX512-LABEL: func.func @softmax_scores
// AVX512-SAME:    uop.schedule = #uop.schedule<upcast = [3, 32], thread = 0, approx = 1, fma = 1, vector = 16>}
func.func @softmax_scores(%q: tensor<64x16xf32>, %k: tensor<64x16xf32>) -> tensor<64x64xf32> attributes {uop.kernel} {
  %qr = uop.reshape %q : tensor<64x16xf32> -> tensor<64x1x16xf32>
  %qe = uop.expand %qr : tensor<64x1x16xf32> -> tensor<64x64x16xf32>
  %kr = uop.reshape %k : tensor<64x16xf32> -> tensor<1x64x16xf32>
  %ke = uop.expand %kr : tensor<1x64x16xf32> -> tensor<64x64x16xf32>
  %p = uop.mul %qe, %ke : tensor<64x64x16xf32>
  %s = uop.reduce add %p axes [2] : tensor<64x64x16xf32> -> tensor<64x64xf32>
  %m = uop.reduce max %s axes [1] : tensor<64x64xf32> -> tensor<64xf32>
  %mr = uop.reshape %m : tensor<64xf32> -> tensor<64x1xf32>
  %me = uop.expand %mr : tensor<64x1xf32> -> tensor<64x64xf32>
  %neg = uop.const dense<-1.0> : tensor<64x64xf32>
  %nm = uop.mul %me, %neg : tensor<64x64xf32>
  %d = uop.add %s, %nm : tensor<64x64xf32>
  %e = uop.exp2 %d : tensor<64x64xf32>
  func.return %e : tensor<64x64xf32>
}

// Short reductions (K = 4, under MIN_TILE_REDUCE = 8): x @ W with W stored (k, n) reads
// W's columns contiguously in the naive loop, which vectorizes along them: no tile;
// x @ W.T with W stored (n, k) reads W along the reduction, strided along the columns
// (the naive loop measured 7x slower): a register tile from K = 2 on.
// CHECK-LABEL: func.func @short_k
// CHECK-SAME:    uop.schedule = #uop.schedule<>}
// CHECK-LABEL: func.func @short_k_transposed
// CHECK-SAME:    uop.schedule = #uop.schedule<upcast = [3, 32], tile = [0, 32], pack = 1, fma = 1, vector = 8>}
func.func @short_k(%x: tensor<64x4xf32>, %w: tensor<4x64xf32>) -> tensor<64x64xf32> attributes {uop.kernel} {
  %xr = uop.reshape %x : tensor<64x4xf32> -> tensor<64x1x4xf32>
  %xe = uop.expand %xr : tensor<64x1x4xf32> -> tensor<64x64x4xf32>
  %wt = uop.permute %w perm [1, 0] : tensor<4x64xf32> -> tensor<64x4xf32>
  %wr = uop.reshape %wt : tensor<64x4xf32> -> tensor<1x64x4xf32>
  %we = uop.expand %wr : tensor<1x64x4xf32> -> tensor<64x64x4xf32>
  %p = uop.mul %xe, %we : tensor<64x64x4xf32>
  %r = uop.reduce add %p axes [2] : tensor<64x64x4xf32> -> tensor<64x64xf32>
  func.return %r : tensor<64x64xf32>
}
func.func @short_k_transposed(%x: tensor<64x4xf32>, %w: tensor<64x4xf32>) -> tensor<64x64xf32> attributes {uop.kernel} {
  %xr = uop.reshape %x : tensor<64x4xf32> -> tensor<64x1x4xf32>
  %xe = uop.expand %xr : tensor<64x1x4xf32> -> tensor<64x64x4xf32>
  %wr = uop.reshape %w : tensor<64x4xf32> -> tensor<1x64x4xf32>
  %we = uop.expand %wr : tensor<1x64x4xf32> -> tensor<64x64x4xf32>
  %p = uop.mul %xe, %we : tensor<64x64x4xf32>
  %r = uop.reduce add %p axes [2] : tensor<64x64x4xf32> -> tensor<64x64xf32>
  func.return %r : tensor<64x64xf32>
}

// A gradient whose reduce reaches the output through a transpose (dV = (dO^T P)^T of
// attention: a sum over the query rows of (b, c, j), returned as (b, j, c)) is a matmul
// of the output's axes all the same: a register tile, its rows along j, its columns
// along c (the naive nest's split sum ran 2-4x slower); on AVX2 its 32-column panels of
// dO are packed per batch; on AVX-512 the 256-long reduction keeps B's vectors in
// registers (6x64).
// CHECK-LABEL: func.func @transposed_gradient
// CHECK-SAME:    uop.schedule = #uop.schedule<upcast = [1, 3, 32], thread = 1, tile = [0, 0, 32], pack = 1, fma = 1, vector = 8>}
// AVX512-LABEL: func.func @transposed_gradient
// AVX512-SAME:    uop.schedule = #uop.schedule<upcast = [1, 6, 64], thread = 1, fma = 1, vector = 16>}
func.func @transposed_gradient(%do: tensor<2x256x64xf32>, %p: tensor<2x256x256xf32>) -> tensor<2x256x64xf32> attributes {uop.kernel} {
  %dr = uop.reshape %do : tensor<2x256x64xf32> -> tensor<2x256x64x1xf32>
  %de = uop.expand %dr : tensor<2x256x64x1xf32> -> tensor<2x256x64x256xf32>
  %pr = uop.reshape %p : tensor<2x256x256xf32> -> tensor<2x256x1x256xf32>
  %pe = uop.expand %pr : tensor<2x256x1x256xf32> -> tensor<2x256x64x256xf32>
  %m = uop.mul %de, %pe : tensor<2x256x64x256xf32>
  %s = uop.reduce add %m axes [1] : tensor<2x256x64x256xf32> -> tensor<2x64x256xf32>
  %t = uop.permute %s perm [0, 2, 1] : tensor<2x64x256xf32> -> tensor<2x256x64xf32>
  func.return %t : tensor<2x256x64xf32>
}
