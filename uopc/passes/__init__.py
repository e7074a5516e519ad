"""uopc's passes over the uop dialect and over loop-level IR (one pass per module)."""
