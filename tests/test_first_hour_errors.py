"""A secured cluster's first hour (issue 37, item 8): the mistakes a new user makes between
`opensearch start --secure` and a token-protected TLS service, each one line, exit 1, and
nothing written; and the notes that keep a forgotten export from going unnoticed.

The bad-input helpers are the matrix's (tests/test_cli_errors.py): each case is a real
`python -m cogr_search.cli` process. The connection cases need no cluster: a real TLS
server on loopback (tests/loopback_servers.py) stands where the cluster should be. The
role cases need a secured node: with `COGR_TEST_NODES=secure` the session's secured
OpenSearch 2.19 and Elasticsearch 8.17, else one started here by `ENGINE start --secure`
per engine (one at a time), as tests/test_secure_node.py does.
"""

from __future__ import annotations

import base64
import json
import os
import ssl
import subprocess
import sys
import urllib.error
import urllib.request
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

import pytest

from cogr_search.bench.node import free_port_run
from cogr_search.data import sample_catalog_path
from cogr_search.generators.students.distill import distill_run
from cogr_search.localnode.record import write_record
from cogr_search.localnode.security import CA_NAME, PASSWORD_FILE, make_certificates
from cogr_search.serve.process import http_json
from tests.conftest import REPO_ROOT, free_port, secure_chosen
from tests.loopback_servers import OPENSEARCH_ROOT, Answer, LoopbackServer, tls_context
from tests.serve_support import ServiceProcess, subprocess_env
from tests.student_support import make_keyword_run
from tests.test_cli_errors import _problem

SAMPLE = str(sample_catalog_path())
PASSWORD = "Str0ng-Passw0rd-for-tests!"
TOKEN = "first-hour-service-token"


def _env(tmp: Path, keep_credentials: bool = False, **changes: str) -> dict[str, str]:
    """A user's environment: no cluster or service settings (the session's credentials
    only when asked), this checkout on PYTHONPATH, one retry, an empty home."""
    dropped = ("COGR_CLUSTER_URL", "COGR_OPENSEARCH_", "COGR_ENGINE", "COGR_SERVICE_", "COGR_DEBUG", "COGR_LOCAL_PORT")
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(dropped) and (keep_credentials or not k.startswith("COGR_CLUSTER_"))}
    env.update({"PYTHONPATH": str(REPO_ROOT), "COGR_CLUSTER_RETRIES": "1", "COGR_HOME": str(tmp / "home")})
    env.update(changes)
    return env


def _cli(*args: str, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "cogr_search.cli", *args], cwd=REPO_ROOT, env=env,
                          capture_output=True, text=True, timeout=600, check=False)


def _one_error(done: subprocess.CompletedProcess[str]) -> str:
    """The one `Error:` line of a refused command (asserted to be exactly that, exit 1)."""
    lines = done.stderr.strip().splitlines()
    assert done.returncode == 1 and len(lines) == 1 and lines[0].startswith("Error: "), done.stderr
    assert "Traceback" not in done.stderr
    return lines[0]


# ------------------------------------------------------------------ CA and URL mistakes (no cluster)

