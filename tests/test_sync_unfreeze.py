"""A write block a sync cannot lift is never silent (issue 37): the sync exits 1 naming the
index and `sync --unfreeze`, its lease keeps the freeze record, `sync --status` says so on
its first line, and `sync --unfreeze` gives the alias its writes back.

The failures come from a real proxy process in front of the real OpenSearch node
(`tests/flaky_proxy.py`): it refuses the alias swap and every settings update that lifts the
write block (HTTP 500), so the live version stays frozen as if the cluster had refused it.
"""

from __future__ import annotations

import json
import subprocess
import sys
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest
from click.testing import CliRunner

from cogr_search.cli.main import cli
from cogr_search.cluster.client import Cluster
from cogr_search.cluster.engines import API_ERRORS, status_of
from cogr_search.cluster.indices import alias_target, write_blocked
from cogr_search.cluster.ingest import ingest_items
from cogr_search.cluster.sync_lease import LEFT_FROZEN, UNFREEZE_ATTEMPTS, SyncLease, read_holder
from cogr_search.data import Item

pytestmark = pytest.mark.opensearch  # behind the plain-HTTP proxy: not on secured nodes

ITEMS = {"p1": "Hartwell Oak Dining Table", "p2": "Linen Throw Pillow", "p3": "Brass Floor Lamp"}
# Failed settings updates are not transient, so only the unfreeze's own retries run: kept short.
FAST = {"COGR_CLUSTER_RETRY_MAX_WAIT_S": "0.05"}


@pytest.fixture()
def frozen_alias(opensearch_cluster: Cluster, opensearch_url: str, index_name: str,
                 tmp_path: Path) -> Iterator[tuple[str, str, str]]:
    """An ingested alias, its serving version and a proxy URL that refuses the swap and
    every lifting of that version's write block."""
    source = ingest_items(opensearch_cluster, index_name, [Item(i, t, "") for i, t in ITEMS.items()],
                          progress=False).index
    proc = subprocess.Popen(
        [sys.executable, str(Path(__file__).with_name("flaky_proxy.py")), opensearch_url,
         "/_aliases#remove:500:1", f"/{source}/_settings#null:500:1000"],
        stdout=subprocess.PIPE, text=True,
    )
    try:
        yield index_name, source, f"http://127.0.0.1:{int(proc.stdout.readline())}"
    finally:
        proc.kill()
        proc.wait()


def _keywords(tmp_path: Path) -> Path:
    path = tmp_path / "kw.jsonl"
    path.write_text("".join(json.dumps({"id": i, "keywords": ["k"]}) + "\n" for i in ITEMS), encoding="utf-8")
    return path


def _write_refusal(cluster: Cluster, alias: str) -> int | None:
    """The HTTP status an application's write through the alias gets, None if accepted."""
    try:
        cluster.client.index(index=alias, id="app-1", body={"id": "app-1", "title": "Walnut Shelf"}, refresh=True)
    except API_ERRORS as err:
        return status_of(err)
    return None


def test_a_block_that_will_not_lift_fails_the_sync_and_unfreeze_lifts_it(opensearch_cluster: Cluster,
                                                                          opensearch_url: str, frozen_alias,
                                                                          tmp_path: Path) -> None:
    alias, source, proxy = frozen_alias
    runner = CliRunner()
    command = f"`cogr-search sync --unfreeze --index {alias}`"

    failed = runner.invoke(cli, ["sync", "--index", alias, "--item-keywords", str(_keywords(tmp_path)),
                                 "--opensearch-url", proxy], env=FAST)

    assert failed.exit_code == 1, failed.output
    error = failed.stderr.strip().splitlines()[-1]
    assert error.startswith(f"Error: {source} (a version of alias {alias}) is left frozen, refusing writes")
    assert command in error and "Traceback" not in failed.output
    failures = json.loads(urllib.request.urlopen(f"{proxy}/__failed", timeout=10).read())
    assert failures[f"/{source}/_settings#null"] == UNFREEZE_ATTEMPTS  # retried, then said
    assert alias_target(opensearch_cluster, alias) == source and write_blocked(opensearch_cluster, source)
    assert _write_refusal(opensearch_cluster, alias) == 403
    holder = read_holder(opensearch_cluster, alias)
    assert holder.doc["phase"] == LEFT_FROZEN and holder.doc["freeze"]["index"] == source  # the record is kept

    status = runner.invoke(cli, ["sync", "--status", "--index", alias, "--opensearch-url", proxy], env=FAST)

    assert status.exit_code == 0, status.output
    first = status.stdout.splitlines()[0]
    assert first.startswith(f"{source} (a version of alias {alias}) is left frozen") and command in first

    lifted = runner.invoke(cli, ["sync", "--unfreeze", "--index", alias, "--opensearch-url", opensearch_url])

    assert lifted.exit_code == 0, lifted.output
    assert lifted.stdout.strip() == f"writes to {source} (alias {alias}) are allowed again"
    assert _write_refusal(opensearch_cluster, alias) is None
    assert not write_blocked(opensearch_cluster, source) and read_holder(opensearch_cluster, alias) is None
    again = runner.invoke(cli, ["sync", "--unfreeze", "--index", alias, "--opensearch-url", opensearch_url])
    assert again.exit_code == 0 and "nothing lifted" in again.stdout


def test_the_next_sync_lifts_a_freeze_left_behind_and_completes(opensearch_cluster: Cluster, opensearch_url: str,
                                                                frozen_alias, tmp_path: Path) -> None:
    alias, source, proxy = frozen_alias
    runner = CliRunner()
    base = ["sync", "--index", alias, "--item-keywords", str(_keywords(tmp_path))]
    assert runner.invoke(cli, [*base, "--opensearch-url", proxy], env=FAST).exit_code == 1

    done = runner.invoke(cli, [*base, "--opensearch-url", opensearch_url])

    assert done.exit_code == 0, done.output
    assert f"lifted the write block on {source}" in done.stderr and "it ended without lifting its freeze" in done.stderr
    assert alias_target(opensearch_cluster, alias) != source and not write_blocked(opensearch_cluster, source)
    assert read_holder(opensearch_cluster, alias) is None


def test_unfreeze_is_refused_while_a_live_sync_holds_the_alias(opensearch_cluster: Cluster, opensearch_url: str,
                                                               index_name: str) -> None:
    ingest_items(opensearch_cluster, index_name, [Item("p1", "Oak Table", "")], progress=False)

    with SyncLease(opensearch_cluster, index_name):
        refused = CliRunner().invoke(cli, ["sync", "--unfreeze", "--index", index_name,
                                           "--opensearch-url", opensearch_url])
        holder = read_holder(opensearch_cluster, index_name)

    assert refused.exit_code == 1
    assert f"alias {index_name!r} is being synced by" in refused.output and "nothing lifted" in refused.output
    assert holder is not None  # the live sync's lease was left alone
