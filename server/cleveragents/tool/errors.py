"""Exceptions a tool may raise to fail with a specific `error_kind`."""

from __future__ import annotations

from .records import ErrorKind


class ToolError(Exception):
    """A tool failure the model should see as-is; `kind` becomes the record's `error_kind`."""

    kind: ErrorKind = "execution_error"

    def __init__(self, message: str, *, kind: ErrorKind | None = None) -> None:
        super().__init__(message)
        if kind is not None:
            self.kind = kind


class SandboxViolation(ToolError):
    """A path (or other resource) lies outside the sandbox root; nothing was touched."""

    kind: ErrorKind = "sandbox_violation"

    def __init__(self, path: str, reason: str = "is outside the sandbox root") -> None:
        super().__init__(f"path {path!r} {reason}")
        self.path = path


class ContextLengthExceeded(Exception):
    """The model's service rejected a request as longer than the model's context window.

    Providers raise a subclass (Anthropic: 400 "prompt is too long" or 413; OpenAI: 400
    `context_length_exceeded`); the runtime then shrinks the conversation and retries once.
    """
