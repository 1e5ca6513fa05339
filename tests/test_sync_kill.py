"""A real `cogr-search sync` process SIGKILLed part-way, then rerun (issue 9, "Done when").

While both runs go, a poller records what the alias points at: it must only ever be the
old version or the complete new one. After the rerun every document is in the new
version exactly once, and no other version is left behind.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from cogr_search.data import Item
from cogr_search.runs.keyword_files import write_keyword_file
from cogr_search.cluster.bulk import scan
from cogr_search.cluster.client import Cluster
from cogr_search.cluster.indices import alias_target, versions, write_blocked
from cogr_search.cluster.ingest import ingest_items
from cogr_search.cluster.sync import sync_meta
from tests.conftest import REPO_ROOT

pytestmark = [pytest.mark.opensearch, pytest.mark.secured]  # secured: also run on secured nodes

N_ITEMS = 8000
KILL_AFTER_DOCS = 800
DEADLINE_S = 180
POLL_S = 0.02


class AliasPoller(threading.Thread):
    """Samples (alias target, its document count) until stopped."""

    def __init__(self, cluster: Cluster, alias: str) -> None:
        super().__init__(daemon=True)
        self.cluster, self.alias = cluster, alias
        self.seen: list[tuple[str | None, int]] = []
        self.stop = threading.Event()

    def run(self) -> None:
        while not self.stop.wait(POLL_S):
            target = alias_target(self.cluster, self.alias)
            count = self.cluster.client.count(index=target)["count"] if target else -1
            self.seen.append((target, count))


def _indexed(cluster: Cluster, index: str) -> int:
    """Documents written into `index` so far, refreshed or not.

    Elasticsearch leaves a just-created index out of its stats until a primary shard has
    started, so a missing entry means nothing is written yet (CI saw this race).
    """
    stats = cluster.client.indices.stats(index=index, metric="indexing")["indices"].get(index)
    return stats["primaries"]["indexing"]["index_total"] if stats else 0


def _sync_command(alias: str, keywords: Path, url: str) -> list[str]:
    return [sys.executable, "-m", "cogr_search.cli", "sync", "--index", alias, "--item-keywords", str(keywords),
            "--opensearch-url", url, "--chunk-size", "20", "--json"]


def test_sigkilled_sync_is_completed_by_the_rerun(cluster: Cluster, cluster_url: str, index_name: str,
                                                  tmp_path: Path) -> None:
    items = [Item(f"i{n:05d}", f"Item {n} Oak Table", "") for n in range(N_ITEMS)]
    source = ingest_items(cluster, index_name, items, progress=False).index
    keywords = tmp_path / "item_keywords.jsonl"
    write_keyword_file(keywords, ((item.id, [f"kw{n % 97}", "oak"]) for n, item in enumerate(items)))
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(REPO_ROOT), os.environ.get("PYTHONPATH", "")])}
    poller = AliasPoller(cluster, index_name)
    poller.start()
    try:
        first = subprocess.Popen(_sync_command(index_name, keywords, cluster_url), env=env,
                                 stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        target = f"{index_name}--r0-2"
        deadline = time.monotonic() + DEADLINE_S
        while not (cluster.client.indices.exists(index=target) and _indexed(cluster, target) >= KILL_AFTER_DOCS):
            assert first.poll() is None, "the sync finished before it could be killed part-way"
            assert time.monotonic() < deadline, "the sync did not start writing in time"
            time.sleep(POLL_S)  # poll interval, not synchronisation: the loop checks the condition
        first.send_signal(signal.SIGKILL)
        first.wait(timeout=30)
        assert _indexed(cluster, target) < N_ITEMS
        assert alias_target(cluster, index_name) == source and sync_meta(cluster, target)["state"] == "writing"

        rerun = subprocess.run(_sync_command(index_name, keywords, cluster_url), env=env, capture_output=True,
                               text=True, timeout=DEADLINE_S)
        assert rerun.returncode == 0, rerun.stderr
    finally:
        poller.stop.set()
        poller.join(timeout=10)

    assert alias_target(cluster, index_name) == target
    ids = [hit["_id"] for page in scan(cluster, target, source=False) for hit in page]
    assert len(ids) == N_ITEMS and set(ids) == {item.id for item in items}
    assert cluster.client.count(index=target, body={"query": {"term": {"cogr_keywords": "oak"}}})["count"] == N_ITEMS
    assert [v.name for v in versions(cluster, index_name)] == [source, target]
    assert not write_blocked(cluster, source)
    assert {t for t, _ in poller.seen} <= {source, target} and len(poller.seen) > 10
    assert all(count == N_ITEMS for t, count in poller.seen if t == target)
