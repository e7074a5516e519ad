// RUN: uopc-opt %s -p uop-rangeify --split-input-file --verify-diagnostics

// expected-error@+1 {{func.func @main: argument/result type index is not a tensor: a function lowered by uop-rangeify takes and returns tensors only}}
func.func @main(%x: tensor<4xf32>, %n: index) -> tensor<4xf32> {
  func.return %x : tensor<4xf32>
}

// -----

func.func @main(%x: tensor<4xf32>) -> tensor<4xf32> {
  // expected-error@+1 {{func.call @ext: the callee is not a tensor function defined in this module; define it (on tensors) in the same module}}
  %y = func.call @ext(%x) : (tensor<4xf32>) -> tensor<4xf32>
  func.return %y : tensor<4xf32>
}
func.func private @ext(tensor<4xf32>) -> tensor<4xf32>

// -----

// expected-error@+1 {{func.func @rec is recursive: rangeify needs a call tree}}
func.func @rec(%x: tensor<4xf32>) -> tensor<4xf32> {
  %y = func.call @rec(%x) : (tensor<4xf32>) -> tensor<4xf32>
  func.return %y : tensor<4xf32>
}
