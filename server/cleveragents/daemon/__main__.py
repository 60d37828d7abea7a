"""`python -m cleveragents.daemon` runs the daemon, like `cleveragents serve`."""

import sys

from .startup import import_server_main

sys.exit(import_server_main()(sys.argv[1:]))
