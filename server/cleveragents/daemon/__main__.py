"""`python -m cleveragents.daemon` runs the daemon, like `cleveragents serve` (`--acp` too)."""

import sys

from ..launcher import serve

sys.exit(serve(sys.argv[1:]))
