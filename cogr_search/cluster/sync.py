"""Writing a round's item keywords into the cluster as a new index version, online.

A sync never edits the index readers use, and never refuses an application's writes for
longer than a short final freeze. Holding the alias's lease (`sync_lease`: one sync per
alias), it copies every document of the alias's current version (the source) into a
fresh `<alias>-r<round>-<n>` (created with mappings/ and the source's shard and replica
counts) with `cogr_keywords` and provenance filled in, while the application goes on
writing through the alias. Then it catches up: what was indexed or updated since the
copy began is found by sequence number (`changes`), copied again, and repeated until
little is left; documents deleted meanwhile are found by comparing ids. Only the last
catch-up, the check of the copy and the atomic alias swap (`POST _aliases`) run under a
write block on the source, recorded in the lease first so that a crash inside it is
lifted by whoever comes next. The old version stays for rollback until pruned.

Crash safety rests on the version's `_meta.cogr_sync` record (state, source, round,
fingerprint of keywords and options):
- `writing`: a rerun of the same sync writes into it again (documents are keyed by item
  id, so re-sending converges) and swaps; any other sync deletes it as abandoned;
- `complete`: swapped in (recorded just after the freeze, so a sync killed between its
  swap and that record leaves its serving version `writing`: the rerun of the same sync
  finds it served, has nothing to do and records `complete`).
A document the cluster rejects stops the sync before the swap; the half-written
version is deleted and the alias is untouched.
"""

from __future__ import annotations

import hashlib
import json
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import asdict, dataclass, field

from cogr_search.progress import progress_bar
from cogr_search.errors import CogrError, InputError
from cogr_search.cluster import changes
from cogr_search.cluster import documents as doc_fields
from cogr_search.cluster import json_codec
from cogr_search.cluster import title_pipeline
from cogr_search.cluster.bulk import BulkFailure, bulk_write
from cogr_search.cluster.client import Cluster
from cogr_search.cluster.engines import NOT_FOUND
from cogr_search.cluster.documents import item_keywords, title_is_cut
from cogr_search.cluster.indices import (
    alias_target,
    create_version,
    set_write_block,
    shape_of,
    swap_alias,
    versions,
    write_blocked,
)
from cogr_search.cluster.mappings import IndexVersion
from cogr_search.cluster.sync_config import SyncConfig
from cogr_search.cluster.sync_lease import SyncLease
from cogr_search.cluster.suggest import missing_advice

SYNC_META = "cogr_sync"
Notify = Callable[[str], None]
SAMPLE = 10
NO_PIPELINE = "_none"
"""A write's `pipeline` that skips the index's default pipeline: the title pipeline's
Painless script ran on every copied document (bench sync at 55k: sync_ratio 0.55 -> 0.66 without it)."""


class SyncRejected(CogrError):
    """The cluster refused documents of the copy; the alias was not swapped."""


@dataclass
class SyncResult:
    """What a sync wrote, for the command's report."""

    alias: str
    index: str
    previous: str
    round: int
    documents: int = 0
    with_keywords: int = 0
    kept: int = 0
    title_only: int = 0
    unknown_ids: int = 0
    unknown_sample: list[str] = field(default_factory=list)
    cut_titles: int = 0
    resumed: bool = False
    unchanged: bool = False
    deleted_versions: list[str] = field(default_factory=list)
    caught_up: int = 0
    deleted_documents: int = 0
    freeze_s: float = 0.0
    seconds: float = 0.0
    phase_s: dict[str, float] = field(default_factory=dict)

    def as_dict(self) -> dict:
        return {**asdict(self), "seconds": round(self.seconds, 3), "freeze_s": round(self.freeze_s, 3),
                "phase_s": {phase: round(s, 3) for phase, s in self.phase_s.items()}}

    @contextmanager
    def timed(self, phase: str) -> Iterator[None]:
        """Adds the phase's seconds to `phase_s`: where a sync's time goes, for `bench sync`."""
        started = time.perf_counter()
        try:
            yield
        finally:
            self.phase_s[phase] = self.phase_s.get(phase, 0.0) + time.perf_counter() - started


