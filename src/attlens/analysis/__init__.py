"""Pure analyses over a loaded :class:`~attlens.model.dispatch.Dispatch`.
One module per concern; each returns a plain result object."""
