"""Shapes several methods share: usage, records, changed files, checkpoints, attachments."""

from __future__ import annotations

from typing import Any, Literal

import attrs

from ...settings_table import ENV_OPENAI_VISION
from .common import ChangeKind, ErrorKind, PlanStatus, doc


@attrs.frozen(kw_only=True)
class Usage:
    """Tokens the provider reported (zero for providers that report none) and their estimated
    cost: of one model call, or summed over a run."""

    input_tokens: int = attrs.field(
        metadata=doc(
            "All the input the model read: uncached input plus cache writes plus cache reads."
        )
    )
    output_tokens: int = attrs.field(metadata=doc("Tokens the model wrote."))
    cache_read_tokens: int = attrs.field(
        metadata=doc("Of `inputTokens`, read from the provider's prompt cache (billed less).")
    )
    cache_write_tokens: int = attrs.field(
        metadata=doc("Of `inputTokens`, written to the prompt cache (Anthropic bills them more).")
    )
    cost_usd: float | None = attrs.field(
        metadata=doc(
            "Estimated cost in US dollars at the model's price (the built-in table or the "
            "`prices` setting); null when the model's price is unknown: never a guess."
        )
    )


@attrs.frozen(kw_only=True)
class IterationUsage:
    """One model call's tokens and cost."""

    iteration: int = attrs.field(metadata=doc("The iteration (LLM call), from 1."))
    usage: Usage = attrs.field(metadata=doc("That call's tokens and cost."))


@attrs.frozen(kw_only=True)
class RunImage:
    """An image attached to a prompt (PNG, JPEG, GIF or WebP; docs/images.md).

    The daemon reads its type and size from the bytes; it refuses (-32602, naming the image
    and the limit) one over 3.75 MiB or 8000 px a side, more than 20 images or 20 MiB in all,
    and every image when the run's model cannot see (the offline model; an OpenAI-compatible
    one without the vision variable), before any request.
    """

    data: str = attrs.field(metadata=doc("The image's bytes, base64-encoded."))
    media_type: str | None = attrs.field(
        default=None,
        metadata=doc("What the client believes it is (`image/png`...); the bytes decide."),
    )
    name: str | None = attrs.field(
        default=None,
        metadata=doc("What the user knows it by (a file name); null: `images[N]`."),
    )


# The variable is named in settings_table.py alone; the schema's text names it from there.
RunImage.__doc__ = (RunImage.__doc__ or "").replace(
    "the vision variable", f"`{ENV_OPENAI_VISION}=1`"
)


@attrs.frozen(kw_only=True)
class StoredImage:
    """An image of a stored run's prompt: the history keeps it by reference, its bytes in a
    size-capped image store next to the history (the least recently used go first)."""

    name: str = attrs.field(metadata=doc("What the user knew it by."))
    media_type: str = attrs.field(
        metadata=doc("`image/png`, `image/jpeg`, `image/gif` or `image/webp`.")
    )
    width: int = attrs.field(metadata=doc("Pixels."))
    height: int = attrs.field(metadata=doc("Pixels."))
    size_bytes: int = attrs.field(metadata=doc("The image's size."))
    data: str | None = attrs.field(
        metadata=doc("The bytes, base64-encoded; null once evicted from the image store.")
    )


@attrs.frozen(kw_only=True)
class RunResource:
    """A file attached to a prompt: the whole file, a range of its lines, or the editor's text.

    The daemon reads the file (through the sandbox wall) when `text` is null. The model sees
    every resource in the run's first message, before the prompt, as a fenced block under its
    path and lines; over 50,000 characters (150,000 for all of a run's) it is cut, with a
    marker naming what was left out.
    """

    path: str = attrs.field(
        metadata=doc(
            "The file, relative to the sandbox root or absolute inside it; a path outside "
            "the sandbox is refused (-32602)."
        )
    )
    text: str | None = attrs.field(
        default=None,
        metadata=doc(
            "The text to show (a selection, an unsaved buffer); null: the daemon reads the file."
        ),
    )
    start_line: int | None = attrs.field(
        default=None,
        metadata=doc(
            "First line (from 1). With `text`, where the text begins; without it, the "
            "first line to read."
        ),
    )
    end_line: int | None = attrs.field(
        default=None,
        metadata=doc("Last line, inclusive. Without `text`: null reads to the end of the file."),
    )


