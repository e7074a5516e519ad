// RUN: uopc-opt %s -p uop-from-linalg --split-input-file --verify-diagnostics

func.func @insert(%x: tensor<2xf32>, %y: tensor<4xf32>) -> tensor<4xf32> {
  // expected-error@+1 {{insert_slice offsets (0,) sizes (2,) strides (2,) into (4,): unit strides and an in-bounds window convert}}
  %r = tensor.insert_slice %x into %y[0] [2] [2] : tensor<2xf32> into tensor<4xf32>
  func.return %r : tensor<4xf32>
}

// -----

func.func @unranked(%x: tensor<2xf32>) -> tensor<2xf32> {
  // expected-error@+1 {{cast to tensor<*xf32>: converted functions keep static shapes; unranked tensors (as passed to printMemref functions) are not supported}}
  %u = tensor.cast %x : tensor<2xf32> to tensor<*xf32>
  func.return %x : tensor<2xf32>
}

// -----

func.func @dim(%x: tensor<2xf32>) -> tensor<2xf32> {
  %c0 = arith.constant 0 : index
  // expected-error@+1 {{not supported by uop-from-linalg; it converts linalg.generic, linalg.fill}}
  %d = tensor.dim %x, %c0 : tensor<2xf32>
  func.return %x : tensor<2xf32>
}

// -----

func.func @modulo(%x: tensor<8xf32>, %o: tensor<8xf32>) -> tensor<8xf32> {
  // expected-error@+1 {{indexing map (d0) -> ((d0 mod 2)) is not supported: each result must be a loop dimension, a constant, or a sum of loop dimensions with positive factors plus a constant (a window, as in convolutions); mod, floordiv, ceildiv and symbols are not}}
  %r = linalg.generic {indexing_maps = [affine_map<(d0) -> (d0 mod 2)>, affine_map<(d0) -> (d0)>], iterator_types = ["parallel"]} ins(%x : tensor<8xf32>) outs(%o : tensor<8xf32>) {
  ^bb0(%a: f32, %c: f32):
    linalg.yield %a : f32
  } -> tensor<8xf32>
  func.return %r : tensor<8xf32>
}

// -----

func.func @two_parallel(%x: tensor<8xf32>, %o: tensor<4x4xf32>) -> tensor<4x4xf32> {
  // expected-error@+1 {{a window index slides along 2 parallel loop dimensions: one is supported}}
  %r = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0 + d1)>, affine_map<(d0, d1) -> (d0, d1)>], iterator_types = ["parallel", "parallel"]} ins(%x : tensor<8xf32>) outs(%o : tensor<4x4xf32>) {
  ^bb0(%a: f32, %c: f32):
    linalg.yield %a : f32
  } -> tensor<4x4xf32>
  func.return %r : tensor<4x4xf32>
}

// -----

func.func @unpadded(%x: tensor<4xf32>, %w: tensor<3xf32>, %o: tensor<4xf32>) -> tensor<4xf32> {
  // the verifier (xDSL's, as MLIR's) refuses a window that reads past the input
  // expected-error@+1 {{inferred input/output operand #0 has shape's dimension #0 to be greater than or equal to 6, but found 4}}
  %r = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0 + d1)>, affine_map<(d0, d1) -> (d1)>, affine_map<(d0, d1) -> (d0)>], iterator_types = ["parallel", "reduction"]} ins(%x, %w : tensor<4xf32>, tensor<3xf32>) outs(%o : tensor<4xf32>) {
  ^bb0(%a: f32, %b: f32, %c: f32):
    %m = arith.mulf %a, %b : f32
    %s = arith.addf %c, %m : f32
    linalg.yield %s : f32
  } -> tensor<4xf32>
  func.return %r : tensor<4xf32>
}

// -----

func.func @argmax_from_zero(%x: tensor<4x10xf32>, %oi: tensor<4xi64>, %of: tensor<4xf32>) -> tensor<4xi64> {
  // expected-error@+1 {{the max/min that an index output follows must start from its reduction's start value (-inf, +inf, INT_MIN, INT_MAX)}}
  %r:2 = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0)>, affine_map<(d0, d1) -> (d0)>], iterator_types = ["parallel", "reduction"]} ins(%x : tensor<4x10xf32>) outs(%of, %oi : tensor<4xf32>, tensor<4xi64>) {
  ^bb0(%in: f32, %out: f32, %out_0: i64):
    %i = linalg.index 1 : index
    %ii = arith.index_cast %i : index to i64
    %m = arith.maximumf %in, %out : f32
    %gt = arith.cmpf ogt, %in, %out : f32
    %s = arith.select %gt, %ii, %out_0 : i64
    linalg.yield %m, %s : f32, i64
  } -> (tensor<4xf32>, tensor<4xi64>)
  func.return %r#1 : tensor<4xi64>
}

// -----

func.func @and_i32(%x: tensor<3x4xi32>, %o: tensor<3xi32>) -> tensor<3xi32> {
  // expected-error@+1 {{bitwise reductions are supported on i1 only (any, all)}}
  %r = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0)>], iterator_types = ["parallel", "reduction"]} ins(%x : tensor<3x4xi32>) outs(%o : tensor<3xi32>) {
  ^bb0(%in: i32, %out: i32):
    %a = arith.andi %in, %out : i32
    linalg.yield %a : i32
  } -> tensor<3xi32>
  func.return %r : tensor<3xi32>
}

