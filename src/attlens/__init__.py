"""attlens: AMD GPU instruction-level (ATT) traces turned into answers.

``attlens.load(path)`` reads a decoded ``ui_output_agent_*_dispatch_*``
directory; ``attlens.analyze(dispatch)`` runs the core analyses. Heavy modules
are imported on first use so ``import attlens`` stays cheap.
"""

__version__ = "0.1.0"

__all__ = ["__version__", "load", "analyze"]


def load(path, rocprof_dir=None, cache=None):
    """Load a capture; ``cache``: None = the digest in the user cache directory
    (docs/cache.md), False = parse afresh, or a cache directory."""
    from attlens.model.loader import load as _load

    return _load(path, rocprof_dir=rocprof_dir, cache=cache)


def analyze(dispatch, exposed: bool = True):
    from attlens.analysis.analyze import analyze as _analyze

    return _analyze(dispatch, exposed=exposed)
