"""The smallest pygls server: the baseline the daemon's cold start is compared with.

`python bench/daemon_bare_server.py` serves stdio like the daemon does: a
`pygls.lsp.server.LanguageServer` with pygls's own lifecycle and two custom requests:
`bench/ping`, so a round trip through plain pygls can be timed beside the daemon's, and
`bench/stream` {runId, words: N}, which sends N `cleveragents/textDelta` notifications shaped
like the daemon's (runId, seq 1..N, iteration, text) in one go, as the daemon streams a
replayed response, so its notification rate can be compared with the daemon's.
"""

from __future__ import annotations

from typing import Any

from pygls.lsp.server import LanguageServer

server = LanguageServer("bare-pygls", "0")


@server.feature("bench/ping")
async def ping(ls: LanguageServer, params: Any) -> None:
    return None


@server.feature("bench/stream")
async def stream(ls: LanguageServer, params: Any) -> int:
    run_id, words = str(params.runId), int(params.words)
    for seq in range(1, words + 1):
        ls.protocol.notify(
            "cleveragents/textDelta",
            {"runId": run_id, "seq": seq, "iteration": 1, "text": f"w{seq - 1} "},
        )
    return words


if __name__ == "__main__":
    server.start_io()
