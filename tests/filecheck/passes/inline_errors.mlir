// A recursive call cannot be inlined: an error at the call that closes the cycle.
// RUN: uopc-opt %s -p uop-inline --split-input-file --verify-diagnostics

func.func @main(%x: tensor<3xf32>) -> tensor<3xf32> {
  // expected-error@+1 {{func.call @main: a recursive call cannot be inlined (the calls @main -> @main form a cycle); tensor programs have no recursion: unroll it into a chain of calls}}
  %y = func.call @main(%x) : (tensor<3xf32>) -> tensor<3xf32>
  func.return %y : tensor<3xf32>
}

// -----

// Through another function: the error is at the call that leads back.
func.func @ping(%x: tensor<3xf32>) -> tensor<3xf32> {
  %y = func.call @pong(%x) : (tensor<3xf32>) -> tensor<3xf32>
  func.return %y : tensor<3xf32>
}
func.func @pong(%x: tensor<3xf32>) -> tensor<3xf32> {
  // expected-error@+1 {{func.call @ping: a recursive call cannot be inlined (the calls @ping -> @pong -> @ping form a cycle)}}
  %y = func.call @ping(%x) : (tensor<3xf32>) -> tensor<3xf32>
  func.return %y : tensor<3xf32>
}
