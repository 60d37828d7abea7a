"""The interactive terminal session: `cleveragents` alone, or `cleveragents chat`.

A conversation in the current folder, each prompt a run of the core's pipeline continuing the
last (`session.py`); slash commands and which names complete (`slash.py`); what a turn shows
(`render.py`); where lines come from: piped stdin (`lines.py`) or the line editor (`editor.py`,
prompt_toolkit); the options and checks (`command.py`). A front, like the CLI: it imports the
core and `display.py`, and no other front.
"""

from __future__ import annotations


def main(argv: list[str]) -> int:
    from .command import main as chat_main

    return chat_main(argv)
