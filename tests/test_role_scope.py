"""The shipped roles grant an alias and nothing of another's (`security roles`, names.py).

On a secured stock OpenSearch 2.19.4 and a secured stock Elasticsearch 8.17.2 (the module's
own node per engine, `start --secure`, as tests/test_secure_node.py starts it): the writer
of `shop` is refused the versions and the sync lease of `shop-eu` and `shop-retail`
(aliases its old pattern `shop-*` reached), the shared lease index of earlier releases, and
another alias's earlier-release versions; and every privilege of both role files is needed:
taking it out of the role makes the command that uses it fail. A privilege kept without such
a test says why in its role's `_why` (and the test checks that each one is one or the other).

Alias names whose indices would collide are refused in one line, without a cluster.
"""

from __future__ import annotations

import base64
import json
import ssl
import urllib.error
import urllib.request
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from cogr_search.cluster.mappings import IndexVersion, next_version
from cogr_search.cluster.names import LEGACY_LEASE_INDEX, STUDENT_INDEX, lease_index
from cogr_search.cluster.security_roles import role_templates, roles_for
from cogr_search.data import sample_catalog_path
from cogr_search.runs.keyword_files import write_keyword_file
from tests.test_secure_node import (  # noqa: F401 - secure_node is this module's node fixture
    SECURED_ENGINES,
    USER_PASSWORD,
    SecureNode,
    _admin_request,
    _cli,
    _env,
    secure_node,
)

pytestmark = [pytest.mark.opensearch, pytest.mark.slow]
ALIAS = "shop"
NEIGHBOURS = ("shop-eu", "shop-retail")


# ------------------------------------------------------------------ names, no cluster

@pytest.mark.parametrize(("alias", "said"), [
    ("shop--eu", "'--' (and a trailing '-') separates an alias from its own indices"),
    ("shop-", "'--' (and a trailing '-') separates an alias from its own indices"),
    ("shop-r0-1", "the shape of an index version of earlier releases"),
    (LEGACY_LEASE_INDEX, "the sync lease index of earlier releases"),
    ("Shop", "use lowercase letters"),
])
@pytest.mark.parametrize("command", [["security", "roles", "--print", "--alias"], ["index", "create", "--index"]])
def test_an_alias_that_could_reach_another_aliass_indices_is_refused_in_one_line(alias: str, said: str,
                                                                               command: list[str]) -> None:
    refused = _cli(*command, alias, env={"COGR_CLUSTER_URL": "http://127.0.0.1:9"})  # refused before any call
    lines = refused.stderr.strip().splitlines()
    assert refused.returncode == 1 and len(lines) == 1, refused.stderr
    assert f"{command[-1]} {alias!r}: " in lines[0] and said in lines[0], lines[0]


def test_versions_of_earlier_releases_are_recognised_and_numbered_past() -> None:
    legacy = IndexVersion.parse(ALIAS, "shop-r1-7")
    assert legacy == IndexVersion(1, 7, ALIAS, legacy=True) and legacy.name == "shop-r1-7"
    assert IndexVersion.parse(ALIAS, "shop--r2-8") == IndexVersion(2, 8, ALIAS)
    assert IndexVersion.parse(ALIAS, "shop-retail-r0-1") is None and IndexVersion.parse(ALIAS, "shop-eu--r0-1") is None
    assert next_version(ALIAS, ["shop-r1-7", "shop-rugs-r0-9"], 2).name == "shop--r2-8"


@pytest.mark.parametrize("engine", SECURED_ENGINES)
def test_role_patterns_are_the_alias_its_own_indices_and_its_earlier_versions(engine: str) -> None:
    roles = roles_for(ALIAS, engine)
    patterns = {p for role in roles.values() for names in _patterns(engine, role) for p in names}
    # and on OpenSearch the writer's grant on the plugin's shared model index (docs/security.md)
    students = {STUDENT_INDEX} if engine == "opensearch" else set()
    assert patterns == {ALIAS, f"{ALIAS}--*", "/shop-r[0-9]+-[0-9]+/"} | students
    reader_patterns = {p for names in _patterns(engine, roles[f"cogr_reader_{ALIAS}"]) for p in names}
    assert STUDENT_INDEX not in reader_patterns
    dotted = {p for role in roles_for("shop.eu", engine).values() for names in _patterns(engine, role) for p in names}
    assert "/shop\\.eu-r[0-9]+-[0-9]+/" in dotted  # a literal '.' in the regex
    assert all("_why" not in role for role in roles.values())


