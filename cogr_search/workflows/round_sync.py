"""Which keywords a sync writes, and with which k_max: one policy for `sync`, the round
syncer of `train` and the Python API.

Why here and not in cluster/sync.py: the copy itself knows nothing of runs (it takes a
mapping of keywords, a model tag and a config); choosing those from a run's round, its
serving spec and its students is run-aware policy, and it was built twice (the CLI and
the round syncer) before it lived in one place.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

from cogr_search.cluster.client import Cluster
from cogr_search.cluster.indices import alias_target
from cogr_search.cluster.suggest import missing_advice
from cogr_search.cluster.sync import CoverageError, SyncResult, prune_versions, sync_keywords
from cogr_search.cluster.sync_config import SyncConfig
from cogr_search.errors import CogrError, InputError
from cogr_search.generators.students.distill import keywords_for_catalog, students_folder
from cogr_search.generators.students.store import REFINED_VERSION, read_manifest
from cogr_search.keywords import DEFAULT_K_MAX
from cogr_search.runs.keyword_files import read_keyword_file
from cogr_search.runs.run_dir import RunDir

Notify = Callable[[str], None]
ItemsChoice = Literal["labelled", "all"]


@dataclass(frozen=True)
class SyncRequest:
    """What a sync was asked for: a run's round, or a keyword file made elsewhere.

    ``items`` None means the run's default (`default_items`); ``k_max`` None means the
    run's (or, for a file, the default 30)."""

    run: str | None = None
    round: int | None = None
    item_keywords: Path | None = None
    items: ItemsChoice | None = None
    catalog: Path | None = None
    runs_dir: Path | None = None
    k_max: int | None = None


@dataclass
class KeywordSource:
    """The keywords a version is built from, with what the version records about them."""

    keywords: Mapping[str, Sequence[str]]
    round: int
    model: str
    k_max: int
    items: ItemsChoice
    run: RunDir | None = None
    student_items: int | None = None


@dataclass
class SyncOutcome:
    """A finished sync, and what went with it."""

    result: SyncResult
    k_max: int
    pruned: list[str] = field(default_factory=list)
    student_items: int | None = None

    def as_dict(self) -> dict:
        return {**self.result.as_dict(), "k_max": self.k_max, "pruned": self.pruned, "student_items": self.student_items}


def check_request(request: SyncRequest) -> None:
    """Refuse, in one line, options that do not go together."""
    if (request.run is None) == (request.item_keywords is None):
        raise InputError("give either --run RUN [--round R] or --item-keywords FILE")
    if request.items == "all" and request.run is None:
        raise InputError("--items all needs --run RUN (its item student writes the missing items' keywords)")
    if request.catalog is not None and request.items != "all" and request.items is not None:
        raise InputError("--data goes with --items all")


def default_items(run: RunDir, round_: int | None, notify: Notify) -> ItemsChoice:
    """`all` for a round with refined students, else `labelled`: a refined query student
    was fitted against the refined item student's keywords, so serving it against the
    teacher's item keywords would serve another index than the one it was refined on."""
    if students_folder(run, run.require_round(round_)).name != REFINED_VERSION:
        return "labelled"
    notify("the round has refined students: every item gets the item student's keywords (--items all)")
    return "all"


def keyword_source(request: SyncRequest, progress: bool = False, notify: Notify = lambda _m: None) -> KeywordSource:
    """The keywords, round, model tag and k_max of a request. A run's documents are built
    with the k_max it was trained with, and no other (a different `--k-max` is refused)."""
    check_request(request)
    if request.item_keywords is not None:
        path = request.item_keywords
        return KeywordSource(read_keyword_file(path), 0 if request.round is None else request.round, _file_model_name(path),
                             request.k_max or DEFAULT_K_MAX, "labelled")
    run = RunDir.open(request.run, request.runs_dir)
    items = request.items or default_items(run, request.round, notify)
    return run_keyword_source(run, request.round, items, request.catalog, request.k_max, progress, notify)


