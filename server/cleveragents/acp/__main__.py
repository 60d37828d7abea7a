"""`python -m cleveragents.acp` is `cleveragents serve --acp`."""

import sys

from .server import main

sys.exit(main(sys.argv[1:]))
