"""Values as the history's columns hold them: JSON text, and strings SQLite can store."""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from ...tool.resources import Resource
from ..changes import CHANGE_KINDS, ChangedFile


def resources_from_json(stored: str | None) -> list[Resource]:
    return [Resource.from_dict(item) for item in json.loads(stored)] if stored else []


def dumps_json(value: Any) -> str:
    # default=str: a value JSON cannot hold is stored as its text rather than losing the row;
    # ASCII escapes keep lone surrogates (non-UTF-8 file names) storable.
    return json.dumps(value, ensure_ascii=True, default=str)


def storable_text(value: str | None) -> str | None:
    """A string SQLite can store: lone surrogates become U+FFFD instead of failing the write."""
    if value is None:
        return None
    return value.encode("utf-8", "replace").decode("utf-8")


def changed_files_to_json(changed_files: Sequence[ChangedFile] | None) -> str | None:
    if changed_files is None:
        return None
    return dumps_json([[c.path, c.change, *([1] if c.ignored else [])] for c in changed_files])


def changed_files_from_json(text: str | None) -> list[ChangedFile] | None:
    if text is None:
        return None
    return [
        ChangedFile(entry[0], entry[1], bool(entry[2]) if len(entry) > 2 else False)
        for entry in json.loads(text)
        if entry[1] in CHANGE_KINDS  # a kind a later version added: left out, not guessed
    ]
