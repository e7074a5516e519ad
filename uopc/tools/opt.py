"""`uopc-opt`: xDSL's opt driver with the uop dialect, passes, targets and frontends,
and MLIR's diagnostics.

It behaves like `xdsl-opt` and `mlir-opt` (pipelines with `-p`, `--split-input-file`,
`-t` targets, generic printing). `-p` takes uopc's passes and its named pipelines
(`uopc.pipelines.PIPELINES`: `-p uop-to-c -t c` prints the C the engine
compiles for the same module); `--list-passes` describes them (`uopc.tools.passinfo`).

Diagnostics are MLIR's (`uopc.tools.diagnostics`): parse errors, verifier failures,
pass failures and emitter errors all print as `file:line:col: error: ...` with the
source line and a caret, at the op they are about (every parsed op keeps its location,
`uopc.uopdialect.locations`), on stderr, with exit status 1. With `--split-input-file`
every chunk runs and reports, not just the first that fails. `--verify-diagnostics`
checks the diagnostics against the input's `expected-error` annotations instead
(`uopc.tools.expectations`): it exits 1, naming both sides, on any diagnostic that is
unexpected and any expected one that did not appear. Any other failure (unknown pass,
bad option, missing file, running out of memory) is one `uopc-opt: error: ...` line and
exit status 1 — never a Python traceback (`UOPC_TRACEBACK=1` shows it; see
`uopc.tools.failure`).

Targets: `mlir` and uopc's own (`-t c`). xDSL's other targets print dialects uopc never
produces (x86/riscv/arm assembly, wasm, wgsl, csl, llvm through llvmlite), so they are
hidden and refused with a message.

uopc's entries come from `uopc.pipelines.UNIVERSE`. Once uopc is installed
xDSL's multiverse already holds them (the `xdsl.universe` entry point); uopc-opt adds
only the names the multiverse lacks, so it works from a source tree too and never
defines a name twice. A run (parse, passes, output) keeps the objects that exist when
it starts out of the cyclic collector's scans (`uopc.passes.gc_frozen`).
"""

from __future__ import annotations

import argparse
import dataclasses
import os
import sys
from collections.abc import Sequence
from importlib.metadata import PackageNotFoundError, version
from io import BytesIO

from xdsl.dialects.builtin import FileLineColLoc, IntAttr, ModuleOp
from xdsl.passes import ModulePass
from xdsl.utils.arg_spec import parse_spec
from xdsl.utils.exceptions import (
    ArgSpecParseError,
    DiagnosticException,
    MultipleSpansParseError,
    ParseError,
)
from xdsl.xdsl_opt_main import xDSLOptMain

from uopc import settings
from uopc.passes import gc_frozen
from uopc.pipelines import PIPELINES, UNIVERSE
from uopc.tools.diagnostics import Diagnostic, from_exception
from uopc.tools.expectations import check, parse_expectations
from uopc.tools.failure import fail, out_of_memory
from uopc.tools.frontends import BINARY
from uopc.tools.frontends import UNIVERSE as LAYER_FRONTENDS
from uopc.tools.passinfo import check_spec, list_passes
from uopc.uopdialect.context import register_uopc_dialects
from uopc.uopdialect.locations import LocatedParser, op_errors
from uopc.uopdialect.scf_verifier import verify_program
from uopc.uopdialect.xdsl_fixes import exact_constants

TOOL = "uopc-opt"
#: xDSL's targets that work on what uopc produces; the rest are hidden and refused
XDSL_TARGETS = ("mlir",)
SPLIT_MARKER = b"// -----"


def _uopc_version() -> str:
    try:
        return version("uopc")
    except PackageNotFoundError:  # run from a source tree that was never installed
        return "(not installed)"


class UsageError(ValueError):
    """A command line that cannot work (a target uopc-opt does not offer...)."""


