"""The expansion service for production: a bearer token (`--token-file`), TLS
(`--tls-cert/--tls-key`, with a CA made for the test by the local node's certificate
maker) and `GET /metrics`; the Python client sending the token. Each service is a real
`cogr-search serve` process on a loopback port, answering with a run's students."""

from __future__ import annotations

import ssl
import subprocess
import sys
import urllib.error
from collections.abc import Iterator
from pathlib import Path

import pytest
from prometheus_client.parser import text_string_to_metric_families

from cogr_search.errors import CogrError
from cogr_search.generators.students.distill import distill_run
from cogr_search.localnode.security import CA_NAME, make_certificates
from cogr_search.serve.client import CogrSearch
from cogr_search.serve.expander import ServiceExpander
from cogr_search.serve.process import http_json
from tests.conftest import REPO_ROOT
from tests.serve_support import ServiceProcess, subprocess_env
from tests.student_support import make_keyword_run

TOKEN = "s3cret-token-for-the-service"
QUERY = "/v1/expand/query"


@pytest.fixture(scope="module")
def run(tmp_path_factory: pytest.TempPathFactory):  # noqa: ANN201 - RunDir
    run = make_keyword_run(tmp_path_factory.mktemp("serve-secured"), "secured")
    distill_run(run, 0, threads=1, echo=lambda line: None)
    return run


