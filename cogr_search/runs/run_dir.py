"""The run directory (DESIGN.md section 4): everything a training run produces, and a
manifest of which steps are complete, so that every command resumes after a crash.

Layout of `runs/<name>/`:

    config.json                  the run's configuration (written once, checked on resume)
    prompts.json                 the prompt templates the run trains with (with `version`)
    split.json                   train / validation query ids and the item ids in use
    manifest.json                completed steps, with timestamps and step details
    metrics.json                 validation metrics per round (written by later phases)
    train.log                    the trainers' log entries (loss, rewards, ...), one JSON object a line
    round-<r>/query/             query generator checkpoint (Hugging Face folder)
    round-<r>/item/              item generator checkpoint
    round-<r>/item_keywords.jsonl   keywords of every item by round r's item generator
    round-<r>/query_keywords.jsonl  keywords of every query by round r's query generator
    round-0/base_item_keywords.jsonl  Phase 1: M keywords per item from the base model
    round-0/query_targets.jsonl       Phase 1: top-N pooled keywords per training query

A step is complete when the manifest says so, never because a file exists: files are
written first (atomically, or resumably for JSONL), then the manifest is replaced
atomically. A crash between the two only repeats that one step.

This module imports neither torch nor transformers: sync, eval and serving hosts use it.
"""

from __future__ import annotations

import contextlib
import datetime as _dt
import hashlib
import json
import os
import re
from collections.abc import Iterator
from pathlib import Path

from cogr_search.atomic import atomic_open
from cogr_search.errors import CogrError, InputError
from cogr_search.runs.config import Phase1Config
from cogr_search.runs.serving import ServingSpec
import fcntl
from cogr_search.settings import load_settings
from cogr_search.runs.query_context import StoredContext, context_size, read_context_file

DEFAULT_RUNS_DIR = Path("runs")
MANIFEST_FORMAT = 1
SIDES = ("query", "item")
_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]*$")


def default_runs_dir() -> Path:
    """`COGR_RUNS_DIR` (through the settings), else `./runs`."""
    return Path(load_settings().runs_dir or DEFAULT_RUNS_DIR)


def resolve_run_path(run: str | Path, runs_dir: Path | None = None) -> Path:
    """A run given by name lives under the runs folder; one given as a path is used as is."""
    text = str(run)
    if "/" in text or os.sep in text or Path(text).is_absolute():
        return Path(text).expanduser()
    if not _NAME.match(text):
        raise InputError(f"--run {text!r}: use letters, digits, '.', '_' and '-' (or give a path)")
    return (runs_dir or default_runs_dir()) / text


def now_iso() -> str:
    return _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="milliseconds")


def atomic_write_json(path: Path, payload: object) -> None:
    """Replace `path` with the JSON document, never leaving a half-written file."""
    with atomic_open(path) as out:
        json.dump(payload, out, indent=2, sort_keys=True, ensure_ascii=False)
        out.write("\n")


def read_json(path: Path) -> dict:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError as err:
        raise CogrError(f"{path}: not found") from err
    except json.JSONDecodeError as err:
        raise InputError(f"{path}: line {err.lineno}: invalid JSON ({err.msg})") from err
    if not isinstance(data, dict):
        raise InputError(f"{path}: expected a JSON object")
    return data


