// A schedule that does not fit its kernel is an error naming the kernel, the axis and sizes.
// RUN: uopc-opt %s -p uop-rangeify,uop-apply-schedule --split-input-file --verify-diagnostics

// expected-error@+1 {{@k: schedule <tile = [3]>: tile 3 does not divide output axis 0 of size 4; pick a divisor of 4}}
func.func @k(%x: tensor<4xf32>) -> tensor<4xf32> attributes {uop.kernel, uop.schedule = #uop.schedule<tile = [3]>} {
  %y = uop.add %x, %x : tensor<4xf32>
  func.return %y : tensor<4xf32>
}

// -----

// A row maximum computed once per row, between the row loop and the column loop: the
// columns cannot be tiled outside the rows.
// expected-error@+1 {{@k: schedule <tile = [0, 2]>: tile needs the output loops down to axis 1 nested with only index arithmetic between them, and this kernel computes more between them (a row buffer); leave tile out}}
func.func @k(%x: tensor<4x6xf32>) -> tensor<4x6xf32> attributes {uop.kernel, uop.schedule = #uop.schedule<tile = [0, 2]>} {
  %m = uop.reduce max %x axes [1] : tensor<4x6xf32> -> tensor<4xf32>
  %m1 = uop.reshape %m : tensor<4xf32> -> tensor<4x1xf32>
  %me = uop.expand %m1 : tensor<4x1xf32> -> tensor<4x6xf32>
  %d = uop.add %x, %me : tensor<4x6xf32>
  func.return %d : tensor<4x6xf32>
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


// -----

// unroll names the innermost reduce loops; an elementwise kernel has none.
// expected-error@+1 {{@k: schedule <unroll = 2>: unroll 2 names the innermost reduce loops, and this kernel has none; drop unroll from its schedule}}
func.func @k(%x: tensor<4xf32>) -> tensor<4xf32> attributes {uop.kernel, uop.schedule = #uop.schedule<unroll = 2>} {
  %y = uop.add %x, %x : tensor<4xf32>
  func.return %y : tensor<4xf32>
}
