"""`opensearch start --secure`: the stock OpenSearch 2.19.4 with its security plugin, TLS on
HTTP and transport with a CA made for the node, one admin user and no demo configuration;
and cogr-search commands against it over HTTPS, with the mistakes a user makes.

The node is the module's own, started by the CLI as a user would, stopped at the end.
"""

from __future__ import annotations

import base64
import json
import os
import ssl
import stat
import subprocess
import sys
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest

from cogr_search.bench.node import free_port_run
from cogr_search.data import sample_catalog_path
from tests.conftest import REPO_ROOT

pytestmark = pytest.mark.opensearch


def _cli(*args: str, env: dict[str, str] | None = None, timeout: float = 600) -> subprocess.CompletedProcess[str]:
    base = {k: v for k, v in os.environ.items() if not k.startswith(("COGR_CLUSTER_", "COGR_OPENSEARCH_URL"))}
    base["PYTHONPATH"] = os.pathsep.join([str(REPO_ROOT), os.environ.get("PYTHONPATH", "")])
    return subprocess.run([sys.executable, "-m", "cogr_search.cli", *args], cwd=REPO_ROOT, env={**base, **(env or {})},
                          capture_output=True, text=True, timeout=timeout, check=False)


@pytest.fixture(scope="module")
def secure_node(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Path, str, subprocess.CompletedProcess]]:
    home = tmp_path_factory.mktemp("secure-node")
    started = _cli("opensearch", "start", "--secure", "--home", str(home), "--port", str(free_port_run(1)),
                   "--heap", "512m")
    try:
        assert started.returncode == 0, started.stderr
        yield home, started.stdout.strip(), started
    finally:
        _cli("opensearch", "stop", "--secure", "--home", str(home))


def _env(home: Path, url: str, **changes: str) -> dict[str, str]:
    env = {"COGR_CLUSTER_URL": url, "COGR_CLUSTER_USER": "admin",
           "COGR_CLUSTER_PASSWORD": (home / "admin-password").read_text().strip(),
           "COGR_CLUSTER_CA_CERTS": str(home / "ca.pem")}
    env.update(changes)
    return {k: v for k, v in env.items() if v != ""}


def _get(url: str, home: Path, password: str | None = None) -> tuple[int, dict]:
    request = urllib.request.Request(url)
    if password is not None:
        request.add_header("Authorization", "Basic " + base64.b64encode(f"admin:{password}".encode()).decode())
    context = ssl.create_default_context(cafile=str(home / "ca.pem"))
    try:
        with urllib.request.urlopen(request, timeout=30, context=context) as resp:
            return resp.status, json.loads(resp.read())
    except urllib.error.HTTPError as err:
        return err.code, {}


def test_start_prints_the_https_url_and_how_to_point_cogr_search_at_it(secure_node) -> None:
    home, url, started = secure_node
    assert url.startswith("https://127.0.0.1:")
    assert f"export COGR_CLUSTER_URL={url} COGR_CLUSTER_USER=admin" in started.stderr
    assert f"COGR_CLUSTER_CA_CERTS={home / 'ca.pem'}" in started.stderr
    assert stat.S_IMODE((home / "admin-password").stat().st_mode) == 0o600
    assert json.loads((home / "node.json").read_text())["url"] == url


def test_only_the_admin_exists_and_no_catch_all_mapping_survives(secure_node) -> None:
    home, url, _ = secure_node
    password = (home / "admin-password").read_text().strip()
    status, users = _get(f"{url}/_plugins/_security/api/internalusers", home, password)
    assert status == 200 and set(users) == {"admin"}
    status, mappings = _get(f"{url}/_plugins/_security/api/rolesmapping", home, password)
    assert status == 200 and mappings["all_access"]["users"] == ["admin"]
    assert all("*" not in m.get("users", []) for m in mappings.values()), mappings
    assert _get(url + "/", home, "wrong-password")[0] == 401
    assert _get(url + "/", home)[0] == 401


def test_commands_run_over_https_with_the_ca_and_credentials(secure_node) -> None:
    home, url, _ = secure_node
    env = _env(home, url)
    ingested = _cli("ingest", str(sample_catalog_path()), "--index", "secured", env=env)
    assert ingested.returncode == 0, ingested.stderr
    assert "359 documents in the index" in ingested.stdout + ingested.stderr
    state = _cli("sync", "--index", "secured", "--status", "--json", env=env)
    assert state.returncode == 0, state.stderr
    assert json.loads(state.stdout)["versions"][0]["documents"] == 359


@pytest.mark.parametrize(("change", "said"), [
    ({"COGR_CLUSTER_PASSWORD": "wrong"}, "401"),
    ({"COGR_CLUSTER_CA_CERTS": ""}, "certificate"),
    ({"COGR_CLUSTER_URL": "plain-http"}, "http://"),
], ids=["wrong-password", "no-ca", "plain-http-to-tls"])
def test_a_wrong_password_a_missing_ca_or_plain_http_is_one_line_and_exit_1(secure_node, change: dict[str, str],
                                                                              said: str) -> None:
    home, url, _ = secure_node
    if change.get("COGR_CLUSTER_URL") == "plain-http":
        change = {"COGR_CLUSTER_URL": url.replace("https://", "http://")}
    refused = _cli("sync", "--index", "secured", "--status", env=_env(home, url, **change))
    assert refused.returncode == 1
    lines = refused.stderr.strip().splitlines()
    assert len(lines) == 1 and said in lines[0].lower(), refused.stderr
