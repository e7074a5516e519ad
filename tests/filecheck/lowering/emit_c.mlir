// RUN: uopc-opt %s -t c | filecheck %s

// CHECK: static inline int32_t uop_floordiv_i32(int32_t a, int32_t b)
// CHECK: static inline float uop_max_f32(float a, float b)

// Written buffers are plain restrict pointers, read-only ones const; a loop variable
// divided by a positive constant is non-negative, so it uses C's `/`, while a value loaded
// from memory may be negative and calls the floor-division helper.
// CHECK-LABEL: void divs(int32_t* restrict q, const int32_t* restrict a) {
// CHECK-NEXT:    for (int64_t [[I:i[0-9]+]] = 0; [[I]] < 8; [[I]] += 1) {
// CHECK-NEXT:      const int64_t [[H:v[0-9]+]] = [[I]] / 2;
// CHECK-NEXT:      const int32_t [[X:v[0-9]+]] = a[[[H]]];
// CHECK-NEXT:      const int32_t [[D:v[0-9]+]] = uop_floordiv_i32([[X]], (-3));
// CHECK-NEXT:      const int32_t [[S:v[0-9]+]] = [[D]] + [[X]];
// CHECK-NEXT:      q[[[I]]] = [[S]];
func.func @divs(%q: memref<8xi32>, %a: memref<4xi32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c2 = arith.constant 2 : index
  %c8 = arith.constant 8 : index
  %m3 = arith.constant -3 : i32
  scf.for %i = %c0 to %c8 step %c1 {
    %h = arith.floordivsi %i, %c2 : index
    %x = memref.load %a[%h] : memref<4xi32>
    %d = arith.floordivsi %x, %m3 : i32
    %s = arith.addi %d, %x : i32
    memref.store %s, %q[%i] : memref<8xi32>
  }
  func.return
}

// Non-finite constants, f16 arithmetic rounded per op, max through the NaN-aware helper,
// accumulators as locals, multi-dimensional indices flattened row-major.
// CHECK-LABEL: void floats(float* restrict o, _Float16* restrict h, const float* restrict x) {
// CHECK:         float [[ACC:acc[0-9]+]] = (-INFINITY);
// CHECK-NEXT:    for (int64_t [[J:i[0-9]+]] = 0; [[J]] < 3; [[J]] += 1) {
// CHECK-NEXT:      const float [[V:v[0-9]+]] = x[(1) * 3 + [[J]]];
// CHECK-NEXT:      const float [[M:v[0-9]+]] = uop_max_f32([[ACC]], [[V]]);
// CHECK-NEXT:      [[ACC]] = [[M]];
// CHECK-NEXT:    }
// CHECK-NEXT:    o[0] = [[ACC]];
// CHECK-NEXT:    o[1] = NAN;
// CHECK-NEXT:    const _Float16 [[HF:v[0-9]+]] = (_Float16)([[ACC]]);
// CHECK-NEXT:    const _Float16 [[SUM:v[0-9]+]] = (_Float16)((float)([[HF]]) + (float)((_Float16)0.5f));
// CHECK-NEXT:    const _Float16 [[E:v[0-9]+]] = (_Float16)(expf((float)([[SUM]])));
// CHECK-NEXT:    h[0] = [[E]];
func.func @floats(%o: memref<2xf32>, %h: memref<1xf16>, %x: memref<2x3xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c3 = arith.constant 3 : index
  %ninf = arith.constant 0xFF800000 : f32
  %nan = arith.constant 0x7FC00000 : f32
  %half = arith.constant 0.5 : f16
  %m = scf.for %j = %c0 to %c3 step %c1 iter_args(%acc = %ninf) -> (f32) {
    %v = memref.load %x[%c1, %j] : memref<2x3xf32>
    %n = arith.maximumf %acc, %v : f32
    scf.yield %n : f32
  }
  memref.store %m, %o[%c0] : memref<2xf32>
  memref.store %nan, %o[%c1] : memref<2xf32>
  %hf = arith.truncf %m : f32 to f16
  %s = arith.addf %hf, %half : f16
  %e = math.exp %s : f16
  memref.store %e, %h[%c0] : memref<1xf16>
  func.return
}

