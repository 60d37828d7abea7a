"""The smallest pygls server: the baseline the daemon's cold start is compared with.

`python bench/daemon_bare_server.py` serves stdio like the daemon does: a
`pygls.lsp.server.LanguageServer` with pygls's own lifecycle and one custom request,
`bench/ping`, so a round trip through plain pygls can be timed beside the daemon's.
"""

from __future__ import annotations

from typing import Any

from pygls.lsp.server import LanguageServer

server = LanguageServer("bare-pygls", "0")


@server.feature("bench/ping")
async def ping(ls: LanguageServer, params: Any) -> None:
    return None


if __name__ == "__main__":
    server.start_io()
