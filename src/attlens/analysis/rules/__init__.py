"""Every rule of the optimization plan, one function per pattern, registered
on import. Add a rule by writing a function with ``@rule(...)`` in one of
these modules (or a new module imported here). Registration order is the
order `attlens rules` and docs/rules.md list them in."""

from attlens.analysis.rules import dispatch, capture, memory, inorder, lds, occupancy, schedule, coverage  # noqa: F401
