"""Writing a round's item keywords into OpenSearch as a new index version.

A sync never edits the index readers use. It copies every document of the alias's
current version into a fresh `<alias>-r<round>-<n>` with `cogr_keywords` and provenance
filled in, checks the copy is complete, and only then swaps the alias in one atomic
`POST _aliases`. The old version stays for rollback until pruned.

Crash safety: the new version carries `_meta.cogr_sync.state = "writing"` until the copy
is verified. A rerun with the same source and the same keywords finds that version and
writes into it again (documents are keyed by item id, so re-sending converges) instead of
starting over or leaving half-written indices behind.
"""

from __future__ import annotations

import hashlib
import json
import time
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime, timezone

from opensearchpy import helpers
from tqdm import tqdm

from cogr_search.errors import CogrError
from cogr_search.keywords import DEFAULT_K_MAX, representation
from cogr_search.opensearch.client import Cluster
from cogr_search.opensearch.indices import alias_target, put_template, swap_alias, versions
from cogr_search.opensearch.mappings import IndexVersion, next_version

SYNC_META = "cogr_sync"


@dataclass(frozen=True)
class SyncResult:
    """What a sync wrote, for the command's report."""

    alias: str
    index: str
    previous: str
    round: int
    documents: int
    with_keywords: int
    unknown_ids: int
    resumed: bool
    seconds: float


def document_keywords(keywords: Sequence[str], title: str, k_max: int = DEFAULT_K_MAX) -> list[str]:
    """What the document's `cogr_keywords` holds: the same set the shadow index matches on."""
    return representation(keywords, title, k_max)


def keywords_fingerprint(keywords: Mapping[str, Sequence[str]]) -> str:
    """A stable hash of a keyword mapping: the same keywords resume the same version."""
    digest = hashlib.sha256()
    for item_id in sorted(keywords):
        digest.update(json.dumps([item_id, list(keywords[item_id])]).encode())
    return digest.hexdigest()


def _sync_meta(cluster: Cluster, index: str) -> dict:
    mapping = cluster.call(cluster.client.indices.get_mapping, index=index)[index]["mappings"]
    return mapping.get("_meta", {}).get(SYNC_META, {})


def _set_sync_meta(cluster: Cluster, index: str, meta: dict) -> None:
    cluster.call(cluster.client.indices.put_mapping, index=index, body={"_meta": {SYNC_META: meta}})


def _target_version(cluster: Cluster, alias: str, round_: int, meta: dict) -> tuple[IndexVersion, bool]:
    """An unfinished version of this very sync to resume, else a new empty version."""
    existing = versions(cluster, alias)
    for version in reversed(existing):
        found = _sync_meta(cluster, version.name)
        if found.get("state") == "writing" and all(found.get(k) == meta[k] for k in ("source", "fingerprint", "round")):
            return version, True
    version = next_version(alias, [v.name for v in existing], round_)
    cluster.call(cluster.client.indices.create, index=version.name, body={"settings": {"index": {"refresh_interval": "-1"}}})
    _set_sync_meta(cluster, version.name, meta)
    return version, False


def _actions(
    cluster: Cluster,
    source: str,
    target: str,
    keywords: Mapping[str, Sequence[str]],
    provenance: dict,
    k_max: int,
    seen: set[str],
) -> Iterator[dict]:
    for hit in helpers.scan(cluster.client, index=source, query={"query": {"match_all": {}}}, size=1000):
        doc = hit["_source"]
        item_id = hit["_id"]
        seen.add(item_id)
        item_keywords = keywords.get(item_id)
        doc = {k: v for k, v in doc.items() if not k.startswith("cogr_")}
        doc["cogr_keywords"] = document_keywords(item_keywords or [], doc.get("title", ""), k_max)
        if item_keywords is not None:
            doc.update(provenance)
        yield {"_op_type": "index", "_index": target, "_id": item_id, "_source": doc}


def sync_keywords(
    cluster: Cluster,
    alias: str,
    keywords: Mapping[str, Sequence[str]],
    round_: int,
    model: str,
    k_max: int = DEFAULT_K_MAX,
    progress: bool = True,
) -> SyncResult:
    """Copy the alias's documents into a new version with these keywords, then swap."""
    started = time.perf_counter()
    if not keywords:
        raise CogrError("no item keywords to sync")
    source = alias_target(cluster, alias)
    if source is None:
        raise CogrError(f"alias {alias!r} does not exist: run `cogr-search index create --index {alias}` and ingest first")
    put_template(cluster, alias)
    meta = {"state": "writing", "source": source, "round": round_, "model": model, "fingerprint": keywords_fingerprint(keywords)}
    target, resumed = _target_version(cluster, alias, round_, meta)
    total = cluster.call(cluster.client.count, index=source)["count"]
    provenance = {
        "cogr_round": round_,
        "cogr_model": model,
        "cogr_updated_at": datetime.now(timezone.utc).isoformat(timespec="seconds"),
    }
    seen: set[str] = set()
    stream = helpers.streaming_bulk(
        cluster.client, _actions(cluster, source, target.name, keywords, provenance, k_max, seen), chunk_size=500, max_retries=3
    )
    for ok, info in tqdm(stream, total=total, desc=f"sync -> {target.name}", unit="doc", disable=not progress):
        if not ok:
            raise CogrError(f"sync into {target.name} failed: {info}")
    cluster.call(cluster.client.indices.put_settings, index=target.name, body={"index": {"refresh_interval": None}})
    cluster.call(cluster.client.indices.refresh, index=target.name)
    written = cluster.call(cluster.client.count, index=target.name)["count"]
    if written != len(seen):
        raise CogrError(f"sync into {target.name} is incomplete: {written} of {len(seen)} documents; rerun to resume")
    _set_sync_meta(cluster, target.name, {**meta, "state": "complete"})
    previous = swap_alias(cluster, alias, target.name) or source
    return SyncResult(
        alias=alias,
        index=target.name,
        previous=previous,
        round=round_,
        documents=written,
        with_keywords=len(seen & keywords.keys()),
        unknown_ids=len(keywords.keys() - seen),
        resumed=resumed,
        seconds=time.perf_counter() - started,
    )


def prune_versions(cluster: Cluster, alias: str, keep: int) -> list[str]:
    """Delete all but the newest `keep` versions, never the one the alias points at."""
    current = alias_target(cluster, alias)
    old = [v.name for v in versions(cluster, alias)]
    doomed = [name for name in old[: max(len(old) - keep, 0)] if name != current]
    for name in doomed:
        cluster.call(cluster.client.indices.delete, index=name)
    return doomed



def run_round_syncer(cluster: Cluster, alias: str, keep: int = 3, k_max: int = DEFAULT_K_MAX):  # noqa: ANN201
    """A Phase 2 `Syncer`: each finished round's item keywords become a new version."""
    from cogr_search.keyword_files import read_keyword_file

    def sync_round(round_: int, item_keywords_path, model_tag: str) -> dict:  # noqa: ANN001 - Path
        result = sync_keywords(cluster, alias, read_keyword_file(item_keywords_path), round_, model_tag,
                               k_max=k_max, progress=False)
        pruned = prune_versions(cluster, alias, keep)
        return {"alias": result.alias, "index": result.index, "previous": result.previous,
                "documents": result.documents, "with_keywords": result.with_keywords, "pruned": pruned}

    return sync_round
