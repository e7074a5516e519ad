// Bad pass options fail before any IR is read, naming the pass, the option (in its
// -p spelling) and what it allows.
// RUN: not uopc-opt %s -p 'uop-kernelize{layout="diagonal"}' 2>&1 | filecheck %s --check-prefix=LAYOUT
// RUN: not uopc-opt %s -p 'uop-kernelize{max-depth=-3}' 2>&1 | filecheck %s --check-prefix=RANGE
// RUN: not uopc-opt %s -p 'uop-kernelize{max-depth=deep}' 2>&1 | filecheck %s --check-prefix=TYPE
// RUN: not uopc-opt %s -p 'uop-kernelize{max_depht=3}' 2>&1 | filecheck %s --check-prefix=NAME
// RUN: not uopc-opt %s -p 'uop-symbolic{rewrites-per-op=-1}' 2>&1 | filecheck %s --check-prefix=SYMBOLIC

// LAYOUT: uopc-opt: error: uop-kernelize: option layout="diagonal" is not allowed: expected one of reduce, output, none
// RANGE: uopc-opt: error: uop-kernelize: option max-depth=-3 is not allowed: expected an integer >= 1
// TYPE: uopc-opt: error: uop-kernelize: option max-depth="deep" is not of type int: give max-depth=<int> (default 64)
// NAME: uopc-opt: error: uop-kernelize has no option 'max_depht': its options are broadcast-limit, layout, max-depth, max-reads, epilogue
// SYMBOLIC: uopc-opt: error: uop-symbolic: option rewrites-per-op=-1 is not allowed: expected a count >= 0
func.func @f(%a: tensor<4xf32>) -> tensor<4xf32> {
  %s = uop.add %a, %a : tensor<4xf32>
  func.return %s : tensor<4xf32>
}
