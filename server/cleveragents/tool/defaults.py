"""The loop's default limits, for settings that name them without loading the loop itself."""

from __future__ import annotations

DEFAULT_MAX_ITERATIONS = 25
