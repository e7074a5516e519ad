// Rejected constants: every rule of uop.const, in generic syntax (so that nothing
// is inferred) and as parse errors of the custom syntax. Within 3 GiB of address space
// (the splats over 2**31 elements at the end must not be expanded).
// RUN: ulimit -v 3145728
// RUN: uopc-opt %s --split-input-file --verify-diagnostics | filecheck %s

// expected-error@+1 {{unsupported element type ui16: expected one of i1, i8, ui8, i16, i32, i64, f16, bf16, f32, f64}}
%c = "uop.const"() <{value = dense<1> : tensor<2xui16>}> : () -> tensor<2xui16>

// -----
// expected-error@+1 {{unsupported element type si8: expected one of i1, i8, ui8, i16, i32, i64, f16, bf16, f32, f64}}
%c = "uop.const"() <{value = dense<1> : tensor<2xsi8>}> : () -> tensor<2xsi8>

// -----
// expected-error@+1 {{literal has type tensor<i32> but the result is tensor<2xi32>: write the literal with the result's type}}
%c = "uop.const"() <{value = dense<1> : tensor<i32>}> : () -> tensor<2xi32>

// -----
// expected-error@+1 {{literal has type tensor<2xf32> but the result is tensor<2xf16>: write the literal with the result's type}}
%c = "uop.const"() <{value = dense<1.0> : tensor<2xf32>}> : () -> tensor<2xf16>

// -----
// expected-error@+1 {{dynamic sizes are not supported, found tensor<?xf32>: give static sizes}}
%c = "uop.const"() <{value = dense<1.0> : tensor<2xf32>}> : () -> tensor<?xf32>

// -----
// expected-error@+1 {{f32 should be of base attribute tensor}}
%c = "uop.const"() <{value = dense<1.0> : tensor<2xf32>}> : () -> f32

// -----
// expected-error@+1 {{[1 : i64, 2 : i64] should be of base attribute dense}}
%c = "uop.const"() <{value = [1, 2]}> : () -> tensor<2xi32>

// -----
// expected-error@+1 {{Integer value 5000000000 is out of range for type i32 which supports values in the range [-2147483648, 4294967296): write a value the element type can hold}}
%c = uop.const dense<5000000000> : tensor<i32>

// -----
// expected-error@+1 {{Integer value 2 is out of range for type i1 which supports values in the range [-1, 2): write a value the element type can hold}}
%c = uop.const dense<[true, 2]> : tensor<2xi1>

// -----
// expected-error@+1 {{Expected integer value}}
%c = uop.const dense<1.5> : tensor<2xi32>

// -----
// expected-error@+1 {{uop.const expects a dense literal such as dense<1.0> : tensor<4xf32>, found array<i32: 1, 2>}}
%c = uop.const array<i32: 1, 2>

// -----
// expected-error@+1 {{Shape mismatch in dense literal. Expected [3] shape from the type, but got [2] shape.}}
%c = uop.const dense<[1.0, 2.0]> : tensor<3xf32>

// -----
// i32 literals are signless bit patterns, as in MLIR: values in [2^31, 2^32) are
// accepted and mean the negative number with the same 32 bits.
%c = uop.const dense<[2147483648, 4294967295]> : tensor<2xi32>
// CHECK: %c = uop.const dense<[-2147483648, -1]> : tensor<2xi32>

// -----
// A splat over 2**31 elements is read as one element (xdsl_fixes): its errors are the
// same, and come without building 2**31 of them first.
// expected-error@+1 {{Integer value 5000000000 is out of range for type i32 which supports values in the range [-2147483648, 4294967296): write a value the element type can hold}}
%c = uop.const dense<5000000000> : tensor<2147483648xi32>

// -----
// expected-error@+1 {{Expected integer value}}
%c = uop.const dense<1.5> : tensor<2147483648xi32>

// -----
// expected-error@+1 {{Shape mismatch in dense literal. Expected 2147483648 elements from the type, but got 2 elements.}}
%c = "uop.const"() <{value = dense<"0x0000C03F0000C03F"> : tensor<2147483648xf32>}> : () -> tensor<2147483648xf32>

// -----
// expected-error@+1 {{literal has type tensor<2147483648xf32> but the result is tensor<2147483648xf16>: write the literal with the result's type}}
%c = "uop.const"() <{value = dense<1.0> : tensor<2147483648xf32>}> : () -> tensor<2147483648xf16>

// -----
// expected-error@+1 {{uop.const: Integer value 256 is out of range for type ui8 which supports values in the range [0, 256): write a value the element type can hold}}
%c = uop.const dense<256> : tensor<2xui8>

// -----
// expected-error@+1 {{uop.const: Integer value -129 is out of range for type i8}}
%c = uop.const dense<-129> : tensor<2xi8>
