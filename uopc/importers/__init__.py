"""Importers: other program formats turned into uop IR (the `.uir` line format)."""