class UopcOptMain(xDSLOptMain):
    version_format = f"uopc-opt {_uopc_version()} (xdsl {{xdsl_version}})"

    def __init__(self, description: str, args: Sequence[str] | None = None):
        #: file name -> text, for showing source lines in diagnostics
        self.sources: dict[str, str] = {}
        #: what runs now (a pass, the target): named when it crashes
        self.stage = "parsing"
        super().__init__(description, args)
        target = parse_spec(self.args.target).name
        if target not in self.supported_targets():
            raise UsageError(
                f"target '{target}' is not available: it prints xDSL dialects that uopc never "
                f"produces; uopc-opt's targets are {', '.join(self.supported_targets())}")

    # ---- registration ---------------------------------------------------------------------
    def register_all_dialects(self) -> None:
        super().register_all_dialects()
        register_uopc_dialects(self.ctx)

    def register_all_passes(self) -> None:
        super().register_all_passes()
        for name, factory in UNIVERSE.all_passes.items():
            self.available_passes.setdefault(name, factory)

    def register_all_targets(self) -> None:
        super().register_all_targets()
        for name, factory in UNIVERSE.all_targets.items():
            self.available_targets.setdefault(name, factory)

    def supported_targets(self) -> list[str]:
        return [t for t in self.available_targets if t in XDSL_TARGETS or t in UNIVERSE.all_targets]

    def register_all_frontends(self) -> None:
        super().register_all_frontends()
        for universe in (UNIVERSE, LAYER_FRONTENDS):
            for name, factory in universe.all_frontends.items():
                self.available_frontends.setdefault(name, factory)

    def register_all_arguments(self, arg_parser: argparse.ArgumentParser) -> None:
        every_target = self.available_targets
        self.available_targets = {t: every_target[t] for t in self.supported_targets()}
        try:  # xDSL's -t help lists self.available_targets: only the supported ones
            super().register_all_arguments(arg_parser)
        finally:
            self.available_targets = every_target
        for action in arg_parser._actions:
            if "--verify-diagnostics" in action.option_strings:
                action.help = ("check the diagnostics against the input's expected-error "
                               "annotations (MLIR's contract); exit 1 on any mismatch")
            elif "--parsing-diagnostics" in action.option_strings:
                action.help = ("accepted for xdsl-opt compatibility: parse errors are "
                               "diagnostics like any other")
            elif "--passes" in action.option_strings:
                action.help = "comma-separated passes and pipelines; --list-passes lists them"
        main = self

        class ListPasses(argparse.Action):
            def __call__(self, parser, namespace, values, option_string=None):
                print(main.list_passes(), end="")
                parser.exit()

        arg_parser.add_argument("--list-passes", nargs=0, action=ListPasses,
                                help="list uopc's passes (with their options) and "
                                     "pipelines, then xDSL's passes, and exit")

    def list_passes(self) -> str:
        own = {name: self.available_passes[name] for name in UNIVERSE.all_passes}
        others = sorted(set(self.available_passes) - set(own))
        return list_passes(own, PIPELINES, others)

    # ---- the pipeline ---------------------------------------------------------------------
    def setup_pipeline(self) -> None:
        """xDSL's pipeline, after `check_spec` worded any mistake in `-p`; its callback
        also records which pass runs, for the message if one crashes."""
        check_spec(self.args.passes, self.available_passes)
        super().setup_pipeline()
        verify_and_time = self.pipeline.callback
        assert verify_and_time is not None  # xDSL's setup_pipeline always installs one

        def callback(previous: ModulePass | None, module: ModuleOp,
                     following: ModulePass | None) -> None:
            self.stage = "verification"
            verify_and_time(previous, module, following)
            self.stage = f"pass {following.name}" if following is not None else "output"

        self.pipeline = dataclasses.replace(self.pipeline, callback=callback)

    # ---- parsing --------------------------------------------------------------------------
    def parse_text(self, text: str | bytes, file_extension: str, line_offset: int) -> ModuleOp:
        """One chunk, which starts after `line_offset` lines of the file, as a module
        whose ops carry their file locations; then xDSL's verifier and the scf verifier
        xDSL lacks (`verify_program`). A binary input (`.onnx`) comes as bytes."""
        name = self.get_input_name()
        frontend = self.args.frontend or file_extension
        try:
            if parse_spec(frontend).name == "mlir" and isinstance(text, str):
                parser = LocatedParser(self.ctx, text, name, line_offset)
                module = parser.parse_module(not self.args.no_implicit_module)
            else:  # another frontend; a binary one (.onnx) gets the file's bytes
                raw = text if isinstance(text, bytes) else text.encode()
                parsed = self.parse_chunk(BytesIO(raw), file_extension, line_offset)
                assert parsed is not None  # every xDSL frontend returns a module or raises
                module = parsed
                _shift_lines(module, line_offset)
        except MultipleSpansParseError as err:
            err.span = dataclasses.replace(err.span, line_offset=line_offset)
            err.refs = [(dataclasses.replace(span, line_offset=line_offset), msg)
                        for span, msg in err.refs]
            raise
        except ParseError as err:  # its span counts lines from the chunk's start
            err.span = dataclasses.replace(err.span, line_offset=line_offset)
            raise
        if not self.args.disable_verify:
            verify_program(module)
        return module

    # ---- a run ----------------------------------------------------------------------------
    def chunks(self, binary: bool = False) -> list[tuple[str | bytes, int]]:
        """The input's text (or its `// -----` chunks), each with the number of lines
        before it in the file; a `binary` input is one chunk of bytes."""
        stream, _ = self.get_input_stream()
        with stream:
            raw = stream.read()
        if binary:
            return [(raw, 0)]
        self.sources[self.get_input_name()] = raw.decode("utf-8", "replace")
        pieces = raw.split(SPLIT_MARKER) if self.args.split_input_file else [raw]
        found: list[tuple[str | bytes, int]] = []
        offset = 0
        for piece in pieces:
            found.append((piece.decode("utf-8"), offset))
            offset += piece.count(b"\n")
        return found

    def process(self, text: str | bytes, file_extension: str,
                line_offset: int) -> tuple[list[Diagnostic], str]:
        """Parse, transform and print one chunk: its diagnostics and its output."""
        self.stage = "parsing"
        try:
            module = self.parse_text(text, file_extension, line_offset)
            self.apply_passes(module)
            self.stage = f"target {parse_spec(self.args.target).name}"
            return [], self.output_resulting_program(module)
        except (MemoryError, RecursionError):
            raise
        except Exception as err:
            if settings.TRACEBACK.get():
                raise
            return [_diagnostic(err, self.stage)], ""

    def run(self) -> int:
        """Every chunk, in order; returns the exit status."""
        with gc_frozen(), op_errors():
            _, file_extension = os.path.splitext(self.get_input_name())
            file_extension = file_extension.lstrip(".") if self.args.input_file else "mlir"
            frontend = parse_spec(self.args.frontend).name if self.args.frontend else file_extension
            chunks = self.chunks(binary=frontend in BINARY)
            if file_extension not in self.available_frontends and not self.args.frontend:
                raise UsageError(f"unrecognized file extension '{file_extension}': give a .mlir, "
                                 f".uir or .onnx file, or -f FRONTEND")
            output = self.prepare_output()
            failed = False
            try:
                for k, (text, offset) in enumerate(chunks):
                    if k > 0:
                        output.write("// -----\n")
                    diagnostics, printed = self.process(text, file_extension, offset)
                    output.write(printed)
                    output.flush()
                    if self.args.verify_diagnostics and isinstance(text, str):
                        expected = parse_expectations(text, self.get_input_name(), offset)
                        produced = [d for diag in diagnostics for d in diag.flat()]
                        diagnostics = check(expected, produced)
                    for d in diagnostics:
                        sys.stderr.write(d.render(self.sources, TOOL))
                    failed |= bool(diagnostics)
            finally:
                if output is not sys.stdout:
                    output.close()
            return 1 if failed else 0