def test_url_and_ca_mistakes_are_one_line_naming_the_variable_and_reach_nothing(tmp_path: Path) -> None:
    other = tmp_path / "other-ca"
    other.mkdir()
    make_certificates(other)  # a readable PEM CA, but not the one that signed the server's certificate
    not_pem = tmp_path / "not-a-ca.pem"
    not_pem.write_text("hello\n")
    typo = tmp_path / "tls" / "ca.pm"
    dead = free_port()
    with LoopbackServer(Answer.json(200, OPENSEARCH_ROOT), tls=tls_context(tmp_path / "tls")) as node:
        bare = node.url.removeprefix("https://")
        cases = [
            ("no scheme (flag)", ["--cluster-url", bare], {},
             f"COGR_CLUSTER_URL (or --cluster-url) {bare!r} is not an http:// or https:// URL: use http://{bare}"),
            ("no scheme (variable)", [], {"COGR_CLUSTER_URL": "localhost:9200"},
             "'localhost:9200' is not an http:// or https:// URL: use http://localhost:9200"),
            ("CA path typo", [], {"COGR_CLUSTER_URL": node.url, "COGR_CLUSTER_CA_CERTS": str(typo)},
             f"COGR_CLUSTER_CA_CERTS={typo}: no such file"),
            ("CA file not PEM", [], {"COGR_CLUSTER_URL": node.url, "COGR_CLUSTER_CA_CERTS": str(not_pem)},
             f"COGR_CLUSTER_CA_CERTS={not_pem}: not a PEM CA certificate"),
            ("wrong CA", [], {"COGR_CLUSTER_URL": node.url, "COGR_CLUSTER_CA_CERTS": str(other / CA_NAME)},
             f"the cluster at {node.url} presents a certificate that the CA in COGR_CLUSTER_CA_CERTS="
             f"{other / CA_NAME} did not verify"),
            ("default cluster down", [], {"COGR_LOCAL_PORT": str(dead)},
             f"cannot reach the cluster at http://127.0.0.1:{dead} (the default; set COGR_CLUSTER_URL to choose)"),
        ]
        with ThreadPoolExecutor(max_workers=3) as pool:
            problems = list(pool.map(lambda case: _problem(
                case[0], ["ingest", SAMPLE, "--index", "first-hour", *case[1]], _env(tmp_path, **case[2]), case[3]),
                cases))
        assert not [p for p in problems if p], "\n".join(p for p in problems if p)
        assert node.requests == []  # the wrong CA failed the handshake; the others never connected
    assert not (tmp_path / "home").exists() or not any((tmp_path / "home").rglob("*"))


@pytest.mark.opensearch
def test_a_command_on_the_local_node_nobody_named_says_which_cluster(opensearch_url: str, tmp_path: Path) -> None:
    """With the exports forgotten, the command still runs on the local node, and one line on
    stderr says which cluster it used and why."""
    record_home = tmp_path / "home" / "opensearch"
    record_home.mkdir(parents=True)
    port = int(opensearch_url.rsplit(":", 1)[1].strip("/"))
    write_record(record_home, {"pid": os.getpid(), "port": port, "url": opensearch_url, "home": str(record_home),
                               "start_seconds": 0, "engine": "opensearch"})
    done = _cli("security", "roles", "--print", "--alias", "x", env=_env(tmp_path, keep_credentials=True))
    assert done.returncode == 0 and done.stderr == "", done.stderr  # no cluster asked: nothing said
    done = _cli("sync", "--index", "first-hour-none", "--status", env=_env(tmp_path, keep_credentials=True))
    lines = done.stderr.strip().splitlines()
    assert lines[0] == (f"cluster: {opensearch_url.rstrip('/')} (the local node recorded in {record_home / 'node.json'}; "
                        "set COGR_CLUSTER_URL to choose)"), done.stderr
    assert len(lines) == 2 and lines[1].startswith("Error: alias 'first-hour-none' does not exist"), done.stderr


# ------------------------------------------------------------------ users and roles (a secured node)

@dataclass(frozen=True)
class Secured:
    """A secured node of one engine: its URL, CA and admin password."""

    engine: str
    url: str
    ca: Path
    password: str

    @property
    def label(self) -> str:
        return {"opensearch": "OpenSearch", "elasticsearch": "Elasticsearch"}[self.engine]

    def env(self, tmp: Path, user: str = "admin", password: str | None = None) -> dict[str, str]:
        return _env(tmp, COGR_CLUSTER_URL=self.url, COGR_CLUSTER_USER=user,
                    COGR_CLUSTER_PASSWORD=password or self.password, COGR_CLUSTER_CA_CERTS=str(self.ca))

    def admin(self, method: str, path: str, body: dict | None = None) -> tuple[int, dict]:
        """A request as the admin, with the standard library (not the code under test)."""
        request = urllib.request.Request(self.url + path, method=method, headers={"Content-Type": "application/json"},
                                         data=json.dumps(body).encode() if body is not None else None)
        request.add_header("Authorization", "Basic " + base64.b64encode(f"admin:{self.password}".encode()).decode())
        try:
            with urllib.request.urlopen(request, timeout=30, context=ssl.create_default_context(cafile=str(self.ca))) as r:
                return r.status, json.loads(r.read() or b"{}")
        except urllib.error.HTTPError as err:
            return err.code, {}

    def create_user(self, user: str) -> None:
        """What docs/security.md tells a new user to run, each engine's way."""
        if self.engine == "opensearch":
            status, _ = self.admin("PUT", f"/_plugins/_security/api/internalusers/{user}", {"password": PASSWORD})
        else:
            status, _ = self.admin("PUT", f"/_security/user/{user}", {"password": PASSWORD, "roles": []})
        assert status in (200, 201), status

    def role_exists(self, name: str) -> bool:
        path = f"/_plugins/_security/api/roles/{name}" if self.engine == "opensearch" else f"/_security/role/{name}"
        status, body = self.admin("GET", path)
        return status == 200 and name in body


