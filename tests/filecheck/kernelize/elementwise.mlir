// RUN: uopc-opt %s -p uop-kernelize | filecheck %s
// RUN: uopc-opt %s -p uop-kernelize,uop-kernelize | filecheck %s

// A chain of elementwise ops is one kernel; the function becomes a plan that calls it.
// CHECK-LABEL: func.func @k0(%0: tensor<4x8xf32>, %1: tensor<4x8xf32>) -> tensor<4x8xf32> attributes {uop.kernel} {
// CHECK-NEXT:    %2 = uop.add %0, %1 : tensor<4x8xf32>
// CHECK-NEXT:    %3 = uop.mul %2, %0 : tensor<4x8xf32>
// CHECK-NEXT:    %4 = uop.exp2 %3 : tensor<4x8xf32>
// CHECK-NEXT:    func.return %4 : tensor<4x8xf32>
// CHECK-NEXT:  }
// CHECK-NEXT:  func.func @chain(%a: tensor<4x8xf32>, %b: tensor<4x8xf32>) -> tensor<4x8xf32> {
// CHECK-NEXT:    %e = func.call @k0(%a, %b) : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32>
// CHECK-NEXT:    func.return %e : tensor<4x8xf32>
// CHECK-NEXT:  }
func.func @chain(%a: tensor<4x8xf32>, %b: tensor<4x8xf32>) -> tensor<4x8xf32> {
  %s = uop.add %a, %b : tensor<4x8xf32>
  %m = uop.mul %s, %a : tensor<4x8xf32>
  %e = uop.exp2 %m : tensor<4x8xf32>
  func.return %e : tensor<4x8xf32>
}

// Identical kernels (buffers renumbered locally) are one function, called twice, even
// from another plan; constants are copied into the kernel that reads them.
// CHECK-NEXT:  func.func @k1(%0: tensor<3xf32>) -> tensor<3xf32> attributes {uop.kernel} {
// CHECK-NEXT:    %1 = uop.const dense<2.000000e+00> : tensor<3xf32>
// CHECK-NEXT:    %2 = uop.mul %0, %1 : tensor<3xf32>
// CHECK-NEXT:    %3 = uop.sqrt %2 : tensor<3xf32>
// CHECK-NEXT:    func.return %3 : tensor<3xf32>
// CHECK-NEXT:  }
// CHECK-NEXT:  func.func @twice(%x: tensor<3xf32>, %y: tensor<3xf32>) -> (tensor<3xf32>, tensor<3xf32>) {
// CHECK-NEXT:    %rx = func.call @k1(%x) : (tensor<3xf32>) -> tensor<3xf32>
// CHECK-NEXT:    %ry = func.call @k1(%y) : (tensor<3xf32>) -> tensor<3xf32>
// CHECK-NEXT:    func.return %rx, %ry : tensor<3xf32>, tensor<3xf32>
// CHECK-NEXT:  }
func.func @twice(%x: tensor<3xf32>, %y: tensor<3xf32>) -> (tensor<3xf32>, tensor<3xf32>) {
  %two = uop.const dense<2.0> : tensor<3xf32>
  %mx = uop.mul %x, %two : tensor<3xf32>
  %rx = uop.sqrt %mx : tensor<3xf32>
  %my = uop.mul %y, %two : tensor<3xf32>
  %ry = uop.sqrt %my : tensor<3xf32>
  func.return %rx, %ry : tensor<3xf32>, tensor<3xf32>
}
// CHECK-NOT:   func.func @k2
// CHECK:       func.func @again(%z: tensor<3xf32>) -> tensor<3xf32> {
// CHECK-NEXT:    %r = func.call @k1(%z) : (tensor<3xf32>) -> tensor<3xf32>
func.func @again(%z: tensor<3xf32>) -> tensor<3xf32> {
  %two = uop.const dense<2.0> : tensor<3xf32>
  %m = uop.mul %z, %two : tensor<3xf32>
  %r = uop.sqrt %m : tensor<3xf32>
  func.return %r : tensor<3xf32>
}

// A kernel takes exactly the buffers it reads: an argument nothing reads any more (the
// x of x*0 after folding) stays in the plan's signature and shifts nothing.
// CHECK-LABEL: func.func @k2(%0: tensor<5xi32>) -> tensor<5xi32> attributes {uop.kernel} {
// CHECK-NEXT:    %1 = uop.add %0, %0 : tensor<5xi32>
// CHECK:       func.func @unused(%x: tensor<5xi32>, %y: tensor<5xi32>) -> tensor<5xi32> {
// CHECK-NEXT:    %s = func.call @k2(%y) : (tensor<5xi32>) -> tensor<5xi32>
func.func @unused(%x: tensor<5xi32>, %y: tensor<5xi32>) -> tensor<5xi32> {
  %s = uop.add %y, %y : tensor<5xi32>
  func.return %s : tensor<5xi32>
}

// Returning an argument needs no kernel; returning a view of one copies it.
// CHECK-LABEL: func.func @k3(%0: tensor<2x3xf32>) -> tensor<3x2xf32> attributes {uop.kernel} {
// CHECK-NEXT:    %1 = uop.permute %0 perm [1, 0] : tensor<2x3xf32> -> tensor<3x2xf32>
// CHECK-NEXT:    func.return %1 : tensor<3x2xf32>
// CHECK:       func.func @views(%a: tensor<2x3xf32>) -> (tensor<2x3xf32>, tensor<3x2xf32>) {
// CHECK-NEXT:    %t = func.call @k3(%a) : (tensor<2x3xf32>) -> tensor<3x2xf32>
// CHECK-NEXT:    func.return %a, %t : tensor<2x3xf32>, tensor<3x2xf32>
func.func @views(%a: tensor<2x3xf32>) -> (tensor<2x3xf32>, tensor<3x2xf32>) {
  %t = uop.permute %a perm [1, 0] : tensor<2x3xf32> -> tensor<3x2xf32>
  func.return %a, %t : tensor<2x3xf32>, tensor<3x2xf32>
}

// contiguous cuts: the value behind it is computed once, and both users read the buffer.
// CHECK-LABEL: func.func @k4(%0: tensor<4xf32>) -> tensor<4xf32> attributes {uop.kernel} {
// CHECK-NEXT:    %1 = uop.sin %0 : tensor<4xf32>
// CHECK-NEXT:    %2 = uop.contiguous %1 : tensor<4xf32>
// CHECK-NEXT:    func.return %2 : tensor<4xf32>
// CHECK:       func.func @k5(%0: tensor<4xf32>) -> tensor<4xf32> attributes {uop.kernel} {
// CHECK-NEXT:    %1 = uop.exp2 %0 : tensor<4xf32>
// CHECK-NEXT:    %2 = uop.mul %0, %1 : tensor<4xf32>
// CHECK:       func.func @staged(%a: tensor<4xf32>) -> tensor<4xf32> {
// CHECK-NEXT:    %c = func.call @k4(%a) : (tensor<4xf32>) -> tensor<4xf32>
// CHECK-NEXT:    %m = func.call @k5(%c) : (tensor<4xf32>) -> tensor<4xf32>
func.func @staged(%a: tensor<4xf32>) -> tensor<4xf32> {
  %s = uop.sin %a : tensor<4xf32>
  %c = uop.contiguous %s : tensor<4xf32>
  %e = uop.exp2 %c : tensor<4xf32>
  %m = uop.mul %c, %e : tensor<4xf32>
  func.return %m : tensor<4xf32>
}
