"""`uopc-run`: compile a `.mlir`, `.uir` or `.onnx` program to C and run it on .npy inputs.

    uopc-run PROGRAM [IN.npy ...] [-o OUT.npy ...] [--entry NAME] [--fill] [--emit-c]
             [--check | --no-check]

- PROGRAM is `.onnx` (an ONNX model with static input shapes, `uopc.onnx.frontend`),
  `.uir` (SPEC §11) or `.mlir`: uop functions on tensors, upstream MLIR
  tensor functions (linalg, tensor, arith/math on tensors; converted by `uop-from-linalg`,
  `uopc.importers.linalg`), or hand-written loop functions on memrefs (outputs are the
  leading memref arguments the function writes).
- Inputs bind in argument order (for `.uir`, slot order). An input needs the argument's
  dtype and element count; its shape does not matter (a 1-D array fills a shaped buffer).
- `--fill` runs without input files: every input gets deterministic data, floats
  `(k % 13 - 6) / 4`, ints `k % 7 + 1` (never 0, so divisions are defined), bools
  `k % 2 == 0`, for element k in row-major order. Without `--fill`, missing inputs are an
  error.
- The results are printed (numpy format, one block per result); `-o OUT.npy` (once per
  result, in order) saves them. `--emit-c` prints the generated C instead of running.
- The entry is `--entry NAME`, else `main`, else the last function of the module.
- `--check` compiles with run-time checks: every memref index in bounds, no integer
  division or remainder by 0 (or of INT_MIN by -1). A failed check stops the program with
  an error naming the op, its function and op number, and the offending value, instead
  of a crash; with `--emit-c` it prints the checked C. Hand-written loop programs (no
  tensors) are checked by default, since nothing but their author vouches for their
  indices; `--no-check` runs them unchecked, at full speed.

Any bad input (unreadable or malformed program, missing or extra inputs, empty,
malformed or pickled .npy files, wrong dtype or size, compiler failure, running out of
memory) prints one `uopc-run: error: ...` message and exits with 1, without a Python
traceback (`UOPC_TRACEBACK=1` shows it; see `uopc.tools.failure`).
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from uopc.tools.failure import fail, out_of_memory
from uopc.tools.frontends import BINARY, parse_binary


def fill(shape: tuple[int, ...], dtype: np.dtype) -> np.ndarray:
    """The deterministic input data of `--fill` (see the module docstring)."""
    k = np.arange(int(np.prod(shape)), dtype=np.int64)
    data: np.ndarray
    if dtype.kind == "f":
        data = (k % 13 - 6) / 4
    elif dtype.kind == "b":
        data = k % 2 == 0
    else:
        data = k % 7 + 1
    return data.astype(dtype).reshape(shape)


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="uopc-run", description="compile a .mlir/.uir program to C and run it on .npy inputs")
    p.add_argument("program", help="a .mlir, .uir or .onnx file")
    p.add_argument("inputs", nargs="*", help=".npy files, in argument (slot) order")
    p.add_argument("-o", "--output", action="append", default=[], metavar="OUT.npy",
                   help="save result k to the k-th OUT.npy (repeat for several results)")
    p.add_argument("--entry", default=None, help="function to run (default: main, else the last)")
    p.add_argument("--fill", action="store_true",
                   help="run without input files on deterministic data")
    p.add_argument("--emit-c", action="store_true", help="print the generated C and exit")
    checks = p.add_mutually_exclusive_group()
    checks.add_argument("--check", action="store_true", default=None,
                        help="check memref indices and integer divisors at run time (the "
                             "default for hand-written loop programs)")
    checks.add_argument("--no-check", dest="check", action="store_false",
                        help="run hand-written loop programs without run-time checks")
    return p


class UsageError(Exception):
    """A mistake on the command line or in the files it names."""


def _load_input(path: str) -> np.ndarray:
    try:
        return np.load(path, allow_pickle=False)
    except FileNotFoundError:
        raise UsageError(f"cannot open input {path}: no such file") from None
    except EOFError:
        raise UsageError(f"cannot read input {path} as a .npy array: the file is empty or "
                         f"truncated") from None
    except (ValueError, OSError) as err:  # pickled objects are a ValueError: refused
        raise UsageError(f"cannot read input {path} as a .npy array: {err}") from None


def run(args: argparse.Namespace) -> int:
    from uopc.importers.linalg import import_linalg
    from uopc.runtime.backend import backend_for, default_backend
    from uopc.runtime.driver import compile_program, emit_source, parse_program

    path = Path(args.program)
    if path.suffix.lstrip(".") in BINARY:  # a model file (.onnx): its frontend reads it
        if not path.is_file():
            raise UsageError(f"cannot open {path}: no such file")
        module = parse_binary(path)
    else:
        try:
            text = path.read_text()
        except FileNotFoundError:
            raise UsageError(f"cannot open {path}: no such file") from None
        except (OSError, UnicodeDecodeError) as err:
            raise UsageError(f"cannot read {path}: {err}") from None
        fmt = {".uir": "uir", ".mlir": "mlir"}.get(path.suffix)
        module = parse_program(text, fmt, str(path))
    import_linalg(module)  # upstream linalg/tensor functions become uop ones
    module.verify()
    check = _is_loop_program(module) if args.check is None else args.check
    if args.emit_c:
        backend = backend_for("cpu").checked() if check else default_backend()
        print(emit_source(module, backend), end="")
        return 0
    program = compile_program(module, args.entry, check=check)
    inputs = [_load_input(p) for p in args.inputs]
    if not inputs and args.fill:
        inputs = [fill(spec.shape, spec.dtype) for spec in program.inputs]
    if len(inputs) != len(program.inputs):
        expected = ", ".join(f"{k}: {spec}" for k, spec in enumerate(program.inputs)) or "none"
        raise UsageError(
            f"{path} takes {len(program.inputs)} input(s) ({expected}), "
            f"{len(inputs)} given: pass one .npy file per input, or --fill"
        )
    if len(args.output) > len(program.outputs):
        raise UsageError(
            f"{len(args.output)} -o files for {len(program.outputs)} result(s): "
            f"give at most one per result"
        )
    results = program(*inputs)
    for k, result in enumerate(results):
        if len(results) > 1:
            print(f"result {k}: {result.dtype}{list(result.shape)}")
        print(np.array2string(result, threshold=1000))
    for out_path, result in zip(args.output, results):
        try:
            np.save(out_path, result)
        except OSError as err:
            raise UsageError(f"cannot write {out_path}: {err.strerror}") from None
    return 0


def _is_loop_program(module: Any) -> bool:
    """Whether `module` is written as loops by hand: no tensor value anywhere."""
    from xdsl.dialects.builtin import TensorType

    return not any(isinstance(v.type, TensorType)
                   for op in module.walk() for v in (*op.operands, *op.results))


def main(argv: Sequence[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    from xdsl.utils.exceptions import DiagnosticException, ParseError, VerifyException

    from uopc.runtime.backend import BackendError
    from uopc.runtime.compiler import CompileError
    from uopc.tools.diagnostics import from_exception
    from uopc.tools.failure import report
    from uopc.uopdialect.locations import op_errors

    try:
        with op_errors():
            return run(args)
    except (ParseError, DiagnosticException) as err:
        # located at the op (or the text) it is about, with the source line
        try:
            sources = {args.program: Path(args.program).read_text()}
        except (OSError, UnicodeDecodeError):
            sources = {}
        return report(from_exception(err).render(sources, "uopc-run").rstrip("\n"))
    except (VerifyException, UsageError, CompileError, BackendError, ValueError,
            TypeError) as err:
        return fail("uopc-run", str(err))
    except MemoryError as err:
        return fail("uopc-run", out_of_memory(err))
    except RecursionError:
        return fail("uopc-run", "program nests too deeply to process")
    except BrokenPipeError:
        sys.stderr.close()  # the reader went away (uopc-run ... | head): not an error
        return 0


if __name__ == "__main__":
    sys.exit(main())
