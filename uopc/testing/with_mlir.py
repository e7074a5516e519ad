"""Upstream MLIR as a cross-check of uopc's lowered IR (Debian's `mlir-22-tools`).

Two checks, used by `tests/py/test_with_mlir.py`:

- `verify(text)`: `mlir-opt --verify-each` parses and verifies loop-level IR that uopc
  printed, so the lowered programs are plain upstream MLIR, not merely xDSL's reading
  of it.
- `run(module, entry, inputs)`: lowers a loop-level module with `mlir-opt`
  (`LLVM_PIPELINE`), runs it with `mlir-runner` on the given inputs through a small
  driver function (inputs as constant globals, outputs allocated and printed with the
  runner library's `printMemref*`), and returns the outputs as numpy arrays, for
  comparison with uopc's own C on the same inputs.

- `run_tensor(text, entry, inputs, outputs)`: the same for a tensor-level upstream
  program (linalg, tensor, arith/math on tensors, as `uop-from-linalg` takes it):
  bufferized and lowered by `mlir-opt` (`TENSOR_PIPELINE`), run by `mlir-runner`, so that
  uopc's conversion of the program is compared with MLIR's own reading of it.

`tool(name)` finds a tool on PATH or in Debian's `/usr/lib/llvm-22/bin`; None when
`mlir-22-tools` is not installed (`.ci/run` installs it).
"""

from __future__ import annotations

import glob
import os
import re
import shutil
import subprocess
import tempfile
from collections.abc import Sequence
from typing import cast

import numpy as np
from xdsl.dialects import func
from xdsl.dialects.builtin import MemRefType, ModuleOp

from uopc.uopdialect.dtypes import DTYPES

LLVM_DIR = "/usr/lib/llvm-22"
#: loop-level IR (scf, arith, math, memref, func) to the LLVM dialect
# --lower-affine: expand-strided-metadata (reshaped, sliced buffers) and linalg's loops for
# convolution windows leave affine.apply
LLVM_PIPELINE = ("--arith-expand", "--expand-strided-metadata", "--lower-affine",
                 "--convert-scf-to-cf",
                 "--convert-to-llvm", "--reconcile-unrealized-casts")
#: tensor-level upstream IR (linalg on tensors, arith/math on tensors) to the LLVM dialect
TENSOR_PIPELINE = ("--convert-elementwise-to-linalg",
                   "--one-shot-bufferize=bufferize-function-boundaries",
                   "--convert-linalg-to-loops", *LLVM_PIPELINE)
#: numpy dtype -> (MLIR element type, runner print function)
#: the printers of mlir-runner's runtime by numpy dtype (i8's prints characters, so i8
#: and ui8 outputs have none)
PRINTERS = {np.dtype(np.float32): ("f32", "printMemrefF32"),
            np.dtype(np.float64): ("f64", "printMemrefF64"),
            np.dtype(np.float16): ("f16", "printMemrefF16"),
            DTYPES["bf16"].numpy: ("bf16", "printMemrefBF16"),
            np.dtype(np.int16): ("i16", "printMemrefI16"),
            np.dtype(np.int32): ("i32", "printMemrefI32"),
            np.dtype(np.int64): ("i64", "printMemrefI64")}
TIMEOUT_S = 120


class MlirError(RuntimeError):
    """An upstream MLIR tool rejected uopc's IR or failed; the message has its stderr."""


def tool(name: str) -> str | None:
    """The path of MLIR tool `name`, or None if it is not installed."""
    return shutil.which(name) or next(
        (p for p in [os.path.join(LLVM_DIR, "bin", name)] if os.access(p, os.X_OK)), None)


def _installed(name: str) -> str:
    """The path of MLIR tool `name`; MlirError if it is not installed."""
    path = tool(name)
    if path is None:
        raise MlirError(f"{name} not found on PATH or in {LLVM_DIR}/bin: install mlir-22-tools")
    return path


def _call(args: Sequence[str], text: str) -> str:
    done = subprocess.run(list(args), input=text, capture_output=True, text=True,
                          timeout=TIMEOUT_S)
    if done.returncode != 0:
        raise MlirError(f"{os.path.basename(args[0])} failed (exit {done.returncode}):\n"
                        f"{done.stderr[-4000:]}")
    return done.stdout


