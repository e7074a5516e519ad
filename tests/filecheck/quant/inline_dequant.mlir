// RUN: uopc-opt %s -p uop-kernelize | filecheck %s --check-prefix=KERNEL
// RUN: uopc-opt %s -p 'uop-kernelize{layout="output"}' | filecheck %s --check-prefix=KERNEL
// RUN: uopc-opt %s -p 'uop-fold,uop-symbolic,cse,uop-kernelize{layout="output"},uop-schedule{cpu="avx2"},uop-rangeify,uop-apply-schedule,uop-symbolic,dce,licm,cse' | filecheck %s --check-prefix=LOOPS

// x @ W.T with W (64, 32) in int4 (two codes a byte, as 64x4 i32 words) and f32 scales per
// group of 16: one kernel reads the packed words and the scales and decodes inline. The
// dequantized weight is broadcast over 96 rows, which would stage any other computed
// value of two ALU ops; a decoded value is never staged nor copied for its layout.
// KERNEL-LABEL: func.func @k0(%0: tensor<96x32xf32>, %1: tensor<64x4xi32>, %2: tensor<8xi32>, %3: tensor<64x2xf32>) -> tensor<96x64xf32> attributes {uop.kernel} {
// KERNEL-NOT:     uop.contiguous
// KERNEL:         uop.decode int4 %{{.*}}, %{{.*}} : tensor<64x32xi32> -> tensor<64x32xf32>
// KERNEL-NOT:     uop.contiguous
// KERNEL:         uop.reduce add %{{.*}} axes [2] : tensor<96x64x32xf32> -> tensor<96x64xf32>
// KERNEL:       func.func @linear
// KERNEL-NEXT:    %{{.*}} = func.call @k0(%x, %words, %pos, %scales)
// KERNEL-NEXT:    func.return

// After lowering: the kernel takes the words and scales; no buffer of the weight's
// 64x32 f32 size exists anywhere (no argument, no arena view, no allocation). Its 96
// rows reuse each panel of 32 decoded columns: the panel (32 deep, 32 wide) is decoded
// into a stack buffer once per panel (`pack`), and the register tile reads it (vectors
// of 8 lanes).
// LOOPS-LABEL: func.func @k0(
// LOOPS-SAME:    memref<96x64xf32>, %{{.*}}: memref<96x32xf32>, %{{.*}}: memref<64x4xi32>, %{{.*}}: memref<8xi32>, %{{.*}}: memref<64x2xf32>)
// LOOPS-NOT:     memref<64x32xf32>
// LOOPS-NOT:     memref<32x64xf32>
// LOOPS:         %[[PANEL:.*]] = memref.alloca() : memref<32x32xf32>
// LOOPS:         arith.shrui
// LOOPS:         arith.xori %{{.*}}, %{{.*}} : i32
// LOOPS:         arith.bitcast %{{.*}} : i32 to f32
// LOOPS:         arith.subf
// LOOPS:         memref.store %{{.*}}, %[[PANEL]]
// LOOPS-NOT:     arith.shrui
// LOOPS:         vector.load %[[PANEL]]
// LOOPS-NOT:     arith.shrui
// LOOPS-NOT:     memref<64x32xf32>
// LOOPS-NOT:     memref<32x64xf32>
// LOOPS:       func.func @linear
// LOOPS-LABEL: func.func @k1(
// LOOPS-SAME:    memref<3x32xf32>, %{{.*}}: memref<3x16xf32>, %{{.*}}: memref<16x4xi32>, %{{.*}}: memref<8xi32>, %{{.*}}: memref<16x1xf32>)
// LOOPS-NOT:     memref<16x32xf32>
// LOOPS-NOT:     memref<32x16xf32>
// LOOPS:         arith.bitcast
// LOOPS-NOT:     memref<16x32xf32>
// LOOPS-NOT:     memref<32x16xf32>
// LOOPS:       func.func @embedding
func.func @linear(%x: tensor<96x32xf32>, %words: tensor<64x4xi32>, %pos: tensor<8xi32>, %scales: tensor<64x2xf32>) -> tensor<96x64xf32> {
  %xr = uop.reshape %x : tensor<96x32xf32> -> tensor<96x1x32xf32>
  %xe = uop.expand %xr : tensor<96x1x32xf32> -> tensor<96x64x32xf32>
  %wr = uop.reshape %words : tensor<64x4xi32> -> tensor<64x4x1xi32>
  %we = uop.expand %wr : tensor<64x4x1xi32> -> tensor<64x4x8xi32>
  %w = uop.reshape %we : tensor<64x4x8xi32> -> tensor<64x32xi32>
  %pr = uop.reshape %pos : tensor<8xi32> -> tensor<1x1x8xi32>
  %pe = uop.expand %pr : tensor<1x1x8xi32> -> tensor<64x4x8xi32>
  %p = uop.reshape %pe : tensor<64x4x8xi32> -> tensor<64x32xi32>
  %codes = uop.decode int4 %w, %p : tensor<64x32xi32> -> tensor<64x32xf32>
  %sr = uop.reshape %scales : tensor<64x2xf32> -> tensor<64x2x1xf32>
  %se = uop.expand %sr : tensor<64x2x1xf32> -> tensor<64x2x16xf32>
  %s = uop.reshape %se : tensor<64x2x16xf32> -> tensor<64x32xf32>
  %deq = uop.mul %codes, %s : tensor<64x32xf32>
  %dr = uop.reshape %deq : tensor<64x32xf32> -> tensor<1x64x32xf32>
  %de = uop.expand %dr : tensor<1x64x32xf32> -> tensor<96x64x32xf32>
  %prod = uop.mul %xe, %de : tensor<96x64x32xf32>
  %y = uop.reduce add %prod axes [2] : tensor<96x64x32xf32> -> tensor<96x64xf32>
  func.return %y : tensor<96x64xf32>
}