def clean_ids(keywords: Mapping[str, Sequence[str]]) -> dict[str, list[str]]:
    """Ids stripped like catalog ids; an id that becomes empty or collides is an error."""
    cleaned: dict[str, list[str]] = {}
    for raw, item_keywords_ in keywords.items():
        item_id = str(raw).strip()
        if not item_id:
            raise InputError(f"item keywords: empty id {raw!r}")
        if item_id in cleaned:
            raise InputError(f"item keywords: ids {item_id!r} and {raw!r} are the same after stripping whitespace")
        # Lists are kept, not copied: 55k new lists cost 5x this loop in garbage collection.
        cleaned[item_id] = item_keywords_ if isinstance(item_keywords_, list) else list(item_keywords_)
    return cleaned


def keywords_fingerprint(keywords: Mapping[str, Sequence[str]], config: SyncConfig = SyncConfig()) -> str:
    """A stable hash of the keywords and the options that shape documents: the same
    sync resumes the same version, any other one recognises it as abandoned."""
    digest = hashlib.sha256(json.dumps([config.k_max, config.missing]).encode())
    # one call in C: a Python loop over the items cost ~0.2 s of every 55k-item sync
    # (lists and tuples write alike; keys are str after `clean_ids`)
    digest.update(json_codec.dumps(keywords, sort_keys=True))
    return digest.hexdigest()


def sync_meta(cluster: Cluster, index: str) -> dict:
    mapping = cluster.call(cluster.client.indices.get_mapping, index=index)[index]["mappings"]
    return mapping.get("_meta", {}).get(SYNC_META, {})


def _set_sync_meta(cluster: Cluster, index: str, meta: dict) -> None:
    cluster.call(cluster.client.indices.put_mapping, index=index, body={"_meta": {SYNC_META: meta}})


def _same_sync(found: dict, meta: dict) -> bool:
    return all(found.get(k) == meta[k] for k in ("source", "fingerprint", "round"))


def doc_count(cluster: Cluster, index: str, query: dict | None = None) -> int:
    body = {"query": query} if query else None
    return cluster.call(cluster.client.count, index=index, body=body)["count"]


def _sample(ids: set[str]) -> str:
    shown = ", ".join(repr(i) for i in sorted(ids)[:SAMPLE])
    return shown + (", ..." if len(ids) > SAMPLE else "")


@dataclass
class _Plan:
    """Where the copy goes and what is already known about it."""

    target: IndexVersion | None = None
    state: str = ""
    deleted: list[str] = field(default_factory=list)


def _plan(cluster: Cluster, alias: str, source: str, meta: dict) -> _Plan:
    """This sync's unfinished version to resume (or swap), and abandoned ones deleted.

    Versions in state `writing` or `verified` that belong to another sync (other
    keywords, round or source) can never be swapped in: they are deleted here.
    """
    plan = _Plan()
    for version in reversed(versions(cluster, alias)):
        if version.name == source:
            continue
        found = sync_meta(cluster, version.name)
        if found.get("state") not in ("writing", "verified"):  # `verified`: written by earlier versions
            continue
        if plan.target is None and _same_sync(found, meta):
            plan.target, plan.state = version, found["state"]
            continue
        cluster.call(cluster.client.indices.delete, index=version.name)
        plan.deleted.append(version.name)
    return plan


def _release_stale_block(cluster: Cluster, source: str) -> None:
    """A sync killed after its swap leaves its old source blocked: lift that block."""
    previous = sync_meta(cluster, source).get("source")
    if previous and previous != source:
        try:
            if write_blocked(cluster, previous):
                set_write_block(cluster, previous, False)
        except NOT_FOUND:
            pass  # pruned since


class CoverageError(InputError):
    """The keywords cover only part of the catalog and `missing` is `refuse`: the CLI adds
    the remedies only it knows of (a run's item student, `--items all`)."""


def _check_coverage(
    source: str, seen: set[str], missing: set[str], keywords: Mapping[str, Sequence[str]], config: SyncConfig,
    result: SyncResult, notify: Notify,
) -> None:
    """Refuse keywords that do not cover the catalog (unless told what to do with the rest)
    or that name more unknown items than the tolerance allows; `seen` are the source's ids."""
    unknown = keywords.keys() - seen
    result.unknown_ids, result.unknown_sample = len(unknown), sorted(unknown)[:SAMPLE]
    if len(unknown) > config.unknown_tolerance * len(keywords):
        raise InputError(
            f"{len(unknown)} of {len(keywords)} keyword ids are not items of {source} "
            f"(tolerance {config.unknown_tolerance:.1%}): {_sample(unknown)}"
        )
    if unknown:
        notify(f"ignoring {len(unknown)} keyword id(s) not in {source}: {_sample(unknown)}")
    if missing and config.missing == "refuse":
        raise CoverageError(
            f"keywords cover {len(seen) - len(missing)} of {len(seen)} items of {source}; {len(missing)} have none "
            f"({_sample(missing)}): pass --missing keep (the previous version's keywords) or --missing title-only"
        )


