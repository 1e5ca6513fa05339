"""`opensearch|elasticsearch start --secure`: the stock OpenSearch 2.19.4 with its security
plugin, and the stock Elasticsearch 8.17.2 with x-pack security, each with TLS (a CA made for
the node), one admin user and nothing else; cogr-search commands against them over HTTPS,
with the mistakes a user makes; and the least-privilege roles (`security roles`): each
command as a user with only its role.

Every test runs on both engines. The node is the module's own, one engine at a time
(a module-scoped parameter: the first node stops before the second starts), started by the
CLI as a user would, and stopped at the end.
"""

from __future__ import annotations

import base64
import json
import os
import re
import ssl
import stat
import subprocess
import sys
import urllib.error
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import quote

import pytest

from cogr_search.bench.node import free_port_run
from cogr_search.cluster.names import STUDENT_INDEX
from cogr_search.cluster.security_roles import roles_for
from cogr_search.data import sample_catalog_path
from cogr_search.generators.students.distill import distill_run
from cogr_search.localnode.stock import runtime_dir
from cogr_search.runs.keyword_files import write_keyword_file
from tests.serve_support import make_base_run
from tests.conftest import REPO_ROOT
from tests.student_support import make_keyword_run

pytestmark = [pytest.mark.opensearch, pytest.mark.slow]
SECURED_ENGINES = ["opensearch", "elasticsearch"]


def _cli(*args: str, env: dict[str, str] | None = None, timeout: float = 600) -> subprocess.CompletedProcess[str]:
    base = {k: v for k, v in os.environ.items() if not k.startswith(("COGR_CLUSTER_", "COGR_OPENSEARCH_URL"))}
    base["PYTHONPATH"] = os.pathsep.join([str(REPO_ROOT), os.environ.get("PYTHONPATH", "")])
    return subprocess.run([sys.executable, "-m", "cogr_search.cli", *args], cwd=REPO_ROOT, env={**base, **(env or {})},
                          capture_output=True, text=True, timeout=timeout, check=False)


@dataclass(frozen=True)
class SecureNode:
    """A secured node started by `ENGINE start --secure`: its home, URL and the start's output."""

    engine: str
    home: Path
    url: str
    started: subprocess.CompletedProcess

    @property
    def label(self) -> str:
        return {"opensearch": "OpenSearch", "elasticsearch": "Elasticsearch"}[self.engine]


