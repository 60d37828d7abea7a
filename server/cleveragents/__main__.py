"""`python -m cleveragents ...` is the `cleveragents` command (editors start the daemon this way)."""

import sys

from .cli import main

sys.exit(main())