class _Copy:
    """Builds the new version's documents from the source's, counting what it did.

    Coverage is checked on the first pass: the ids seen and those without keywords are
    recorded; in `refuse` mode the first item without keywords stops the writing (the
    rest of the source is only read, for the counts). Catch-up passes copy what the
    application wrote meanwhile: an item the keywords do not name gets its title keyword
    (or, with `--missing keep`, the keywords it carries), never a refusal.
    """

    def __init__(self, keywords: Mapping[str, Sequence[str]], config: SyncConfig, provenance: dict, result: SyncResult):
        self.keywords = keywords
        self.config = config
        self.provenance = provenance
        self.result = result
        self.seen: set[str] = set()
        self.missing: set[str] = set()
        self.catching_up = False
        self.pipeline: str | None = None

    def document(self, item_id: str, stored: dict) -> dict | None:
        generated = self.keywords.get(item_id)
        if self.catching_up and generated is not None:
            self.seen.add(item_id)  # an item updated during the copy
        if not self.catching_up:
            self.seen.add(item_id)
            if generated is None and self.config.missing == "refuse":
                self.missing.add(item_id)
            if self.missing:
                return None  # refused: count the rest, write nothing more
        doc = {k: v for k, v in stored.items() if k not in doc_fields.KEYWORD_FIELDS}
        doc.setdefault(doc_fields.ID, item_id)
        title = doc.get(doc_fields.TITLE) or ""
        counted = not self.catching_up
        if title_is_cut(title) and counted:
            self.result.cut_titles += 1
        if generated is not None:
            doc[doc_fields.KEYWORDS] = item_keywords(generated, title, self.config.k_max)
            doc.update(self.provenance)
            self.result.with_keywords += counted
        elif self.config.missing == "keep" and stored.get(doc_fields.KEYWORDS):
            doc.update({k: stored[k] for k in doc_fields.KEYWORD_FIELDS if k in stored})
            self.result.kept += counted
        else:
            doc[doc_fields.KEYWORDS] = item_keywords([], title, self.config.k_max)
            self.result.title_only += counted
        return doc

    @property
    def reads(self) -> changes.Source:
        """What the copy reads of a source document: all of it but the keyword fields it
        replaces, which only `--missing keep` copies (a synced version's keywords and
        provenance are about half of what a scan of it returns)."""
        return True if self.config.missing == "keep" else {"excludes": list(doc_fields.KEYWORD_FIELDS)}

    def actions(self, pages: Iterator[list[dict]], target: str) -> Iterator[dict]:
        for page in pages:
            for hit in page:
                doc = self.document(hit["_id"], hit.get("_source", {}))  # filter_path drops an empty one
                if doc is not None:
                    yield {"_op_type": "index", "_index": target, "_id": hit["_id"], "_source": doc,
                           "pipeline": self.pipeline}


def _rejected(cluster: Cluster, alias: str, source: str, target: str, failures: list[BulkFailure]) -> SyncRejected:
    cluster.call(cluster.client.indices.delete, index=target)
    return SyncRejected(
        f"sync into {target} stopped before the alias swap: {len(failures)} document(s) rejected, "
        f"first {failures[0]}; {alias} still points at {source}, {target} was deleted"
    )


