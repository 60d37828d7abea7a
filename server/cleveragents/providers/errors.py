"""The errors every provider raises when a model call fails for good."""

from __future__ import annotations

from ..tool.errors import ContextLengthExceeded


class ProviderError(RuntimeError):
    """The provider could not answer: bad configuration, or an API failure after retries.

    The message says what went wrong and what to do about it.
    """

    def __init__(
        self, message: str, *, status_code: int | None = None, error_type: str | None = None
    ) -> None:
        super().__init__(message)
        self.status_code = status_code
        self.error_type = error_type


class ProviderContextLengthError(ProviderError, ContextLengthExceeded):
    """The service refused the request as longer than the model's context window.

    The runtime catches `ContextLengthExceeded`, shrinks the conversation and tries once more.
    """