def verify(text: str) -> None:
    """Raise MlirError unless `mlir-opt --verify-each` accepts `text`."""
    _call([_installed("mlir-opt"), "--verify-each", "-o", os.devnull], text)


def _runner_libraries() -> str:
    libs = []
    for stem in ("libmlir_runner_utils", "libmlir_c_runner_utils"):
        found = sorted(glob.glob(os.path.join(LLVM_DIR, "lib", f"{stem}.so*")))
        if not found:
            raise MlirError(f"{stem}.so not found in {LLVM_DIR}/lib: install mlir-22-tools")
        libs.append(found[0])
    return ",".join(libs)


def _element(v: np.generic) -> str:
    """One element: floats by repr (the exact value, read back exactly), non-finite
    values as their bit patterns."""
    if isinstance(v, np.floating) or v.dtype == DTYPES["bf16"].numpy:
        if not np.isfinite(float(v)):
            size = v.dtype.itemsize
            return f"0x{int(np.array(v).view(f'u{size}')):0{2 * size}X}"
        return repr(float(v))
    return str(int(v))


def _literal(array: np.ndarray) -> str:
    """A dense literal of `array`, nested like its shape (as MLIR requires)."""
    def nested(a: np.ndarray) -> str:
        if a.ndim == 0:
            return _element(cast(np.generic, a[()]))  # a 0-d array indexes to a scalar
        return "[" + ", ".join(nested(row) for row in a) + "]"

    return f"dense<{nested(array)}>"


def _memref(shape: Sequence[int], elt: str) -> str:
    return "memref<" + "".join(f"{n}x" for n in shape) + elt + ">"


def driver(fn: func.FuncOp, inputs: Sequence[np.ndarray], outputs: Sequence[tuple[tuple[int, ...], np.dtype]],
           arena_bytes: int) -> str:
    """MLIR text of a `@uopc_mlir_main` that calls `fn` on `inputs` (argument order:
    outputs, inputs, then the arena when `arena_bytes`) and prints every output."""
    lines, body, args, types = [], [], [], []
    for k, (shape, dtype) in enumerate(outputs):
        t = _memref(shape, PRINTERS[np.dtype(dtype)][0])
        body.append(f"  %o{k} = memref.alloc() : {t}")
        args.append(f"%o{k}")
        types.append(t)
    for k, x in enumerate(inputs):
        arg_type = fn.function_type.inputs.data[len(outputs) + k]
        assert isinstance(arg_type, MemRefType)
        t = str(arg_type)
        x = np.asarray(x).reshape(arg_type.get_shape())  # any shape of the right size binds
        lines.append(f'memref.global "private" constant @uopc_in{k} : {t} = {_literal(x)}')
        body.append(f"  %i{k} = memref.get_global @uopc_in{k} : {t}")
        args.append(f"%i{k}")
        types.append(t)
    if arena_bytes:
        t = str(fn.function_type.inputs.data[-1])
        body.append(f"  %arena = memref.alloc() {{alignment = 64 : i64}} : {t}")
        args.append("%arena")
        types.append(t)
    body.append(f"  func.call @{fn.sym_name.data}({', '.join(args)}) : ({', '.join(types)}) -> ()")
    printers = set()
    for k, (_shape, dtype) in enumerate(outputs):
        elt, printer = PRINTERS[np.dtype(dtype)]
        printers.add((elt, printer))
        body.append(f"  %u{k} = memref.cast %o{k} : {types[k]} to memref<*x{elt}>")
        body.append(f"  func.call @{printer}(%u{k}) : (memref<*x{elt}>) -> ()")
    for elt, printer in sorted(printers):
        lines.append(f"func.func private @{printer}(memref<*x{elt}>) "
                     f"attributes {{llvm.emit_c_interface}}")
    return "\n".join([*lines, "func.func @uopc_mlir_main() {", *body, "  func.return", "}"]) + "\n"


_NUMBER = re.compile(r"-?nan|-?inf|[-+]?\d+(?:\.\d*)?(?:[eE][-+]?\d+)?")


