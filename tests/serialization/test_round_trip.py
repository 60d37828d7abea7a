"""What the converter writes, the history's readers read back: a stored message, resource,
image reference and batch outcome load as the value that was stored."""

from __future__ import annotations

import contextlib
import dataclasses
import json
import sqlite3
from typing import Any

import pytest

from cleveragents.batch.task import TaskOutcome
from cleveragents.service.checkpoints.catalog import checkpoint_from_row
from cleveragents.service.checkpoints.records import Checkpoint, Coverage
from cleveragents.tool.images import ImageAttachment
from cleveragents.tool.messages import UserMessage, message_from_dict
from cleveragents.tool.resources import Resource
from cleveragents.tool.serialization import register_shape, to_data

from . import samples


def stored(value: Any) -> Any:
    """`value` as the history's JSON column holds it, read back."""
    return json.loads(json.dumps(to_data(value)))


@pytest.mark.parametrize(
    "message",
    [
        samples.USER,
        samples.ASSISTANT,
        samples.ASSISTANT_WITH_DATA,
        samples.TOOL_RESULTS,
    ],
)
def test_a_stored_message_loads_as_it_was(message: Any) -> None:
    assert message_from_dict(stored(message)) == message


def test_a_stored_prompt_keeps_its_images_by_reference() -> None:
    back = message_from_dict(stored(samples.USER_WITH_IMAGES))
    assert isinstance(back, UserMessage)
    # The bytes stay in the image store: the message holds each image without them.
    assert back.images == tuple(
        dataclasses.replace(image, data=None) for image in samples.USER_WITH_IMAGES.images
    )
    assert ImageAttachment.from_reference(stored(samples.IMAGE), b"\x89PNG") == samples.IMAGE


@pytest.mark.parametrize("resource", [samples.RESOURCE, samples.EDITOR_RESOURCE])
def test_a_stored_resource_loads_as_it_was(resource: Resource) -> None:
    assert Resource.from_dict(stored(resource)) == resource


@pytest.mark.parametrize("outcome", [samples.PASSED, samples.FAILED_TASK])
def test_a_stored_batch_outcome_loads_as_it_was(outcome: TaskOutcome) -> None:
    assert TaskOutcome.from_dict(stored(outcome)) == outcome


@pytest.mark.parametrize("checkpoint", [samples.SNAPSHOT, samples.RESTORE_SNAPSHOT])
def test_a_stored_checkpoint_loads_as_it_was(checkpoint: Checkpoint) -> None:
    """The catalog's columns as the store writes them (skipped files and coverage through the
    converter), read back by the catalog's own reader from a real SQLite row."""
    columns = {
        "id": checkpoint.id,
        "run_id": checkpoint.run_id,
        "kind": checkpoint.kind,
        "iteration": checkpoint.iteration,
        "sandbox": checkpoint.sandbox_root,
        "commit_id": checkpoint.commit,
        "tree_id": checkpoint.tree,
        "created_at": checkpoint.created_at,
        "skipped": json.dumps(to_data(checkpoint.skipped), ensure_ascii=True),
        "restored_to": checkpoint.restored_to,
        "warnings": json.dumps(list(checkpoint.warnings)),
        "coverage": checkpoint.coverage.to_json(),
    }
    with contextlib.closing(sqlite3.connect(":memory:")) as connection:
        connection.row_factory = sqlite3.Row
        select = ", ".join(f"? AS {name}" for name in columns)
        row = connection.execute(f"SELECT {select}", tuple(columns.values())).fetchone()
    assert checkpoint_from_row(row) == checkpoint
    assert Coverage.from_json(Coverage().to_json()) == Coverage()


def test_a_shape_is_its_types_own_and_says_omission_order_and_extras() -> None:
    @dataclasses.dataclass
    class Base:
        name: str
        note: str | None = None
        parts: tuple[int, ...] = ()

    @dataclasses.dataclass
    class Derived(Base):
        more: int = 0

    register_shape(
        Base,
        omit_if_default=("note",),
        extra={"count": lambda base: len(base.parts)},
        order=("count", "name", "note", "parts"),
    )
    assert to_data(Base("a", parts=(1, 2))) == {"count": 2, "name": "a", "parts": [1, 2]}
    assert list(to_data(Base("a", "n"))) == ["count", "name", "note", "parts"]
    # A subclass has fields of its own: it keeps them all, not its base's shape.
    assert to_data(Derived("b", more=3)) == {"name": "b", "note": None, "parts": [], "more": 3}