// An embedding lookup as a one-hot matmul over a (16, 32) e2m1 table: the reduce runs
// over the table's rows, a strided axis, for which the layout rule would copy an f32
// operand; the decoded table is read in place instead.
// KERNEL-LABEL: func.func @embedding
// KERNEL-NOT:     uop.contiguous
// KERNEL:         func.return
func.func @embedding(%hot: tensor<3x16xf32>, %words: tensor<16x4xi32>, %pos: tensor<8xi32>, %scales: tensor<16x1xf32>) -> tensor<3x32xf32> {
  %hr = uop.reshape %hot : tensor<3x16xf32> -> tensor<3x1x16xf32>
  %he = uop.expand %hr : tensor<3x1x16xf32> -> tensor<3x32x16xf32>
  %wr = uop.reshape %words : tensor<16x4xi32> -> tensor<16x4x1xi32>
  %we = uop.expand %wr : tensor<16x4x1xi32> -> tensor<16x4x8xi32>
  %w = uop.reshape %we : tensor<16x4x8xi32> -> tensor<16x32xi32>
  %pr = uop.reshape %pos : tensor<8xi32> -> tensor<1x1x8xi32>
  %pe = uop.expand %pr : tensor<1x1x8xi32> -> tensor<16x4x8xi32>
  %p = uop.reshape %pe : tensor<16x4x8xi32> -> tensor<16x32xi32>
  %codes = uop.decode e2m1 %w, %p : tensor<16x32xi32> -> tensor<16x32xf32>
  %sr = uop.reshape %scales : tensor<16x1xf32> -> tensor<16x1x1xf32>
  %se = uop.expand %sr : tensor<16x1x1xf32> -> tensor<16x1x32xf32>
  %s = uop.reshape %se : tensor<16x1x32xf32> -> tensor<16x32xf32>
  %deq = uop.mul %codes, %s : tensor<16x32xf32>
  %dt = uop.permute %deq perm [1, 0] : tensor<16x32xf32> -> tensor<32x16xf32>
  %dr = uop.reshape %dt : tensor<32x16xf32> -> tensor<1x32x16xf32>
  %de = uop.expand %dr : tensor<1x32x16xf32> -> tensor<3x32x16xf32>
  %prod = uop.mul %he, %de : tensor<3x32x16xf32>
  %y = uop.reduce add %prod axes [2] : tensor<3x32x16xf32> -> tensor<3x32xf32>
  func.return %y : tensor<3x32xf32>
}

