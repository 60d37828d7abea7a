"""Large results, encoded to JSON off the event loop.

`json.dumps` of a run with thousands of records is one long C call that holds the GIL: on the
event loop it stalls every other request, and even on another thread it keeps the loop from
running until it is done. `encode_in_pieces` encodes the items of lists one at a time (each a
short call, so the loop gets its turns in between), on a worker thread; the handler returns
an `EncodedResult`, and the protocol puts its text into the response frame as it is.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

# ASCII escapes: the frame's Content-Length is then the text's length, and a lone surrogate
# (a file name that is not UTF-8) stays encodable, as in `Connection.send`.
_encode = json.JSONEncoder(ensure_ascii=True, separators=(",", ":"), default=str).encode


@dataclass(frozen=True, slots=True)
class EncodedResult:
    """A request's result, already encoded: ASCII JSON."""

    json: bytes

    @classmethod
    def of(cls, value: Any) -> EncodedResult:
        return cls(encode_in_pieces(value).encode("ascii"))


def encode_in_pieces(value: Any) -> str:
    """`value` as compact ASCII JSON, the same text as one `json.dumps`, made piece by piece:
    objects member by member, lists item by item (each item in one call)."""
    if isinstance(value, dict):
        members = ",".join(f"{_encode(str(k))}:{encode_in_pieces(v)}" for k, v in value.items())
        return "{" + members + "}"
    if isinstance(value, list | tuple):
        return "[" + ",".join(_encode(item) for item in value) + "]"
    return _encode(value)


def response_frame(msg_id: int | str | None, result: EncodedResult) -> bytes:
    """The whole LSP frame of a response whose result is already encoded."""
    head = b'{"jsonrpc":"2.0","id":%s,"result":' % _encode(msg_id).encode("ascii")
    length = len(head) + len(result.json) + 1
    return b"Content-Length: %d\r\n\r\n%s%s}" % (length, head, result.json)
