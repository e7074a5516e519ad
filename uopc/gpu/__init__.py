"""From loops to the GPU: choose a GPU schedule per kernel (`schedule`), map its output
nest onto a `gpu.launch` (`map`), and run such launches on the CPU as plain loops
(`emulate`) (SPEC §7 gpu, §9 CUDA).

Kept apart from the CPU loop transforms (`uopc.transforms`): these passes run after
`uop-to-loops` and target the upstream gpu dialect, which the CUDA emitter prints.
"""
