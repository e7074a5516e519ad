// RUN: uopc-opt %s -p uop-fold --split-input-file | filecheck %s
// RUN: uopc-opt %s -p canonicalize --split-input-file | filecheck %s

// Integer ALU: wraparound, floor division and modulo, on scalars, splats and dense literals.
// CHECK-LABEL: func.func @ints
func.func @ints() -> (tensor<i32>, tensor<4xi32>, tensor<4xi32>, tensor<2x2xi32>) {
  %max = uop.const dense<2147483647> : tensor<i32>
  %one = uop.const dense<1> : tensor<i32>
  %wrap = uop.add %max, %one : tensor<i32>
  %a = uop.const dense<[-7, 7, -7, 7]> : tensor<4xi32>
  %b = uop.const dense<[2, 2, -2, -2]> : tensor<4xi32>
  %q = uop.floordiv %a, %b : tensor<4xi32>
  %r = uop.floormod %a, %b : tensor<4xi32>
  %s = uop.const dense<65536> : tensor<2x2xi32>
  %sq = uop.mul %s, %s : tensor<2x2xi32>
  // CHECK-DAG: uop.const dense<-2147483648> : tensor<i32>
  // CHECK-DAG: uop.const dense<[-4, 3, 3, -4]> : tensor<4xi32>
  // CHECK-DAG: uop.const dense<[1, 1, -1, -1]> : tensor<4xi32>
  // CHECK-DAG: uop.const dense<0> : tensor<2x2xi32>
  // CHECK-NOT: uop.add
  // CHECK-NOT: uop.floor
  // CHECK: func.return
  func.return %wrap, %q, %r, %sq : tensor<i32>, tensor<4xi32>, tensor<4xi32>, tensor<2x2xi32>
}

// -----

// f32 rounds every result: 16777216 + 1 = 16777216; f16: 2048 + 1 = 2048.
// CHECK-LABEL: func.func @rounding
func.func @rounding() -> (tensor<f32>, tensor<f16>) {
  %a = uop.const dense<16777216.0> : tensor<f32>
  %b = uop.const dense<1.0> : tensor<f32>
  %c = uop.add %a, %b : tensor<f32>
  %h = uop.const dense<2048.0> : tensor<f16>
  %k = uop.const dense<1.0> : tensor<f16>
  %d = uop.add %h, %k : tensor<f16>
  // CHECK-DAG: %[[C:.*]] = uop.const dense<{{0x4[bB]800000}}> : tensor<f32>
  // CHECK-DAG: %[[D:.*]] = uop.const dense<2.048000e+03> : tensor<f16>
  // CHECK: func.return %[[C]], %[[D]]
  func.return %c, %d : tensor<f32>, tensor<f16>
}

// -----

