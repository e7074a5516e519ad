// RUN: uopc-opt %s -p uop-permute-reduces --split-input-file --verify-diagnostics | filecheck %s

// The weight gradient of x @ W.T: a sum over the batch b of x[b, i] * dy[b, o] to
// (in, out), then the transpose to W's (out, in). The permute moves onto the source:
// the kept axes i, o swap places, the reduced axis b stays, and the reduce yields
// (out, in) itself, still reading dy and x contiguously along its innermost axis i.
// CHECK-LABEL: func.func @weight_gradient(%x: tensor<8x6xf32>, %dy: tensor<8x4xf32>) -> tensor<4x6xf32> {
// CHECK:         %p = uop.mul %xe, %de : tensor<8x6x4xf32>
// CHECK-NEXT:    %[[P:.*]] = uop.permute %p perm [0, 2, 1] : tensor<8x6x4xf32> -> tensor<8x4x6xf32>
// CHECK-NEXT:    %w = uop.reduce add %[[P]] axes [0] : tensor<8x4x6xf32> -> tensor<4x6xf32>
// CHECK-NEXT:    func.return %w : tensor<4x6xf32>
func.func @weight_gradient(%x: tensor<8x6xf32>, %dy: tensor<8x4xf32>) -> tensor<4x6xf32> {
  %x3 = uop.reshape %x : tensor<8x6xf32> -> tensor<8x6x1xf32>
  %xe = uop.expand %x3 : tensor<8x6x1xf32> -> tensor<8x6x4xf32>
  %d3 = uop.reshape %dy : tensor<8x4xf32> -> tensor<8x1x4xf32>
  %de = uop.expand %d3 : tensor<8x1x4xf32> -> tensor<8x6x4xf32>
  %p = uop.mul %xe, %de : tensor<8x6x4xf32>
  %s = uop.reduce add %p axes [0] : tensor<8x6x4xf32> -> tensor<6x4xf32>
  %w = uop.permute %s perm [1, 0] : tensor<6x4xf32> -> tensor<4x6xf32>
  func.return %w : tensor<4x6xf32>
}

// -----

// A chain of permutes moves one at a time, each composed with the permute the first
// move left on the source: the second undoes it (no permute left), the third puts it
// back.
// CHECK-LABEL: func.func @chain
// CHECK:         %p = uop.mul %xe, %de : tensor<8x6x4xf32>
// CHECK-NEXT:    %[[P:.*]] = uop.permute %p perm [0, 2, 1] : tensor<8x6x4xf32> -> tensor<8x4x6xf32>
// CHECK-NEXT:    %v = uop.reduce add %[[P]] axes [0] : tensor<8x4x6xf32> -> tensor<4x6xf32>
// CHECK-NEXT:    func.return %v : tensor<4x6xf32>
func.func @chain(%x: tensor<8x6xf32>, %dy: tensor<8x4xf32>) -> tensor<4x6xf32> {
  %x3 = uop.reshape %x : tensor<8x6xf32> -> tensor<8x6x1xf32>
  %xe = uop.expand %x3 : tensor<8x6x1xf32> -> tensor<8x6x4xf32>
  %d3 = uop.reshape %dy : tensor<8x4xf32> -> tensor<8x1x4xf32>
  %de = uop.expand %d3 : tensor<8x1x4xf32> -> tensor<8x6x4xf32>
  %p = uop.mul %xe, %de : tensor<8x6x4xf32>
  %s = uop.reduce add %p axes [0] : tensor<8x6x4xf32> -> tensor<6x4xf32>
  %t = uop.permute %s perm [1, 0] : tensor<6x4xf32> -> tensor<4x6xf32>
  %u = uop.permute %t perm [1, 0] : tensor<4x6xf32> -> tensor<6x4xf32>
  %v = uop.permute %u perm [1, 0] : tensor<6x4xf32> -> tensor<4x6xf32>
  func.return %v : tensor<4x6xf32>
}

// -----

// Kept: a reduce read by anything else (moving the permute would compute the sum twice),
// and one whose new innermost axis would read an operand strided (the head-split
// gradient of a qkv projection: 12 outputs as 3 x 4, read 4 apart along `out` after
// the move; computed as (in, out) it needed a packed copy and ran 2x slower).
// CHECK-LABEL: func.func @kept
// CHECK:         %s = uop.reduce add %x axes [1] : tensor<3x4x5xf32> -> tensor<3x5xf32>
// CHECK-NEXT:    %t = uop.permute %s perm [1, 0] : tensor<3x5xf32> -> tensor<5x3xf32>
// CHECK:         %g = uop.reduce add %m axes [0] : tensor<8x6x12xf32> -> tensor<6x12xf32>
// CHECK-NEXT:    %w = uop.permute %g perm [1, 0] : tensor<6x12xf32> -> tensor<12x6xf32>
func.func @kept(%x: tensor<3x4x5xf32>, %a: tensor<8x6xf32>, %heads: tensor<8x4x3xf32>) -> (tensor<5x3xf32>, tensor<3x5xf32>, tensor<12x6xf32>) {
  %s = uop.reduce add %x axes [1] : tensor<3x4x5xf32> -> tensor<3x5xf32>
  %t = uop.permute %s perm [1, 0] : tensor<3x5xf32> -> tensor<5x3xf32>
  %a3 = uop.reshape %a : tensor<8x6xf32> -> tensor<8x6x1xf32>
  %ae = uop.expand %a3 : tensor<8x6x1xf32> -> tensor<8x6x12xf32>
  %hp = uop.permute %heads perm [0, 2, 1] : tensor<8x4x3xf32> -> tensor<8x3x4xf32>
  %hr = uop.reshape %hp : tensor<8x3x4xf32> -> tensor<8x1x12xf32>
  %he = uop.expand %hr : tensor<8x1x12xf32> -> tensor<8x6x12xf32>
  %m = uop.mul %ae, %he : tensor<8x6x12xf32>
  %g = uop.reduce add %m axes [0] : tensor<8x6x12xf32> -> tensor<6x12xf32>
  %w = uop.permute %g perm [1, 0] : tensor<6x12xf32> -> tensor<12x6xf32>
  func.return %t, %s, %w : tensor<5x3xf32>, tensor<3x5xf32>, tensor<12x6xf32>
}

// -----

// Like every kernelize stage, it rewrites straight-line function bodies only.
// expected-error@+1 {{uop-permute-reduces: @blocks has 2 blocks: kernelize expects a straight-line function body (one block); lower control flow first}}
func.func @blocks(%a: tensor<2x3xf32>) -> tensor<3x2xf32> {
  %s = uop.reduce add %a axes [0] : tensor<2x3xf32> -> tensor<3xf32>
  cf.br ^bb1
^bb1:
  %t = uop.reshape %s : tensor<3xf32> -> tensor<3x1xf32>
  %u = uop.expand %t : tensor<3x1xf32> -> tensor<3x2xf32>
  func.return %u : tensor<3x2xf32>
}
