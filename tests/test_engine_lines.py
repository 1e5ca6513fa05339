"""The engines' lines from one source tree: OpenSearch 2.19 (Java 17) and 3.x (Java 21+), and
Elasticsearch 8.17 (Java 17) and 9.x (Java 21+).

- each OpenSearch line builds its plugin zip into its own folder, for its version, and
  installs it into its stock distribution (the zips' contents: tests/test_plugin_package.py);
- `--version` names a line; a home keeps the line that wrote its data;
- without a JDK 21+ the 3.x line is skipped with one line, and 2.19 is unaffected;
- the session's 3.x and 9.x nodes are what they claim, in `GET /`, their record and `status`;
- `bench ingest --cluster-url` runs side by side on the 2.19 and 3.x nodes.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from cogr_search import localnode as local_node
from cogr_search.localnode import ELASTICSEARCH, ELASTICSEARCH_9, OPENSEARCH, OPENSEARCH_3, EngineLine, LocalNodeError
from cogr_search.localnode import distribution as local_node_distribution
from cogr_search.localnode import stock
from cogr_search.localnode.distribution import ensure_distribution
from cogr_search.localnode.service_user import node_user
from cogr_search.localnode.java import jdk_for
from tests.conftest import REPO_ROOT, LocalNodeHandle, free_port_pair

LINES = [OPENSEARCH, OPENSEARCH_3]


@pytest.mark.parametrize("text", ["3.x", "3", "3.8", "3.8.0"])
def test_version_names_the_3x_line(text: str) -> None:
    assert local_node.opensearch_line(text) is OPENSEARCH_3


@pytest.mark.parametrize("text", ["2.19", "2", "2.19.6"])
def test_version_names_the_2_19_line(text: str) -> None:
    assert local_node.opensearch_line(text) is OPENSEARCH


@pytest.mark.parametrize("text", ["9.x", "9", "9.2", "9.2.0"])
def test_version_names_the_elasticsearch_9_line(text: str) -> None:
    assert local_node.engine_line("elasticsearch", text) is ELASTICSEARCH_9
    assert local_node.engine_line("elasticsearch", "8.17") is ELASTICSEARCH


def test_an_unknown_version_is_one_line_naming_the_lines() -> None:
    result = subprocess.run([sys.executable, "-m", "cogr_search.cli", "opensearch", "start", "--version", "4.0",
                             "--home", "/nonexistent/never-created"], capture_output=True, text=True, timeout=120,
                            check=False)
    assert result.returncode == 1
    assert result.stderr.strip().splitlines() == ["Error: --version '4.0': the local OpenSearch node comes in the lines 2.19, 3.x"]
    assert not Path("/nonexistent/never-created").exists()


@pytest.mark.parametrize("engine", LINES, ids=lambda e: f"opensearch-{e.line}")
def test_each_line_builds_its_plugin_zip_into_its_own_folder_and_installs_it_in_its_distribution(engine: EngineLine) -> None:
    plugin_zip = local_node.ensure_built(engine=engine)
    assert plugin_zip.parent.name == engine.build_dir and plugin_zip.parent.parent.name == "cogr-plugin"
    assert plugin_zip.name.endswith(f"-opensearch-{engine.version}.zip")
    dist = ensure_distribution(engine, node_user())
    assert (dist / "lib" / f"opensearch-{engine.version}.jar").is_file()
    installed = (dist / "plugins" / "cogr-search" / "plugin-descriptor.properties").read_text()
    assert f"opensearch.version={engine.version}" in installed.splitlines()


@pytest.mark.parametrize("engine", [ELASTICSEARCH, ELASTICSEARCH_9], ids=lambda e: f"elasticsearch-{e.line}")
def test_each_elasticsearch_line_builds_into_its_own_folder_and_installs_its_root_endpoint(engine: EngineLine) -> None:
    plugin_zip = local_node.ensure_built(engine=engine)
    assert plugin_zip.parent.name == engine.build_dir and plugin_zip.parent.parent.name == "es-node"
    assert plugin_zip.name.endswith(f"-elasticsearch-{engine.version}.zip")
    dist = ensure_distribution(engine, node_user())
    installed = (dist / "plugins" / "cogr-root-endpoint" / "plugin-descriptor.properties").read_text()
    assert f"elasticsearch.version={engine.version}" in installed.splitlines()


def test_a_home_whose_data_another_line_wrote_is_refused(tmp_path: Path) -> None:
    # The mark a 3.x start leaves in its home; a 2.19 node could not open the data after it.
    (tmp_path / "engine-line").write_text(OPENSEARCH_3.key + "\n")
    with pytest.raises(LocalNodeError) as err:
        local_node.start(tmp_path, port=9, engine=OPENSEARCH)
    assert str(err.value) == (
        f"{tmp_path.resolve()} holds the data of an OpenSearch 3.8.0 node ({tmp_path.resolve() / 'engine-line'}); "
        "use another --home for OpenSearch 2.19.6"
    )
    assert not (tmp_path / "node.json").exists()


def test_without_a_jdk_21_the_3x_line_is_skipped_in_one_line(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                              capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setenv("COGR_JAVA21_HOME", str(tmp_path))  # no JDK there
    with pytest.raises(LocalNodeError) as err:
        jdk_for(OPENSEARCH_3)
    assert str(err.value) == (
        f"COGR_JAVA21_HOME={tmp_path}: no JDK (no release file or bin/java) there; it must name a JDK 21+ folder"
    )
    assert local_node_distribution.build_or_skip(OPENSEARCH_3) is False
    lines = capsys.readouterr().err.strip().splitlines()
    assert lines == [f"skipped the local OpenSearch 3.8.0 node: {err.value}"]
    # The 2.19 line needs no JDK 21 at all.
    assert jdk_for(OPENSEARCH) is None
    assert local_node_distribution.build_or_skip(OPENSEARCH) is True


@pytest.mark.parametrize(
    ("launcher", "url_fixture", "handle_fixture", "distribution"),
    [(OPENSEARCH_3, "opensearch3_url", "opensearch3_node_handle", "opensearch"),
     (ELASTICSEARCH_9, "elasticsearch9_url", "es9_node_handle", "default")],
    ids=["opensearch-3.8", "elasticsearch-9.2"],
)
def test_the_session_node_of_a_newer_line_is_what_it_claims(launcher: EngineLine, url_fixture: str, handle_fixture: str,
                                                           distribution: str, request: pytest.FixtureRequest) -> None:
    from tests.test_local_node import _get

    url: str = request.getfixturevalue(url_fixture)
    handle: LocalNodeHandle = request.getfixturevalue(handle_fixture)
    body, _ = _get(url + "/")
    assert body["version"]["number"] == launcher.version
    assert body["version"].get("distribution", body["version"].get("build_flavor")) == distribution
    plugins, _ = _get(url + "/_nodes/plugins")
    (node,) = plugins["nodes"].values()
    names = {p["name"] for p in node["plugins"]} | {m["name"] for m in node.get("modules", [])}
    expected = ({"cogr-search", "transport-netty4", "search-pipeline-common"}
                if launcher.name == "opensearch" else {"cogr-root-endpoint", "transport-netty4", "x-pack-core"})
    assert expected <= names, names
    if not handle.local:
        return
    record = json.loads((handle.home / "node.json").read_text())
    assert (record["engine"], record["launcher"], record["line"], record["version"]) == (
        launcher.name, launcher.key, launcher.line, launcher.version)
    env = {**os.environ, "PYTHONPATH": str(REPO_ROOT)}
    state = subprocess.run([sys.executable, "-m", "cogr_search.cli", launcher.name, "status", "--version", launcher.line,
                            "--home", str(handle.home)], capture_output=True, text=True, timeout=120, check=False, env=env)
    assert state.returncode == 0, state.stderr
    assert state.stdout.startswith(f"running: {url} (pid {record['pid']}, {launcher.description})")
    # The default line on that home is refused while the newer line's node runs there.
    default = OPENSEARCH if launcher.name == "opensearch" else ELASTICSEARCH
    with pytest.raises(LocalNodeError, match=f"holds a running {launcher.description} node"):
        local_node.start(handle.home, port=9, engine=default)


def test_bench_ingest_runs_side_by_side_on_both_opensearch_lines(opensearch_node_url: str, opensearch3_url: str) -> None:
    # `bench ingest --cluster-url A --cluster-url B` as benchmarks/ingest.md runs it on 2.19 and
    # 3.x: every document indexed on each (the bench counts them), its indices removed after.
    from click.testing import CliRunner

    from cogr_search.cli.main import cli
    from cogr_search.data import sample_catalog_path
    from tests.conftest import connect_to

    result = CliRunner().invoke(cli, ["bench", "ingest", "--data", str(sample_catalog_path()), "--max-items", "120",
                                      "--cluster-url", opensearch_node_url, "--cluster-url", opensearch3_url, "--json"])
    assert result.exit_code == 0, result.output
    payload = json.loads(result.stdout)
    assert payload["docs"] == 120
    assert [c["engine"] for c in payload["clusters"]] == [f"OpenSearch {OPENSEARCH.version}",
                                                          f"OpenSearch {OPENSEARCH_3.version}"]
    assert all(c["bulk_write_docs_per_s"] > 0 and c["raw_bulk_docs_per_s"] > 0 for c in payload["clusters"])
    for url in (opensearch_node_url, opensearch3_url):
        cluster = connect_to(url)
        for name in ("bench-raw-bulk", "bench-bulk-write", "bench-warmup"):
            assert not cluster.call(cluster.client.indices.exists, index=name), (url, name)


def test_a_newer_line_refuses_unmarked_data(tmp_path: Path) -> None:
    # A home a node used before homes were marked holds a default line's data: 3.x would
    # upgrade it for good, so it is refused; the default line takes it as before.
    (stock.data_dir(tmp_path.resolve()) / "nodes").mkdir(parents=True)
    runtime = stock.runtime_dir(tmp_path.resolve())
    if runtime != tmp_path.resolve():  # a root caller's home links to its runtime folder, as `start` made it
        (tmp_path / stock.LINK).symlink_to(runtime, target_is_directory=True)
    with pytest.raises(LocalNodeError) as err:
        local_node.start(tmp_path, port=9, engine=OPENSEARCH_3)
    assert str(err.value) == (
        f"{tmp_path.resolve()} holds data of a node started before engine lines were recorded (no engine-line); "
        "use another --home for OpenSearch 3.8.0"
    )
    assert not (tmp_path / "engine-line").exists()