// NaN and infinity rules, signed zeros, max with NaN (NaN wins), compares with NaN.
// CHECK-LABEL: func.func @special
func.func @special() -> (tensor<4xf32>, tensor<4xf32>, tensor<2xf32>, tensor<2xf32>, tensor<2xi1>, tensor<2xf32>) {
  %x = uop.const dense<[0.0, -0.0, -1.0, 0x7F800000]> : tensor<4xf32>
  %rc = uop.recip %x : tensor<4xf32>
  %lg = uop.log2 %x : tensor<4xf32>
  %z = uop.const dense<[0.0, 0x7F800000]> : tensor<2xf32>
  %inf = uop.const dense<[0x7F800000, 0.0]> : tensor<2xf32>
  %nan = uop.mul %z, %inf : tensor<2xf32>
  %one = uop.const dense<[1.0, -0.0]> : tensor<2xf32>
  %mx = uop.max %one, %nan : tensor<2xf32>
  %ne = uop.cmpne %nan, %nan : tensor<2xf32>
  %zz = uop.const dense<[0.5, 0.0]> : tensor<2xf32>
  %mz = uop.max %one, %zz : tensor<2xf32>
  // 1/[0, -0, -1, inf] = [inf, -inf, -1, 0]; log2 = [-inf, -inf, nan, inf]
  // CHECK-DAG: uop.const dense<[0x7f800000, 0xff800000, -1.000000e+00, 0.000000e+00]> : tensor<4xf32>
  // CHECK-DAG: uop.const dense<[0xff800000, 0xff800000, 0x{{[7f]}}fc00000, 0x7f800000]> : tensor<4xf32>
  // 0 * inf = NaN both ways; max(1, NaN) = NaN; NaN != NaN
  // (hex literals: xDSL prints splats in upper case, lists in lower case)
  // CHECK-DAG: %[[NAN:.*]] = uop.const dense<{{0x[7fF][fF][cC]00000}}> : tensor<2xf32>
  // CHECK-DAG: %[[MX:.*]] = uop.const dense<{{0x[7fF][fF][cC]00000}}> : tensor<2xf32>
  // CHECK-DAG: uop.const dense<true> : tensor<2xi1>
  // max(-0.0, 0.0) = +0.0 while max(1, 0) = 1
  // CHECK-DAG: uop.const dense<[1.000000e+00, 0.000000e+00]> : tensor<2xf32>
  // CHECK-NOT: uop.max
  // CHECK: func.return
  func.return %rc, %lg, %nan, %mx, %ne, %mz : tensor<4xf32>, tensor<4xf32>, tensor<2xf32>, tensor<2xf32>, tensor<2xi1>, tensor<2xf32>
}

// -----

// 1, 1.0 and true are different literals; casts truncate toward zero.
// CHECK-LABEL: func.func @casts
func.func @casts() -> (tensor<i32>, tensor<f32>, tensor<3xi32>, tensor<3xi1>) {
  %t = uop.const dense<true> : tensor<i1>
  %i = uop.cast %t : tensor<i1> to tensor<i32>
  %f = uop.cast %t : tensor<i1> to tensor<f32>
  %v = uop.const dense<[-2.7, 2.7, -0.0]> : tensor<3xf32>
  %vi = uop.cast %v : tensor<3xf32> to tensor<3xi32>
  %vb = uop.cast %v : tensor<3xf32> to tensor<3xi1>
  // CHECK-DAG: %[[I:.*]] = uop.const dense<1> : tensor<i32>
  // CHECK-DAG: %[[F:.*]] = uop.const dense<1.000000e+00> : tensor<f32>
  // CHECK-DAG: %[[VI:.*]] = uop.const dense<[-2, 2, 0]> : tensor<3xi32>
  // CHECK-DAG: %[[VB:.*]] = uop.const dense<[true, true, false]> : tensor<3xi1>
  // CHECK: func.return %[[I]], %[[F]], %[[VI]], %[[VB]]
  func.return %i, %f, %vi, %vb : tensor<i32>, tensor<f32>, tensor<3xi32>, tensor<3xi1>
}

// -----

// where on constants; a value that is not constant stops folding.
// CHECK-LABEL: func.func @where
func.func @where(%x: tensor<2xf32>) -> (tensor<2xf32>, tensor<2xf32>) {
  %c = uop.const dense<[true, false]> : tensor<2xi1>
  %a = uop.const dense<1.0> : tensor<2xf32>
  %b = uop.const dense<2.0> : tensor<2xf32>
  %w = uop.where %c, %a, %b : tensor<2xi1>, tensor<2xf32>
  %s = uop.add %x, %w : tensor<2xf32>
  // CHECK: %[[W:.*]] = uop.const dense<[1.000000e+00, 2.000000e+00]> : tensor<2xf32>
  // CHECK-NEXT: %[[S:.*]] = uop.add %x, %[[W]] : tensor<2xf32>
  // CHECK-NEXT: func.return %[[W]], %[[S]]
  func.return %w, %s : tensor<2xf32>, tensor<2xf32>
}
