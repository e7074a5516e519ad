"""Test-session settings.

The plan store (`uopc.runtime.plan_store`) is off unless a test turns it on: a test
compiles what it builds, so that its DEBUG lines, compile counts and monkeypatched
passes are about this run, not a plan an earlier run stored under the same key (the key
covers uopc's source files, not a pass a test patches at run time).
tests/py/test_plan_store.py turns it on.
"""

import os

os.environ.setdefault("UOPC_PLAN_STORE", "0")
