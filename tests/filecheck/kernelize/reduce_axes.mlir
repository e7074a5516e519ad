// RUN: uopc-opt %s -p 'uop-kernelize{layout="output"}' | filecheck %s

// Adjacent reduced axes are reduced as one (same elements, same row-major order): a
// weight gradient summed over (batch, time) becomes one reduce loop.
// CHECK-LABEL: func.func @k0(%0: tensor<2x3x4xf32>, %1: tensor<2x3x5xf32>) -> tensor<4x5xf32> attributes {uop.kernel} {
// CHECK:         %[[M:.*]] = uop.mul %{{.*}}, %{{.*}} : tensor<2x3x4x5xf32>
// CHECK-NEXT:    %[[F:.*]] = uop.reshape %[[M]] : tensor<2x3x4x5xf32> -> tensor<6x4x5xf32>
// CHECK-NEXT:    %{{.*}} = uop.reduce add %[[F]] axes [0] : tensor<6x4x5xf32> -> tensor<4x5xf32>
func.func @grad(%x: tensor<2x3x4xf32>, %dy: tensor<2x3x5xf32>) -> tensor<4x5xf32> {
  %xr = uop.reshape %x : tensor<2x3x4xf32> -> tensor<2x3x4x1xf32>
  %xe = uop.expand %xr : tensor<2x3x4x1xf32> -> tensor<2x3x4x5xf32>
  %dr = uop.reshape %dy : tensor<2x3x5xf32> -> tensor<2x3x1x5xf32>
  %de = uop.expand %dr : tensor<2x3x1x5xf32> -> tensor<2x3x4x5xf32>
  %m = uop.mul %xe, %de : tensor<2x3x4x5xf32>
  %g = uop.reduce add %m axes [0, 1] : tensor<2x3x4x5xf32> -> tensor<4x5xf32>
  func.return %g : tensor<4x5xf32>
}

// Runs are merged separately; an isolated axis stays as it is.
// CHECK-LABEL: func.func @k1(%0: tensor<2x3x4x5x6xf32>) -> tensor<4xf32> attributes {uop.kernel} {
// CHECK-NEXT:    %1 = uop.reshape %0 : tensor<2x3x4x5x6xf32> -> tensor<6x4x30xf32>
// CHECK-NEXT:    %2 = uop.reduce max %1 axes [0, 2] : tensor<6x4x30xf32> -> tensor<4xf32>
// CHECK-LABEL: func.func @k2(%0: tensor<2x3x4xf32>) -> tensor<3xf32> attributes {uop.kernel} {
// CHECK-NEXT:    %1 = uop.reduce add %0 axes [0, 2] : tensor<2x3x4xf32> -> tensor<3xf32>
func.func @runs(%x: tensor<2x3x4x5x6xf32>, %y: tensor<2x3x4xf32>) -> (tensor<4xf32>, tensor<3xf32>) {
  %a = uop.reduce max %x axes [0, 1, 3, 4] : tensor<2x3x4x5x6xf32> -> tensor<4xf32>
  %b = uop.reduce add %y axes [0, 2] : tensor<2x3x4xf32> -> tensor<3xf32>
  func.return %a, %b : tensor<4xf32>, tensor<3xf32>
}
