"""Typed tools as Python developers write them: one module, used by the runtime, provider,
CLI and daemon tests (`--tools tests/support/typed_tools.py`, `toolModules`).

`SEEN` keeps what each handler received, so tests can check the conversion.
"""

from __future__ import annotations

import dataclasses
import datetime
import enum
from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import BaseModel, Field
from typing_extensions import TypedDict

from cleveragents.tool import tool

SEEN: dict[str, dict[str, Any]] = {}


class Colour(enum.Enum):
    RED = "red"
    BLUE = "blue"


class Address(BaseModel):
    """A postal address."""

    street: str
    zip_code: str = Field(pattern=r"^\d{5}$", description="Five digits.")
    title: str = ""  # a property named like the keyword the schema clean-up drops


@dataclasses.dataclass
class Parcel:
    weight_kg: Annotated[float, Field(gt=0, le=30)]
    fragile: bool = False


class Options(TypedDict):
    express: bool
    note: str


class Line(BaseModel):
    sku: str
    qty: int = Field(ge=1)


class Receipt(BaseModel):
    """What ship_order returns: a model, recorded in its JSON form."""

    to: Address
    colour: Colour
    lines: list[Line]
    total_kg: float
    when: datetime.date | None = None


@tool
def ship_order(
    address: Address,
    parcel: Parcel,
    colour: Colour,
    lines: list[Line],
    options: Options | None = None,
    speed: Literal["slow", "fast"] = "slow",
    labels: dict[str, Colour] | None = None,
    copies: Annotated[int, Field(ge=1, le=5, description="Printed copies.")] = 1,
    when: datetime.date | None = None,
) -> Receipt:
    """Ship an order.

    Args:
        address: Where it goes.
        parcel: The box.
        colour: Wrapping colour.
        lines: What is in it.
        options: Delivery options.
    """
    SEEN["ship_order"] = {
        "address": address,
        "parcel": parcel,
        "colour": colour,
        "lines": lines,
        "options": options,
        "labels": labels,
        "copies": copies,
        "when": when,
    }
    return Receipt(
        to=address,
        colour=colour,
        lines=lines,
        total_kg=parcel.weight_kg,
        when=when,
    )


@tool
def label(colour: Colour, size: int = Field(default=3, ge=1, le=9)) -> Colour:
    """Print a label.

    Parameters
    ----------
    colour : Colour
        Label colour.
    size : int
        Font size, in
        points.
    """
    SEEN["label"] = {"colour": colour, "size": size}
    return colour


@tool
def stamp(when: datetime.datetime, folder: Path, text: str) -> dict[str, Any]:
    """Stamp a file.

    :param when: The moment.
    :param folder: Where it is kept.
    :param text: What to stamp (returned as bytes, which go out as base64).
    """
    SEEN["stamp"] = {"when": when, "folder": folder, "text": text}
    return {"when": when, "folder": folder / "stamped", "payload": text.encode() + b"\xff"}


@tool
def parcel_of(weight_kg: float) -> Parcel:
    """A dataclass return value."""
    return Parcel(weight_kg=weight_kg)
