"""Every core type serialises exactly as it did before the one converter: same keys, same
order, same values, so the stored history and every consumer's output stay byte-identical."""

from __future__ import annotations

import json
from typing import Any

import pytest

from cleveragents.tool.serialization import to_data
from cleveragents.workspace.repository_guard import ProtectedChange

from .goldens import GOLDENS
from .samples import SAMPLES


def serialised(value: Any) -> Any:
    if isinstance(value, ProtectedChange):  # the guard adds the outcome it decided
        return {**to_data(value), "outcome": "blocked"}
    return to_data(value)


def test_every_sample_has_a_golden() -> None:
    assert sorted(SAMPLES) == sorted(GOLDENS)


@pytest.mark.parametrize("name", sorted(SAMPLES))
def test_the_output_is_the_golden_byte_for_byte(name: str) -> None:
    assert json.dumps(serialised(SAMPLES[name])) == json.dumps(GOLDENS[name])