class _OnlineCopy:
    """The copy of a source that keeps changing: a first full pass, then catch-ups."""

    def __init__(self, cluster: Cluster, alias: str, source: str, target: str, copy: _Copy, config: SyncConfig,
                 progress: bool, on_chunk: Callable[[int], None] | None = None):
        self.cluster, self.alias, self.source, self.target = cluster, alias, source, target
        self.copy, self.config, self.progress = copy, config, progress
        self.on_chunk = on_chunk
        self.marks: changes.Marks = {}
        self.boundaries: list[str] = []

    def _write(self, pages: Iterator[list[dict]], total: int | None, label: str) -> int:
        with progress_bar(total, f"{label} -> {self.target}", "doc", self.progress) as bar:
            def chunk_done(chunk) -> None:  # noqa: ANN001 - BulkResult
                bar.update(chunk.sent)
                if self.on_chunk is not None:
                    self.on_chunk(chunk.sent)

            written = bulk_write(self.cluster, self.copy.actions(pages, self.target),
                                 chunk_size=self.config.chunk_size, on_chunk=chunk_done, in_flight=self.config.in_flight)
        if written.failures:
            raise _rejected(self.cluster, self.alias, self.source, self.target, written.failures)
        return written.sent

    def full_pass(self) -> None:
        """Everything the source holds now; changes from here on are above `marks`."""
        self.marks = changes.marks(self.cluster, self.source)
        self.cluster.call(self.cluster.client.indices.refresh, index=self.source)
        pages = changes.as_of(self.cluster, self.source, self.marks, self.copy.reads)
        self._write(pages, doc_count(self.cluster, self.source), "sync")
        self.boundaries = changes.id_boundaries(self.copy.seen)

    def catch_up(self, marks: changes.Marks | None = None) -> int:
        """Copy what was indexed or updated since the last pass; the number of documents."""
        since, self.marks = self.marks, marks or changes.marks(self.cluster, self.source)
        self.cluster.call(self.cluster.client.indices.refresh, index=self.source)
        self.copy.catching_up = True
        sent = self._write(changes.changed_since(self.cluster, self.source, since, self.copy.reads), None, "catch-up")
        self.copy.result.caught_up += sent
        return sent

    def drop_deleted(self) -> int:
        """Remove from the target what the source no longer has (compared per id range)."""
        self.cluster.call(self.cluster.client.indices.refresh, index=self.target)
        extra = changes.extra_ids(self.cluster, self.target, self.source, self.boundaries)
        if extra:
            actions = ({"_op_type": "delete", "_index": self.target, "_id": doc_id} for doc_id in extra)
            bulk_write(self.cluster, actions, chunk_size=self.config.chunk_size)
            self.copy.result.deleted_documents += len(extra)
        return len(extra)


def _searchable(cluster: Cluster, target: str) -> None:
    """The copy's default refresh back on (it was off for the bulk load), and a refresh:
    done before the freeze, so that the freeze's own refresh has little left to do."""
    cluster.call(cluster.client.indices.put_settings, index=target, body={"index": {"refresh_interval": None}})
    cluster.call(cluster.client.indices.refresh, index=target)


def _verified(cluster: Cluster, source: str, target: str) -> bool:
    """Every source document is in the target, each with keywords."""
    cluster.call(cluster.client.indices.refresh, index=target)
    expected = doc_count(cluster, source)
    return (
        doc_count(cluster, target) == expected
        and doc_count(cluster, target, {"exists": {"field": doc_fields.KEYWORDS}}) == expected
    )


def _fresh_target(cluster: Cluster, alias: str, source: str, round_: int, meta: dict) -> IndexVersion:
    return create_version(cluster, alias, round_, shape_of(cluster, source), meta={SYNC_META: meta},
                          refresh_interval="-1")


