// RUN: uopc-opt %s -p uop-rangeify -t c | filecheck %s

// bf16 is its 16 bits in C: each op widens to f32 with uop_bf16_to_f32, computes there
// and rounds once with uop_f32_to_bf16 (to nearest even); compares and max widen too,
// and its constants print as bit patterns.
// CHECK-LABEL: void bf(uop_bf16* restrict out0, bool* restrict out1, uop_bf16* restrict out2, const uop_bf16* restrict x) {
// CHECK:         const uop_bf16 [[X:v[0-9]+]] = x[{{.*}}];
// CHECK-NEXT:    const uop_bf16 {{v[0-9]+}} = uop_f32_to_bf16(uop_bf16_to_f32([[X]]) * uop_bf16_to_f32(UOP_BF16(0x3fc0)));
// CHECK:         const bool {{v[0-9]+}} = uop_bf16_to_f32({{v[0-9]+}}) < uop_bf16_to_f32({{v[0-9]+}});
// CHECK:         uop_bf16 [[ACC:acc[0-9]+]] = UOP_BF16(0xff80);
// CHECK:         = uop_f32_to_bf16(uop_max_f32(uop_bf16_to_f32([[ACC]]), uop_bf16_to_f32({{v[0-9]+}})));
func.func @bf(%x: tensor<4xbf16>) -> (tensor<4xbf16>, tensor<4xi1>, tensor<bf16>) {
  %k = uop.const dense<1.5> : tensor<4xbf16>
  %a = uop.mul %x, %k : tensor<4xbf16>
  %c = uop.cmplt %x, %a : tensor<4xbf16>
  %m = uop.reduce max %x axes [0] : tensor<4xbf16> -> tensor<bf16>
  func.return %a, %c, %m : tensor<4xbf16>, tensor<4xi1>, tensor<bf16>
}

// f64 is double with libm's double functions; f64 -> f16 rounds to float first.
// CHECK-LABEL: void f64(double* restrict out0, _Float16* restrict out1, const double* restrict x) {
// CHECK:         const double {{v[0-9]+}} = log({{v[0-9]+}});
// CHECK:         const float [[F:v[0-9]+]] = (float){{v[0-9]+}};
// CHECK-NEXT:    const _Float16 {{v[0-9]+}} = (_Float16)([[F]]);
func.func @f64(%x: tensor<4xf64>) -> (tensor<4xf64>, tensor<4xf16>) {
  %l = uop.log %x : tensor<4xf64>
  %h = uop.cast %x : tensor<4xf64> to tensor<4xf16>
  func.return %l, %h : tensor<4xf64>, tensor<4xf16>
}

// ui8 buffers are int8_t; its unsigned ops cast to uint8_t, and the signed i16
// floor division calls its width's helper.
// CHECK-LABEL: void ints(int8_t* restrict out0, int16_t* restrict out1, const int8_t* restrict x, const int16_t* restrict s) {
// CHECK:         const int8_t {{v[0-9]+}} = (int8_t)((uint8_t){{v[0-9]+}} / (uint8_t)3);
// CHECK:         const int16_t {{v[0-9]+}} = uop_floordiv_i16({{v[0-9]+}}, {{v[0-9]+}});
func.func @ints(%x: tensor<4xui8>, %s: tensor<4xi16>) -> (tensor<4xui8>, tensor<4xi16>) {
  %three = uop.const dense<3> : tensor<4xui8>
  %r = uop.floormod %x, %three : tensor<4xui8>
  %q = uop.floordiv %s, %s : tensor<4xi16>
  func.return %r, %q : tensor<4xui8>, tensor<4xi16>
}
