// RUN: uopc-opt %s -p uop-fold --split-input-file | filecheck %s
// RUN: uopc-opt %s -p canonicalize --split-input-file | filecheck %s

// Folding at every element type agrees with SPEC §5 (`uopc.uopdialect.semantics`; the
// same values against C in tests/py/test_semantics_vs_c.py).

// i8 100 + 100 wraps to -56; ui8 200 + 100 = 44, 255 + 255 = 254; i64 2^62 * 4 = 0;
// ui8 divides and compares unsigned (200 < 100 is false); i8/i16 round toward -inf.
// CHECK-LABEL: func.func @ints
// CHECK-DAG: uop.const dense<-56> : tensor<i8>
// CHECK-DAG: uop.const dense<[44, 254, 32]> : tensor<3xui8>
// CHECK-DAG: uop.const dense<0> : tensor<i64>
// CHECK-DAG: uop.const dense<[28, 0]> : tensor<2xui8>
// CHECK-DAG: uop.const dense<[4, 7]> : tensor<2xui8>
// CHECK-DAG: uop.const dense<false> : tensor<i1>
// CHECK-DAG: uop.const dense<-4> : tensor<2xi8>
// CHECK-DAG: uop.const dense<[1, -1]> : tensor<2xi16>
// CHECK-NOT: uop.add
// CHECK-NOT: uop.floor
// CHECK: func.return
func.func @ints() -> (tensor<i8>, tensor<3xui8>, tensor<i64>, tensor<2xui8>, tensor<2xui8>, tensor<i1>, tensor<2xi8>, tensor<2xi16>) {
  %a = uop.const dense<100> : tensor<i8>
  %s8 = uop.add %a, %a : tensor<i8>
  %b = uop.const dense<[200, 255, 16]> : tensor<3xui8>
  %c = uop.const dense<[100, 255, 16]> : tensor<3xui8>
  %s = uop.add %b, %c : tensor<3xui8>
  %m = uop.const dense<4611686018427387904> : tensor<i64>
  %four = uop.const dense<4> : tensor<i64>
  %p = uop.mul %m, %four : tensor<i64>
  %x = uop.const dense<[200, 7]> : tensor<2xui8>
  %y = uop.const dense<[7, 200]> : tensor<2xui8>
  %q = uop.floordiv %x, %y : tensor<2xui8>
  %r = uop.floormod %x, %y : tensor<2xui8>
  %x1 = uop.const dense<200> : tensor<ui8>
  %y1 = uop.const dense<100> : tensor<ui8>
  %lt = uop.cmplt %x1, %y1 : tensor<ui8>
  %n = uop.const dense<[-7, 7]> : tensor<2xi8>
  %d = uop.const dense<[2, -2]> : tensor<2xi8>
  %fd = uop.floordiv %n, %d : tensor<2xi8>
  %n16 = uop.const dense<[-32768, 7]> : tensor<2xi16>
  %d16 = uop.const dense<[3, -2]> : tensor<2xi16>
  %fm = uop.floormod %n16, %d16 : tensor<2xi16>
  func.return %s8, %s, %p, %q, %r, %lt, %fd, %fm : tensor<i8>, tensor<3xui8>, tensor<i64>, tensor<2xui8>, tensor<2xui8>, tensor<i1>, tensor<2xi8>, tensor<2xi16>
}

// -----

// bf16 computes in f32 and rounds to nearest even: 1 + 2^-8 is a tie and goes to 1.0,
// 1 + 3*2^-8 rounds up to 1 + 2^-6; f64 keeps what f32 would drop, and exp is libm's exp.
// CHECK-LABEL: func.func @floats
// CHECK-DAG: uop.const dense<1.000000e+00> : tensor<bf16>
// CHECK-DAG: uop.const dense<1.015620e+00> : tensor<bf16>
// CHECK-DAG: uop.const dense<1.0000000000000011> : tensor<f64>
// CHECK-DAG: uop.const dense<2.7182818284590451> : tensor<f64>
// CHECK-NOT: uop.add
// CHECK-NOT: uop.exp
// CHECK: func.return
func.func @floats() -> (tensor<bf16>, tensor<bf16>, tensor<f64>, tensor<f64>) {
  %one = uop.const dense<1.0> : tensor<bf16>
  %h = uop.const dense<0.00390625> : tensor<bf16>
  %t = uop.add %one, %h : tensor<bf16>
  %h3 = uop.const dense<0.01171875> : tensor<bf16>
  %t3 = uop.add %one, %h3 : tensor<bf16>
  %a = uop.const dense<1.0> : tensor<f64>
  %e = uop.const dense<1.0e-15> : tensor<f64>
  %s = uop.add %a, %e : tensor<f64>
  %ex = uop.exp %a : tensor<f64>
  func.return %t, %t3, %s, %ex : tensor<bf16>, tensor<bf16>, tensor<f64>, tensor<f64>
}