// int8 weights kept a code a byte (int8 and q8_0): the cast of the i8 codes decodes them
// as `uop.decode` does words, so the dequantized weight is neither staged nor copied
// for its layout (an f32 copy would be 4x the codes), and the rows' panel is decoded
// once per panel into the stack.
// KERNEL-LABEL: func.func @k2(%0: tensor<96x32xf32>, %1: tensor<64x32xi8>, %2: tensor<64x2xf32>) -> tensor<96x64xf32> attributes {uop.kernel} {
// KERNEL-NOT:     uop.contiguous
// KERNEL:         uop.cast %{{.*}} : tensor<64x32xi8> to tensor<64x32xf32>
// KERNEL-NOT:     uop.contiguous
// KERNEL:         uop.reduce add %{{.*}} axes [2] : tensor<96x64x32xf32> -> tensor<96x64xf32>
// KERNEL:       func.func @linear_bytes
// KERNEL-NEXT:    %{{.*}} = func.call @k2(%x, %codes, %scales)
// KERNEL-NEXT:    func.return
// LOOPS-LABEL: func.func @k2(
// LOOPS-SAME:    memref<96x64xf32>, %{{.*}}: memref<96x32xf32>, %{{.*}}: memref<64x32xi8>, %{{.*}}: memref<64x2xf32>)
// LOOPS-NOT:     memref<64x32xf32>
// LOOPS-NOT:     memref<32x64xf32>
// LOOPS:         %[[PANEL:.*]] = memref.alloca() : memref<32x32xf32>
// LOOPS:         arith.sitofp %{{.*}} : i8 to f32
// LOOPS:         memref.store %{{.*}}, %[[PANEL]]
// LOOPS-NOT:     arith.sitofp
// LOOPS:         vector.load %[[PANEL]]
// LOOPS-NOT:     arith.sitofp
// LOOPS-NOT:     memref<64x32xf32>
// LOOPS-NOT:     memref<32x64xf32>
// LOOPS:       func.func @linear_bytes
func.func @linear_bytes(%x: tensor<96x32xf32>, %codes: tensor<64x32xi8>, %scales: tensor<64x2xf32>) -> tensor<96x64xf32> {
  %xr = uop.reshape %x : tensor<96x32xf32> -> tensor<96x1x32xf32>
  %xe = uop.expand %xr : tensor<96x1x32xf32> -> tensor<96x64x32xf32>
  %c = uop.cast %codes : tensor<64x32xi8> to tensor<64x32xf32>
  %sr = uop.reshape %scales : tensor<64x2xf32> -> tensor<64x2x1xf32>
  %se = uop.expand %sr : tensor<64x2x1xf32> -> tensor<64x2x16xf32>
  %s = uop.reshape %se : tensor<64x2x16xf32> -> tensor<64x32xf32>
  %deq = uop.mul %c, %s : tensor<64x32xf32>
  %dr = uop.reshape %deq : tensor<64x32xf32> -> tensor<1x64x32xf32>
  %de = uop.expand %dr : tensor<1x64x32xf32> -> tensor<96x64x32xf32>
  %prod = uop.mul %xe, %de : tensor<96x64x32xf32>
  %y = uop.reduce add %prod axes [2] : tensor<96x64x32xf32> -> tensor<96x64xf32>
  func.return %y : tensor<96x64xf32>
}
