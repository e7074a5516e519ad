// A schedule that does not fit its kernel is an error naming the kernel, the axis and sizes.
// RUN: uopc-opt %s -p uop-rangeify,uop-apply-schedule --split-input-file --verify-diagnostics

// expected-error@+1 {{@k: schedule <upcast = [3]>: upcast 3 does not divide output axis 0 of size 4; pick a divisor of 4}}
func.func @k(%x: tensor<4xf32>) -> tensor<4xf32> attributes {uop.kernel, uop.schedule = #uop.schedule<upcast = [3]>} {
  %y = uop.add %x, %x : tensor<4xf32>
  func.return %y : tensor<4xf32>
}

// -----

// expected-error@+1 {{@k: schedule <thread = 0> names output axis 0, which has no loop (the kernel's output axes with a loop: [1]; size-1 axes have none); schedule only those axes}}
func.func @k(%x: tensor<1x4xf32>) -> tensor<1x4xf32> attributes {uop.kernel, uop.schedule = #uop.schedule<thread = 0>} {
  %y = uop.add %x, %x : tensor<1x4xf32>
  func.return %y : tensor<1x4xf32>
}

// -----

// expected-error@+1 {{@k: schedule <unroll = 2>: unroll 2 does not divide a reduce loop of length 5; pick a divisor of 5}}
func.func @k(%x: tensor<4x5xf32>) -> tensor<4xf32> attributes {uop.kernel, uop.schedule = #uop.schedule<unroll = 2>} {
  %r = uop.reduce add %x axes [1] : tensor<4x5xf32> -> tensor<4xf32>
  func.return %r : tensor<4xf32>
}

