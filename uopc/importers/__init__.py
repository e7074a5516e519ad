"""Importers: other program formats turned into uop IR (the `.uir` line format, upstream
MLIR tensor IR through `uop-from-linalg`)."""
