"""The repeated-call guard's idea of one call made twice: same tool, same arguments as JSON.

Reserved keys (the context's) do not count: the runtime drops them before a tool runs.
"""

from __future__ import annotations

import json
from typing import Any

from .messages import ToolCallRequest
from .reserved import RESERVED_PARAMS

# One encoder for every call: json.dumps with options builds a new one each time.
_CALL_KEY_ENCODER = json.JSONEncoder(sort_keys=True, default=repr)


def _call_key(call: ToolCallRequest) -> str:
    """The call as one string: its tool and its arguments as JSON with sorted keys."""
    arguments: Any = call.arguments
    if isinstance(arguments, dict):
        # The reserved keys are dropped before a tool runs: varying them is not a new call.
        arguments = {k: v for k, v in arguments.items() if k not in RESERVED_PARAMS}
    try:
        arguments = _CALL_KEY_ENCODER.encode(arguments)
    except (TypeError, ValueError):
        arguments = repr(call.arguments)
    return f"{call.tool_name}\0{arguments}"


def same_call(first: ToolCallRequest, second: ToolCallRequest) -> bool:
    """Whether the repeat guard sees one call twice: same tool, same arguments as JSON.

    Compares the arguments where it can (plain JSON values) rather than encoding both: the
    same answer as comparing `_call_key`s, which it falls back to for anything unusual.
    """
    if first.tool_name != second.tool_name:
        return False
    same = _same_json(first.arguments, second.arguments, RESERVED_PARAMS)
    return _call_key(first) == _call_key(second) if same is None else same


_SCALARS = (str, int, bool, type(None))
_PLAIN = (*_SCALARS, float, dict, list, tuple)


def _same_json(a: Any, b: Any, skip: frozenset[str] = frozenset()) -> bool | None:
    """Whether a and b encode to the same JSON (sorted keys); None when only encoding can tell.

    Exact types only: an int subclass, say, may encode like an int, and only the encoder knows.
    `skip` names keys of a top-level object to leave out.
    """
    kind = type(a)
    if kind is not type(b):
        if kind in (list, tuple) and type(b) in (list, tuple):  # both a JSON array
            kind = list
        else:
            return False if kind in _PLAIN and type(b) in _PLAIN else None
    if kind in _SCALARS:
        return bool(a == b)
    if kind is float:
        return repr(a) == repr(b)  # 0.0 and -0.0 differ in JSON, NaN and NaN do not
    if kind is dict:
        count = 0
        for key, value in a.items():
            if key in skip:
                continue
            if type(key) is not str:
                return None
            if key not in b:
                return _str_keys_only(b)
            same = _same_json(value, b[key])
            if not same:
                return same
            count += 1
        # Every key of a is in b: the same keys unless b has more.
        return count == len(b) - sum(key in b for key in skip) or _str_keys_only(b)
    if kind is list or kind is tuple:
        if len(a) != len(b):
            return False
        for x, y in zip(a, b, strict=True):
            same = _same_json(x, y)
            if not same:
                return same
        return True
    return None


def _str_keys_only(mapping: dict[Any, Any]) -> bool | None:
    """False when every key is a string (a missing key is then a difference), else None: the
    encoder writes the key 1 as "1", so only encoding tells whether two such objects match."""
    return False if all(type(key) is str for key in mapping) else None
