// RUN: not uopc-opt %s -t c 2>&1 | filecheck %s

// A function still on tensors asks for rangeify first.
// CHECK: uopc-opt: error: C emitter: func.func @t still works on tensors: lower it first with -p uop-rangeify
func.func @t(%x: tensor<4xf32>) -> tensor<4xf32> {
  func.return %x : tensor<4xf32>
}