def _patterns(engine: str, role: dict) -> list[list[str]]:
    key, names = ("index_permissions", "index_patterns") if engine == "opensearch" else ("indices", "names")
    return [grant[names] for grant in role[key]]


# ------------------------------------------------------------------ on the secured nodes

@dataclass(frozen=True)
class Scoped:
    """The node, with users `writer` and `reader` holding only the roles of ALIAS, ALIAS
    ingested by the writer and its neighbours (and a lease of each) by the admin."""

    node: SecureNode
    keywords: Path
    ids: tuple[str, ...]

    def fresh_keywords(self) -> Path:
        """A keyword file unlike any before it, so that a sync writes a new version (and
        installs the title pipeline) instead of finding nothing to do."""
        tag = uuid.uuid4().hex[:8]
        path = self.keywords.parent / f"item_keywords-{tag}.jsonl"
        write_keyword_file(path, ((item, ["oak", f"t{tag}"]) for item in self.ids))
        return path

    def as_user(self, user: str) -> dict[str, str]:
        return _env(self.node.home, self.node.url, COGR_CLUSTER_USER=user, COGR_CLUSTER_PASSWORD=USER_PASSWORD)

    def admin(self, method: str, path: str, body: dict | None = None) -> dict:
        return _admin_request(self.node.home, self.node.url, method, path, body)

    def status(self, user: str, method: str, path: str, body: dict | None = None) -> int:
        """The HTTP status `user` gets for one request."""
        request = urllib.request.Request(self.node.url + path, method=method,
                                         data=json.dumps(body).encode() if body is not None else None,
                                         headers={"Content-Type": "application/json"})
        request.add_header("Authorization", "Basic " + base64.b64encode(f"{user}:{USER_PASSWORD}".encode()).decode())
        context = ssl.create_default_context(cafile=str(self.node.home / "ca.pem"))
        try:
            with urllib.request.urlopen(request, timeout=30, context=context) as resp:
                return resp.status
        except urllib.error.HTTPError as err:
            return err.code

    def put_role(self, name: str, body: dict) -> None:
        if self.node.engine == "opensearch":
            self.admin("PUT", f"/_plugins/_security/api/roles/{name}", body)
        else:
            self.admin("PUT", f"/_security/role/{name}", body)


def _users(scoped: Scoped) -> None:
    for user in ("writer", "reader"):
        if scoped.node.engine == "opensearch":
            scoped.admin("PUT", f"/_plugins/_security/api/internalusers/{user}", {"password": USER_PASSWORD})
        else:
            scoped.admin("PUT", f"/_security/user/{user}", {"password": USER_PASSWORD, "roles": []})
    applied = _cli("security", "roles", "--apply", "--alias", ALIAS, "--writer-user", "writer", "--reader-user", "reader",
                   env=_env(scoped.node.home, scoped.node.url))
    assert applied.returncode == 0, applied.stderr


@pytest.fixture(scope="module")
def scoped(secure_node: SecureNode, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Scoped]:
    corpus = (sample_catalog_path() / "corpus.jsonl").read_text().splitlines()
    ids = [json.loads(line)["_id"] for line in corpus if line.strip()]
    keywords = tmp_path_factory.mktemp("scope-keywords") / "item_keywords.jsonl"
    write_keyword_file(keywords, ((item, ["oak", f"k{n % 5}"]) for n, item in enumerate(ids)))
    scoped = Scoped(secure_node, keywords, tuple(ids))
    _users(scoped)
    admin = _env(secure_node.home, secure_node.url)
    for neighbour in NEIGHBOURS:
        done = _cli("ingest", str(sample_catalog_path()), "--index", neighbour, env=admin)
        assert done.returncode == 0, done.stderr
        scoped.admin("PUT", f"/{lease_index(neighbour)}/_doc/{neighbour}?refresh=true", {"owner": "admin"})
    scoped.admin("PUT", f"/{LEGACY_LEASE_INDEX}/_doc/other?refresh=true", {"owner": "admin"})
    for args in (["ingest", str(sample_catalog_path()), "--index", ALIAS], ["sync", "--index", ALIAS,
                                                                           "--item-keywords", str(keywords)]):
        done = _cli(*args, env=scoped.as_user("writer"))
        assert done.returncode == 0, (args, done.stderr)
    yield scoped


