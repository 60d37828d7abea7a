"""cleveragents: a tool-calling agent runtime you drive from your editor."""

__version__ = "0.1.0"
