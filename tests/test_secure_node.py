"""`opensearch start --secure`: the stock OpenSearch 2.19.4 with its security plugin, TLS on
HTTP and transport with a CA made for the node, one admin user and no demo configuration;
cogr-search commands against it over HTTPS, with the mistakes a user makes; and the
least-privilege roles (`security roles`): each command as a user with only its role.

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
from cogr_search.runs.keyword_files import write_keyword_file
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
    ({"COGR_CLUSTER_PASSWORD": "wrong"}, "the cluster at https://127.0.0.1:{port} refused the credentials of user "
                                         "'admin' (http 401)"),
    ({"COGR_CLUSTER_PASSWORD": "wrong", "COGR_ENGINE": "opensearch"},
     "opensearch at https://127.0.0.1:{port} refused the credentials of user 'admin' (http 401)"),
    ({"COGR_CLUSTER_CA_CERTS": ""}, "presents a certificate this machine does not trust"),
    ({"COGR_CLUSTER_URL": "plain-http"}, "the cluster at http://127.0.0.1:{port} speaks tls, not plain http: use https://"),
], ids=["wrong-password", "wrong-password-engine-known", "no-ca", "plain-http-to-tls"])
def test_a_wrong_password_a_missing_ca_or_plain_http_is_one_line_and_exit_1(secure_node, change: dict[str, str],
                                                                              said: str) -> None:
    home, url, _ = secure_node
    if change.get("COGR_CLUSTER_URL") == "plain-http":
        change = {"COGR_CLUSTER_URL": url.replace("https://", "http://")}
    refused = _cli("sync", "--index", "secured", "--status", env=_env(home, url, **change))
    assert refused.returncode == 1
    lines = refused.stderr.strip().splitlines()
    said = said.format(port=url.rsplit(":", 1)[1])
    assert len(lines) == 1 and said in lines[0].lower(), refused.stderr


# ------------------------------------------------------------------ least privilege

ALIAS, OTHER = "shop", "other"
USER_PASSWORD = "Str0ng-Passw0rd-for-tests!"


def _admin_request(home: Path, url: str, method: str, path: str, body: dict | None = None) -> dict:
    password = (home / "admin-password").read_text().strip()
    request = urllib.request.Request(url + path, method=method, data=json.dumps(body).encode() if body else None,
                                     headers={"Content-Type": "application/json"})
    request.add_header("Authorization", "Basic " + base64.b64encode(f"admin:{password}".encode()).decode())
    context = ssl.create_default_context(cafile=str(home / "ca.pem"))
    with urllib.request.urlopen(request, timeout=30, context=context) as resp:
        return json.loads(resp.read() or b"{}")


@pytest.fixture(scope="module")
def role_users(secure_node) -> tuple[Path, str]:
    """Users `writer` and `reader` mapped by `security roles --apply` to the roles of ALIAS."""
    home, url, _ = secure_node
    for user in ("writer", "reader"):
        _admin_request(home, url, "PUT", f"/_plugins/_security/api/internalusers/{user}", {"password": USER_PASSWORD})
    applied = _cli("security", "roles", "--apply", "--alias", ALIAS, "--writer-user", "writer", "--reader-user", "reader",
                   env=_env(home, url))
    assert applied.returncode == 0, applied.stderr
    assert applied.stdout.strip() == (f"roles cogr_writer_{ALIAS}, cogr_reader_{ALIAS} applied; "
                                      f"mapped writer -> cogr_writer_{ALIAS}, reader -> cogr_reader_{ALIAS}")
    return home, url


@pytest.fixture(scope="module")
def keywords(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """An item keyword file covering the sample catalog (what a round's sync writes)."""
    corpus = (sample_catalog_path() / "corpus.jsonl").read_text().splitlines()
    ids = [json.loads(line)["_id"] for line in corpus if line.strip()]
    path = tmp_path_factory.mktemp("keywords") / "item_keywords.jsonl"
    write_keyword_file(path, ((item, ["oak", f"k{n % 7}"]) for n, item in enumerate(ids)))
    return path


def _as(home: Path, url: str, user: str) -> dict[str, str]:
    return _env(home, url, COGR_CLUSTER_USER=user, COGR_CLUSTER_PASSWORD=USER_PASSWORD)


def _cluster_state(home: Path, url: str) -> tuple:
    """What a refused command must leave as it was: indices with their counts, aliases, leases."""
    indices = _admin_request(home, url, "GET", "/_cat/indices?format=json&h=index,docs.count&expand_wildcards=open")
    aliases = _admin_request(home, url, "GET", "/_cat/aliases?format=json&h=alias,index")
    names = sorted((i["index"], i["docs.count"]) for i in indices if not i["index"].startswith("."))
    return names, sorted((a["alias"], a["index"]) for a in aliases if not a["alias"].startswith("."))


def test_roles_print_the_writer_and_reader_of_the_alias() -> None:
    printed = _cli("security", "roles", "--print", "--alias", ALIAS)
    assert printed.returncode == 0, printed.stderr
    roles = json.loads(printed.stdout)
    assert set(roles) == {f"cogr_writer_{ALIAS}", f"cogr_reader_{ALIAS}"}
    writer_indices = roles[f"cogr_writer_{ALIAS}"]["index_permissions"][0]
    assert writer_indices["index_patterns"] == [ALIAS, f"{ALIAS}-*"]
    patterns = {p for role in roles.values() for perm in role["index_permissions"] for p in perm["index_patterns"]}
    assert patterns == {ALIAS, f"{ALIAS}-*", "cogr-sync-leases"}  # nothing beyond the alias, its versions, the lease


def test_each_command_runs_as_a_user_with_only_its_role(role_users, keywords: Path) -> None:
    home, url = role_users
    writer = _as(home, url, "writer")
    catalog = sample_catalog_path()
    for args in (["index", "create", "--index", ALIAS],
                 ["ingest", str(catalog), "--index", ALIAS],
                 ["sync", "--index", ALIAS, "--item-keywords", str(keywords)],
                 ["sync", "--index", ALIAS, "--status"],
                 ["eval", "--data", str(catalog), "--index", ALIAS, "--method", "bm25", "--split", "all", "--cutoff", "10"]):
        done = _cli(*args, env=writer)
        assert done.returncode == 0, (args, done.stderr)
    reader = _cli("eval", "--data", str(catalog), "--index", ALIAS, "--method", "bm25", "--split", "all", "--cutoff", "10",
                  "--json", env=_as(home, url, "reader"))
    assert reader.returncode == 0, reader.stderr


def test_a_readers_writes_are_refused_in_one_line_and_change_nothing(role_users, keywords: Path) -> None:
    home, url = role_users
    reader = _as(home, url, "reader")
    before = _cluster_state(home, url)
    for args in (["sync", "--index", ALIAS, "--item-keywords", str(keywords)],
                 ["ingest", str(sample_catalog_path()), "--index", ALIAS],
                 ["index", "create", "--index", f"{ALIAS}-new"]):
        refused = _cli(*args, env=reader)
        lines = refused.stderr.strip().splitlines()
        assert refused.returncode == 1 and len(lines) == 1, (args, refused.stderr)
        assert "HTTP 403" in lines[0] and "reader" in lines[0] and "cogr_writer_" in lines[0], lines[0]
    assert _cluster_state(home, url) == before


def test_a_writer_for_one_alias_cannot_touch_another(role_users) -> None:
    home, url = role_users
    before = _cluster_state(home, url)
    refused = _cli("ingest", str(sample_catalog_path()), "--index", OTHER, env=_as(home, url, "writer"))
    lines = refused.stderr.strip().splitlines()
    assert refused.returncode == 1 and len(lines) == 1 and "HTTP 403" in lines[0], refused.stderr
    assert _cluster_state(home, url) == before