@pytest.mark.parametrize("neighbour", NEIGHBOURS)
def test_the_writer_of_shop_is_refused_on_the_indices_of_an_alias_its_name_prefixes(scoped: Scoped,
                                                                                      neighbour: str) -> None:
    version, lease = f"{neighbour}--r0-1", lease_index(neighbour)
    own = next(iter(scoped.admin("GET", f"/{ALIAS}/_alias/{ALIAS}")))
    assert own.startswith(f"{ALIAS}--r") and scoped.status("writer", "GET", f"/{own}/_count") == 200  # its own
    refused = {
        "index into": scoped.status("writer", "POST", f"/{version}/_doc", {"title": "planted"}),
        "delete": scoped.status("writer", "DELETE", f"/{version}"),
        "create a version": scoped.status("writer", "PUT", f"/{neighbour}--r7-9", {}),
        "read the lease": scoped.status("writer", "GET", f"/{lease}/_doc/{neighbour}"),
        "overwrite the lease": scoped.status("writer", "PUT", f"/{lease}/_doc/{neighbour}", {"owner": "writer"}),
        "delete the lease": scoped.status("writer", "DELETE", f"/{lease}"),
        "read the old shared lease": scoped.status("writer", "GET", f"/{LEGACY_LEASE_INDEX}/_doc/other"),
        "write the old shared lease": scoped.status("writer", "PUT", f"/{LEGACY_LEASE_INDEX}/_doc/other", {}),
    }
    assert refused == dict.fromkeys(refused, 403)
    ingest = _cli("ingest", str(sample_catalog_path()), "--index", neighbour, env=scoped.as_user("writer"))
    lines = ingest.stderr.strip().splitlines()
    assert ingest.returncode == 1 and len(lines) == 1 and "HTTP 403" in lines[0], ingest.stderr
    assert scoped.admin("GET", f"/{version}/_count")["count"] == 359
    assert scoped.admin("GET", f"/{lease}/_doc/{neighbour}")["_source"] == {"owner": "admin"}


# Each privilege, the command that needs it, and what to prepare (as admin) so that the
# command reaches the call: (role kind, privilege, command, preparation).
_SYNC = ["sync", "--index", ALIAS, "--item-keywords", "{keywords}"]
_STATUS = ["sync", "--index", ALIAS, "--status"]
_EVAL = ["eval", "--data", str(sample_catalog_path()), "--index", ALIAS, "--method", "bm25", "--split", "all",
         "--cutoff", "10"]
_CASES = {
    "opensearch": [
        ("writer", "cluster:monitor/main", _STATUS, None),
        ("writer", "cluster:monitor/health", _STATUS, None),
        ("writer", "cluster:monitor/nodes/info", _SYNC, None),
        ("writer", "cluster_composite_ops", _SYNC, None),
        ("writer", "cluster:admin/ingest/pipeline/get", _SYNC, None),
        ("writer", "cluster:admin/ingest/pipeline/put", _SYNC, "drop-title-pipeline"),
        ("writer", "cluster:admin/search/pipeline/put", ["index", "create", "--index", ALIAS, "--pipelines",
                                                         "--service-url", "http://127.0.0.1:9"], None),
        ("writer", "indices:admin/index_template/get", ["index", "create", "--index", ALIAS], None),
        ("writer", "indices_all", _STATUS, None),
        ("reader", "cluster:monitor/main", _EVAL, None),
        ("reader", "cluster_composite_ops_ro", _EVAL, None),
        ("reader", "read", _EVAL, None),
        ("reader", "indices:admin/get", _EVAL, None),
    ],
    "elasticsearch": [
        ("writer", "cluster:monitor/health", _STATUS, None),
        ("writer", "cluster:monitor/nodes/info", _SYNC, None),
        ("writer", "indices:admin/index_template/get", ["index", "create", "--index", ALIAS], None),
        ("writer", "all", _STATUS, None),
        ("reader", "read", _EVAL, None),
        ("reader", "view_index_metadata", _EVAL, None),
    ],
}


def _without(engine: str, role: dict, privilege: str) -> dict:
    """`role` with `privilege` taken out of its cluster list or of every index grant."""
    cluster_key, index_key, actions = (("cluster_permissions", "index_permissions", "allowed_actions")
                                       if engine == "opensearch" else ("cluster", "indices", "privileges"))
    changed = json.loads(json.dumps(role))
    changed[cluster_key] = [p for p in changed[cluster_key] if p != privilege]
    changed[index_key] = [{**grant, actions: [a for a in grant[actions] if a != privilege]}
                          for grant in changed[index_key]]
    changed[index_key] = [grant for grant in changed[index_key] if grant[actions]]
    assert changed != role, privilege
    return changed


