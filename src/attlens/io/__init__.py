"""Readers, one per external file format. They return plain data (dicts,
dataclasses, NumPy arrays) and raise :mod:`attlens.errors` exceptions with the
offending file named; they never interpret the data beyond its format."""
