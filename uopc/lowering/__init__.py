"""From uop tensors to C: rangeify (tensors -> loops on memrefs), its index algebra, the
loop-level simplification pipeline and the C emitter (SPEC §8, §9).

Kept apart from `uopc.passes` because these steps change the level of the IR (tensor
values become buffers and loops) and fix the calling convention the runtime relies on.
"""