@pytest.fixture(scope="module", params=["opensearch", "elasticsearch"])
def secured(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Secured]:
    engine = request.param
    if secure_chosen():  # the session's secured node and credentials
        url = request.getfixturevalue("opensearch_node_url" if engine == "opensearch" else "elasticsearch_url")
        yield Secured(engine, url.rstrip("/"), Path(os.environ["COGR_CLUSTER_CA_CERTS"]),
                      os.environ["COGR_CLUSTER_PASSWORD"])
        return
    home = tmp_path_factory.mktemp(f"first-hour-{engine}")
    env = _env(home)
    started = _cli(engine, "start", "--secure", "--home", str(home), "--port", str(free_port_run(1)), "--heap", "512m",
                   env=env)
    try:
        assert started.returncode == 0, started.stderr
        yield Secured(engine, started.stdout.strip(), home / CA_NAME, (home / PASSWORD_FILE).read_text().strip())
    finally:
        _cli(engine, "stop", "--secure", "--home", str(home), env=env)


@pytest.mark.slow
@pytest.mark.opensearch
def test_roles_apply_looks_each_user_up_before_writing(secured: Secured, tmp_path: Path) -> None:
    alias = f"fh-typo-{secured.engine[:2]}"
    done = _cli("security", "roles", "--apply", "--alias", alias, "--writer-user", "nobody-fh", env=secured.env(tmp_path))
    if secured.engine == "elasticsearch":  # a native user must exist: refused, nothing written
        line = _one_error(done)
        assert "--writer-user/--reader-user 'nobody-fh': no such native user" in line, line
        assert "PUT _security/user/nobody-fh" in line, line
        assert not secured.role_exists(f"cogr_writer_{alias}")
    else:  # a mapping may name a user of an external backend: applied, with one warning line
        assert done.returncode == 0, done.stderr
        lines = done.stderr.strip().splitlines()
        assert len(lines) == 1 and lines[0].startswith("warning: 'nobody-fh' is not an internal user of OpenSearch"), lines
        assert "PUT _plugins/_security/api/internalusers/nobody-fh" in lines[0], lines[0]


@pytest.mark.slow
@pytest.mark.opensearch
def test_roles_apply_by_a_non_admin_says_it_needs_a_security_admin(secured: Secured, tmp_path: Path) -> None:
    """A user with no role at all is refused at GET / (OpenSearch) in one line; one holding a
    reader's role is told that applying roles needs a security admin."""
    secured.create_user("fh-plain")
    alias = f"fh-plain-{secured.engine[:2]}"
    if secured.engine == "opensearch":  # no role: even GET / (cluster:monitor/main) is refused
        line = _one_error(_cli("sync", "--index", alias, "--status", env=secured.env(tmp_path, "fh-plain", PASSWORD)))
        assert f"the cluster at {secured.url} refused user 'fh-plain' its root endpoint GET / (HTTP 403)" in line, line
    applied = _cli("security", "roles", "--apply", "--alias", f"fh-other-{secured.engine[:2]}", "--reader-user",
                   "fh-plain", env=secured.env(tmp_path))
    assert applied.returncode == 0, applied.stderr
    line = _one_error(_cli("security", "roles", "--apply", "--alias", alias,
                           env=secured.env(tmp_path, "fh-plain", PASSWORD)))
    assert f"security roles --apply needs a security admin: {secured.label} at {secured.url} refused user " \
           "'fh-plain' (HTTP 403)" in line, line
    assert "{" not in line  # no raw JSON answer
    assert not secured.role_exists(f"cogr_writer_{alias}")


@pytest.mark.slow
@pytest.mark.opensearch
def test_a_readers_refusal_names_the_role_of_its_alias(secured: Secured, tmp_path: Path) -> None:
    alias = f"fh-shop-{secured.engine[:2]}"
    secured.create_user("fh-reader")
    applied = _cli("security", "roles", "--apply", "--alias", alias, "--reader-user", "fh-reader",
                   env=secured.env(tmp_path))
    assert applied.returncode == 0 and applied.stderr == "", applied.stderr
    reader = secured.env(tmp_path, "fh-reader", PASSWORD)
    for args in (["ingest", SAMPLE, "--index", alias], ["index", "create", "--index", alias]):
        line = _one_error(_cli(*args, env=reader))
        assert "user 'fh-reader' lacks " in line and f"map it to the role cogr_writer_{alias} " in line, (args, line)
    assert secured.admin("GET", f"/{alias}-*")[1] == {}  # nothing was created