def _diagnostic(err: Exception, stage: str) -> Diagnostic:
    """The diagnostic of an error in `stage`. Errors made for users (xDSL's parse and
    diagnostic errors, uopc's own error classes) keep their message; any other exception
    is a pass or target that does not handle this input (an xDSL pass on uop IR...), and
    the message names the stage and the error."""
    if isinstance(err, (ParseError, DiagnosticException)) or \
            type(err).__module__.split(".")[0] == "uopc":
        return from_exception(err)
    return from_exception(err, f"{stage} cannot handle this input: it failed with "
                               f"{type(err).__name__}: {err}")


def _shift_lines(module: ModuleOp, line_offset: int) -> None:
    """Move the file locations of a chunk's ops down by `line_offset` lines."""
    if line_offset == 0:
        return
    for op in module.walk():
        loc = op.location
        if isinstance(loc, FileLineColLoc):
            op.location = FileLineColLoc(loc.filename, IntAttr(loc.line.data + line_offset),
                                         loc.column)


def _fail(message: str) -> int:
    return fail(TOOL, message)


def main(argv: Sequence[str] | None = None) -> int:
    try:
        with exact_constants():  # uop constants print and parse bit-exactly
            return UopcOptMain(description="uopc optimizer: runs uop/xDSL pass pipelines",
                               args=argv).run()
    except ArgSpecParseError as err:
        # a malformed -p/-t spec; it derives from BaseException and shows the spec position
        return _fail(str(err))
    except OSError as err:
        return _fail(f"cannot open {err.filename}: {err.strerror}")
    except UnicodeDecodeError as err:
        return _fail(f"the input is not UTF-8 text ({err.reason} at byte {err.start})")
    except BrokenPipeError:
        sys.stderr.close()  # the reader went away (uopc-opt ... | head): not an error
        return 0
    except (ValueError, TypeError, KeyError, NotImplementedError) as err:
        return _fail(str(err) or type(err).__name__)
    except MemoryError as err:
        return _fail(out_of_memory(err))
    except RecursionError:
        return _fail("input nests too deeply to process")


if __name__ == "__main__":
    sys.exit(main())
