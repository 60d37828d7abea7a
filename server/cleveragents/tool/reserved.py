"""The tool parameters the runtime fills in itself, on its own: the registry, the schema reader
and the runner all need the names, and none of them should load another to get them."""

RESERVED_PARAMS = frozenset({"sandbox_root", "resource_bindings"})
"""Inputs the runtime supplies from the context; never offered to (or settable by) the model."""
