"""The xDSL context uopc works in: our dialects next to the upstream ones.

`uopc-opt` registers the uop dialect in its own context (`register_uopc_dialects`); the
in-process users (tests, the engine, the runtime's .mlir reader, the lowering pipeline)
take `make_context()`, so that text parses and passes run the same way in both places.
"""

from __future__ import annotations

from xdsl.context import Context


def register_uopc_dialects(ctx: Context) -> None:
    """Make the uop dialect(s) available in `ctx` (loaded lazily on first use), and the
    upstream ops xDSL lacks (`uopc.uopdialect.upstream`, `uopc.linalg_named`)."""
    from uopc.linalg_named import NAMED_OPS, install_linalg_extensions
    from uopc.uopdialect import Uop
    from uopc.uopdialect.upstream import PrefetchOp

    if "uop" not in ctx.registered_dialect_names:
        ctx.register_dialect("uop", lambda: Uop)
    if PrefetchOp not in ctx.loaded_ops:
        ctx.load_op(PrefetchOp)  # an upstream memref op xDSL lacks (`upstream`)
    install_linalg_extensions()  # named linalg ops xDSL lacks, in its linalg dialect
    if any(d.name == "linalg" for d in ctx.loaded_dialects):
        loaded = {known.name for known in ctx.loaded_ops}
        for op in NAMED_OPS:  # the dialect was loaded before they were added
            if op.name not in loaded:
                ctx.load_op(op)


def make_context() -> Context:
    """A context with every xDSL dialect and ours registered, for in-process pipelines."""
    from xdsl.universe import Universe

    ctx = Context()
    for name, factory in Universe.get_multiverse().all_dialects.items():
        ctx.register_dialect(name, factory)
    register_uopc_dialects(ctx)
    return ctx
