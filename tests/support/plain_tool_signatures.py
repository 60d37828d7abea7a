"""Plain-typed tool signatures whose schemas are pinned in snapshots/plain_tool_schemas.json.

The snapshot was written by the hand-written schema builder before typed (Pydantic) tools
existed: a plain-typed tool's schema and description must stay the same byte for byte.
"""

from __future__ import annotations

import enum
from collections.abc import Callable
from typing import Annotated, Any, Literal, Optional, Union


class Colour(enum.Enum):
    RED = "red"
    BLUE = "blue"


def search(
    query: str,
    limit: int = 10,
    ratio: float = 0.5,
    exact: bool = False,
    tags: list[str] | None = None,
    mode: Literal["fast", "deep"] = "fast",
    extra: dict[str, int] | None = None,
    note: Annotated[str, "free text"] = "",
) -> list[str]:
    """Search the index.

    Returns matches in rank order.

    Args:
        query: What to look for.
        limit: At most this many
            results.
        tags (list[str]): Only entries with these tags.
        extra: Counts by key.

    Returns:
        The matches.

    Raises:
        ValueError: never.
    """
    return []


def pairs(
    pair: tuple[int, str],
    many: tuple[int, ...] = (),
    unique: set[str] | None = None,
    anything: Any = None,
    obj: object = None,
    either: Union[int, str] = 0,  # noqa: UP007
    maybe: Optional[float] = None,  # noqa: UP045
    nested: list[dict[str, list[int]]] | None = None,
    raw: dict = {},  # type: ignore[type-arg]  # noqa: B006
) -> None:
    """Take pairs.

    :param pair: The pair.
    :param int many: Several
        numbers.
    :returns: nothing
    """


def undocumented(a: int, b: str = "x", flag: bool = True, none: None = None) -> int:
    return a


def one_line(text: str) -> int:
    """Count the words in a text."""
    return len(text.split())


SIGNATURES: list[Callable[..., Any]] = [search, pairs, undocumented, one_line]
