"""Fuzzers: random Tensor programs checked against a float64 reference (`programs`,
`reference`), mutated inputs for the command-line tools (`mutations`), and the driver that
runs both and shrinks what fails (`fuzz`, `python -m uopc.testing.fuzz`)."""
