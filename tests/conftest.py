"""The fixtures every test may use live in `support.fixtures` (tests/support/), one place."""

pytest_plugins = ["support.fixtures"]
