// Rejected schedule attributes (uopc/uopdialect/schedule.py), as parse errors.
// RUN: uopc-opt %s --split-input-file --verify-diagnostics

// expected-error@+1 {{#uop.schedule: field 'thread' given twice}}
func.func @k(%x: tensor<4xf32>) -> tensor<4xf32> attributes {uop.schedule = #uop.schedule<thread = 0, thread = 0>} {
  func.return %x : tensor<4xf32>
}

// -----

// expected-error@+1 {{#uop.schedule: schedule upcast = [2, 0]: upcast factors, unroll, split and steps must be >= 1, tile blocks and lanes >= 0 and thread an axis >= 0 (or None)}}
func.func @k(%x: tensor<4xf32>) -> tensor<4xf32> attributes {uop.schedule = #uop.schedule<upcast = [2, 0]>} {
  func.return %x : tensor<4xf32>
}

// -----

// expected-error@+1 {{Expected one of 'approx', 'fma', 'lanes', 'pack', 'split', 'steps', 'thread', 'tile', 'unroll', 'upcast', 'vector' in #uop.schedule}}
func.func @k(%x: tensor<4xf32>) -> tensor<4xf32> attributes {uop.schedule = #uop.schedule<vectors = 4>} {
  func.return %x : tensor<4xf32>
}

// -----

// expected-error@+1 {{#uop.schedule: schedule upcast = [6], vector = 4: vector = 4 gives the lanes of the innermost axis's upcast, which must be a multiple of it}}
func.func @k(%x: tensor<4xf32>) -> tensor<4xf32> attributes {uop.schedule = #uop.schedule<upcast = [6], vector = 4>} {
  func.return %x : tensor<4xf32>
}

// -----

// expected-error@+1 {{#uop.schedule: pack = 2: pack is 0 or 1}}
func.func @k(%x: tensor<4xf32>) -> tensor<4xf32> attributes {uop.schedule = #uop.schedule<tile = [2], pack = 2>} {
  func.return %x : tensor<4xf32>
}

// -----

// expected-error@+1 {{#uop.schedule: schedule tile = [-2]: upcast factors, unroll, split and steps must be >= 1, tile blocks and lanes >= 0 and thread an axis >= 0 (or None)}}
func.func @k(%x: tensor<4xf32>) -> tensor<4xf32> attributes {uop.schedule = #uop.schedule<tile = [-2]>} {
  func.return %x : tensor<4xf32>
}

// -----

// expected-error@+1 {{#uop.schedule: schedule lanes = 4: lanes = 4 lays out the partial results of a split; give split = s > 1 too}}
func.func @k(%x: tensor<4xf32>) -> tensor<4xf32> attributes {uop.schedule = #uop.schedule<lanes = 4>} {
  func.return %x : tensor<4xf32>
}
