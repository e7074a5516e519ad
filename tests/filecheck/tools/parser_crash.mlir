// Input xDSL's parser crashes on (a semi-affine ceildiv, which MLIR accepts) is one
// located diagnostic from both tools, never a Python traceback.
// RUN: not uopc-opt %s 2>&1 | filecheck %s
// RUN: not uopc-run %s --fill 2>&1 | filecheck %s

// CHECK: parser_crash.mlir:9:48: error: xDSL{{.}}s parser cannot read this (NotImplementedError: Ceil division with non-constant {{.}}semi-affine{{.}} is not supported yet)
// CHECK-NEXT: #unused = affine_map<(d0)[s0] -> (d0 ceildiv s0)>
// CHECK-NOT: Traceback
#unused = affine_map<(d0)[s0] -> (d0 ceildiv s0)>
func.func @main(%x: tensor<4xf32>) -> tensor<4xf32> {
  %r = arith.addf %x, %x : tensor<4xf32>
  func.return %r : tensor<4xf32>
}
