// RUN: uopc-opt %s -p uop-rangeify,uop-symbolic,dce,licm,cse -t c | filecheck %s

// softmax numerator x - max(x) then exp2, row by row: each row's max is a local
// accumulator computed once, before the row's element loop; the row offset is hoisted.
// CHECK-LABEL: void main_fn(float* restrict out, const float* restrict x) {
// CHECK-NEXT:    for (int64_t [[I:i[0-9]+]] = 0; [[I]] < 4; [[I]] += 1) {
// CHECK-NEXT:      const int64_t [[ROW:v[0-9]+]] = [[I]] * 8;
// CHECK-NEXT:      float [[ACC:acc[0-9]+]] = (-INFINITY);
// CHECK-NEXT:      for (int64_t [[K:i[0-9]+]] = 0; [[K]] < 8; [[K]] += 1) {
// CHECK-NEXT:        const int64_t [[AT:v[0-9]+]] = [[ROW]] + [[K]];
// CHECK-NEXT:        const float [[XK:v[0-9]+]] = x[[[AT]]];
// CHECK-NEXT:        const float [[M:v[0-9]+]] = uop_max_f32([[ACC]], [[XK]]);
// CHECK-NEXT:        [[ACC]] = [[M]];
// CHECK-NEXT:      }
// CHECK-NEXT:      const float [[NEG:v[0-9]+]] = [[ACC]] * (-1.0f);
// CHECK-NEXT:      for (int64_t [[J:i[0-9]+]] = 0; [[J]] < 8; [[J]] += 1) {
// CHECK-NEXT:        const int64_t [[AT2:v[0-9]+]] = [[ROW]] + [[J]];
// CHECK-NEXT:        const float [[XJ:v[0-9]+]] = x[[[AT2]]];
// CHECK-NEXT:        const float [[D:v[0-9]+]] = [[XJ]] + [[NEG]];
// CHECK-NEXT:        const float [[E:v[0-9]+]] = exp2f([[D]]);
// CHECK-NEXT:        out[([[I]]) * 8 + [[J]]] = [[E]];
// CHECK-NEXT:      }
// CHECK-NEXT:    }
// CHECK-NEXT:  }
func.func @main(%x: tensor<32xf32>) -> tensor<4x8xf32> {
  %r = uop.reshape %x : tensor<32xf32> -> tensor<4x8xf32>
  %m = uop.reduce max %r axes [1] : tensor<4x8xf32> -> tensor<4xf32>
  %m2 = uop.reshape %m : tensor<4xf32> -> tensor<4x1xf32>
  %e = uop.expand %m2 : tensor<4x1xf32> -> tensor<4x8xf32>
  %c = uop.const dense<-1.0> : tensor<4x8xf32>
  %n = uop.mul %e, %c : tensor<4x8xf32>
  %s = uop.add %r, %n : tensor<4x8xf32>
  %p = uop.exp2 %s : tensor<4x8xf32>
  func.return %p : tensor<4x8xf32>
}
