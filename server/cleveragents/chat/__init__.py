"""The interactive terminal session: `cleveragents` alone, or `cleveragents chat`.

A conversation in the current folder, each prompt a run of the core's pipeline continuing the
last (`session.py`); slash commands and their completion (`slash.py`); what a turn shows
(`render.py`); where lines come from, a line editor or piped stdin (`lines.py`); the options
and checks (`command.py`). A front, like the CLI: it imports the core and `display.py`, and no
other front.
"""

from __future__ import annotations


def main(argv: list[str]) -> int:
    from .command import main as chat_main

    return chat_main(argv)