// -----

func.func @no_blob(%x: tensor<2xf32>) -> tensor<2xf32> {
  // expected-error@+1 {{dense_resource<missing> has no blob: the file needs its {-# dialect_resources #-} section}}
  %w = arith.constant dense_resource<missing> : tensor<2xf32>
  %r = arith.addf %x, %w : tensor<2xf32>
  func.return %r : tensor<2xf32>
}

// -----

func.func @short_blob(%x: tensor<2xf32>) -> tensor<2xf32> {
  // expected-error@+1 {{dense_resource<short> holds 4 bytes, its type tensor<2xf32> needs 8}}
  %w = arith.constant dense_resource<short> : tensor<2xf32>
  %r = arith.addf %x, %w : tensor<2xf32>
  func.return %r : tensor<2xf32>
}

{-#
  dialect_resources: {
    builtin: {
      short: "0x040000000000803F"
    }
  }
#-}
// -----

func.func @product(%x: tensor<3x4xf32>, %o: tensor<3xf32>) -> tensor<3xf32> {
  // expected-error@+1 {{a reduction body must yield arith.addf/addi, maximumf/maxsi, minimumf/minsi (or andi/ori on i1) of the output block argument (used once)}}
  %r = linalg.reduce ins(%x : tensor<3x4xf32>) outs(%o : tensor<3xf32>) dimensions = [1]
    (%in: f32, %init: f32) {
      %p = arith.mulf %in, %init : f32
      linalg.yield %p : f32
    }
  func.return %r : tensor<3xf32>
}

// -----

func.func @extract_local(%o: tensor<4xf32>, %t: tensor<4xf32>) -> tensor<4xf32> {
  %r = linalg.generic {indexing_maps = [affine_map<(d0) -> (d0)>], iterator_types = ["parallel"]} outs(%o : tensor<4xf32>) {
  ^bb0(%out: f32):
    %e = tensor.empty() : tensor<4xf32>
    %i = linalg.index 0 : index
    // expected-error@+1 {{not supported in a linalg body: the body must be elementwise arith/math ops on the block arguments, linalg.index, and tensor.extract from a tensor defined outside the body}}
    %v = tensor.extract %e[%i] : tensor<4xf32>
    linalg.yield %v : f32
  } -> tensor<4xf32>
  func.return %r : tensor<4xf32>
}
// -----

// expected-error@+1 {{unsupported element type f80: expected one of i1, i8, ui8, i16, i32, i64, f16, bf16, f32, f64}}
func.func @wide(%x: tensor<4xf80>) -> tensor<4xf80> {
  %r = arith.addf %x, %x : tensor<4xf80>
  func.return %r : tensor<4xf80>
}

// -----

// expected-error@+1 {{dynamic sizes are not supported, found tensor<?xf32>: give static sizes}}
func.func @dynamic(%x: tensor<?xf32>) -> tensor<?xf32> {
  %r = arith.addf %x, %x : tensor<?xf32>
  func.return %r : tensor<?xf32>
}

// -----

func.func @unsigned_i64(%a: tensor<4xi64>, %o: tensor<4xf32>) -> tensor<4xf32> {
  %r = linalg.generic {indexing_maps = [affine_map<(d0) -> (d0)>, affine_map<(d0) -> (d0)>], iterator_types = ["parallel"]} ins(%a : tensor<4xi64>) outs(%o : tensor<4xf32>) {
  ^bb0(%x: i64, %out: f32):
    // expected-error@+1 {{unsigned conversion from i64 is not supported: uop's widest integer is i64 (signed); use arith.sitofp}}
    %c = arith.uitofp %x : i64 to f32
    linalg.yield %c : f32
  } -> tensor<4xf32>
  func.return %r : tensor<4xf32>
}

// -----

func.func @scalar_arg(%x: tensor<4xf32>, %s: f32) -> tensor<4xf32> {
  %r = arith.addf %x, %x : tensor<4xf32>
  func.return %r : tensor<4xf32>
}
// expected-error@-4 {{argument type f32 is not a tensor: converted functions take and return tensors (a scalar is a tensor<f32>)}}

// -----

// a pad amount computed by an op, not an arith.constant (mlir-opt and uopc's verifier
// accept the op)
func.func @runtime_pad(%x: tensor<2xf32>, %t: tensor<i64>) -> tensor<4xf32> {
  %z = arith.constant 0.0 : f32
  %c1 = arith.constant 1 : index
  %n = arith.addi %c1, %c1 : index
  // expected-error@+1 {{the high padding of dimension 0 is not an arith.constant: uopc pads by static amounts; give a constant or a static size}}
  %p = tensor.pad %x low[1] high[%n] {
  ^bb0(%i: index):
    tensor.yield %z : f32
  } : tensor<2xf32> to tensor<4xf32>
  func.return %p : tensor<4xf32>
}
