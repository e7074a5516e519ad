"""Command-line entry points (console scripts in pyproject.toml): `uopc-opt` (`opt`), the
pass driver, and `uopc-run` (`run`), which compiles a program and runs it on .npy files."""
