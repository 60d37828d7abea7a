"""The one converter for the core's results: each as plain JSON data, snake_case.

Every value the core hands out as data (a run's records and messages for the history's JSON
columns, a tool result's extra fields, `doctor --json`, a batch report) goes through
`to_data`. A dataclass becomes a dict of all its fields in their declared order, tuples and
lists become lists, and `Any` is converted by the value's own type. A type that needs shaping
beyond that (a field omitted or renamed, a value shown otherwise, a computed field added)
says so once, next to its definition, with `register_shape`: a hook of this converter, not
a method of its own. The wire (camelCase, strict structuring) has its own converter in
`protocol/converter.py`; it lives above the core and reads the core's results, not this.

Lives in the tool runtime because the runtime's records are the first types it converts and
the runtime imports nothing of ours outside itself; every layer above may use it. cattrs is
imported with the first conversion, not with the types (a CLI or ACP start that converts
nothing does not pay for it).
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, TypeVar

if TYPE_CHECKING:
    import cattrs

__all__ = ["register_hook", "register_shape", "to_data"]

T = TypeVar("T")


@dataclass(frozen=True, slots=True)
class _Shape:
    omit: tuple[str, ...] = ()
    rename: Mapping[str, str] = field(default_factory=dict)
    omit_if_default: tuple[str, ...] = ()
    convert: Mapping[str, Callable[[Any], Any]] = field(default_factory=dict)
    extra: Mapping[str, Callable[[Any], Any]] = field(default_factory=dict)
    order: tuple[str, ...] | None = None


_lock = threading.RLock()
# Registered before the converter exists; each is added to it when it is made.
_pending: dict[type, _Shape | Callable[[Any], Any]] = {}
_made: list[cattrs.Converter] = []


def to_data(value: Any) -> Any:
    """`value` as plain JSON data: dicts, lists, strings, numbers, booleans and None."""
    return (_made[0] if _made else _converter()).unstructure(value)


def register_hook(cls: type[T], hook: Callable[[T], Any]) -> None:
    """`hook` makes a `cls`'s data (for a shape `register_shape` cannot say)."""
    _register(cls, hook)


def register_shape(
    cls: type,
    *,
    omit: Sequence[str] = (),
    rename: Mapping[str, str] | None = None,
    omit_if_default: Sequence[str] = (),
    convert: Mapping[str, Callable[[Any], Any]] | None = None,
    extra: Mapping[str, Callable[[Any], Any]] | None = None,
    order: Sequence[str] | None = None,
) -> None:
    """How a `cls` is shaped, by field name: `omit` leaves fields out, `rename` gives their
    keys, `omit_if_default` leaves a field out while it holds its default, `convert` shows a
    value otherwise (before it is converted); `extra` adds computed keys after the fields and
    `order` (when given) is the order of the keys present.

    The shape is the type's own: a subclass keeps the plain conversion of all its fields.
    """
    _register(
        cls,
        _Shape(
            tuple(omit),
            dict(rename or {}),
            tuple(omit_if_default),
            dict(convert or {}),
            dict(extra or {}),
            None if order is None else tuple(order),
        ),
    )


def _register(cls: type, how: _Shape | Callable[[Any], Any]) -> None:
    with _lock:
        if _made:
            _add(_made[0], cls, how)
        else:
            _pending[cls] = how


def _converter() -> cattrs.Converter:
    with _lock:
        if not _made:
            import cattrs

            converter = cattrs.Converter(
                unstruct_collection_overrides={Sequence: list, tuple: list}
            )
            for cls, how in _pending.items():
                _add(converter, cls, how)
            _pending.clear()
            _made.append(converter)
        return _made[0]


def _add(converter: cattrs.Converter, cls: type, how: _Shape | Callable[[Any], Any]) -> None:
    hook = how if callable(how) else _shape_hook(converter, cls, how)
    # For `cls` itself only: a subclass (a StoredRun of a RunSummary) has fields of its own.
    converter.register_unstructure_hook_func(lambda kind: kind is cls, hook)


def _shape_hook(converter: cattrs.Converter, cls: type, shape: _Shape) -> Callable[[Any], Any]:
    from cattrs.gen import make_dict_unstructure_fn, override

    made: list[Callable[[Any], dict[str, Any]]] = []

    def fields() -> Callable[[Any], dict[str, Any]]:
        # Made on first use, when every type the fields name exists.
        with _lock:
            if not made:
                overrides: dict[str, Any] = {
                    name: override(
                        omit=name in shape.omit or None,
                        rename=shape.rename.get(name),
                        omit_if_default=name in shape.omit_if_default or None,
                        unstruct_hook=_then(converter, shape.convert[name])
                        if name in shape.convert
                        else None,
                    )
                    for name in {
                        *shape.omit,
                        *shape.rename,
                        *shape.omit_if_default,
                        *shape.convert,
                    }
                }
                made.append(make_dict_unstructure_fn(cls, converter, **overrides))
            return made[0]

    def hook(value: Any) -> dict[str, Any]:
        data = (made[0] if made else fields())(value)
        for key, compute in shape.extra.items():
            data[key] = converter.unstructure(compute(value))
        if shape.order is not None:
            data = {key: data[key] for key in shape.order if key in data}
        return data

    return hook


def _then(converter: cattrs.Converter, show: Callable[[Any], Any]) -> Callable[[Any], Any]:
    return lambda value: converter.unstructure(show(value))
