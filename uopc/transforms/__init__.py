"""Loop transforms of `uop-apply-schedule`: each rewrites a kernel's loop nest, as
rangeify built it, the way one field of its `uop.schedule` says (SPEC §7), one
transform per module; `apply_schedule` is the pass that runs them in order.

Kept apart from `uopc.lowering`: these change how loops run, not the level of the IR.
"""