class RunDir:
    """Paths and manifest of one run; cheap to construct, touches the disk on demand."""

    def __init__(self, root: Path) -> None:
        self.root = Path(root)
        self.name = self.root.name

    # -- opening ---------------------------------------------------------------------
    @classmethod
    def open(cls, run: str | Path, runs_dir: Path | None = None) -> RunDir:
        """An existing run (one with a manifest); `CogrError` naming the folder otherwise."""
        path = resolve_run_path(run, runs_dir)
        run_dir = cls(path)
        if not run_dir.manifest_path.is_file():
            raise CogrError(f"run {str(run)!r} not found: no {run_dir.manifest_path} (train it with `cogr-search train sft`)")
        return run_dir

    @classmethod
    def create(cls, run: str | Path, runs_dir: Path | None = None) -> RunDir:
        """A run folder, made if missing (an existing run is reused: that is resuming)."""
        run_dir = cls(resolve_run_path(run, runs_dir))
        run_dir.root.mkdir(parents=True, exist_ok=True)
        if not run_dir.manifest_path.exists():
            atomic_write_json(run_dir.manifest_path, _empty_manifest(run_dir.name))
        return run_dir

    # -- paths -----------------------------------------------------------------------
    @property
    def config_path(self) -> Path:
        return self.root / "config.json"

    @property
    def manifest_path(self) -> Path:
        return self.root / "manifest.json"

    @property
    def prompts_path(self) -> Path:
        return self.root / "prompts.json"

    @property
    def split_path(self) -> Path:
        return self.root / "split.json"

    @property
    def query_context_path(self) -> Path:
        """The search-results titles of the run's queries (runs with `query_context`)."""
        return self.root / "query_context.jsonl"

    def stored_context(self, fallback: object = None) -> object | None:
        """The run's `StoredContext` (with an optional live fallback), or None for runs
        trained without search results in the query prompt."""
        if context_size(self.config().query_context) is None:
            return None
        return StoredContext(read_context_file(self.query_context_path), fallback, where=f"run {self.name!r}")

    @property
    def metrics_path(self) -> Path:
        return self.root / "metrics.json"

    @property
    def train_log_path(self) -> Path:
        """The trainers' log entries (`training/trainer_log.py`): kept off the terminal."""
        return self.root / "train.log"

    def round_dir(self, round_: int) -> Path:
        if round_ < 0:
            raise InputError(f"--round {round_}: rounds start at 0")
        return self.root / f"round-{round_}"

    def checkpoint_path(self, round_: int, side: str) -> Path:
        if side not in SIDES:
            raise InputError(f"side {side!r}: expected one of {', '.join(SIDES)}")
        return self.round_dir(round_) / side

    def item_keywords_path(self, round_: int) -> Path:
        return self.round_dir(round_) / "item_keywords.jsonl"

    def query_keywords_path(self, round_: int) -> Path:
        return self.round_dir(round_) / "query_keywords.jsonl"

    @property
    def base_item_keywords_path(self) -> Path:
        return self.round_dir(0) / "base_item_keywords.jsonl"

    @property
    def query_targets_path(self) -> Path:
        return self.round_dir(0) / "query_targets.jsonl"

    # -- manifest --------------------------------------------------------------------
    def manifest(self) -> dict:
        data = read_json(self.manifest_path)
        if data.get("format") != MANIFEST_FORMAT or not isinstance(data.get("steps"), dict):
            raise InputError(f"{self.manifest_path}: not a cogr-search manifest (format {MANIFEST_FORMAT})")
        return data

    def is_done(self, step: str) -> bool:
        return step in self.manifest()["steps"]

    def step_info(self, step: str) -> dict | None:
        return self.manifest()["steps"].get(step)

    def mark_done(self, step: str, **info: object) -> dict:
        """Record `step` as complete (with `completed_at` and details), atomically."""
        manifest = self.manifest()
        entry = {"completed_at": now_iso(), **info}
        manifest["steps"][step] = entry
        manifest["updated_at"] = entry["completed_at"]
        atomic_write_json(self.manifest_path, manifest)
        return entry

    def complete_rounds(self) -> list[int]:
        """Rounds whose `round-<r>` step is recorded (both generators and keyword files)."""
        rounds = []
        for step in self.manifest()["steps"]:
            match = re.fullmatch(r"round-(\d+)", step)
            if match:
                rounds.append(int(match.group(1)))
        return sorted(rounds)

    def latest_round(self) -> int:
        """The latest complete round; `CogrError` when none has finished yet."""
        rounds = self.complete_rounds()
        if not rounds:
            raise CogrError(f"run {self.name!r} has no complete round yet ({self.manifest_path})")
        return rounds[-1]

    def require_round(self, round_: int | None) -> int:
        """`round_` if complete (default: the latest complete round)."""
        if round_ is None:
            return self.latest_round()
        if round_ not in self.complete_rounds():
            done = ", ".join(map(str, self.complete_rounds())) or "none"
            raise CogrError(f"run {self.name!r}: round {round_} is not complete (complete: {done})")
        return round_

    def model_tag(self, round_: int, side: str = "item") -> str:
        """Provenance for documents: run name + round + hash of the generator weights."""
        info = self.step_info(f"round-{round_}") or {}
        digest = (info.get("weights_sha256") or {}).get(side)
        if not digest:
            digest = weights_digest(self.checkpoint_path(round_, side))
        return f"{self.name}+r{round_}+{digest[:12]}"

    # -- config ----------------------------------------------------------------------
    def read_config(self) -> dict:
        """The raw document; `config()` is the typed view every reader should use."""
        return read_json(self.config_path)

    def config(self) -> Phase1Config:
        """The run's configuration as trained (validated; one line naming the file if not)."""
        return Phase1Config.from_json(self.read_config(), origin=str(self.config_path))

    def serving_spec(self, round_: int | None = None) -> ServingSpec:
        """The matching settings of `round_` (default: the latest complete one), for every
        consumer of the run: the served index must be the shadow index that trained it."""
        round_ = self.require_round(round_)
        config = self.config()
        return ServingSpec(
            run=self.name, round=round_, k_max=config.k_max, normalization=config.normalization,
            prompts_version=config.prompts_version, query_context=config.query_context,
            context_index=config.context_index, item_model=self.model_tag(round_, "item"),
            query_model=self.model_tag(round_, "query"),
        )

    def write_config(self, config: dict) -> None:
        atomic_write_json(self.config_path, config)

    # -- exclusive use ---------------------------------------------------------------
    @contextlib.contextmanager
    def lock(self) -> Iterator[None]:
        """Hold the run for one writer: two trainings on one run would corrupt it."""
        self.root.mkdir(parents=True, exist_ok=True)
        with open(self.root / ".lock", "w") as handle:
            try:
                fcntl.flock(handle.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError as err:
                raise CogrError(f"run {self.name!r} is in use by another process ({self.root / '.lock'})") from err
            try:
                yield
            finally:
                fcntl.flock(handle.fileno(), fcntl.LOCK_UN)


def _empty_manifest(name: str) -> dict:
    stamp = now_iso()
    return {"format": MANIFEST_FORMAT, "run": name, "created_at": stamp, "updated_at": stamp, "steps": {}}


def weights_digest(folder: Path) -> str:
    """sha256 over a checkpoint's weight files (names and bytes), in name order."""
    files = sorted(p for p in folder.glob("*.safetensors")) or sorted(folder.glob("*.bin"))
    if not files:
        raise CogrError(f"{folder}: no weight files (*.safetensors) in the checkpoint")
    digest = hashlib.sha256()
    for path in files:
        digest.update(path.name.encode())
        with path.open("rb") as handle:
            for block in iter(lambda: handle.read(1 << 20), b""):
                digest.update(block)
    return digest.hexdigest()
