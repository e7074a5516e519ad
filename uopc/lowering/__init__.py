"""From uop tensors to loops: rangeify (tensors -> loops on memrefs) and its index
algebra (SPEC §8).

Kept apart from `uopc.passes` because these steps change the level of the IR (tensor
values become buffers and loops) and fix the calling convention the runtime relies on
(`uopc.uopdialect.contract`).
"""
