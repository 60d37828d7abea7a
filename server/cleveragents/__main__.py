"""`python -m cleveragents ...` is the `cleveragents` command (how editors start the daemon)."""

import sys

from .launcher import main

sys.exit(main())
