// RUN: uopc-opt %s -p uop-rangeify --split-input-file --verify-diagnostics

// a bitcast keeps the bits: the widths must match
func.func @main(%x: tensor<4xf32>) -> tensor<4xf16> {
  // expected-error@+1 {{bitcast from f32 to f16: the types must have the same bit width and not be i1; use cast to convert values}}
  %b = uop.bitcast %x : tensor<4xf32> to tensor<4xf16>
  func.return %b : tensor<4xf16>
}

// -----

// i1 has no bits to reinterpret
func.func @main(%x: tensor<4xi1>) -> tensor<4xi8> {
  // expected-error@+1 {{bitcast from i1 to i8: the types must have the same bit width and not be i1; use cast to convert values}}
  %b = uop.bitcast %x : tensor<4xi1> to tensor<4xi8>
  func.return %b : tensor<4xi8>
}