def sync_keywords(
    cluster: Cluster,
    alias: str,
    keywords: Mapping[str, Sequence[str]],
    round_: int,
    model: str,
    config: SyncConfig = SyncConfig(),
    progress: bool = True,
    notify: Notify = lambda message: None,
    on_chunk: Callable[[int], None] | None = None,
) -> SyncResult:
    """Copy the alias's documents into a new version with these keywords, then swap.

    `notify` receives progress notes meant for the user (the freeze, ignored ids, cut
    titles, deleted abandoned versions, a lifted stale freeze) as they happen;
    `on_chunk` sees the size of each bulk chunk written (benchmarks and tests pace a
    concurrent writer with it).
    """
    started = time.perf_counter()
    keywords = clean_ids(keywords)
    if not keywords:
        raise InputError("no item keywords to sync")
    source = alias_target(cluster, alias)
    if source is None:
        advice = missing_advice(cluster.client, alias, f"run `cogr-search index create --index {alias}` and ingest first")
        raise CogrError(f"alias {alias!r} does not exist: {advice}")
    if config.missing == "refuse":  # refused before the lease, the title pipeline and the new version exist
        seen = set(changes.ids_of(cluster, source))
        _check_coverage(source, seen, seen - keywords.keys(), keywords, config, SyncResult(alias, "", source, round_),
                        lambda message: None)
    with SyncLease(cluster, alias, config.lease_s, notify) as lease:
        source = alias_target(cluster, alias)
        _release_stale_block(cluster, source)
        meta = {"state": "writing", "source": source, "round": round_, "model": model,
                "fingerprint": keywords_fingerprint(keywords, config)}
        served = sync_meta(cluster, source)
        if served.get("fingerprint") == meta["fingerprint"] and served.get("round") == round_:
            if served.get("state") != "complete":  # killed between its swap and this record
                _set_sync_meta(cluster, source, {**served, "state": "complete"})
            return SyncResult(
                alias, source, served.get("source", source), round_, documents=doc_count(cluster, source),
                with_keywords=doc_count(cluster, source, {"exists": {"field": doc_fields.ROUND}}), unchanged=True,
                seconds=time.perf_counter() - started,
            )
        plan = _plan(cluster, alias, source, meta)
        for name in plan.deleted:
            notify(f"deleted abandoned version {name} (an interrupted or failed sync of other keywords)")
        result = SyncResult(alias, "", source, round_, resumed=plan.target is not None, deleted_versions=plan.deleted)
        if title_pipeline.install(cluster, source):
            notify(f"documents written to {alias} carry their title keyword ({title_pipeline.PIPELINE})")
        target = plan.target or _fresh_target(cluster, alias, source, round_, meta)
        copy = _Copy(keywords, config, doc_fields.provenance(round_, model), result)
        if title_pipeline.default_pipeline(cluster, target.name) == title_pipeline.PIPELINE:
            copy.pipeline = NO_PIPELINE  # the copy's documents already hold what it would write
        online = _OnlineCopy(cluster, alias, source, target.name, copy, config, progress, on_chunk)
        result.phase_s["prepare"] = time.perf_counter() - started
        lease.phase("copy")
        with result.timed("copy"):
            online.full_pass()
        title_pipeline.install(cluster, target.name)
        with result.timed("searchable"):
            _searchable(cluster, target.name)
        # The catch-ups come after the slow steps (the copy's refresh), so that the freeze
        # has only what was written since the last of them to copy again.
        lease.phase("catch-up")
        with result.timed("catch_up"):
            for _ in range(config.catch_up_rounds):
                if online.catch_up() <= config.freeze_below:
                    break
        try:
            _check_coverage(source, copy.seen, copy.missing, keywords, config, result, notify)
        except InputError:
            cluster.call(cluster.client.indices.delete, index=target.name)
            raise
        with result.timed("deletes"):
            online.drop_deleted()
        lease.check()
        freeze_started = time.perf_counter()
        notify(f"writes to {source} (behind alias {alias}) are refused for the final catch-up and the swap")
        with lease.freeze(source):
            online.catch_up(changes.wait_quiet(cluster, source))
            if not _verified(cluster, source, target.name):
                online.drop_deleted()
                if not _verified(cluster, source, target.name):
                    raise CogrError(f"sync into {target.name}: the copy does not match {source}; rerun the sync")
            lease.check()
            swap_alias(cluster, alias, target.name)
        result.freeze_s = time.perf_counter() - freeze_started
        # recorded after writes are allowed again: one cluster-state update less under the freeze
        _set_sync_meta(cluster, target.name, {**meta, "state": "complete"})
    result.index = target.name
    result.documents = doc_count(cluster, target.name)
    if result.cut_titles:
        notify(f"{result.cut_titles} title(s) longer than the keyword term limit were cut for {doc_fields.KEYWORDS}")
    result.seconds = time.perf_counter() - started
    return result


def prune_versions(cluster: Cluster, alias: str, keep: int) -> list[str]:
    """Delete all but the newest `keep` versions, never the one the alias points at."""
    current = alias_target(cluster, alias)
    old = [v.name for v in versions(cluster, alias)]
    doomed = [name for name in old[: max(len(old) - keep, 0)] if name != current]
    for name in doomed:
        cluster.call(cluster.client.indices.delete, index=name)
    return doomed
