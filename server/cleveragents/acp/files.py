"""The editor's files for a session: `fs/read_text_file` and `fs/write_text_file`.

When the client says in `initialize` that it serves them (`clientCapabilities.fs`), each
session's file tools read and write through it (`workspace/file_access.py`): the model sees
unsaved buffers, and its edits land in the editor, which shows them and decides when to save.
The sandbox check happens before any of these requests is sent.
"""

from __future__ import annotations

from acp import Client, RequestError
from acp.schema import ClientCapabilities

from ..workspace.file_access import FileAccessError


class EditorFiles:
    """A `FileAccess` over the ACP client, for one session."""

    def __init__(self, client: Client, session_id: str, *, reads: bool, writes: bool) -> None:
        self._client = client
        self._session_id = session_id
        self._reads = reads
        self._writes = writes

    @classmethod
    def offered(
        cls, client: Client, session_id: str, capabilities: ClientCapabilities | None
    ) -> EditorFiles | None:
        """The editor's files when the client offers reading or writing them, else None."""
        fs = capabilities.fs if capabilities is not None else None
        reads = bool(fs is not None and fs.read_text_file)
        writes = bool(fs is not None and fs.write_text_file)
        if not (reads or writes):
            return None
        return cls(client, session_id, reads=reads, writes=writes)

    @property
    def reads(self) -> bool:
        return self._reads

    @property
    def writes(self) -> bool:
        return self._writes

    async def read_text(self, path: str) -> str:
        try:
            response = await self._client.read_text_file(session_id=self._session_id, path=path)
        except (RequestError, ConnectionError) as exc:
            raise FileAccessError(describe_client_error(exc)) from None
        return response.content

    async def write_text(self, path: str, content: str) -> None:
        try:
            await self._client.write_text_file(
                session_id=self._session_id, path=path, content=content
            )
        except (RequestError, ConnectionError) as exc:
            raise FileAccessError(describe_client_error(exc)) from None


def describe_client_error(error: Exception) -> str:
    """A client's error answer (or its going away), for the model to read."""
    if isinstance(error, RequestError):
        detail = f": {error.data}" if error.data else ""
        return f"{error} (error {error.code}){detail}"[:500]
    return f"the client went away: {error}"
