// Without the diagnostics flags, a bad program makes uopc-opt exit non-zero with the
// diagnostic on stderr and no Python traceback.
// RUN: not uopc-opt %s 2>&1 | filecheck %s
// RUN: not uopc-opt %s -p no-such-pass 2>&1 | filecheck %s --check-prefix=PASS
// RUN: not uopc-opt %s -p 'canonicalize{' 2>&1 | filecheck %s --check-prefix=SPEC

func.func @f(%a: tensor<2x3xf32>) -> tensor<6xf32> {
  %r = "uop.reshape"(%a) : (tensor<2x3xf32>) -> tensor<5xf32>
  func.return %r : tensor<5xf32>
}

// CHECK: uop.reshape: reshape from (2, 3) (6 elements) to (5,) (5 elements): reshape must keep the element count
// CHECK-NOT: Traceback

// PASS: uopc-opt: error: Unrecognized passes: ['no-such-pass']
// PASS-NOT: Traceback

// SPEC: uopc-opt: error: Error parsing pass pipeline specification:
// SPEC-NOT: Traceback
