// uop-schedule gives each kernel a schedule by rules; a schedule already there is kept.
// RUN: uopc-opt %s -p uop-schedule | filecheck %s
// RUN: uopc-opt %s -p 'uop-schedule{mode=none}' | filecheck %s --check-prefix=NONE
// RUN: uopc-opt %s -p "uop-schedule{strict=true}" | filecheck %s --check-prefix=STRICT
// RUN: uopc-opt %s -p uop-schedule --print-op-generic | uopc-opt | filecheck %s

// A matmul: A is broadcast along j, B along i, so both output axes are upcast (a 4x16
// register tile); 64 rows reuse each panel of 16 columns of B, which is packed; the
// work (64*64*64 = 2^18) pays for threads over the 4 panels.
// CHECK-LABEL: func.func @matmul
// CHECK-SAME:    attributes {uop.kernel, uop.schedule = #uop.schedule<upcast = [4, 16], thread = 1, tile = [0, 16], pack = 1>}
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

// A row sum shares no load between rows: no register tile; 12 rows of 8 is too little
// work for threads.
// CHECK-LABEL: func.func @rowsum
// CHECK-SAME:    uop.schedule = #uop.schedule<>}
func.func @rowsum(%x: tensor<12x8xf32>) -> tensor<12xf32> attributes {uop.kernel} {
  %r = uop.reduce add %x axes [1] : tensor<12x8xf32> -> tensor<12xf32>
  func.return %r : tensor<12xf32>
}

// A large elementwise kernel runs its first looped axis (axis 0 has size 1) on threads.
// CHECK-LABEL: func.func @big_add
// CHECK-SAME:    uop.schedule = #uop.schedule<thread = 1>}
func.func @big_add(%x: tensor<1x1024x256xf32>) -> tensor<1x1024x256xf32> attributes {uop.kernel} {
  %y = uop.add %x, %x : tensor<1x1024x256xf32>
  func.return %y : tensor<1x1024x256xf32>
}

// An odd-sized matmul gets the largest factors that divide its axes (9 = 1 * 9, 10 = 2 * 5).
// CHECK-LABEL: func.func @odd
// CHECK-SAME:    uop.schedule = #uop.schedule<upcast = [1, 2]>}
func.func @odd(%a: tensor<9x20xf32>, %b: tensor<1x10x20xf32>) -> tensor<9x10xf32> attributes {uop.kernel} {
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

// A matrix-vector product x @ W.T with W stored (out, in): x is broadcast along the
// outputs and W's rows lie along the reduction, so 8 outputs share each load of x, each
// row's sum runs in 8 partial sums, and threads split the outputs. Strict float order
// keeps the register tile over the outputs, unsplit.
// CHECK-LABEL: func.func @matvec_rows
// CHECK-SAME:    uop.schedule = #uop.schedule<upcast = [8], thread = 0, split = 8>}
// STRICT-LABEL: func.func @matvec_rows
// STRICT-SAME:    uop.schedule = #uop.schedule<upcast = [16], thread = 0>}
func.func @matvec_rows(%x: tensor<1x576xf32>, %w: tensor<1536x576xf32>) -> tensor<1536xf32> attributes {uop.kernel} {
  %xe = uop.expand %x : tensor<1x576xf32> -> tensor<1536x576xf32>
  %p = uop.mul %xe, %w : tensor<1536x576xf32>
  %r = uop.reduce add %p axes [1] : tensor<1536x576xf32> -> tensor<1536xf32>
  func.return %r : tensor<1536xf32>
}

// W stored (in, out) (GPT-2's Conv1D): its rows lie along the outputs, so the register
// tile over 16 outputs reads them contiguously and stays.
// CHECK-LABEL: func.func @matvec_columns
// CHECK-SAME:    uop.schedule = #uop.schedule<upcast = [16], thread = 0>}
func.func @matvec_columns(%x: tensor<576x1xf32>, %w: tensor<576x1536xf32>) -> tensor<1536xf32> attributes {uop.kernel} {
  %xe = uop.expand %x : tensor<576x1xf32> -> tensor<576x1536xf32>
  %p = uop.mul %xe, %w : tensor<576x1536xf32>
  %r = uop.reduce add %p axes [0] : tensor<576x1536xf32> -> tensor<1536xf32>
  func.return %r : tensor<1536xf32>
}
