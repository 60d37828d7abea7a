"""`python -m cleveragents ...` is the `cleveragents` command (how editors start the daemon)."""

import sys

from .cli import main

sys.exit(main())
