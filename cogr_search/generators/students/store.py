"""A round's students on disk: `round-<r>/students/v1/{query,item}/` and `manifest.json`.

The folder is written whole into a temporary sibling and renamed into place, so a reader
sees the previous students or the new ones, never a mix; the manifest (written last,
inside) is what makes a folder a set of students. `v1-refined/` (same format) holds
refined students when `--refine` made them. `v1` is the format: a later format
gets its own folder beside it, and a reader refuses what it does not know.

Loading and saving again reproduces every file byte for byte (the manifest is kept as
read), which the tests check: a student is plain JSON (n-grams, idf, labels) plus the
classifier's own files.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from cogr_search.atomic import atomic_open
from cogr_search.generators.students.model import SideStudent
from cogr_search.keywords import NORMALIZATION_VERSION

VERSION = "v1"
REFINED_VERSION = "v1-refined"
"""`train distill --refine`'s students, beside the plain ones in the same format; a reader
takes them when present (`distill.students_folder`): they were made from that v1."""
FORMAT = 1
MANIFEST = "manifest.json"
SIDES = ("query", "item")


@dataclass
class Students:
    """A round's students by side, and the manifest describing them."""

    sides: dict[str, SideStudent]
    manifest: dict

    def tag(self, side: str = "item") -> str:
        """Provenance for documents (`cogr_model`): run, round and a digest of the side's files."""
        digest = self.manifest["digest"][side]
        return f"{self.manifest['run']}+r{self.manifest['round']}+student-{digest[:12]}"


def folder_digest(folder: Path) -> str:
    """sha256 over a folder's files (relative names and bytes), in name order."""
    digest = hashlib.sha256()
    for path in sorted(p for p in folder.rglob("*") if p.is_file()):
        digest.update(str(path.relative_to(folder)).encode())
        digest.update(path.read_bytes())
    return digest.hexdigest()


def save_students(folder: Path, sides: dict[str, SideStudent], manifest: dict) -> Students:
    """Write `sides` and `manifest` (digests and format filled in unless present) into
    `folder`, replacing what was there in one rename."""
    folder = Path(folder)
    folder.parent.mkdir(parents=True, exist_ok=True)
    staging = folder.parent / f".{folder.name}.tmp-{os.getpid()}"
    shutil.rmtree(staging, ignore_errors=True)
    staging.mkdir()
    try:
        manifest = dict(manifest)
        described = {}
        for side, student in sides.items():
            described[side] = {**(manifest.get("sides") or {}).get(side, {}), **student.save(staging / side)}
        manifest.setdefault("format", FORMAT)
        manifest.setdefault("version", VERSION)
        manifest.setdefault("normalization", NORMALIZATION_VERSION)
        manifest["sides"] = described
        manifest.setdefault("digest", {side: folder_digest(staging / side) for side in sides})
        with atomic_open(staging / MANIFEST) as out:
            json.dump(manifest, out, indent=2, sort_keys=True, ensure_ascii=False)
            out.write("\n")
        _swap_in(staging, folder)
    except BaseException:
        shutil.rmtree(staging, ignore_errors=True)
        raise
    return Students(dict(sides), manifest)


def _swap_in(staging: Path, folder: Path) -> None:
    if folder.exists():
        old = folder.parent / f".{folder.name}.old-{os.getpid()}"
        shutil.rmtree(old, ignore_errors=True)
        os.replace(folder, old)
        os.replace(staging, folder)
        shutil.rmtree(old, ignore_errors=True)
    else:
        os.replace(staging, folder)


def read_manifest(folder: Path) -> dict | None:
    """The students manifest in `folder`, or None when there are no students there."""
    path = Path(folder) / MANIFEST
    if not path.is_file():
        return None
    try:
        manifest = json.loads(path.read_text(encoding="utf-8"))
    except json.JSONDecodeError as err:
        raise ValueError(f"{path}: line {err.lineno}: invalid JSON ({err.msg})") from None
    if not isinstance(manifest, dict) or manifest.get("format") != FORMAT:
        raise ValueError(f"{path}: field format: expected {FORMAT} (students {VERSION})")
    if manifest.get("normalization") != NORMALIZATION_VERSION:
        raise ValueError(f"{path}: field normalization: students made with normalization "
                         f"{manifest.get('normalization')!r}, this code has {NORMALIZATION_VERSION!r}")
    return manifest


def load_students(folder: Path, sides: Sequence[str] = SIDES) -> Students:
    """The students of `sides` saved in `folder` (ValueError naming the file if damaged)."""
    folder = Path(folder)
    manifest = read_manifest(folder)
    if manifest is None:
        raise FileNotFoundError(f"{folder / MANIFEST}: no students here (run `cogr-search train distill`)")
    loaded = {}
    for side in sides:
        entry = (manifest.get("sides") or {}).get(side)
        if entry is None:
            raise ValueError(f"{folder / MANIFEST}: field sides.{side}: missing")
        loaded[side] = SideStudent.load(folder / side, entry)
    return Students(loaded, manifest)