@pytest.mark.opensearch
@pytest.mark.slow
def test_a_wrong_ca_for_the_secured_node_names_the_variable(secured: Secured, tmp_path: Path) -> None:
    (tmp_path / "other").mkdir()
    make_certificates(tmp_path / "other")
    env = {**secured.env(tmp_path), "COGR_CLUSTER_CA_CERTS": str(tmp_path / "other" / CA_NAME)}
    line = _one_error(_cli("sync", "--index", "fh-any", "--status", env=env))
    assert f"the CA in COGR_CLUSTER_CA_CERTS={tmp_path / 'other' / CA_NAME} did not verify" in line, line


# ------------------------------------------------------------------ the service

@pytest.fixture(scope="module")
def certs(tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = tmp_path_factory.mktemp("first-hour-certs")
    make_certificates(folder)
    (folder / "other").mkdir()
    make_certificates(folder / "other")
    (folder / "token").write_text(TOKEN + "\n")
    return folder


@pytest.fixture(scope="module")
def tls_service(certs: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServiceProcess]:
    """A token-protected https service answering with a run's students."""
    run = make_keyword_run(tmp_path_factory.mktemp("first-hour-run"), "first-hour")
    distill_run(run, 0, threads=1, echo=lambda line: None)
    with ServiceProcess(run, "--token-file", str(certs / "token"), "--tls-cert", str(certs / "node.pem"),
                        "--tls-key", str(certs / "node-key.pem"), token=TOKEN, ca_certs=certs / CA_NAME) as service:
        yield service


@pytest.mark.opensearch
def test_search_through_an_untrusted_tls_service_names_cogr_service_ca_certs(tls_service: ServiceProcess, certs: Path,
                                                                            opensearch_url: str, tmp_path: Path) -> None:
    env = _env(tmp_path, keep_credentials=True, COGR_CLUSTER_URL=opensearch_url, COGR_SERVICE_TOKEN=TOKEN)
    args = ["search", "lamp", "--index", "fh-any", "--service", tls_service.url]
    line = _one_error(_cli(*args, env=env))
    assert f"expansion service {tls_service.url} presents a certificate this machine does not trust" in line, line
    assert "set COGR_SERVICE_CA_CERTS to the CA file that signed it" in line, line
    wrong = certs / "other" / CA_NAME
    line = _one_error(_cli(*args, env={**env, "COGR_SERVICE_CA_CERTS": str(wrong)}))
    assert f"the CA in COGR_SERVICE_CA_CERTS={wrong} did not verify" in line, line


def test_the_openapi_page_needs_the_token_and_the_401_says_so(tls_service: ServiceProcess) -> None:
    status, body = http_json("GET", tls_service.url + "/docs", context=tls_service.context)
    assert status == 401 and body["error"].startswith("missing bearer token"), body
    assert "/docs and /openapi.json included" in body["error"], body
    status, _ = tls_service.get_text("/docs", headers={"Authorization": f"Bearer {TOKEN}"})
    assert status == 200


@pytest.mark.parametrize(("key", "said"), [
    ("node.pem", "--tls-key {certs}/node.pem: the private key could not be read"),  # the certificate given as key
    ("token", "--tls-key {certs}/token: the private key could not be read"),
], ids=["certificate-as-key", "not-pem"])
def test_an_unreadable_key_is_named_in_one_line(certs: Path, tmp_path: Path, key: str, said: str) -> None:
    run = make_keyword_run(tmp_path, "key-check")
    done = subprocess.run([sys.executable, "-m", "cogr_search.cli", "serve", "--run", str(run.root), "--port", "0",
                           "--tls-cert", str(certs / "node.pem"), "--tls-key", str(certs / key)],
                          cwd=REPO_ROOT, env=subprocess_env(), capture_output=True, text=True, timeout=120, check=False)
    line = _one_error(done)
    assert said.format(certs=certs) in line and "PEM lib" not in line, line
