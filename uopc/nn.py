"""`import uopc.nn` and `from uopc.nn import ...`, as PyTorch users write them: this name
is `uopc.frontend.nn` itself (the module replaces itself in `sys.modules`), so that
`uopc.nn`, `from uopc import nn` and `uopc.frontend.nn` are one module object."""

import sys

from uopc.frontend import nn

sys.modules[__name__] = nn