// -----

// i64 -1 -> ui8 is 255, ui8 255 -> i8 is -1; f64 -> f16/bf16 goes through f32, so
// 1 + 2^-11 + 2^-50 becomes the f32 tie 1 + 2^-11 first and then 1.0 (directly it would
// round up); i64 2^24 + 1 -> f32 rounds to even.
// CHECK-LABEL: func.func @casts
// CHECK-DAG: uop.const dense<255> : tensor<ui8>
// CHECK-DAG: uop.const dense<-1> : tensor<i8>
// CHECK-DAG: uop.const dense<1.000000e+00> : tensor<f16>
// CHECK-DAG: uop.const dense<1.000000e+00> : tensor<bf16>
// CHECK-DAG: uop.const dense<-3900000000000000000> : tensor<i64>
// CHECK-DAG: uop.const dense<0x4B800000> : tensor<f32>
// CHECK-NOT: uop.cast
// CHECK: func.return
func.func @casts() -> (tensor<ui8>, tensor<i8>, tensor<f16>, tensor<bf16>, tensor<i64>, tensor<f32>) {
  %m1 = uop.const dense<-1> : tensor<i64>
  %a = uop.cast %m1 : tensor<i64> to tensor<ui8>
  %u = uop.const dense<255> : tensor<ui8>
  %b = uop.cast %u : tensor<ui8> to tensor<i8>
  %x = uop.const dense<1.00048828125000090949> : tensor<f64>
  %c = uop.cast %x : tensor<f64> to tensor<f16>
  %y = uop.const dense<1.00195312500000090949> : tensor<f64>
  %d = uop.cast %y : tensor<f64> to tensor<bf16>
  %f = uop.const dense<-3.9e18> : tensor<f64>
  %e = uop.cast %f : tensor<f64> to tensor<i64>
  %big = uop.const dense<16777217> : tensor<i64>
  %g = uop.cast %big : tensor<i64> to tensor<f32>
  func.return %a, %b, %c, %d, %e, %g : tensor<ui8>, tensor<i8>, tensor<f16>, tensor<bf16>, tensor<i64>, tensor<f32>
}

// -----

// Undefined at every width: i8 -128 floordiv -1, i64 MIN floormod -1, ui8 division by
// zero, f32 256.0 -> ui8 and bf16 -129 -> i8 (outside the target's range) stay unfolded.
// (uopc-fuzz: undefined on purpose; running this file may trap, so it seeds no CLI runs)
// CHECK-LABEL: func.func @undefined
// CHECK: uop.floordiv %{{.*}}, %{{.*}} : tensor<i8>
// CHECK: uop.floormod %{{.*}}, %{{.*}} : tensor<i64>
// CHECK: uop.floordiv %{{.*}}, %{{.*}} : tensor<ui8>
// CHECK: uop.cast %{{.*}} : tensor<f32> to tensor<ui8>
// CHECK: uop.cast %{{.*}} : tensor<bf16> to tensor<i8>
// CHECK: func.return
func.func @undefined() -> (tensor<i8>, tensor<i64>, tensor<ui8>, tensor<ui8>, tensor<i8>) {
  %a = uop.const dense<-128> : tensor<i8>
  %b = uop.const dense<-1> : tensor<i8>
  %q = uop.floordiv %a, %b : tensor<i8>
  %c = uop.const dense<-9223372036854775808> : tensor<i64>
  %d = uop.const dense<-1> : tensor<i64>
  %r = uop.floormod %c, %d : tensor<i64>
  %z = uop.const dense<0> : tensor<ui8>
  %s = uop.const dense<5> : tensor<ui8>
  %t = uop.floordiv %s, %z : tensor<ui8>
  %f = uop.const dense<256.0> : tensor<f32>
  %g = uop.cast %f : tensor<f32> to tensor<ui8>
  %h = uop.const dense<-129.0> : tensor<bf16>
  %i = uop.cast %h : tensor<bf16> to tensor<i8>
  func.return %q, %r, %t, %g, %i : tensor<i8>, tensor<i64>, tensor<ui8>, tensor<ui8>, tensor<i8>
}
