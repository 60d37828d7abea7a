"""`python -m cleveragents.daemon` runs the daemon, like `cleveragents serve`."""

import sys

from .server import main

sys.exit(main(sys.argv[1:]))