def run_keyword_source(run: RunDir, round_: int | None, items: ItemsChoice, catalog: Path | None = None,
                       k_max: int | None = None, progress: bool = False, notify: Notify = lambda _m: None) -> KeywordSource:
    """A run's round as a keyword source: the teacher's item keywords (``labelled``), or with
    the item student's for the rest of the catalog (``all``)."""
    if catalog is not None and items != "all":
        raise InputError("--data goes with --items all")
    spec = run.serving_spec(round_)
    if k_max is not None and k_max != spec.k_max:
        raise InputError(f"--k-max {k_max}: run {run.name!r} was trained with k_max {spec.k_max}, and its "
                         f"documents must be built the same way (leave --k-max out)")
    path = run.item_keywords_path(spec.round)
    if not path.exists():
        raise CogrError(f"run {run.name!r} has no item keywords for round {spec.round} ({path})")
    source = KeywordSource(read_keyword_file(path), spec.round, spec.item_model, spec.k_max, items, run)
    if items == "all":
        source.keywords, source.student_items, source.model = keywords_for_catalog(
            run, spec.round, source.keywords, catalog, progress=progress)
        notify(f"item student {source.model}: keywords for {source.student_items} items")
    return source


def sync_request(cluster: Cluster, alias: str, request: SyncRequest, config: SyncConfig, progress: bool = False,
                 notify: Notify = lambda _m: None) -> SyncOutcome:
    """`cogr-search sync`: the request's keywords as a new version behind ``alias``, then the
    old versions pruned to ``config.keep`` (``config.k_max`` is replaced by the source's)."""
    return sync_source(cluster, alias, keyword_source(request, progress, notify), config, progress, notify)


def sync_source(cluster: Cluster, alias: str, source: KeywordSource, config: SyncConfig, progress: bool = False,
                notify: Notify = lambda _m: None) -> SyncOutcome:
    """A keyword source as a new version behind ``alias``, built with the source's k_max."""
    config = config.model_copy(update={"k_max": source.k_max})
    try:
        result = sync_keywords(cluster, alias, source.keywords, source.round, source.model, config, progress=progress,
                               notify=notify)
    except CoverageError as err:
        if source.run is None or source.items == "all" or not has_item_student(source.run, source.round):
            raise
        raise CoverageError(f"{err}, or --items all (the run's item student writes keywords for the items its "
                            "teacher did not label)") from err
    pruned = [] if result.unchanged else prune_versions(cluster, alias, config.keep)
    return SyncOutcome(result, source.k_max, pruned, source.student_items)


def has_item_student(run: RunDir, round_: int) -> bool:
    """Whether `train distill` left an item student in the run's round (`--items all` works)."""
    try:
        manifest = read_manifest(students_folder(run, round_))
    except ValueError:
        return False
    return bool(manifest and "item" in (manifest.get("sides") or {}))


def run_round_syncer(cluster: Cluster, alias: str, config: SyncConfig = SyncConfig(missing="title-only")
                     ) -> Callable[[RunDir, int], dict]:
    """A Phase 2 `Syncer`: each finished round's item keywords become a new version,
    with the round's serving spec (its `k_max` and item model tag), so the served index
    is the shadow index that rewarded the round.

    Items outside a run's subset (`train sft --max-items`) are title-only by default:
    that is how the shadow index the run trained against represents them."""
    if alias_target(cluster, alias) is None:  # refused now, not after the first round's training
        advice = missing_advice(cluster.client, alias, f"run `cogr-search ingest DATA --index {alias}` first")
        raise CogrError(f"--sync-index {alias}: alias {alias!r} does not exist at {cluster.url}; {advice}")

    def sync_round(run: RunDir, round_: int) -> dict:
        outcome = sync_source(cluster, alias, run_keyword_source(run, round_, "labelled"), config)
        result = outcome.result
        return {"alias": result.alias, "index": result.index, "previous": result.previous, "round": round_,
                "k_max": outcome.k_max, "documents": result.documents, "with_keywords": result.with_keywords,
                "title_only": result.title_only, "unchanged": result.unchanged, "pruned": outcome.pruned,
                "freeze_s": round(result.freeze_s, 3)}

    return sync_round


def _file_model_name(path: Path) -> str:
    """A keyword file's model tag: its name and content digest, so a new file is a new version."""
    digest = hashlib.sha256(path.read_bytes()).hexdigest()[:12]
    return f"file:{path.name}+{digest}"