// scf.parallel is an OpenMP loop (guided scheduling) calling a helper that holds the
// body, with every pointer it uses as a restrict parameter (printed before the function);
// scf.if with a result assigns in both branches.
// CHECK: static void __attribute__((noinline)) par_body{{[0-9]+}}(int64_t [[P:i[0-9]+]], const float* restrict x, float* restrict y) {
// CHECK-NEXT:    const float [[XV:v[0-9]+]] = x[[[P]]];
// CHECK-NEXT:    const bool [[C:v[0-9]+]] = [[XV]] > 0.0f;
// CHECK-NEXT:    float [[R:r[0-9]+]];
// CHECK-NEXT:    if ([[C]]) {
// CHECK-NEXT:      [[R]] = [[XV]];
// CHECK-NEXT:    } else {
// CHECK-NEXT:      [[R]] = 0.0f;
// CHECK-NEXT:    }
// CHECK-NEXT:    y[[[P]]] = [[R]];
// CHECK-NEXT:  }
// CHECK-LABEL: void par(float* restrict y, const float* restrict x) {
// CHECK-NEXT:    #pragma omp parallel for schedule(guided)
// CHECK-NEXT:    for (int64_t [[Q:i[0-9]+]] = 0; [[Q]] < 16; [[Q]] += 1) {
// CHECK-NEXT:      par_body{{[0-9]+}}([[Q]], x, y);
// CHECK-NEXT:    }
func.func @par(%y: memref<16xf32>, %x: memref<16xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c16 = arith.constant 16 : index
  %zero = arith.constant 0.0 : f32
  "scf.parallel"(%c0, %c16, %c1) <{operandSegmentSizes = array<i32: 1, 1, 1, 0>}> ({
  ^bb0(%p: index):
    %xv = memref.load %x[%p] : memref<16xf32>
    %c = arith.cmpf ogt, %xv, %zero : f32
    %r = scf.if %c -> (f32) {
      scf.yield %xv : f32
    } else {
      scf.yield %zero : f32
    }
    memref.store %r, %y[%p] : memref<16xf32>
    scf.reduce
  }) : (index, index, index) -> ()
  func.return
}

// Index arithmetic hoisted out of a parallel loop (a register tile's columns j, j + 1)
// is recomputed in the helper from j, not passed as a parameter of its own: there gcc
// sees that y[j] and y[j + 1] are neighbours (and vectorizes the tile's loads).
// CHECK: static void __attribute__((noinline)) columns_body{{[0-9]+}}(int64_t [[P:i[0-9]+]], const float* restrict x, float* restrict y, int64_t j) {
// CHECK-NEXT:    const int64_t [[J1:v[0-9]+]] = j + 1;
// CHECK-NEXT:    const float [[XV:v[0-9]+]] = x[[[P]]];
// CHECK-NEXT:    y[([[P]]) * 8 + j] = [[XV]];
// CHECK-NEXT:    y[([[P]]) * 8 + [[J1]]] = [[XV]];
// CHECK-NEXT:  }
// CHECK-LABEL: void columns(float* restrict y, const float* restrict x, int64_t j) {
// CHECK-NEXT:    const int64_t {{v[0-9]+}} = j + 1;
// CHECK-NEXT:    #pragma omp parallel for schedule(guided)
// CHECK-NEXT:    for (int64_t [[Q:i[0-9]+]] = 0; [[Q]] < 4; [[Q]] += 1) {
// CHECK-NEXT:      columns_body{{[0-9]+}}([[Q]], x, y, j);
func.func @columns(%y: memref<4x8xf32>, %x: memref<4xf32>, %j: index) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c4 = arith.constant 4 : index
  %j1 = arith.addi %j, %c1 : index
  "scf.parallel"(%c0, %c4, %c1) <{operandSegmentSizes = array<i32: 1, 1, 1, 0>}> ({
  ^bb0(%p: index):
    %xv = memref.load %x[%p] : memref<4xf32>
    memref.store %xv, %y[%p, %j] : memref<4x8xf32>
    memref.store %xv, %y[%p, %j1] : memref<4x8xf32>
    scf.reduce
  }) : (index, index, index) -> ()
  func.return
}

