"""Replacing a file so that readers see the old or the new content, never a mix.

Run directories, keyword files and manifests are all rewritten this way: write into a
temporary file in the same folder, fsync, then `os.replace` (atomic on POSIX). A crash
leaves at most a stray `.<name>.*.tmp` file, never a half-written target.
"""

from __future__ import annotations

import os
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TextIO
from cogr_search.errors import InputError


@contextmanager
def atomic_open(path: Path | str) -> Iterator[TextIO]:
    """A text file handle whose content replaces `path` only if the block succeeds."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as out:
            yield out
            out.flush()
            os.fsync(out.fileno())
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def check_writable(path: Path | str) -> None:
    """Refuse an output path that could not be written, before any work and without
    creating anything: a refused command must leave the file system as it found it."""
    path = Path(path)
    if path.is_dir():
        raise InputError(f"{path}: is a folder; give a file path")
    folder = path.parent
    while not folder.exists():
        folder = folder.parent
    if not folder.is_dir():
        raise InputError(f"{path}: cannot be created: {folder} is a file, not a folder")
    if not os.access(folder, os.W_OK | os.X_OK):
        raise InputError(f"{path}: cannot be created: {folder} is not writable")
