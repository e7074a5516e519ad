// Without --verify-diagnostics, a bad program makes uopc-opt exit non-zero with an
// MLIR-style diagnostic on stderr (file:line:col, the op, the source line and a caret)
// and no Python traceback; bad command lines are one `uopc-opt: error:` line.
// RUN: not uopc-opt %s 2>&1 | filecheck %s
// RUN: not uopc-opt %s -p no-such-pass 2>&1 | filecheck %s --check-prefix=PASS
// RUN: not uopc-opt %s -p 'canonicalize{' 2>&1 | filecheck %s --check-prefix=SPEC
// RUN: not uopc-opt %s -t x86-asm 2>&1 | filecheck %s --check-prefix=TARGET

func.func @f(%a: tensor<2x3xf32>) -> tensor<6xf32> {
  %r = "uop.reshape"(%a) : (tensor<2x3xf32>) -> tensor<5xf32>
  func.return %r : tensor<5xf32>
}

// CHECK:      exit_status.mlir:[[# @LINE - 4]]:3: error: 'uop.reshape' op reshape from (2, 3) (6 elements) to (5,) (5 elements): reshape must keep the element count
// CHECK-NEXT: {{^}}  %r = "uop.reshape"(%a) : (tensor<2x3xf32>) -> tensor<5xf32>
// CHECK-NEXT: {{^}}  ^{{$}}
// CHECK-NOT: Traceback

// PASS: uopc-opt: error: unknown pass 'no-such-pass'
// PASS-NOT: Traceback

// SPEC: uopc-opt: error: Error parsing pass pipeline specification:
// SPEC-NOT: Traceback

// TARGET: uopc-opt: error: target 'x86-asm' is not available: it prints xDSL dialects that uopc never produces; uopc-opt's targets are c, c-checked, cuda, mlir