// A bool is loaded as its byte's low bit (gcc vectorizes byte loads, not C bool loads:
// a causal mask's where), and stored as a bool.
// CHECK-LABEL: void mask(bool* restrict o, float* restrict y, const bool* restrict m, const float* restrict x) {
// CHECK:         const bool [[M:v[0-9]+]] = (bool)(((const uint8_t*)m)[[[I:i[0-9]+]]] & 1);
// CHECK:         o[[[I]]] = [[M]];
func.func @mask(%o: memref<8xi1>, %y: memref<8xf32>, %m: memref<8xi1>, %x: memref<8xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c8 = arith.constant 8 : index
  %ninf = arith.constant 0xFF800000 : f32
  scf.for %i = %c0 to %c8 step %c1 {
    %mv = memref.load %m[%i] : memref<8xi1>
    %xv = memref.load %x[%i] : memref<8xf32>
    %w = arith.select %mv, %xv, %ninf : f32
    memref.store %w, %y[%i] : memref<8xf32>
    memref.store %mv, %o[%i] : memref<8xi1>
  }
  func.return
}

// A loop carrying several values: accumulators updated from values the body computed
// are assigned straight; a yield that passes accumulators on to each other (a swap)
// goes through temporaries, so that each assignment reads the values from before it.
// CHECK-LABEL: void carried(float* restrict o, const float* restrict x) {
// CHECK:           const float [[S0:v[0-9]+]] = [[A0:acc[0-9]+]] + [[X:v[0-9]+]];
// CHECK-NEXT:      const float [[S1:v[0-9]+]] = [[A1:acc[0-9]+]] * [[X]];
// CHECK-NEXT:      [[A0]] = [[S0]];
// CHECK-NEXT:      [[A1]] = [[S1]];
// CHECK-NEXT:    }
// CHECK:           const float [[T0:t[0-9]+]] = [[B1:acc[0-9]+]];
// CHECK-NEXT:      const float [[T1:t[0-9]+]] = [[B0:acc[0-9]+]];
// CHECK-NEXT:      [[B0]] = [[T0]];
// CHECK-NEXT:      [[B1]] = [[T1]];
// CHECK-NEXT:    }
func.func @carried(%o: memref<4xf32>, %x: memref<3xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c2 = arith.constant 2 : index
  %c3 = arith.constant 3 : index
  %zero = arith.constant 0.0 : f32
  %one = arith.constant 1.0 : f32
  %s, %p = scf.for %j = %c0 to %c3 step %c1 iter_args(%a0 = %zero, %a1 = %one) -> (f32, f32) {
    %v = memref.load %x[%j] : memref<3xf32>
    %n0 = arith.addf %a0, %v : f32
    %n1 = arith.mulf %a1, %v : f32
    scf.yield %n0, %n1 : f32, f32
  }
  %u, %w = scf.for %j = %c0 to %c3 step %c1 iter_args(%b0 = %s, %b1 = %p) -> (f32, f32) {
    scf.yield %b1, %b0 : f32, f32
  }
  memref.store %s, %o[%c0] : memref<4xf32>
  memref.store %p, %o[%c1] : memref<4xf32>
  memref.store %u, %o[%c2] : memref<4xf32>
  memref.store %w, %o[%c3] : memref<4xf32>
  func.return
}
