// RUN: uopc-opt %s -p uop-merge-reduce-axes --split-input-file --verify-diagnostics | filecheck %s

// Each run of adjacent reduced axes is merged by a reshape in front of the reduce; an
// isolated axis stays as it is.
// CHECK-LABEL: func.func @runs(%x: tensor<2x3x4x5x6xf32>, %y: tensor<2x3x4xf32>) -> (tensor<4xf32>, tensor<3xf32>) {
// CHECK-NEXT:    %[[F:.*]] = uop.reshape %x : tensor<2x3x4x5x6xf32> -> tensor<6x4x30xf32>
// CHECK-NEXT:    %a = uop.reduce max %[[F]] axes [0, 2] : tensor<6x4x30xf32> -> tensor<4xf32>
// CHECK-NEXT:    %b = uop.reduce add %y axes [0, 2] : tensor<2x3x4xf32> -> tensor<3xf32>
// CHECK-NEXT:    func.return %a, %b : tensor<4xf32>, tensor<3xf32>
func.func @runs(%x: tensor<2x3x4x5x6xf32>, %y: tensor<2x3x4xf32>) -> (tensor<4xf32>, tensor<3xf32>) {
  %a = uop.reduce max %x axes [0, 1, 3, 4] : tensor<2x3x4x5x6xf32> -> tensor<4xf32>
  %b = uop.reduce add %y axes [0, 2] : tensor<2x3x4xf32> -> tensor<3xf32>
  func.return %a, %b : tensor<4xf32>, tensor<3xf32>
}

// -----

// Like every kernelize stage, it rewrites straight-line function bodies only.
// expected-error@+1 {{uop-merge-reduce-axes: @blocks has 2 blocks: kernelize expects a straight-line function body (one block); lower control flow first}}
func.func @blocks(%a: tensor<2x3xf32>) -> tensor<f32> {
  %s = uop.reduce add %a axes [0, 1] : tensor<2x3xf32> -> tensor<f32>
  cf.br ^bb1
^bb1:
  func.return %s : tensor<f32>
}
