// fma = 1: the reduce loops' `acc + x * y` updates become one math.fma each (rounding
// once); a sum without a product is left as it is; without fma, mulf and addf stay.
// RUN: uopc-opt %s -p uop-rangeify,uop-apply-schedule,cse | filecheck %s

// A 2x4 register tile: its 8 accumulators are each updated by one fused multiply-add of
// a shared load of A and a load of B, and no separate multiply or add is left.
// CHECK-LABEL: func.func @matmul
// CHECK:         scf.for {{.*}} iter_args({{.*}}) -> (f32, f32, f32, f32, f32, f32, f32, f32) {
// CHECK-NOT:       arith.mulf
// CHECK-NOT:       arith.addf
// CHECK-COUNT-8:   math.fma %{{.*}}, %{{.*}}, %{{.*}} : f32
// CHECK-NOT:       arith.mulf
// CHECK-NOT:       arith.addf
// CHECK:           scf.yield
func.func @matmul(%a: tensor<8x6xf32>, %b: tensor<6x8xf32>) -> tensor<8x8xf32> attributes {uop.kernel, uop.schedule = #uop.schedule<upcast = [2, 4], fma = 1>} {
  %a3 = uop.reshape %a : tensor<8x6xf32> -> tensor<8x1x6xf32>
  %ae = uop.expand %a3 : tensor<8x1x6xf32> -> tensor<8x8x6xf32>
  %bt = uop.permute %b perm [1, 0] : tensor<6x8xf32> -> tensor<8x6xf32>
  %b3 = uop.reshape %bt : tensor<8x6xf32> -> tensor<1x8x6xf32>
  %be = uop.expand %b3 : tensor<1x8x6xf32> -> tensor<8x8x6xf32>
  %p = uop.mul %ae, %be : tensor<8x8x6xf32>
  %r = uop.reduce add %p axes [2] : tensor<8x8x6xf32> -> tensor<8x8xf32>
  func.return %r : tensor<8x8xf32>
}

// f64 too; the same kernel without fma keeps its multiply and add.
// CHECK-LABEL: func.func @matmul_f64
// CHECK:           math.fma %{{.*}}, %{{.*}}, %{{.*}} : f64
// CHECK-NOT:       arith.mulf
// CHECK-LABEL: func.func @matmul_plain
// CHECK-COUNT-2:   arith.mulf
// CHECK-COUNT-2:   arith.addf
// CHECK-NOT:       math.fma
func.func @matmul_f64(%a: tensor<4x6xf64>, %b: tensor<6x4xf64>) -> tensor<4x4xf64> attributes {uop.kernel, uop.schedule = #uop.schedule<fma = 1>} {
  %a3 = uop.reshape %a : tensor<4x6xf64> -> tensor<4x1x6xf64>
  %ae = uop.expand %a3 : tensor<4x1x6xf64> -> tensor<4x4x6xf64>
  %bt = uop.permute %b perm [1, 0] : tensor<6x4xf64> -> tensor<4x6xf64>
  %b3 = uop.reshape %bt : tensor<4x6xf64> -> tensor<1x4x6xf64>
  %be = uop.expand %b3 : tensor<1x4x6xf64> -> tensor<4x4x6xf64>
  %p = uop.mul %ae, %be : tensor<4x4x6xf64>
  %r = uop.reduce add %p axes [2] : tensor<4x4x6xf64> -> tensor<4x4xf64>
  func.return %r : tensor<4x4xf64>
}
func.func @matmul_plain(%a: tensor<4x6xf32>, %b: tensor<6x4xf32>) -> tensor<4x4xf32> attributes {uop.kernel, uop.schedule = #uop.schedule<upcast = [1, 2]>} {
  %a3 = uop.reshape %a : tensor<4x6xf32> -> tensor<4x1x6xf32>
  %ae = uop.expand %a3 : tensor<4x1x6xf32> -> tensor<4x4x6xf32>
  %bt = uop.permute %b perm [1, 0] : tensor<6x4xf32> -> tensor<4x6xf32>
  %b3 = uop.reshape %bt : tensor<4x6xf32> -> tensor<1x4x6xf32>
  %be = uop.expand %b3 : tensor<1x4x6xf32> -> tensor<4x4x6xf32>
  %p = uop.mul %ae, %be : tensor<4x4x6xf32>
  %r = uop.reduce add %p axes [2] : tensor<4x4x6xf32> -> tensor<4x4xf32>
  func.return %r : tensor<4x4xf32>
}

// A row sum has no product to fuse: its add stays.
// CHECK-LABEL: func.func @rowsum
// CHECK:           arith.addf
// CHECK-NOT:       math.fma
func.func @rowsum(%x: tensor<4x8xf32>) -> tensor<4xf32> attributes {uop.kernel, uop.schedule = #uop.schedule<upcast = [2], fma = 1>} {
  %r = uop.reduce add %x axes [1] : tensor<4x8xf32> -> tensor<4xf32>
  func.return %r : tensor<4xf32>
}