@pytest.fixture(scope="module")
def certs(tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = tmp_path_factory.mktemp("service-certs")
    make_certificates(folder)
    return folder


@pytest.fixture(scope="module")
def token_file(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("token") / "service-token"
    path.write_text(TOKEN + "\n")  # the trailing newline an editor leaves is stripped
    return path


@pytest.fixture(scope="module")
def service(run, certs: Path, token_file: Path) -> Iterator[ServiceProcess]:  # noqa: ANN001
    with ServiceProcess(run, "--token-file", str(token_file), "--tls-cert", str(certs / "node.pem"),
                        "--tls-key", str(certs / "node-key.pem"), token=TOKEN, ca_certs=certs / CA_NAME) as process:
        yield process


def _query(service: ServiceProcess, headers: dict[str, str]) -> tuple[int, dict]:
    return http_json("POST", service.url + QUERY, {"texts": ["oak dining table"]}, headers=headers,
                     context=service.context)


def test_without_or_with_a_wrong_token_401_with_it_200_and_health_stays_open(service: ServiceProcess) -> None:
    status, body = _query(service, {})
    assert status == 401 and body["error"].startswith("missing bearer token"), body
    status, body = _query(service, {"Authorization": "Bearer not-the-token"})
    assert status == 401 and body["error"].startswith("wrong bearer token"), body
    status, body = _query(service, {"Authorization": "Basic " + TOKEN})
    assert status == 401, body
    status, body = _query(service, {"Authorization": f"Bearer {TOKEN}"})
    assert status == 200 and body["expander"] == "student" and len(body["keywords"]) == 1, body
    status, health = http_json("GET", service.url + "/health", context=service.context)
    assert status == 200 and health["status"] == "ok"
    assert service.get_text("/metrics", headers={})[0] == 200  # open by default, for scrapers


def test_tls_is_verified_against_the_ca_and_plain_http_gets_no_answer(service: ServiceProcess) -> None:
    assert service.url.startswith("https://")
    with pytest.raises(urllib.error.URLError) as refused:  # the system CAs do not know the test's CA
        http_json("GET", service.url + "/health", context=ssl.create_default_context())
    assert isinstance(refused.value.reason, ssl.SSLCertVerificationError)
    with pytest.raises(OSError):
        http_json("GET", service.url.replace("https://", "http://") + "/health", timeout=10)


def test_the_python_client_sends_the_token_and_trusts_the_ca(service: ServiceProcess, certs: Path,
                                                             monkeypatch: pytest.MonkeyPatch) -> None:
    direct = ServiceExpander(service.url, token=TOKEN, ca_certs=certs / CA_NAME)
    assert len(direct.expand_queries(["oak dining table", "linen pillow"])) == 2
    with pytest.raises(CogrError, match="HTTP 401: wrong bearer token"):
        ServiceExpander(service.url, token="wrong", ca_certs=certs / CA_NAME).expand_queries(["oak"])
    monkeypatch.setenv("COGR_SERVICE_TOKEN", TOKEN)
    monkeypatch.setenv("COGR_SERVICE_CA_CERTS", str(certs / CA_NAME))
    from_settings = CogrSearch.from_service(None, service.url)
    assert from_settings.expand("oak dining table") == direct.expand_queries(["oak dining table"])[0]


def _samples(text: str) -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
    return {(s.name, tuple(sorted(s.labels.items()))): s.value
            for family in text_string_to_metric_families(text) for s in family.samples}


def test_metrics_count_requests_cache_hits_and_the_expander_after_traffic(run, token_file: Path) -> None:  # noqa: ANN001
    with ServiceProcess(run, "--token-file", str(token_file), "--metrics-auth", token=TOKEN) as service:
        assert service.get_text("/metrics", headers={})[0] == 401  # --metrics-auth: the token is needed
        assert service.post(QUERY, {"texts": ["oak table", "pine shelf"]})[0] == 200
        assert service.post(QUERY, {"texts": ["oak table"]})[0] == 200  # a cache hit
        assert service.post("/v1/expand/item", {"items": [{"title": "Walnut desk"}]})[0] == 200
        assert service.post(QUERY, {"texts": [""]})[0] == 400
        assert _query(service, {})[0] == 401
        status, text = service.get_text("/metrics")
    assert status == 200
    samples = _samples(text)
    query = (("expander", "student"), ("side", "query"))
    assert samples[("cogr_http_requests_total", (("route", QUERY), ("status", "200")))] == 2
    assert samples[("cogr_http_requests_total", (("route", QUERY), ("status", "400")))] == 1
    assert samples[("cogr_http_requests_total", (("route", QUERY), ("status", "401")))] == 1
    assert samples[("cogr_http_requests_total", (("route", "/metrics"), ("status", "401")))] == 1
    assert samples[("cogr_http_request_duration_seconds_count", (("route", QUERY),))] == 4
    assert samples[("cogr_expand_requests_total", query)] == 2  # the 400 and the 401 never reached the batcher
    assert samples[("cogr_expand_texts_total", query)] == 3
    assert samples[("cogr_cache_hits_total", query)] == 1
    assert samples[("cogr_generated_texts_total", query)] == 2
    assert samples[("cogr_expand_texts_total", (("expander", "student"), ("side", "item")))] == 1
    assert samples[("cogr_overloads_total", query)] == 0 and samples[("cogr_timeouts_total", query)] == 0
    info = next(labels for (name, labels) in samples if name == "cogr_expander_info")
    assert dict(info)["expander"] == "student" and dict(info)["run"] == run.name


@pytest.mark.parametrize(("options", "said"), [
    (["--token-file", "{tmp}/absent"], "token file {tmp}/absent: No such file"),
    (["--token-file", "{tmp}/empty"], "token file {tmp}/empty: empty"),
    (["--tls-cert", "{certs}/node.pem"], "--tls-cert and --tls-key go together"),
    (["--tls-cert", "{certs}/node.pem", "--tls-key", "{certs}/admin-key.pem"],
     "--tls-key {certs}/admin-key.pem is not the private key of --tls-cert {certs}/node.pem"),
], ids=["absent-token-file", "empty-token-file", "cert-without-key", "key-of-another-cert"])
def test_bad_security_options_are_one_line_and_exit_1(run, certs: Path, tmp_path: Path, options: list[str],  # noqa: ANN001
                                                      said: str) -> None:
    (tmp_path / "empty").write_text("\n")
    args = [o.format(tmp=tmp_path, certs=certs) for o in options]
    done = subprocess.run([sys.executable, "-m", "cogr_search.cli", "serve", "--run", str(run.root), "--port", "0", *args],
                          cwd=REPO_ROOT, env=subprocess_env(),
                          capture_output=True, text=True, timeout=120, check=False)
    lines = done.stderr.strip().splitlines()
    assert done.returncode == 1 and len(lines) == 1, done.stderr
    assert said.format(tmp=tmp_path, certs=certs) in lines[0], lines[0]