def _parse_prints(text: str, outputs: Sequence[tuple[tuple[int, ...], np.dtype]]) -> list[np.ndarray]:
    blocks = text.split("Unranked Memref")[1:]
    if len(blocks) != len(outputs):
        raise MlirError(f"mlir-runner printed {len(blocks)} memrefs, expected {len(outputs)}:\n"
                        f"{text[-2000:]}")
    results = []
    for block, (shape, dtype) in zip(blocks, outputs):
        data = block.split("data =", 1)[1]
        found = _NUMBER.findall(data)
        if np.dtype(dtype).kind in "iu":  # exactly (i64 beyond 2^53), modulo 2^bits
            ints = np.array([int(v) for v in found], dtype=np.int64)
            results.append(ints.astype(dtype).reshape(shape))
            continue
        values = [float(v.replace("-nan", "nan")) for v in found]
        results.append(np.array(values, dtype=np.float64).astype(dtype).reshape(shape))
    return results


def _tensor(shape: Sequence[int], elt: str) -> str:
    return "tensor<" + "".join(f"{n}x" for n in shape) + elt + ">"


def tensor_driver(entry: str, inputs: Sequence[np.ndarray],
                  outputs: Sequence[tuple[tuple[int, ...], np.dtype]]) -> str:
    """MLIR text of a `@uopc_mlir_main` that calls tensor function `entry` on `inputs`
    (as constants) and prints every result."""
    body, args, in_types = [], [], []
    for k, x in enumerate(inputs):
        t = _tensor(x.shape, PRINTERS[x.dtype][0])
        body.append(f"  %i{k} = arith.constant {_literal(x)} : {t}")
        args.append(f"%i{k}")
        in_types.append(t)
    out_types = [_tensor(shape, PRINTERS[np.dtype(dtype)][0]) for shape, dtype in outputs]
    results = [f"%r{k}" for k in range(len(outputs))]
    body.append(f"  {', '.join(results)} = func.call @{entry}({', '.join(args)}) : "
                f"({', '.join(in_types)}) -> ({', '.join(out_types)})")
    printers = set()
    for k, (t, (_, dtype)) in enumerate(zip(out_types, outputs)):
        elt, printer = PRINTERS[np.dtype(dtype)]
        printers.add((elt, printer))
        body.append(f"  %u{k} = tensor.cast %r{k} : {t} to tensor<*x{elt}>")
        body.append(f"  func.call @{printer}(%u{k}) : (tensor<*x{elt}>) -> ()")
    decls = [f"func.func private @{printer}(tensor<*x{elt}>) attributes "
             f"{{llvm.emit_c_interface}}" for elt, printer in sorted(printers)]
    return "\n".join([*decls, "func.func @uopc_mlir_main() {", *body, "  func.return",
                      "}"]) + "\n"


def _lower_and_run(program: str, pipeline: Sequence[str]) -> str:
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "program.mlir")
        with open(path, "w") as f:
            f.write(program)
        llvm = _call([_installed("mlir-opt"), path, *pipeline], "")
        return _call([_installed("mlir-runner"), "-e", "uopc_mlir_main", "-entry-point-result=void",
                      f"-shared-libs={_runner_libraries()}"], llvm)


def run_tensor(text: str, entry: str, inputs: Sequence[np.ndarray],
               outputs: Sequence[tuple[tuple[int, ...], np.dtype]]) -> list[np.ndarray]:
    """Run upstream tensor-level program `text`'s function `entry` with mlir-opt and
    mlir-runner; `text` is one module (or its top-level ops: an implicit module)."""
    driver_text = tensor_driver(entry, inputs, outputs)
    if re.search(r"^\s*(builtin\.)?module\b", text, re.M):  # the driver goes inside it
        program = text[:text.rstrip().rfind("}")] + driver_text + "}\n"
    else:
        program = text + "\n" + driver_text
    return _parse_prints(_lower_and_run(program, TENSOR_PIPELINE), outputs)


def run(module: ModuleOp, entry: str, inputs: Sequence[np.ndarray],
        outputs: Sequence[tuple[tuple[int, ...], np.dtype]], arena_bytes: int = 0) -> list[np.ndarray]:
    """Run loop-level `module`'s function `entry` through mlir-opt and mlir-runner."""
    fn = next(op for op in module.ops if isinstance(op, func.FuncOp) and op.sym_name.data == entry)
    text = str(module)
    # the driver goes inside the module's body, before its closing brace
    program = text[:text.rstrip().rfind("}")] + driver(fn, inputs, outputs, arena_bytes) + "}\n"
    return _parse_prints(_lower_and_run(program, LLVM_PIPELINE), outputs)