@pytest.fixture(scope="module", params=SECURED_ENGINES)
def secure_node(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Iterator[SecureNode]:
    engine = request.param
    home = tmp_path_factory.mktemp(f"secure-{engine}")
    started = _cli(engine, "start", "--secure", "--home", str(home), "--port", str(free_port_run(1)),
                   "--heap", "512m")
    try:
        assert started.returncode == 0, started.stderr
        yield SecureNode(engine, home, started.stdout.strip(), started)
    finally:
        _cli(engine, "stop", "--secure", "--home", str(home), "--purge")


def _env(home: Path, url: str, **changes: str) -> dict[str, str]:
    env = {"COGR_CLUSTER_URL": url, "COGR_CLUSTER_USER": "admin",
           "COGR_CLUSTER_PASSWORD": (home / "admin-password").read_text().strip(),
           "COGR_CLUSTER_CA_CERTS": str(home / "ca.pem")}
    env.update(changes)
    return {k: v for k, v in env.items() if v != ""}


def _get(url: str, home: Path, password: str | None = None, user: str = "admin") -> tuple[int, dict]:
    request = urllib.request.Request(url)
    if password is not None:
        request.add_header("Authorization", "Basic " + base64.b64encode(f"{user}:{password}".encode()).decode())
    context = ssl.create_default_context(cafile=str(home / "ca.pem"))
    try:
        with urllib.request.urlopen(request, timeout=30, context=context) as resp:
            return resp.status, json.loads(resp.read())
    except urllib.error.HTTPError as err:
        return err.code, {}


def test_start_prints_the_https_url_and_how_to_point_cogr_search_at_it(secure_node: SecureNode) -> None:
    home, url, started = secure_node.home, secure_node.url, secure_node.started
    assert url.startswith("https://127.0.0.1:")
    assert f"export COGR_CLUSTER_URL={url} COGR_CLUSTER_USER=admin" in started.stderr
    assert f"COGR_CLUSTER_CA_CERTS={home / 'ca.pem'}" in started.stderr
    assert stat.S_IMODE((home / "admin-password").stat().st_mode) == 0o600
    assert json.loads((home / "node.json").read_text())["url"] == url
    status = _cli(secure_node.engine, "status", "--secure", "--home", str(home))
    assert status.returncode == 0 and status.stdout.startswith(f"running: {url} "), status.stdout + status.stderr


def _only_admin_on_opensearch(node: SecureNode, password: str) -> None:
    status, users = _get(f"{node.url}/_plugins/_security/api/internalusers", node.home, password)
    assert status == 200 and set(users) == {"admin"}
    status, mappings = _get(f"{node.url}/_plugins/_security/api/rolesmapping", node.home, password)
    assert status == 200 and mappings["all_access"]["users"] == ["admin"]
    assert all("*" not in m.get("users", []) for m in mappings.values()), mappings


def _only_admin_on_elasticsearch(node: SecureNode, password: str) -> None:
    status, me = _get(f"{node.url}/_security/_authenticate", node.home, password)
    assert status == 200 and me["roles"] == ["superuser"] and me["authentication_realm"]["type"] == "file"
    users = (runtime_dir(node.home) / "config" / "users").read_text().splitlines()
    assert [line.split(":", 1)[0] for line in users] == ["admin"]
    # elastic's password is the admin's, from the keystore's bootstrap.password; not the old default
    status, me = _get(f"{node.url}/_security/_authenticate", node.home, password, user="elastic")
    assert status == 200 and me["roles"] == ["superuser"] and me["authentication_realm"]["type"] == "reserved"
    assert _get(node.url + "/", node.home, "changeme", user="elastic")[0] == 401
    assert _get(node.url + "/", node.home, password, user="kibana_system")[0] == 401


def test_only_the_admin_exists(secure_node: SecureNode) -> None:
    password = (secure_node.home / "admin-password").read_text().strip()
    {"opensearch": _only_admin_on_opensearch, "elasticsearch": _only_admin_on_elasticsearch}[secure_node.engine](
        secure_node, password)
    assert _get(secure_node.url + "/", secure_node.home, "wrong-password")[0] == 401
    assert _get(secure_node.url + "/", secure_node.home)[0] == 401


def test_commands_run_over_https_with_the_ca_and_credentials(secure_node: SecureNode) -> None:
    env = _env(secure_node.home, secure_node.url)
    ingested = _cli("ingest", str(sample_catalog_path()), "--index", "secured", env=env)
    assert ingested.returncode == 0, ingested.stderr
    assert "359 documents in the index" in ingested.stdout + ingested.stderr
    state = _cli("sync", "--index", "secured", "--status", "--json", env=env)
    assert state.returncode == 0, state.stderr
    assert json.loads(state.stdout)["versions"][0]["documents"] == 359


@pytest.mark.parametrize(("change", "said"), [
    ({"COGR_CLUSTER_PASSWORD": "wrong"}, "the cluster at https://127.0.0.1:{port} refused the credentials of user "
                                         "'admin' (http 401)"),
    ({"COGR_CLUSTER_PASSWORD": "wrong", "COGR_ENGINE": "{engine}"},
     "{engine} at https://127.0.0.1:{port} refused the credentials of user 'admin' (http 401)"),
    ({"COGR_CLUSTER_CA_CERTS": ""}, "presents a certificate this machine does not trust"),
    ({"COGR_CLUSTER_URL": "plain-http"}, "the cluster at http://127.0.0.1:{port} speaks tls, not plain http: use https://"),
], ids=["wrong-password", "wrong-password-engine-known", "no-ca", "plain-http-to-tls"])
def test_a_wrong_password_a_missing_ca_or_plain_http_is_one_line_and_exit_1(secure_node: SecureNode,
                                                                              change: dict[str, str], said: str) -> None:
    url = secure_node.url
    change = {key: value.format(engine=secure_node.engine) for key, value in change.items()}
    if change.get("COGR_CLUSTER_URL") == "plain-http":
        change = {"COGR_CLUSTER_URL": url.replace("https://", "http://")}
    refused = _cli("sync", "--index", "secured", "--status", env=_env(secure_node.home, url, **change))
    assert refused.returncode == 1
    lines = refused.stderr.strip().splitlines()
    said = said.format(port=url.rsplit(":", 1)[1], engine=secure_node.engine)
    assert len(lines) == 1 and said in lines[0].lower(), refused.stderr


@pytest.mark.parametrize("engine", SECURED_ENGINES)
@pytest.mark.parametrize(("extra", "said"), [
    (["--nodes", "3"], "--secure --nodes 3: the secured local node is a single node"),
    (["--version", "9"], "--secure --version 9: the secured local node is "),
], ids=["nodes", "version"])
def test_secure_with_more_nodes_or_another_line_is_refused_in_one_line(engine: str, extra: list[str], said: str,
                                                                       tmp_path: Path) -> None:
    home = tmp_path / "never-made"
    refused = _cli(engine, "start", "--secure", "--home", str(home), *extra)
    lines = refused.stderr.strip().splitlines()
    assert refused.returncode == 1 and len(lines) == 1 and said in lines[0], refused.stderr
    assert not home.exists()


# ------------------------------------------------------------------ least privilege

ALIAS, OTHER = "shop", "other"
USER_PASSWORD = "Str0ng-Passw0rd-for-tests!"


def _admin_request(home: Path, url: str, method: str, path: str, body: dict | None = None,
                   user: str = "admin", password: str | None = None) -> dict:
    password = password if password is not None else (home / "admin-password").read_text().strip()
    request = urllib.request.Request(url + path, method=method, data=json.dumps(body).encode() if body else None,
                                     headers={"Content-Type": "application/json"})
    request.add_header("Authorization", "Basic " + base64.b64encode(f"{user}:{password}".encode()).decode())
    context = ssl.create_default_context(cafile=str(home / "ca.pem"))
    with urllib.request.urlopen(request, timeout=30, context=context) as resp:
        return json.loads(resp.read() or b"{}")


def _opensearch_role_users(node: SecureNode) -> None:
    """Internal users `writer` and `reader`, mapped by `security roles --apply`."""
    for user in ("writer", "reader"):
        _admin_request(node.home, node.url, "PUT", f"/_plugins/_security/api/internalusers/{user}",
                       {"password": USER_PASSWORD})
    _apply_roles(node)


def _elasticsearch_role_users(node: SecureNode) -> None:
    """Native users `writer` and `reader` (`PUT _security/user`), given their roles by
    `security roles --apply`, as on OpenSearch."""
    for user in ("writer", "reader"):
        _admin_request(node.home, node.url, "PUT", f"/_security/user/{user}", {"password": USER_PASSWORD, "roles": []})
    _apply_roles(node)


def _apply_roles(node: SecureNode) -> None:
    applied = _cli("security", "roles", "--apply", "--alias", ALIAS, "--writer-user", "writer", "--reader-user", "reader",
                   env=_env(node.home, node.url))
    assert applied.returncode == 0, applied.stderr
    assert applied.stdout.strip() == (f"roles cogr_writer_{ALIAS}, cogr_reader_{ALIAS} applied; "
                                      f"mapped writer -> cogr_writer_{ALIAS}, reader -> cogr_reader_{ALIAS}")


@pytest.fixture(scope="module")
def role_users(secure_node: SecureNode) -> SecureNode:
    """Users `writer` and `reader` holding only the roles of ALIAS, each engine's way."""
    {"opensearch": _opensearch_role_users, "elasticsearch": _elasticsearch_role_users}[secure_node.engine](secure_node)
    return secure_node


@pytest.fixture(scope="module")
def keywords(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """An item keyword file covering the sample catalog (what a round's sync writes)."""
    corpus = (sample_catalog_path() / "corpus.jsonl").read_text().splitlines()
    ids = [json.loads(line)["_id"] for line in corpus if line.strip()]
    path = tmp_path_factory.mktemp("keywords") / "item_keywords.jsonl"
    write_keyword_file(path, ((item, ["oak", f"k{n % 7}"]) for n, item in enumerate(ids)))
    return path


def _as(node: SecureNode, user: str) -> dict[str, str]:
    return _env(node.home, node.url, COGR_CLUSTER_USER=user, COGR_CLUSTER_PASSWORD=USER_PASSWORD)


def _cluster_state(node: SecureNode) -> tuple:
    """What a refused command must leave as it was: indices with their counts, aliases."""
    home, url = node.home, node.url
    indices = _admin_request(home, url, "GET", "/_cat/indices?format=json&h=index,docs.count&expand_wildcards=open")
    aliases = _admin_request(home, url, "GET", "/_cat/aliases?format=json&h=alias,index")
    names = sorted((i["index"], i["docs.count"]) for i in indices if not i["index"].startswith("."))
    return names, sorted((a["alias"], a["index"]) for a in aliases if not a["alias"].startswith("."))


def _index_patterns(engine: str, role: dict) -> list[list[str]]:
    """Each index grant's names, in the engine's own role format."""
    if engine == "opensearch":
        return [grant["index_patterns"] for grant in role["index_permissions"]]
    return [grant["names"] for grant in role["indices"]]


@pytest.mark.parametrize("engine", SECURED_ENGINES)
def test_roles_print_the_writer_and_reader_of_the_alias(engine: str) -> None:
    printed = _cli("security", "roles", "--print", "--engine", engine, "--alias", ALIAS)
    assert printed.returncode == 0, printed.stderr
    roles = json.loads(printed.stdout)
    assert set(roles) == {f"cogr_writer_{ALIAS}", f"cogr_reader_{ALIAS}"}
    assert _index_patterns(engine, roles[f"cogr_writer_{ALIAS}"])[0] == [ALIAS, f"{ALIAS}--*"]
    patterns = {p for role in roles.values() for names in _index_patterns(engine, role) for p in names}
    # nothing beyond the alias, its own indices (versions, lease) and its earlier releases'
    # versions; on OpenSearch the writer's students for the plugin, which the reader lacks
    students = {STUDENT_INDEX} if engine == "opensearch" else set()
    assert patterns == {ALIAS, f"{ALIAS}--*", f"/{ALIAS}-r[0-9]+-[0-9]+/"} | students
    reader = {p for names in _index_patterns(engine, roles[f"cogr_reader_{ALIAS}"]) for p in names}
    assert STUDENT_INDEX not in reader


def test_each_command_runs_as_a_user_with_only_its_role(role_users: SecureNode, keywords: Path, tiny_model: Path,
                                                        tmp_path: Path) -> None:
    writer = _as(role_users, "writer")
    catalog = sample_catalog_path()
    for args in (["index", "create", "--index", ALIAS],
                 ["ingest", str(catalog), "--index", ALIAS],
                 ["sync", "--index", ALIAS, "--item-keywords", str(keywords)],
                 ["sync", "--index", ALIAS, "--status"],
                 ["eval", "--data", str(catalog), "--index", ALIAS, "--method", "bm25", "--split", "all", "--cutoff", "10"]):
        done = _cli(*args, env=writer)
        assert done.returncode == 0, (args, done.stderr)
    reader = _as(role_users, "reader")
    evaluated = _cli("eval", "--data", str(catalog), "--index", ALIAS, "--method", "bm25", "--split", "all",
                     "--cutoff", "10", "--json", env=reader)
    assert evaluated.returncode == 0, evaluated.stderr
    # search, as an app's reader account sends it: the query generator of a round-0 run expands it
    make_base_run(tmp_path, name="secured", model=tiny_model, max_new_tokens=8)
    found = _cli("search", "lamp", "--index", ALIAS, "--run", "secured", "--runs-dir", str(tmp_path), "--json",
                 env=reader)
    assert found.returncode == 0, found.stderr
    answer = json.loads(found.stdout)
    assert answer["index"] == ALIAS and answer["text"] == "lamp" and answer["total"] >= len(answer["hits"])


def test_a_readers_writes_are_refused_in_one_line_and_change_nothing(role_users: SecureNode, keywords: Path) -> None:
    reader = _as(role_users, "reader")
    before = _cluster_state(role_users)
    for args in (["sync", "--index", ALIAS, "--item-keywords", str(keywords)],
                 ["ingest", str(sample_catalog_path()), "--index", ALIAS],
                 ["index", "create", "--index", ALIAS]):
        refused = _cli(*args, env=reader)
        lines = refused.stderr.strip().splitlines()
        assert refused.returncode == 1 and len(lines) == 1, (args, refused.stderr)
        line = lines[0]
        assert f"{role_users.label} refused the request" in line and "HTTP 403" in line, line
        assert "user 'reader' lacks " in line and "cogr_writer_" in line, line  # the action, the user, the role
        if role_users.engine == "elasticsearch":  # it also names the engine's own privileges that grant it
            assert " privileges " in line and " grant it)" in line, line
    assert _cluster_state(role_users) == before


def test_a_writer_for_one_alias_cannot_touch_another(role_users: SecureNode) -> None:
    before = _cluster_state(role_users)
    refused = _cli("ingest", str(sample_catalog_path()), "--index", OTHER, env=_as(role_users, "writer"))
    lines = refused.stderr.strip().splitlines()
    assert refused.returncode == 1 and len(lines) == 1 and "HTTP 403" in lines[0], refused.stderr
    assert "'writer'" in lines[0] and repr(OTHER) in lines[0], lines[0]
    assert _cluster_state(role_users) == before


def _api_key(node: SecureNode, role: str) -> str:
    """An API key made by the admin and limited to the shipped `role` descriptor of ALIAS (how
    an operator hands a service a key): its `encoded` value."""
    descriptor = {k: v for k, v in roles_for(ALIAS, "elasticsearch")[role].items() if k != "description"}  # not in keys
    made = _admin_request(node.home, node.url, "POST", "/_security/api_key",
                          {"name": role, "role_descriptors": {role: descriptor}})
    return made["encoded"]


def test_an_api_key_limited_to_a_role_signs_commands_in_and_holds_that_role(role_users: SecureNode) -> None:
    """Elasticsearch API keys (`COGR_CLUSTER_API_KEY`, no user or password); OpenSearch has none:
    one line. A wrong key, and a key beside a user, are one line each."""
    catalog = str(sample_catalog_path())
    if role_users.engine == "opensearch":
        refused = _cli("sync", "--index", ALIAS, "--status",
                       env=_env(role_users.home, role_users.url, COGR_CLUSTER_USER="", COGR_CLUSTER_PASSWORD="",
                                COGR_CLUSTER_API_KEY="a2V5OnNlY3JldA=="))
        assert refused.returncode == 1 and refused.stderr.strip().splitlines() == [
            f"Error: the cluster at {role_users.url} is OpenSearch, which has no API keys: unset COGR_CLUSTER_API_KEY "
            "and set COGR_CLUSTER_USER and COGR_CLUSTER_PASSWORD"], refused.stderr
        return

    def with_key(key: str, **changes: str) -> dict[str, str]:
        signed = {"COGR_CLUSTER_USER": "", "COGR_CLUSTER_PASSWORD": "", "COGR_CLUSTER_API_KEY": key, **changes}
        return _env(role_users.home, role_users.url, **signed)

    writer_key = _api_key(role_users, f"cogr_writer_{ALIAS}")
    for args in (["ingest", catalog, "--index", ALIAS], ["sync", "--index", ALIAS, "--status"]):
        done = _cli(*args, env=with_key(writer_key))
        assert done.returncode == 0, (args, done.stderr)
    before = _cluster_state(role_users)
    refused = _cli("ingest", catalog, "--index", ALIAS, env=with_key(_api_key(role_users, f"cogr_reader_{ALIAS}")))
    lines = refused.stderr.strip().splitlines()
    assert refused.returncode == 1 and len(lines) == 1 and "HTTP 403" in lines[0], refused.stderr
    wrong = _cli("sync", "--index", ALIAS, "--status", env=with_key("bm9wZTpub3Bl"))
    assert wrong.returncode == 1 and wrong.stderr.strip().splitlines() == [
        f"Error: the cluster at {role_users.url} refused the API key (HTTP 401): check COGR_CLUSTER_API_KEY (the "
        "`encoded` value of POST _security/api_key; an expired or invalidated key is refused too)"], wrong.stderr
    both = _cli("sync", "--index", ALIAS, "--status", env=with_key(writer_key, COGR_CLUSTER_USER="writer"))
    assert both.returncode == 1 and len(both.stderr.strip().splitlines()) == 1 and "both set" in both.stderr
    assert _cluster_state(role_users) == before


def test_an_alias_named_as_the_student_index_is_refused_in_one_line() -> None:
    """Its reader role would grant the stored students, which the reader must not read."""
    refused = _cli("security", "roles", "--print", "--alias", STUDENT_INDEX)
    assert refused.returncode == 1 and refused.stderr.strip().splitlines() == [
        f"Error: --alias '{STUDENT_INDEX}': it is the index of the students stored for the plugin; "
        "choose another name"], refused.stderr


def test_the_writer_deploys_students_that_only_the_plugin_and_the_writer_read(role_users: SecureNode,
                                                                            tmp_path: Path) -> None:
    """Issue 36: `index create --pipelines --run RUN` as the alias's writer stores the students
    in cogr-students; the reader is refused that index (search, and a chunk by id), and its
    searches through the pipeline still expand, since the plugin reads the model itself.
    Elasticsearch has no plugin: the command is refused in one line there, nothing stored."""
    run = make_keyword_run(tmp_path, "secured-students")
    distill_run(run, 0, threads=1, echo=lambda line: None)
    home, url = role_users.home, role_users.url
    if role_users.engine == "opensearch":  # the reader cannot deploy: refused at the students' index
        before = _cluster_state(role_users)
        refused = _cli("index", "create", "--index", ALIAS, "--pipelines", "--run", str(run.root),
                       env=_as(role_users, "reader"))
        lines = refused.stderr.strip().splitlines()
        assert refused.returncode == 1 and len(lines) == 1, refused.stderr
        assert "HTTP 403" in lines[0] and "user 'reader' lacks " in lines[0], lines[0]
        assert "map it to the role cogr_writer_" in lines[0], lines[0]  # only the writer has a grant there
        assert _cluster_state(role_users) == before
    deployed = _cli("index", "create", "--index", ALIAS, "--pipelines", "--run", str(run.root),
                    env=_as(role_users, "writer"))
    if role_users.engine == "elasticsearch":
        lines = deployed.stderr.strip().splitlines()
        assert deployed.returncode == 1 and len(lines) == 1, deployed.stderr
        assert "needs OpenSearch with the cogr-search plugin" in lines[0], lines[0]
        return
    assert deployed.returncode == 0, deployed.stderr
    models = dict(re.findall(r"^student (query|item): (\S+) ", deployed.stdout, re.MULTILINE))
    assert set(models) == {"query", "item"}, deployed.stdout

    def as_user(user: str, method: str, path: str, body: dict | None = None) -> dict:
        return _admin_request(home, url, method, path, body, user=user, password=USER_PASSWORD)

    chunk = f"/{STUDENT_INDEX}/_doc/{quote(models['query'] + '#0', safe='')}"
    for method, path in (("POST", f"/{STUDENT_INDEX}/_search"), ("GET", chunk), ("POST", f"/{STUDENT_INDEX}/_count")):
        with pytest.raises(urllib.error.HTTPError) as refused:
            as_user("reader", method, path)
        assert refused.value.code == 403, (method, path)
    assert as_user("writer", "GET", chunk)["_source"]["model_id"] == models["query"]
    body = {"query": {"match": {"title": "oak dining table"}}}
    status = as_user("reader", "POST", f"/{ALIAS}/_search?search_pipeline=cogr", body)["ext"]["cogr"]
    assert status["expanded"] is True and status["fallback"] is False, status
