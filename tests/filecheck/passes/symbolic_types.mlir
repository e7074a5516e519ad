// RUN: uopc-opt %s -p uop-symbolic --split-input-file | filecheck %s

// uop-symbolic at each integer width: the algebra wraps modulo 2^width, bounds use the
// width's range, and ui8 is left alone (random expressions of every width keep their
// value in tests/py/test_symbolic.py).

// i64 literals are read at 64 bits: x floormod 8 is in [0, 7], so its floordiv 8 is 0.
// CHECK-LABEL: func.func @i64_bounds
// CHECK-NEXT: %[[Z:.*]] = uop.const dense<0> : tensor<4xi64>
// CHECK-NEXT: func.return %[[Z]]
func.func @i64_bounds(%x: tensor<4xi64>) -> tensor<4xi64> {
  %c8 = uop.const dense<8> : tensor<4xi64>
  %m = uop.floormod %x, %c8 : tensor<4xi64>
  %r = uop.floordiv %m, %c8 : tensor<4xi64>
  func.return %r : tensor<4xi64>
}

// -----

// Constants combine modulo 2^8: (x + 100) + 100 = x + (-56) in i8.
// CHECK-LABEL: func.func @i8_constants_wrap
// CHECK: %[[C:.*]] = uop.const dense<-56> : tensor<4xi8>
// CHECK-NEXT: %{{.*}} = uop.add %x, %[[C]] : tensor<4xi8>
// CHECK-NOT: uop.add
func.func @i8_constants_wrap(%x: tensor<4xi8>) -> tensor<4xi8> {
  %c = uop.const dense<100> : tensor<4xi8>
  %a = uop.add %x, %c : tensor<4xi8>
  %r = uop.add %a, %c : tensor<4xi8>
  func.return %r : tensor<4xi8>
}

// -----

// (x floormod 64) + 100 reaches 163, past i8's 127: it may wrap, so its compare stays;
// (x floormod 16) + 100 stays within [100, 115], so its compare with 120 is true.
// CHECK-LABEL: func.func @i8_compare_that_may_wrap
// CHECK: %[[A:.*]] = uop.add %{{.*}}, %{{.*}} : tensor<4xi8>
// CHECK: %[[W:.*]] = uop.cmplt %[[A]], %{{.*}} : tensor<4xi8>
// CHECK: %[[T:.*]] = uop.const dense<true> : tensor<4xi1>
// CHECK: func.return %[[W]], %[[T]]
func.func @i8_compare_that_may_wrap(%x: tensor<4xi8>) -> (tensor<4xi1>, tensor<4xi1>) {
  %c64 = uop.const dense<64> : tensor<4xi8>
  %c16 = uop.const dense<16> : tensor<4xi8>
  %c100 = uop.const dense<100> : tensor<4xi8>
  %c50 = uop.const dense<50> : tensor<4xi8>
  %c120 = uop.const dense<120> : tensor<4xi8>
  %m = uop.floormod %x, %c64 : tensor<4xi8>
  %a = uop.add %m, %c100 : tensor<4xi8>
  %wraps = uop.cmplt %a, %c50 : tensor<4xi8>
  %n = uop.floormod %x, %c16 : tensor<4xi8>
  %b = uop.add %n, %c100 : tensor<4xi8>
  %fits = uop.cmplt %b, %c120 : tensor<4xi8>
  func.return %wraps, %fits : tensor<4xi1>, tensor<4xi1>
}

// -----

// ui8 values are not two's complement: no signed algebra or bounds touch them (a
// combined constant would be -56, which is no ui8 value).
// CHECK-LABEL: func.func @ui8_is_not_signed
// CHECK-COUNT-2: uop.add
// CHECK: uop.cmplt
func.func @ui8_is_not_signed(%x: tensor<4xui8>) -> (tensor<4xui8>, tensor<4xi1>) {
  %c = uop.const dense<100> : tensor<4xui8>
  %c200 = uop.const dense<200> : tensor<4xui8>
  %a = uop.add %x, %c : tensor<4xui8>
  %r = uop.add %a, %c : tensor<4xui8>
  %lt = uop.cmplt %c200, %c : tensor<4xui8>
  func.return %r, %lt : tensor<4xui8>, tensor<4xi1>
}

// -----

// Below the tensor level ui8 is signless i8 read through arith.extui: the bounds know the
// value is in [0, 255], so it divides by 256 to 0, is its own remainder and is not negative.
// CHECK-LABEL: func.func @ui8_below_the_tensor_level
// CHECK: %[[E:.*]] = arith.extui %{{.*}} : i8 to i32
// CHECK-DAG: %[[Z:.*]] = arith.constant 0 : i32
// CHECK-DAG: %[[F:.*]] = arith.constant false
// CHECK: func.return %[[Z]], %[[E]], %[[F]] : i32, i32, i1
func.func @ui8_below_the_tensor_level(%b: memref<4xi8>, %i: index) -> (i32, i32, i1) {
  %v = memref.load %b[%i] : memref<4xi8>
  %e = arith.extui %v : i8 to i32
  %c256 = arith.constant 256 : i32
  %q = arith.floordivsi %e, %c256 : i32
  %r = arith.remsi %e, %c256 : i32
  %c0 = arith.constant 0 : i32
  %neg = arith.cmpi slt, %e, %c0 : i32
  func.return %q, %r, %neg : i32, i32, i1
}
