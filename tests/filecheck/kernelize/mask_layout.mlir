// RUN: uopc-opt %s -p 'uop-kernelize{layout="output"}' | filecheck %s
// RUN: uopc-opt %s -p uop-kernelize | filecheck %s

// A causal softmax's row max: the bool mask is broadcast over batch and heads into the
// reduce, but the layout rule copies only float operands (the B of A@B, whose loads a
// register tile shares): the kernel reads the (64, 64) mask as it lies, with no
// transposed copy of it in a kernel of its own.
// CHECK-LABEL: func.func @k0(%0: tensor<64x64xi1>, %1: tensor<2x4x64x64xf32>) -> tensor<2x4x64xf32> attributes {uop.kernel} {
// CHECK-NEXT:    %2 = uop.reshape %0 : tensor<64x64xi1> -> tensor<1x1x64x64xi1>
// CHECK-NEXT:    %3 = uop.expand %2 : tensor<1x1x64x64xi1> -> tensor<2x4x64x64xi1>
// CHECK-NOT:     uop.contiguous
// CHECK:         uop.reduce max
// CHECK-LABEL: func.func @masked_row_max
// CHECK-NEXT:    %r = func.call @k0(%mask, %s)
// CHECK-NEXT:    func.return %r
func.func @masked_row_max(%mask: tensor<64x64xi1>, %s: tensor<2x4x64x64xf32>) -> tensor<2x4x64xf32> {
  %m4 = uop.reshape %mask : tensor<64x64xi1> -> tensor<1x1x64x64xi1>
  %me = uop.expand %m4 : tensor<1x1x64x64xi1> -> tensor<2x4x64x64xi1>
  %ninf = uop.const dense<0xff800000> : tensor<2x4x64x64xf32>
  %w = uop.where %me, %s, %ninf : tensor<2x4x64x64xi1>, tensor<2x4x64x64xf32>
  %r = uop.reduce max %w axes [3] : tensor<2x4x64x64xf32> -> tensor<2x4x64xf32>
  func.return %r : tensor<2x4x64xf32>
}
