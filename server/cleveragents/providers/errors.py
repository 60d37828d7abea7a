"""The one error every provider raises when a model call fails for good."""

from __future__ import annotations


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
