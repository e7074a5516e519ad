"""`uopc-opt`: xDSL's opt driver with the uop dialect, passes, targets and frontends.

It behaves like `xdsl-opt` (pipelines with `-p`, `--split-input-file`,
`--verify-diagnostics`, `--parsing-diagnostics`, `-t` targets, generic printing), and
turns every user error (running out of memory included) into a one-line diagnostic and
exit status 1 instead of a Python traceback (`UOPC_TRACEBACK=1` shows it; see
`uopc.tools.failure`). `-p` takes uopc's passes and its named pipelines
(`uopc.lowering.registry.PIPELINES`: `-p uop-to-c -t c` prints the C the engine
compiles for the same module).

uopc's entries come from `uopc.lowering.registry.UNIVERSE`. Once uopc is installed
xDSL's multiverse already holds them (the `xdsl.universe` entry point); uopc-opt adds
only the names the multiverse lacks, so it works from a source tree too and never
defines a name twice. A run (parse, passes, output) keeps the objects that exist when
it starts out of the cyclic collector's scans (`uopc.passes.gc_frozen`).
"""

from __future__ import annotations

import sys
from collections.abc import Sequence

from xdsl.dialects.builtin import ModuleOp
from xdsl.utils.exceptions import ArgSpecParseError, DiagnosticException, ParseError
from xdsl.xdsl_opt_main import xDSLOptMain

from uopc.lowering.registry import UNIVERSE
from uopc.passes import gc_frozen
from uopc.tools.failure import fail, out_of_memory, report
from uopc.uopdialect.context import register_uopc_dialects
from uopc.uopdialect.scf_verifier import verify_scf
from uopc.uopdialect.xdsl_fixes import exact_constants


class UopcOptMain(xDSLOptMain):
    version_format = "uopc-opt (xdsl {xdsl_version})"

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

    def register_all_frontends(self) -> None:
        super().register_all_frontends()
        for name, factory in UNIVERSE.all_frontends.items():
            self.available_frontends.setdefault(name, factory)

    def parse_chunk(self, chunk, file_extension: str, start_offset: int = 0) -> ModuleOp | None:
        """xDSL's parse, then the scf verifier xDSL lacks (unless --disable-verify)."""
        module = super().parse_chunk(chunk, file_extension, start_offset)
        if module is not None and not self.args.disable_verify:
            verify_scf(module)
        return module

    def run(self) -> None:
        with gc_frozen():
            super().run()


def _fail(message: str) -> int:
    return fail("uopc-opt", message)


def main(argv: Sequence[str] | None = None) -> int:
    try:
        with exact_constants():  # uop constants print and parse bit-exactly
            UopcOptMain(description="uopc optimizer: runs uop/xDSL pass pipelines", args=argv).run()
    except (ParseError, DiagnosticException) as err:
        # these carry the source line (or the annotated IR) in their message
        return report(str(err))
    except ArgSpecParseError as err:
        # a malformed -p/-t spec; it derives from BaseException and shows the spec position
        return _fail(str(err))
    except OSError as err:
        return _fail(f"cannot open {err.filename}: {err.strerror}")
    except UnicodeDecodeError as err:
        return _fail(f"the input is not UTF-8 text ({err.reason} at byte {err.start})")
    except (ValueError, TypeError, KeyError, NotImplementedError) as err:
        return _fail(str(err) or type(err).__name__)
    except MemoryError as err:
        return _fail(out_of_memory(err))
    except RecursionError:
        return _fail("input nests too deeply to process")
    return 0


if __name__ == "__main__":
    sys.exit(main())
