"""The loaded dispatch: static instruction table, per-wave arrays, resources
and the target's architecture facts."""
