"""`import uopc.optim` and `from uopc.optim import ...`, as PyTorch users write them: this name
is `uopc.frontend.optim` itself (the module replaces itself in `sys.modules`), so that
`uopc.optim`, `from uopc import optim` and `uopc.frontend.optim` are one module object."""

import sys

from uopc.frontend import optim

sys.modules[__name__] = optim
