"""The run history's images: a content-addressed blob store with a size cap.

A run's row lists its images by reference (`to_data(image)`: name, media type,
size, SHA-256); the bytes are here, one file per distinct image named by its SHA-256, so the
same screenshot attached to ten prompts is kept once. The store keeps at most `max_bytes`:
past that, the images used least recently (by file modification time, touched on each write
and read) are removed. A run whose image was evicted still loads; the model is then told
the image is no longer stored (`ImageAttachment.missing_note`) and the panel shows its name.
"""

from __future__ import annotations

import logging
import os
import re
import threading
from pathlib import Path

from ..tool.images import ImageAttachment
from ..workspace.private import keep_private, private_folder

log = logging.getLogger(__name__)

DEFAULT_MAX_BYTES = 512 * 1024 * 1024
"""What the store keeps before evicting the least recently used images: 512 MiB."""

_DIGEST = re.compile(r"^[0-9a-f]{64}$")


class ImageStore:
    """Image bytes by SHA-256 in `folder`; thread-safe within a process, and safe across
    processes sharing the folder (writes are atomic renames; eviction tolerates races)."""

    def __init__(self, folder: str | os.PathLike[str], max_bytes: int = DEFAULT_MAX_BYTES) -> None:
        if max_bytes < 1:
            raise ValueError(f"max_bytes must be at least 1, got {max_bytes}")
        self.folder = Path(folder)
        self.max_bytes = max_bytes
        self._lock = threading.Lock()
        self._ready = False

    def _path(self, sha256: str) -> Path:
        if not _DIGEST.match(sha256):
            raise ValueError(f"not a SHA-256 digest: {sha256!r}")
        return self.folder / sha256

    def _prepare(self) -> None:
        """Create the folder on first use, the owner's alone, and hidden from every tool."""
        if not self._ready:
            private_folder(self.folder, tighten=True)
            keep_private(self.folder)
            self._ready = True

    def put(self, image: ImageAttachment) -> None:
        """Keep `image`'s bytes (once per digest), then evict down to the cap."""
        if image.data is None:
            return
        with self._lock:
            self._prepare()
            path = self._path(image.sha256)
            if path.exists():
                os.utime(path)  # used again: the newest for eviction
            else:
                import tempfile  # here: a daemon's start-up loads this module (issue 21)

                handle, temporary = tempfile.mkstemp(dir=self.folder, prefix=".incoming-")
                try:
                    with os.fdopen(handle, "wb") as out:
                        out.write(image.data)
                    os.replace(temporary, path)
                except BaseException:
                    Path(temporary).unlink(missing_ok=True)
                    raise
            self._evict(keep=image.sha256)

    def get(self, sha256: str) -> bytes | None:
        """The bytes of the image with this digest; None when they are not (or no longer)
        stored, or do not match the digest."""
        try:
            path = self._path(sha256)
            data = path.read_bytes()
        except (OSError, ValueError):
            return None
        try:
            os.utime(path)  # read: recently used
        except OSError:
            pass
        return data

    def load(self, reference: dict[str, object]) -> ImageAttachment:
        """An image the history refers to, with its bytes when the store still has them."""
        sha = reference.get("sha256")
        return ImageAttachment.from_reference(
            dict(reference), self.get(sha) if isinstance(sha, str) else None
        )

    def total_bytes(self) -> int:
        return sum(size for _, _, size in self._entries())

    def _entries(self) -> list[tuple[float, Path, int]]:
        entries = []
        try:
            children = list(self.folder.iterdir())
        except OSError:
            return []
        for child in children:
            if not _DIGEST.match(child.name):
                continue
            try:
                stat = child.stat()
            except OSError:  # removed meanwhile by another process
                continue
            entries.append((stat.st_mtime, child, stat.st_size))
        return entries

    def _evict(self, keep: str) -> None:
        entries = sorted(self._entries(), key=lambda entry: entry[0])
        total = sum(size for _, _, size in entries)
        for _, path, size in entries:
            if total <= self.max_bytes:
                break
            if path.name == keep:  # the image just stored stays, even alone over the cap
                continue
            try:
                path.unlink()
            except FileNotFoundError:
                pass
            except OSError as exc:
                log.warning("image store: cannot remove %s: %s", path, exc)
                continue
            total -= size
