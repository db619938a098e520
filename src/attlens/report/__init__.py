"""Renderers. Each takes the same result objects from :mod:`attlens.analysis`."""
