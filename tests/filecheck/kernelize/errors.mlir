// RUN: uopc-opt %s -p uop-kernelize --split-input-file --verify-diagnostics

func.func @nested(%c: i1, %a: tensor<4xf32>) -> tensor<4xf32> {
  %r = scf.if %c -> (tensor<4xf32>) {
    // expected-error@+1 {{uop-kernelize: uop.add is nested inside scf.if: kernelize cuts straight-line function bodies; move tensor ops out of regions or into a function of their own}}
    %s = uop.add %a, %a : tensor<4xf32>
    scf.yield %s : tensor<4xf32>
  } else {
    scf.yield %a : tensor<4xf32>
  }
  func.return %r : tensor<4xf32>
}

// -----

// expected-error@+1 {{uop-kernelize: @blocks has 2 blocks: kernelize expects a straight-line function body (one block); lower control flow first}}
func.func @blocks(%a: tensor<4xf32>) -> tensor<4xf32> {
  %s = uop.add %a, %a : tensor<4xf32>
  cf.br ^bb1
^bb1:
  func.return %s : tensor<4xf32>
}
