"""Online sync on real nodes (issue 17): an application writing through the alias is never
refused for longer than the final freeze and loses nothing, a SIGKILLed sync never leaves
the live version refusing writes past its lease, and one sync per alias.

The application is a real process (`tests/sync_writer.py`) that indexes, overwrites,
partially updates and deletes through the alias and retries what a freeze refuses.
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

from cogr_search.cluster.bulk import scan
from cogr_search.cluster.client import Cluster
from cogr_search.cluster.indices import alias_target, write_blocked
from cogr_search.cluster.ingest import ingest_items
from cogr_search.cluster.sync import SyncConfig, sync_keywords, sync_meta
from cogr_search.cluster.names import lease_index
from cogr_search.cluster.sync_lease import SyncBusy, read_holder
from cogr_search.cluster.sync_status import sync_status
from cogr_search.data import Item
from cogr_search.keywords import normalize
from cogr_search.runs.keyword_files import write_keyword_file
from tests import sync_writer
from tests.conftest import all_engines, REPO_ROOT

pytestmark = pytest.mark.opensearch
# Also run on secured nodes: every test, and of the kill matrix its shortest phase (the
# phases differ in timing, not in how the sync talks to a secured cluster).
secured = pytest.mark.secured

N_ITEMS = 3000
DEADLINE_S = 300
POLL_S = 0.01
ENV = {**os.environ, "PYTHONPATH": os.pathsep.join([str(REPO_ROOT), os.environ.get("PYTHONPATH", "")])}


class Writer:
    """The writer process, with a thread that counts the rounds it has acknowledged."""

    def __init__(self, url: str, alias: str, n_items: int = N_ITEMS) -> None:
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "tests.sync_writer", url, alias, str(n_items)], cwd=REPO_ROOT, env=ENV,
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        )
        self.rounds = 0
        self.idle = False  # it wrote all the rounds its item ranges allow and waits for `stop`
        self.done: str | None = None
        self.changed = threading.Condition()
        self.reader = threading.Thread(target=self._read, daemon=True)
        self.reader.start()

    def _read(self) -> None:
        for line in self.proc.stdout:  # type: ignore[union-attr]
            with self.changed:
                if line.startswith("ok "):
                    self.rounds = int(line.split()[1])
                elif line.startswith("idle "):
                    self.idle = True
                elif line.startswith("done "):
                    self.done = line.strip()
                self.changed.notify_all()

    def wait_rounds(self, at_least: int, timeout: float = 60.0) -> None:
        with self.changed:
            assert self.changed.wait_for(
                lambda: self.rounds >= at_least or self.idle or self.proc.poll() is not None, timeout)
        assert self.proc.poll() is None, self.proc.stderr.read()  # type: ignore[union-attr]
        assert self.rounds >= at_least, f"the writer ran out of rounds at {self.rounds} (wanted {at_least})"

    def stop(self) -> int:
        """Ask it to finish its round and exit; the number of rounds it completed."""
        assert self.proc.poll() is None, f"the writer exited early: {self.proc.stderr.read()}"  # type: ignore[union-attr]
        self.proc.stdin.write("stop\n")  # type: ignore[union-attr]
        self.proc.stdin.flush()  # type: ignore[union-attr]
        assert self.proc.wait(timeout=DEADLINE_S) == 0, self.proc.stderr.read()  # type: ignore[union-attr]
        self.reader.join(timeout=10)
        assert self.done is not None
        return int(self.done.split()[1])


# The writer adds items while a sync runs, which no keyword file can name in advance: the
# syncs here give them their title keyword (`--missing title-only`); and it deletes items
# the keyword file names, which the sync then lists as unknown (`--unknown-tolerance`).


def _catalog(cluster: Cluster, alias: str, tmp_path: Path,
             n_items: int = N_ITEMS) -> tuple[str, Path, dict[str, list[str]]]:
    items = [Item(sync_writer.item_id(n), f"Item {n} Oak Table", "") for n in range(n_items)]
    source = ingest_items(cluster, alias, items, progress=False).index
    keywords = {item.id: [f"kw{n % 97}", "oak"] for n, item in enumerate(items)}
    path = tmp_path / "item_keywords.jsonl"
    write_keyword_file(path, keywords.items())
    return source, path, keywords


def _assert_content(cluster: Cluster, alias: str, rounds: int, keywords: dict[str, list[str]],
                    n_items: int = N_ITEMS) -> None:
    """The alias holds exactly what the writer's acknowledged rounds imply, each document
    with its title keyword, and the synced keywords on items the keyword file names
    (except those the writer overwrote whole: written after the swap, they carry what
    the application sent, and the title keyword)."""
    cluster.client.indices.refresh(index=alias)
    found = {hit["_id"]: hit["_source"] for page in scan(cluster, alias) for hit in page}
    want = sync_writer.expected(n_items, rounds)
    assert set(found) == set(want)
    assert {i: (d["title"], d.get("description", "")) for i, d in found.items()} == {
        i: (d["title"], d["description"]) for i, d in want.items()}
    for doc_id, doc in found.items():
        if "cogr_keywords" not in doc and not cluster.engine.plugin:
            continue  # written after the swap where no title pipeline can run (the local ES node)
        assert normalize(doc["title"]) in doc["cogr_keywords"], doc_id
        if doc_id in keywords and not doc["title"].startswith("Renamed"):
            assert "oak" in doc["cogr_keywords"], doc_id


@secured
@all_engines
def test_writes_throughout_a_sync_all_reach_the_new_version(cluster: Cluster, cluster_url: str, index_name: str,
                                                            tmp_path: Path) -> None:
    source, _, keywords = _catalog(cluster, index_name, tmp_path)
    writer = Writer(cluster_url, index_name)
    writer.wait_rounds(1)
    during: list[int] = []

    def pace(sent: int) -> None:  # each chunk of the first pass waits for another round of writes
        if len(during) < N_ITEMS // 200:
            writer.wait_rounds(writer.rounds + 1)
            during.append(writer.rounds)

    result = sync_keywords(cluster, index_name, keywords, 1, "m", SyncConfig(chunk_size=200, missing="title-only", unknown_tolerance=0.5), progress=False,
                           on_chunk=pace)
    rounds = writer.stop()

    assert alias_target(cluster, index_name) == result.index != source
    assert len(during) >= N_ITEMS // 200 and rounds > during[0]
    assert result.caught_up > 0 and result.deleted_documents > 0
    assert 0 < result.freeze_s < result.seconds
    assert not write_blocked(cluster, source) and read_holder(cluster, index_name) is None
    _assert_content(cluster, index_name, rounds, keywords)
    # After the sync, a document written straight through the alias carries its title keyword.
    if cluster.engine.plugin:  # the title pipeline needs Painless ingest scripts (not on the local ES node)
        cluster.client.index(index=index_name, id="later", body={"title": "Later Lamp"}, refresh=True)
        assert cluster.client.get(index=index_name, id="later")["_source"]["cogr_keywords"] == ["later lamp"]


def _sync_cli(alias: str, keywords: Path, url: str, *extra: str) -> list[str]:
    return [sys.executable, "-m", "cogr_search.cli", "sync", "--index", alias, "--item-keywords", str(keywords),
            "--opensearch-url", url, "--chunk-size", "20", "--missing", "title-only", "--unknown-tolerance", "0.5", "--json", *extra]


def _wait_phase(cluster: Cluster, alias: str, proc: subprocess.Popen, phase: str) -> None:
    """Until the sync is in `phase` (for the freeze: until the write block is on)."""
    deadline = time.monotonic() + DEADLINE_S
    while True:
        holder = read_holder(cluster, alias)
        if holder is not None and holder.doc.get("phase") == phase:
            freeze = holder.doc.get("freeze")
            if phase != "freeze" or (freeze and write_blocked(cluster, freeze["index"])):
                return
        assert proc.poll() is None, f"the sync ended before its {phase} phase"
        assert time.monotonic() < deadline, f"no {phase} phase within {DEADLINE_S}s"
        time.sleep(POLL_S)  # poll interval of a loop that checks the condition


# "freeze": no catch-up rounds before the freeze, so that the freeze's own catch-up copies
# everything written during the copy and lasts long enough to be killed in.
KILL_PHASES = {"copy": (), "catch-up": (), "freeze": ("--catch-up-rounds", "0")}


@pytest.mark.slow
@pytest.mark.parametrize("phase", [pytest.param(p, marks=secured) if p == "copy" else p for p in KILL_PHASES])
def test_a_sync_killed_in_any_phase_leaves_writes_accepted_and_loses_nothing(
        cluster: Cluster, cluster_url: str, index_name: str, tmp_path: Path, phase: str) -> None:
    source, path, keywords = _catalog(cluster, index_name, tmp_path)
    writer = Writer(cluster_url, index_name)
    writer.wait_rounds(1)
    first = subprocess.Popen(_sync_cli(index_name, path, cluster_url, *KILL_PHASES[phase]), env=ENV,
                             stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    _wait_phase(cluster, index_name, first, phase)
    first.send_signal(signal.SIGKILL)
    first.wait(timeout=30)
    assert alias_target(cluster, index_name) == source

    notes: list[str] = []
    state = sync_status(cluster, index_name, notify=notes.append)
    assert state["sync"]["stale"] == "its process is gone" and state["sync"]["phase"] == phase
    assert not write_blocked(cluster, source)
    assert bool(notes) == (phase == "freeze") and all(f"write block on {source}" in n for n in notes)
    at_kill = writer.rounds
    writer.wait_rounds(at_kill + 2)  # the application writes again, whatever the phase was

    rerun = subprocess.run(_sync_cli(index_name, path, cluster_url), env=ENV, capture_output=True, text=True,
                           timeout=DEADLINE_S)
    assert rerun.returncode == 0, rerun.stderr
    assert "took over the sync lease" in rerun.stderr
    rounds = writer.stop()
    target = alias_target(cluster, index_name)
    assert target != source and sync_meta(cluster, target)["state"] == "complete"
    assert not write_blocked(cluster, source) and not write_blocked(cluster, target)
    _assert_content(cluster, index_name, rounds, keywords)


@secured
def test_one_sync_per_alias_and_status_names_the_holder(cluster: Cluster, cluster_url: str, index_name: str,
                                                        tmp_path: Path) -> None:
    source, path, keywords = _catalog(cluster, index_name, tmp_path)
    first = subprocess.Popen(_sync_cli(index_name, path, cluster_url), env=ENV, stdout=subprocess.PIPE,
                             stderr=subprocess.PIPE, text=True)
    try:
        _wait_phase(cluster, index_name, first, "copy")
        with pytest.raises(SyncBusy, match=rf"is being synced by \S+ pid {first.pid} \(phase copy"):
            sync_keywords(cluster, index_name, {k: ["other"] for k in keywords}, 2, "m", progress=False)
        state = sync_status(cluster, index_name)
        assert state["serving"] == source and state["sync"]["pid"] == first.pid and state["sync"]["stale"] is None
    finally:
        out, err = first.communicate(timeout=DEADLINE_S)
    assert first.returncode == 0, err
    state = sync_status(cluster, index_name)
    assert state["sync"] is None and state["serving"] != source
    assert [v["state"] for v in state["versions"]] == ["ingested", "complete"]
    assert cluster.client.indices.exists(index=lease_index(index_name))


@secured
def test_deletes_are_found_by_counts_per_id_range(cluster: Cluster, index_name: str, monkeypatch) -> None:  # noqa: ANN001
    """The delete check: boundaries from the copied ids (no request), then per-range counts
    of source and copy, ids compared only where they differ; the true difference for any
    boundaries, the same ones or none at all (one range)."""
    from cogr_search.cluster.bulk import bulk_write
    from cogr_search.cluster import changes
    from cogr_search.cluster.changes import BUCKET, extra_ids, id_boundaries

    ids = [f"d{n:05d}" for n in range(int(BUCKET * 2.5))]
    source, target = f"{index_name}--r0-1", f"{index_name}--r0-2"
    for index in (source, target):
        cluster.client.indices.create(index=index, body={"mappings": {"properties": {"id": {"type": "keyword"}}}})
        bulk_write(cluster, ({"_op_type": "index", "_index": index, "_id": i, "_source": {"id": i}} for i in ids))
    gone = {ids[0], ids[BUCKET - 1], ids[BUCKET], ids[-1]}  # range edges on both sides
    for doc_id in gone:
        cluster.client.delete(index=source, id=doc_id)
    cluster.client.indices.refresh(index=f"{index_name}--r0-*")

    boundaries = id_boundaries(reversed(ids))
    assert boundaries == [ids[BUCKET - 1], ids[2 * BUCKET - 1]]
    assert set(extra_ids(cluster, target, source, boundaries)) == gone
    assert set(extra_ids(cluster, target, source, [])) == gone
    assert set(extra_ids(cluster, target, source, [ids[7], ids[1500]])) == gone
    assert extra_ids(cluster, target, target, boundaries) == []
    fine = ids[99::100]  # 25 ranges: counted in groups of FANOUT first
    assert set(extra_ids(cluster, target, source, fine)) == gone
    monkeypatch.setattr(changes, "FANOUT", 2)  # groups of groups, four levels down to the ranges
    assert set(extra_ids(cluster, target, source, fine)) == gone
    assert extra_ids(cluster, target, target, fine) == []


@secured
def test_a_range_larger_than_one_search_is_scanned(cluster: Cluster, index_name: str, monkeypatch) -> None:  # noqa: ANN001
    """The ids of a differing range come from one sized search where they fit; a range
    whose search came back full (it grew, or it is past the result window) is scanned,
    so no id of the source is missed and nothing it holds is deleted from the copy."""
    from cogr_search.cluster import changes
    from cogr_search.cluster.bulk import bulk_write

    ids = [f"d{n:04d}" for n in range(300)]
    source, target = f"{index_name}--r0-1", f"{index_name}--r0-2"
    for index in (source, target):
        cluster.client.indices.create(index=index, body={"mappings": {"properties": {"id": {"type": "keyword"}}}})
        bulk_write(cluster, ({"_op_type": "index", "_index": index, "_id": i, "_source": {"id": i}} for i in ids))
    cluster.client.delete(index=source, id=ids[5])
    cluster.client.indices.refresh(index=f"{index_name}--r0-*")
    monkeypatch.setattr(changes, "ID_WINDOW", 50)  # every range's search now comes back full
    monkeypatch.setattr(changes, "ID_SLACK", 0)
    assert changes.extra_ids(cluster, target, source, [ids[99], ids[199]]) == [ids[5]]
    monkeypatch.setattr(changes, "ID_WINDOW", 10_000)
    assert changes.extra_ids(cluster, target, source, [ids[99], ids[199]]) == [ids[5]]
