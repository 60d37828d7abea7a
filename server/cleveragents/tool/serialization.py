"""The one converter for the core's results: each as plain JSON data, snake_case.

Every value the core hands out as data (a run's records and messages for the history's JSON
columns, a tool result's extra fields, `doctor --json`, a batch report) goes through
`to_data`. A dataclass becomes a dict of all its fields in their declared order, tuples and
lists become lists, and `Any` is converted by the value's own type. A type that needs shaping
beyond that (a field omitted or renamed, a computed field added, a value shown otherwise)
says so once, next to its definition, with `register_shape`: a hook of this converter, not
a method of its own. The wire (camelCase, strict structuring) has its own converter in
`protocol/converter.py`; it lives above the core and reads the core's results, not this.

Lives in the tool runtime because the runtime's records are the first types it converts and
the runtime imports nothing of ours outside itself; every layer above may use it.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Mapping, Sequence
from typing import Any, TypeVar

import cattrs
from cattrs.gen import make_dict_unstructure_fn, override

__all__ = ["override", "register_hook", "register_shape", "to_data"]

T = TypeVar("T")

_converter = cattrs.Converter(
    unstruct_collection_overrides={Sequence: list, tuple: list},
)
_lock = threading.Lock()


def to_data(value: Any) -> Any:
    """`value` as plain JSON data: dicts, lists, strings, numbers, booleans and None."""
    return _converter.unstructure(value)


def register_hook(cls: type[T], hook: Callable[[T], Any]) -> None:
    """`hook` makes a `cls`'s data (for a shape the field overrides cannot say)."""
    _exactly(cls, hook)


def register_shape(
    cls: type[T],
    *,
    extra: Mapping[str, Callable[[T], Any]] | None = None,
    order: Sequence[str] | None = None,
    **fields: Any,  # cattrs `override(...)`s
) -> None:
    """How a `cls` is shaped: `fields` are cattrs overrides by field name (`omit`,
    `rename`, `omit_if_default`, `unstruct_hook`), `extra` adds computed keys after the
    fields, and `order` (when given) is the order of the keys present.

    The conversion function is made on first use, when every type its fields name exists.
    """
    computed = dict(extra or {})
    made: list[Callable[[T], dict[str, Any]]] = []

    def make() -> Callable[[T], dict[str, Any]]:
        with _lock:
            if not made:
                made.append(make_dict_unstructure_fn(cls, _converter, **fields))
            return made[0]

    def hook(value: T) -> dict[str, Any]:
        data = (made[0] if made else make())(value)
        for key, compute in computed.items():
            data[key] = compute(value)
        if order is not None:
            data = {key: data[key] for key in order if key in data}
        return data

    _exactly(cls, hook)


def _exactly(cls: type[T], hook: Callable[[T], Any]) -> None:
    # For `cls` itself only: a subclass (a StoredRun of a RunSummary) has fields of its own,
    # so it keeps the plain conversion unless it registers a shape of its own too.
    _converter.register_unstructure_hook_func(lambda kind: kind is cls, hook)