@attrs.frozen(kw_only=True)
class ToolCallRecord:
    """One tool call as it happened. Failed calls have `success: false` and an `errorKind`."""

    call_id: str = attrs.field(metadata=doc("The call's id, as the model (or runtime) gave it."))
    tool_name: str = attrs.field(metadata=doc("The tool the model asked for."))
    inputs: dict[str, Any] = attrs.field(
        metadata=doc(
            "Arguments the tool ran with (the model's, plus the sandbox root where the tool "
            "takes it). A non-object the model sent is kept under `_raw`."
        )
    )
    output: dict[str, Any] = attrs.field(
        metadata=doc("What the tool returned, as an object; `{}` when it failed.")
    )
    duration_ms: float = attrs.field(metadata=doc("Wall time of the call, in milliseconds."))
    success: bool = attrs.field(metadata=doc("Whether the tool ran and returned normally."))
    error: str | None = attrs.field(metadata=doc("Why it failed, in words; null on success."))
    error_kind: ErrorKind | None = attrs.field(
        metadata=doc("Why it failed, machine-readable; null on success.")
    )
    iteration: int = attrs.field(metadata=doc("The loop iteration (LLM call) that asked for it."))


@attrs.frozen(kw_only=True)
class ChangedFile:
    """A file a run (or a restore) added, modified or deleted in its folder."""

    path: str = attrs.field(
        metadata=doc(
            "Relative to the sandbox root, `/`-separated; ends in `/` for an empty folder."
        )
    )
    change: ChangeKind = attrs.field(metadata=doc("added, modified or deleted."))
    ignored: bool = attrs.field(
        default=False,
        metadata=doc(
            "A file git does not see (ignored, or in a folder such as node_modules), kept by "
            "the checkpoints all the same."
        ),
    )


@attrs.frozen(kw_only=True)
class InstructionFile:
    """A project instructions file (AGENTS.md, or CLAUDE.md where there is none) a run sends
    the model (docs/agents.md)."""

    path: str = attrs.field(
        metadata=doc(
            "Relative to the sandbox root (`/`-separated); the user's own file by its "
            "absolute path."
        )
    )
    scope: Literal["user", "project", "folder"] = attrs.field(
        metadata=doc(
            "user: the user's own, for every project; project: the sandbox root's; folder: a "
            "subfolder's, for the files beneath it."
        )
    )
    folder: str = attrs.field(
        metadata=doc("The folder it governs, relative to the root (`.` for it); empty for user.")
    )
    chars: int = attrs.field(metadata=doc("The characters of it the model is sent."))
    total_chars: int = attrs.field(metadata=doc("Its length; more than `chars` when it was cut."))
    truncated: bool = attrs.field(metadata=doc("Whether it was cut to the size limit."))


@attrs.frozen(kw_only=True)
class PlanStep:
    """One step of the model's plan."""

    text: str = attrs.field(metadata=doc("What the step does."))
    status: PlanStatus = attrs.field(metadata=doc("pending, in_progress (at most one) or done."))


@attrs.frozen(kw_only=True)
class Checkpoint:
    """A snapshot of a run's folder, taken just before an iteration first changed it."""

    iteration: int | None = attrs.field(
        metadata=doc(
            "The iteration it was taken before: `cleveragents/restore` with this `iteration` "
            "brings the folder back to it. null on a restore's own checkpoint (the folder "
            "just before the restore; restoring without an iteration undoes the restore)."
        )
    )
    created_at: float = attrs.field(metadata=doc("When it was taken (Unix epoch seconds)."))
    note: str | None = attrs.field(
        metadata=doc("Files it does not hold (too large, unreadable), which a restore leaves.")
    )
