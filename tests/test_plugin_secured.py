"""The cogr plugin on a secured OpenSearch (2.19.4 with its security plugin, `start --secure`)
calling a production service: `cogr-search serve` over TLS with a bearer token.

The node gets, before it starts, what an operator gives it (`stock.NodeExtras`): the
service's CA in its config folder, named by `plugins.cogr.service_ca`, and a token in its
keystore (`plugins.cogr.service_token`), at first a wrong one. The search pipeline then
falls back to the plain query and says why (401), and the ingest processor fails its
documents with that line; a new token put into the keystore and
`POST _nodes/reload_secure_settings` make it expand, and the ingest processor write
keywords, with no restart.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from cogr_search.bench.node import free_port_run
from cogr_search.cluster.client import Cluster
from cogr_search.connect import connect
from cogr_search.cluster.ingest import ingest_items
from cogr_search.cluster.pipelines import PipelineConfig, install_pipelines
from cogr_search.data import Item, load_dataset, sample_catalog_path
from cogr_search.generators.students.distill import distill_run
from cogr_search.localnode import keystore, security
from cogr_search.localnode.engine_lines import OPENSEARCH_SECURE
from cogr_search.localnode.process import start, stop
from cogr_search.localnode.stock import NodeExtras
from cogr_search.settings import load_settings
from tests.serve_support import ServiceProcess
from tests.student_support import make_keyword_run

pytestmark = [pytest.mark.opensearch, pytest.mark.slow]

TOKEN = "plugin-token-for-the-secured-test"
SERVICE_CA = "cogr-service-ca.pem"
TOKEN_SETTING = "plugins.cogr.service_token"
ALIAS = "t-secured"


@pytest.fixture(scope="module")
def service(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[ServiceProcess, Path]]:
    """The run's students served over https (a CA made for the test) with a bearer token."""
    run = make_keyword_run(tmp_path_factory.mktemp("plugin-secured-run"), "plugin-secured")
    distill_run(run, 0, threads=1, echo=lambda line: None)
    certs = tmp_path_factory.mktemp("service-certs")
    security.make_certificates(certs)
    token_file = certs / "token"
    token_file.write_text(TOKEN)
    with ServiceProcess(run, "--token-file", str(token_file), "--tls-cert", str(certs / "node.pem"),
                        "--tls-key", str(certs / "node-key.pem"), token=TOKEN, ca_certs=certs / security.CA_NAME) as process:
        yield process, certs / security.CA_NAME


@pytest.fixture(scope="module")
def node(tmp_path_factory: pytest.TempPathFactory, service: tuple[ServiceProcess, Path]) -> Iterator[tuple[Path, Cluster]]:
    """The secured node with the service's CA and a wrong token; an admin client of it."""
    home = tmp_path_factory.mktemp("secured-plugin-node")
    extras = NodeExtras(settings={"plugins.cogr.service_ca": SERVICE_CA},
                        secure_settings={TOKEN_SETTING: "not-the-services-token"},
                        files={SERVICE_CA: service[1]})
    try:
        info = start(home, free_port_run(1), "512m", timeout=300, engine=OPENSEARCH_SECURE, extras=extras)
        auth = security.credentials(home)
        assert auth is not None
        settings = load_settings(cluster_url=info.url, cluster_user=auth.user, cluster_password=auth.password,
                                 cluster_ca_certs=auth.ca_certs)
        yield home, connect(settings, url=info.url)
    finally:
        stop(home)


@pytest.fixture(scope="module")
def items() -> list[Item]:
    return list(load_dataset(sample_catalog_path()).items.values())[:6]


@pytest.fixture(scope="module")
def pipelines(node: tuple[Path, Cluster], service: tuple[ServiceProcess, Path], items: list[Item]) -> Cluster:
    """An alias of plain documents and both pipelines pointing at the https service."""
    _, cluster = node
    report = ingest_items(cluster, ALIAS, items, chunk_size=6, progress=False)
    assert report.failed == 0, report.failures
    # Generous timeouts: the 2 shared cores can make a first TLS handshake slow, and this
    # test is about the token and the CA, not speed.
    config = PipelineConfig(service_url=service[0].url, batch_size=3, search_timeout="60s", ingest_timeout="120s")
    install_pipelines(cluster, config, "t-sec-ingest", "t-sec")
    return cluster


def _search(cluster: Cluster, body: dict, pipeline: str | None = None) -> dict:
    params = {"search_pipeline": pipeline} if pipeline else {}
    return cluster.call(cluster.client.search, index=ALIAS, body=body, params=params)


def _hits(response: dict) -> list[str]:
    return [hit["_id"] for hit in response["hits"]["hits"]]


@pytest.fixture(scope="module")
def right_token(node: tuple[Path, Cluster]) -> Cluster:
    """The service's token put into the running node's keystore, and reloaded: once per
    module (the keystore tool is a JVM start), after whatever ran with the wrong one."""
    home, cluster = node
    keystore.put_into_node(home, OPENSEARCH_SECURE, {TOKEN_SETTING: TOKEN})
    reloaded = cluster.client.transport.perform_request("POST", "/_nodes/reload_secure_settings")
    assert reloaded["_nodes"]["failed"] == 0, reloaded
    return cluster


def test_a_wrong_token_falls_back_saying_401_and_a_reloaded_token_expands(
    pipelines: Cluster, service: tuple[ServiceProcess, Path], items: list[Item], request: pytest.FixtureRequest
) -> None:
    cluster = pipelines
    body = {"query": {"match": {"title": "linen throw pillow"}}, "size": 10}
    refused = _search(cluster, body, pipeline="t-sec")
    status = refused["ext"]["cogr"]
    assert status["expanded"] is False and status["fallback"] is True, status
    assert "answered 401" in status["reason"] and "wrong bearer token" in status["reason"], status
    assert _hits(refused) == _hits(_search(cluster, body))  # the plain query ran
    # the ingest processor fails exactly the batch's documents, with the same line
    report = ingest_items(cluster, "t-secured-refused", items[:2], progress=False, pipeline="t-sec-ingest")
    assert (report.failed, report.indexed) == (2, 0), report.failures
    assert all("answered 401" in failure for failure in report.failures), report.failures

    before = service[0].health()["counters"]["query"]["requests"]
    request.getfixturevalue("right_token")  # now, after the wrong token was refused
    text = "velvet ottoman, not asked before"  # not in the plugin's cache of the refused text
    status = _search(cluster, {"query": {"match": {"title": text}}}, pipeline="t-sec")["ext"]["cogr"]
    assert status["expanded"] is True and status["fallback"] is False, status
    expected = service[0].post("/v1/expand/query", {"texts": [text]})[1]["keywords"][0]
    assert set(expected) <= set(status["queries"][0]["keywords"]), status
    assert service[0].health()["counters"]["query"]["requests"] == before + 2  # the plugin's call and ours


def test_the_ingest_processor_calls_the_service_over_tls_with_the_token(
    pipelines: Cluster, right_token: Cluster, items: list[Item]
) -> None:
    cluster = pipelines
    report = ingest_items(cluster, "t-secured-ingest", items[:3], chunk_size=3, progress=False, pipeline="t-sec-ingest")
    assert report.failed == 0, report.failures
    hits = cluster.call(cluster.client.search, index="t-secured-ingest", body={"size": 10})["hits"]["hits"]
    assert len(hits) == 3 and all(hit["_source"].get("cogr_keywords") for hit in hits), hits
