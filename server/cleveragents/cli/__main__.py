"""`python -m cleveragents.cli`: the terminal front alone (`python -m cleveragents` is the
launcher, which also starts the servers and the chat)."""

import sys

from . import main

sys.exit(main())
