// RUN: uopc-opt %s -p uop-from-linalg --split-input-file --verify-diagnostics

func.func @insert(%x: tensor<2xf32>, %y: tensor<4xf32>) -> tensor<4xf32> {
  // expected-error@+1 {{not supported by uop-from-linalg; it converts linalg.generic, linalg.matmul}}
  %r = tensor.insert_slice %x into %y[0] [2] [1] : tensor<2xf32> into tensor<4xf32>
  func.return %r : tensor<4xf32>
}

// -----

func.func @conv(%x: tensor<8xf32>, %w: tensor<3xf32>, %o: tensor<6xf32>) -> tensor<6xf32> {
  // expected-error@+1 {{indexing map (d0, d1) -> ((d0 + d1)) is not a projected permutation (an index like d0 + d1 is a convolution or a window)}}
  %r = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0 + d1)>, affine_map<(d0, d1) -> (d1)>, affine_map<(d0, d1) -> (d0)>], iterator_types = ["parallel", "reduction"]} ins(%x, %w : tensor<8xf32>, tensor<3xf32>) outs(%o : tensor<6xf32>) {
  ^bb0(%a: f32, %b: f32, %c: f32):
    %m = arith.mulf %a, %b : f32
    %s = arith.addf %c, %m : f32
    linalg.yield %s : f32
  } -> tensor<6xf32>
  func.return %r : tensor<6xf32>
}

// -----

func.func @product(%x: tensor<3x4xf32>, %o: tensor<3xf32>) -> tensor<3xf32> {
  // expected-error@+1 {{a reduction body must yield arith.addf/addi, maximumf/maxsi or minimumf/minsi of the output block argument}}
  %r = linalg.reduce ins(%x : tensor<3x4xf32>) outs(%o : tensor<3xf32>) dimensions = [1]
    (%in: f32, %init: f32) {
      %p = arith.mulf %in, %init : f32
      linalg.yield %p : f32
    }
  func.return %r : tensor<3xf32>
}

// -----

func.func @iota(%o: tensor<4xi32>) -> tensor<4xi32> {
  %r = linalg.generic {indexing_maps = [affine_map<(d0) -> (d0)>], iterator_types = ["parallel"]} outs(%o : tensor<4xi32>) {
  ^bb0(%out: i32):
    %i = linalg.index 0 : index
    // expected-error@+1 {{not supported in a linalg body: the body must be elementwise arith/math ops on the block arguments (linalg.index and tensor.extract are not converted)}}
    %c = arith.index_cast %i : index to i32
    linalg.yield %c : i32
  } -> tensor<4xi32>
  func.return %r : tensor<4xi32>
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
