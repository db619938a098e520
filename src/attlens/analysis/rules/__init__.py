"""Every rule of the optimization plan, one function per pattern, registered
on import. Add a rule by writing a function with ``@rule(...)`` in one of
these modules (or a new module imported here)."""

from attlens.analysis.rules import capture, memory, occupancy, schedule  # noqa: F401