def _refused_without(scoped: Scoped, kind: str, privilege: str, command: list[str], prepare: str | None) -> str | None:
    """Run `command` as `kind` with `privilege` out of its role: None if it failed in one line
    naming the refusal (and ran again once the privilege was back), else what went wrong."""
    engine, name = scoped.node.engine, f"cogr_{kind}_{ALIAS}"
    full = roles_for(ALIAS, engine)[name]
    args = [arg.replace("{keywords}", str(scoped.fresh_keywords())) for arg in command]  # a sync that writes
    if prepare == "drop-title-pipeline":
        scoped.admin("DELETE", "/_ingest/pipeline/cogr-title-keyword-v1")
    scoped.put_role(name, _without(engine, full, privilege))
    try:
        refused = _cli(*args, env=scoped.as_user(kind))
    finally:
        scoped.put_role(name, full)
    lines = refused.stderr.strip().splitlines()
    if refused.returncode != 1 or len(lines) != 1 or not ("HTTP 403" in lines[0] or privilege in lines[0]):
        return f"{kind} {privilege}: {' '.join(command)} gave {refused.returncode}: {refused.stderr[-400:]}"
    args = [arg.replace("{keywords}", str(scoped.fresh_keywords())) for arg in command]
    done = _cli(*args, env=scoped.as_user(kind))
    if done.returncode != 0:
        return f"{kind} {privilege}: {' '.join(command)} failed with the privilege back: {done.stderr[-400:]}"
    return None


def test_each_privilege_is_needed_by_a_command(scoped: Scoped) -> None:
    """Every privilege of the node's engine's role file taken out in turn: its command fails."""
    problems = [problem for kind, privilege, command, prepare in _CASES[scoped.node.engine]
                if (problem := _refused_without(scoped, kind, privilege, command, prepare)) is not None]
    assert problems == [], "\n".join(problems)



@pytest.mark.parametrize("engine", SECURED_ENGINES)
def test_every_privilege_is_tested_or_says_why_it_is_kept(engine: str) -> None:
    tested = {(kind, privilege) for kind, privilege, _, _ in _CASES[engine]}
    for name, role in role_templates(engine).items():
        kind = name.split("_")[1]
        why = role.get("_why", {})
        if engine == "opensearch":
            privileges = [*role["cluster_permissions"], *(a for g in role["index_permissions"] for a in g["allowed_actions"])]
        else:
            privileges = [*role["cluster"], *(p for g in role["indices"] for p in g["privileges"])]
        untested = {p for p in privileges if (kind, p) not in tested}
        assert untested == set(why), (name, untested ^ set(why))
        assert all(len(reason) > 20 for reason in why.values())


def test_the_writer_is_refused_another_aliass_earlier_release_versions(scoped: Scoped) -> None:
    """Runs last: once `shop-retail-r0-1` exists, OpenSearch refuses the writer of `shop`
    the listing `shop-r*` (it reaches that index), which this test checks is one line."""
    scoped.admin("PUT", "/shop-r0-0", {})
    scoped.admin("PUT", "/shop-retail-r0-1", {})
    assert scoped.status("writer", "GET", "/shop-r0-0/_count") == 200  # its own earlier version
    assert scoped.status("writer", "POST", "/shop-retail-r0-1/_doc", {"title": "planted"}) == 403
    assert scoped.status("writer", "DELETE", "/shop-retail-r0-1") == 403
    status = _cli(*_STATUS, "--json", env=scoped.as_user("writer"))
    if scoped.node.engine == "elasticsearch":  # its security lists only what the user may see
        assert status.returncode == 0, status.stderr
        assert [v["index"] for v in json.loads(status.stdout)["versions"]][0] == "shop-r0-0"
    else:
        lines = status.stderr.strip().splitlines()
        assert status.returncode == 1 and len(lines) == 1, status.stderr
        assert "shop-r* also reaches another alias's such versions" in lines[0], lines[0]
    scoped.admin("DELETE", "/shop-retail-r0-1")
    status = _cli(*_STATUS, "--json", env=scoped.as_user("writer"))
    assert status.returncode == 0, status.stderr
    assert [v["index"] for v in json.loads(status.stdout)["versions"]][:1] == ["shop-r0-0"]
