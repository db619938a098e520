"""attlens: AMD GPU instruction-level (ATT) traces turned into answers.

``attlens.load(path)`` reads a decoded ``ui_output_agent_*_dispatch_*``
directory; ``attlens.analyze(dispatch)`` runs the core analyses; the other
questions (``attlens.plan``, ``attlens.hotspots``, ``attlens.deps``, ...) are
the functions of :mod:`attlens.api` (docs/api.md). They are imported on
first use, so ``import attlens`` stays cheap.
"""

__version__ = "0.3.0"

_API = ("load", "analyze", "summary", "hotspots", "plan", "asm", "deps", "waits", "waves", "occupancy", "diff", "check", "kernels",
        "captures", "pmc", "rules", "pc_samples", "pc_sampling", "whatif")

__all__ = ["__version__", *_API]


def __getattr__(name: str):
    if name in _API:
        from attlens import api

        return getattr(api, name)
    raise AttributeError(f"module 'attlens' has no attribute {name!r}")


def __dir__():
    return sorted([*globals(), *_API])
