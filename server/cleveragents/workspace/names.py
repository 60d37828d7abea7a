"""File names that are not plain text: how the tools show them, and how they read them back.

A name on Linux is any bytes but `/` and NUL. Python hands the tools a name that is not
UTF-8 with its stray bytes as lone surrogates (`surrogateescape`): text that cannot be
encoded, so it broke every JSON answer it reached (`glob` and `grep` failed for the whole
workspace, `run --json` printed invalid UTF-8). A name may also hold a newline (which passes
for a second line of a listing), control characters (an escape sequence redraws a terminal)
or invisible format characters (a right-to-left override reorders what is shown).

Such a name is shown C-quoted, the way git shows it (`core.quotePath`): the whole path in
double quotes, with

    \\xNN    a byte that is not UTF-8 (NN in hex)
    \\uNNNN  a control or invisible format character (C0, DEL, C1, zero-width, line and
            paragraph separators, bidi embeddings, overrides and isolates, the BOM)
    \\n \\t \\r \\\\ \\"   newline, tab, carriage return, backslash, double quote

and every other character as itself. A name that starts with `"` is quoted too, so the form
is never ambiguous: a path the model passes back that starts and ends with `"` and is a valid
quoting is read back to the exact bytes, and so is each `/`-separated part that is one (a
name `list_dir` showed quoted, joined to a folder by the model): `read_back`, in
`Sandbox.resolve`, so every tool takes it. Any other path is taken as written. The cost: a
file whose name really starts and ends with `"` is reached by its quoted form, as listed
(`"\\"name\\""`).
"""

from __future__ import annotations

import os
import re
from typing import Any

_HIDDEN = "\x00-\x1f\x7f-\x9f\u200b-\u200f\u2028-\u202e\u2060-\u2069\ufeff"
# Lone surrogates U+DC80..U+DCFF are the bytes 0x80..0xFF that were not UTF-8.
_NEEDS_QUOTING = re.compile(f"[{_HIDDEN}\ud800-\udfff]")
_HIDDEN_CHARACTER = re.compile(f"[{_HIDDEN}]")
_SIMPLE = {"\\": "\\\\", '"': '\\"', "\n": "\\n", "\t": "\\t", "\r": "\\r"}
_SIMPLE_BACK = {"\\": b"\\", '"': b'"', "n": b"\n", "t": b"\t", "r": b"\r"}
_HEX = re.compile(r"[0-9a-fA-F]+")

QUOTED_NAMES_NOTE = (
    "Names in double quotes hold bytes that are not UTF-8, control or invisible characters, "
    'escaped C-style (\\xNN a byte that is not UTF-8, \\uNNNN a character, \\n \\t \\r \\\\ \\"); '
    "pass such a path back exactly as shown, quotes included."
)


def needs_quoting(name: str) -> bool:
    return name.startswith('"') or _NEEDS_QUOTING.search(name) is not None


def shown_path(path: str) -> str:
    """`path` as the tools show it: as it is, or C-quoted when it needs to be (see module)."""
    if not needs_quoting(path):
        return path
    return '"' + "".join(_escaped(char) for char in path) + '"'


def _escaped(char: str) -> str:
    simple = _SIMPLE.get(char)
    if simple is not None:
        return simple
    code = ord(char)
    if 0xDC80 <= code <= 0xDCFF:  # a byte that was not UTF-8 (surrogateescape)
        return f"\\x{code - 0xDC00:02x}"
    if 0xD800 <= code <= 0xDFFF or _HIDDEN_CHARACTER.match(char):
        return f"\\u{code:04x}"
    return char


def read_back(path: str) -> str:
    """The name a shown path stands for, with surrogateescape for bytes that are not UTF-8 (as
    the file system functions take them): a quoted path read back whole, else each quoted
    `/`-separated part (a name `list_dir` showed quoted, joined to others by the model), else
    the path as it is."""
    whole = _unquoted(path)
    if whole is not None:
        return whole
    if '"' not in path:
        return path
    return "/".join(_unquoted(part) or part for part in path.split("/"))


def _unquoted(text: str) -> str | None:
    """`text` read back when it is a valid quoting, else None."""
    if len(text) < 2 or text[0] != '"' or text[-1] != '"':
        return None
    body = text[1:-1]
    raw = bytearray()
    at = 0
    while at < len(body):
        char = body[at]
        if char == '"':
            return None  # an unescaped quote inside: not a quoting of ours
        if char != "\\":
            try:
                raw += char.encode("utf-8")
            except UnicodeEncodeError:  # a lone surrogate typed in: not a quoting of ours
                return None
            at += 1
            continue
        kind = body[at + 1 : at + 2]
        if kind in _SIMPLE_BACK:
            raw += _SIMPLE_BACK[kind]
            at += 2
        elif kind in ("x", "u"):
            width = 2 if kind == "x" else 4
            digits = body[at + 2 : at + 2 + width]
            if len(digits) != width or not _HEX.fullmatch(digits):
                return None
            value = int(digits, 16)
            if kind == "x":
                raw.append(value)
            else:
                try:
                    raw += chr(value).encode("utf-8")
                except UnicodeEncodeError:
                    return None
            at += 2 + width
        else:
            return None
    return os.fsdecode(bytes(raw))


def with_note(result: dict[str, Any], *shown: str) -> dict[str, Any]:
    """`result` with `note` = QUOTED_NAMES_NOTE when any of `shown` is a quoted path."""
    if any(path.startswith('"') for path in shown):
        result["note"] = QUOTED_NAMES_NOTE
    return result
