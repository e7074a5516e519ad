// --verify-diagnostics keeps MLIR's contract: a wrong, missing or unexpected
// diagnostic fails the run (exit 1), and the report names both sides. Every chunk is
// checked, not just the first that fails; the chunks that match print nothing.
// RUN: not uopc-opt %s --split-input-file --verify-diagnostics 2>&1 >/dev/null | filecheck %s
// RUN: not uopc-opt %s --split-input-file 2>&1 >/dev/null | filecheck %s --check-prefix=PLAIN

// the text does not match: the error is unexpected and the expectation unmet
func.func @wrong(%a: tensor<2x3xf32>) {
  // expected-error@+1 {{keeps the element type}}
  %r = "uop.reshape"(%a) : (tensor<2x3xf32>) -> tensor<5xf32>
  func.return
}
// CHECK:      verify_diagnostics.mlir:[[# @LINE - 3]]:3: error: unexpected error: 'uop.reshape' op reshape from (2, 3) (6 elements) to (5,) (5 elements): reshape must keep the element count
// CHECK:      verify_diagnostics.mlir:[[# @LINE - 5]]:6: error: expected error "keeps the element type" was not produced
// PLAIN:      verify_diagnostics.mlir:[[# @LINE - 5]]:3: error: 'uop.reshape' op reshape from

// -----
// an expected error that does not happen
func.func @fine(%a: tensor<2xf32>) {
  // expected-error@+1 {{shape mismatch}}
  %r = uop.add %a, %a : tensor<2xf32>
  func.return
}
// CHECK:      verify_diagnostics.mlir:[[# @LINE - 4]]:6: error: expected error "shape mismatch" was not produced

// -----
// matched: on the same line, @below and a regular expression
func.func @matched(%a: tensor<2xf32>, %b: tensor<3xf32>) {
  %r = "uop.add"(%a, %b) : (tensor<2xf32>, tensor<3xf32>) -> tensor<2xf32> // expected-error {{shape mismatch (2,) vs (3,)}}
  func.return
}

// -----
// expected-error@below {{'uop.add' op shape mismatch}}
func.func @below(%a: tensor<2xf32>, %b: tensor<3xf32>) {
  %r = "uop.add"(%a, %b) : (tensor<2xf32>, tensor<3xf32>) -> tensor<2xf32>
  func.return
}
// CHECK:      verify_diagnostics.mlir:[[# @LINE - 3]]:3: error: unexpected error: 'uop.add' op shape mismatch
// CHECK:      verify_diagnostics.mlir:[[# @LINE - 6]]:4: error: expected error "'uop.add' op shape mismatch" was not produced

// -----
func.func @regex(%a: tensor<2xf32>, %b: tensor<3xf32>) {
  // expected-error-re@+1 {{shape mismatch ({{[0-9]+}},) vs}}
  %r = "uop.add"(%a, %b) : (tensor<2xf32>, tensor<3xf32>) -> tensor<2xf32>
  func.return
}

// -----
// a parse error with no expectation
func.func @syntax(%a: tensor<2xf32>) {
  %r = uop.add %a, %nope : tensor<2xf32>
  func.return
}
// CHECK:      verify_diagnostics.mlir:[[# @LINE - 3]]:20: error: unexpected error: use of undefined value %nope: define it before its use
// CHECK-NEXT: {{^}}  %r = uop.add %a, %nope : tensor<2xf32>
// CHECK-NEXT: {{^}}                   ^^^^^{{$}}
// PLAIN:      verify_diagnostics.mlir:[[# @LINE - 6]]:20: error: use of undefined value %nope
// CHECK-NOT:  error
