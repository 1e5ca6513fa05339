"""What differs between OpenSearch and Elasticsearch, in one place (DESIGN.md section 3).

Everything above `Cluster` (ingest, sync, eval, search, the Python API, the service, the
benchmarks) speaks one dialect: the request methods both Python clients share
(`search(index=, body=)`, `bulk(body=NDJSON)`, `indices.create(index=, body=)`, ...),
plain dict responses (`Engine.unwrap`), and the exception tuples below. What does not
fit that dialect lives here, as attributes of an `Engine`:

- the client class (opensearch-py, or the official `elasticsearch` client from the
  `elasticsearch` extra) and how it is configured for the project's retry policy;
- the error classes, which of them are transient, and how one is described in a line;
- the BM25 variant the engine scores with (the shadow index reproduces both), by version;
- whether search pipelines and the cogr-search plugin can exist there.

The engine is detected from the cluster's root endpoint (`GET /`): OpenSearch answers
`version.distribution == "opensearch"`; Elasticsearch sends the `X-Elastic-Product:
Elasticsearch` header and a `version.build_flavor`. `COGR_ENGINE` overrides detection.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any, Literal

from opensearchpy import OpenSearch
from opensearchpy import exceptions as os_exc

from cogr_search.cluster.json_codec import OrjsonSerializer
from cogr_search.cluster.permissions import permission_hint
from cogr_search.errors import CogrError
from cogr_search.settings import Settings
from cogr_search.shadow.bm25 import Bm25Variant
from cogr_search.cluster.connection_checks import check_ca_certs

EngineName = Literal["opensearch", "elasticsearch"]
TRANSIENT_STATUS = frozenset({429, 502, 503, 504})

try:  # the `elasticsearch` extra
    import elastic_transport as _es_transport
    import elasticsearch as _es
except ImportError:  # pragma: no cover - exercised only where the extra is missing
    _es = None
    _es_transport = None


def _classes(*names: tuple[Any, str]) -> tuple[type[BaseException], ...]:
    return tuple(getattr(module, name) for module, name in names if module is not None)


NOT_FOUND = _classes((os_exc, "NotFoundError"), (_es, "NotFoundError"))
"""`except NOT_FOUND:` catches a 404 from either client."""
API_ERRORS = _classes((os_exc, "TransportError"), (_es, "ApiError"))
"""The cluster answered with an error status (opensearch-py's TransportError also
covers its connection errors, which `Cluster.call` has retried before they escape)."""
CONNECTION_ERRORS = _classes(
    (os_exc, "ConnectionError"), (os_exc, "ConnectionTimeout"),
    (_es_transport, "ConnectionError"), (_es_transport, "ConnectionTimeout"),
)
TIMEOUTS = _classes((os_exc, "ConnectionTimeout"), (_es_transport, "ConnectionTimeout"))
CLIENT_ERRORS = _classes(
    (os_exc, "OpenSearchException"), (_es, "ApiError"), (_es_transport, "TransportError"),
    (_es, "SerializationError"), (_es, "UnsupportedProductError"),
)
"""Every exception either client raises: what `describe_error` turns into one line."""


def status_of(exc: BaseException) -> int | None:
    """The HTTP status of a cluster error, None for connection failures and others."""
    status = getattr(exc, "status_code", None) if isinstance(exc, API_ERRORS) else None
    return status if isinstance(status, int) else None


def is_transient(exc: BaseException) -> bool:
    """Failures worth retrying: the cluster may answer a moment later."""
    return isinstance(exc, CONNECTION_ERRORS) or status_of(exc) in TRANSIENT_STATUS


_ERRNO = re.compile(r"\[Errno -?\d+\] ([^)'\"]+)")


def one_line(exc: BaseException | None) -> str:
    """A short reason: `HTTP 503 ...`, `Connection refused`, `timed out`, or the text."""
    if exc is None:
        return "unknown error"
    status = status_of(exc)
    if status is not None:
        error = getattr(exc, "error", None)  # elasticsearch-py: None for a body-less answer (HEAD)
        return f"HTTP {status} {error or ''}".rstrip()
    text = " ".join(str(exc).split())
    if isinstance(exc, CONNECTION_ERRORS):
        reason = _ERRNO.search(text)  # "[Errno 111] Connection refused" inside urllib3's repr
        if reason:
            return reason.group(1).strip()
        if isinstance(exc, TIMEOUTS):
            return "timed out"
    return f"{type(exc).__name__}: {text}"[:300]


def _root_cause(info: object) -> dict:
    """The first root cause of an error body (`{"error": {"root_cause": [...]}}`)."""
    error = info.get("error") if isinstance(info, dict) else None
    if not isinstance(error, dict):
        return {}
    causes = error.get("root_cause") or [error]
    return causes[0] if isinstance(causes[0], dict) else {}


def error_type(exc: BaseException) -> str | None:
    """The cluster's root-cause error type (e.g. `resource_already_exists_exception`)."""
    return _root_cause(getattr(exc, "info", None)).get("type")


def error_reason(exc: BaseException) -> str:
    """The cluster's root-cause reason of a refused request, else its status line."""
    info = getattr(exc, "info", None)
    cause = _root_cause(info)
    return str(cause.get("reason") or (info if isinstance(info, str) and info else one_line(exc)))


def _label_of(exc: BaseException) -> str:
    """Which engine's client raised `exc`, for messages."""
    return "OpenSearch" if type(exc).__module__.split(".")[0] == "opensearchpy" else "Elasticsearch"


def _bulk_errors(exc: BaseException) -> list | None:
    """The per-document errors of a client helper's `BulkIndexError`, else None."""
    if type(exc).__name__ != "BulkIndexError":
        return None
    errors = getattr(exc, "errors", None)
    return errors if isinstance(errors, list) else []


def describe_error(exc: BaseException) -> str | None:
    """One line for a client exception (either engine's) that escaped a command, naming
    the index where the cluster says which; None for exceptions that are not the clients'."""
    if not isinstance(exc, CLIENT_ERRORS):
        return None
    label = _label_of(exc)
    errors = _bulk_errors(exc)
    if errors is not None:
        first = next(iter(errors[0].values()), {}) if errors and isinstance(errors[0], dict) else {}
        first = first if isinstance(first, dict) else {}
        error = first.get("error")
        reason = error.get("reason", error) if isinstance(error, dict) else error
        return (f"{label} rejected {len(errors)} document(s); first: index {first.get('_index')!r}, "
                f"document {first.get('_id')!r}: {str(reason)[:200]}")
    if isinstance(exc, CONNECTION_ERRORS):
        return f"cannot reach {label}: {one_line(exc)}"
    status = status_of(exc)
    if status is not None:
        cause = _root_cause(getattr(exc, "info", None))
        index = cause.get("index")
        where = f" on index {index!r}" if index else ""
        reason = " ".join(error_reason(exc).split())[:300]
        if status == 403:
            hint = permission_hint(reason, getattr(exc, "cogr_alias", None), getattr(exc, "cogr_writer_only", False))
            if hint is not None:
                return f"{label} refused the request{where} (HTTP 403): {hint}"
            if reason in ("", "HTTP 403", "403", "HTTP 403 None"):  # a HEAD request: the answer has no body
                return (f"{label} refused the request{where} (HTTP 403, no reason given): the user lacks a permission "
                        "this command needs (`cogr-search security roles --print --alias ALIAS` shows what each role grants)")
        return f"{label} refused the request{where} (HTTP {status} {getattr(exc, 'error', None) or ''}): {reason}"
    return f"{label} client error: {' '.join(str(exc).split())[:300]}"


@dataclass(frozen=True)
class Engine:
    """One search engine family: its client, BM25 variant and features."""

    name: EngineName
    label: str
    bm25: Bm25Variant
    search_pipelines: bool
    """`_search/pipeline` exists (OpenSearch 2.9+); on Elasticsearch expansion is client-side."""
    plugin: bool
    """The cogr-search plugin (ingest processor, search processors) can be installed."""
    version: str | None = None

    def with_version(self, version: str | None) -> "Engine":
        """This engine as `GET /` reported it: the version, and the BM25 variant it implies."""
        return Engine(self.name, self.label, bm25_variant(self.name, version), self.search_pipelines, self.plugin,
                      version)

    @property
    def description(self) -> str:
        return f"{self.label} {self.version}" if self.version else self.label

    def client(self, url: str, settings: Settings) -> Any:
        """A client with its own retries off: `Cluster.call` retries, in one place."""
        if self.name == "opensearch":
            if settings.cluster_api_key:
                raise CogrError(no_api_keys(url))
            return _opensearch_client(url, settings, _auth(settings))
        return _elasticsearch_client(url, settings, _auth(settings))

    @staticmethod
    def unwrap(response: Any) -> Any:
        """A plain dict (or bool, for HEAD requests): elasticsearch-py wraps bodies in
        `ObjectApiResponse`/`HeadApiResponse`, opensearch-py returns them as they are."""
        body = getattr(response, "body", None)
        return body if body is not None and hasattr(response, "meta") else response

    def request(self, client: Any, method: str, path: str, body: object = None, params: dict | None = None) -> Any:
        """A raw REST call (a path neither client has a method for)."""
        if self.name == "opensearch":
            return client.transport.perform_request(method, path, body=body, params=params)
        headers = {"accept": "application/json"}
        if body is not None:
            headers["content-type"] = "application/json"
        return client.perform_request(method, path, body=body, params=params, headers=headers)

    def require_search_pipelines(self, what: str) -> None:
        """One clear line where a command needs OpenSearch's pipelines or the plugin."""
        if not (self.search_pipelines and self.plugin):
            raise CogrError(
                f"{what} needs OpenSearch with the cogr-search plugin: {self.description} has no search "
                "pipelines and the plugin is OpenSearch-only; enrich and expand client-side instead "
                "(`ingest --enrich --run RUN`, `search --run RUN`, the service, the Python API `CogrSearch`)"
            )


def _major(version: str | None) -> int | None:
    try:
        return int(str(version).split(".")[0])
    except ValueError:
        return None


def bm25_variant(name: str, version: str | None) -> Bm25Variant:
    """The similarity behind `"type": "BM25"` on this engine and version.

    - OpenSearch 2.x: `LegacyBM25Similarity` (query boost x (1 + k1)), measured on 2.19
      (tests/test_parity_opensearch.py). OpenSearch 3.0 made Lucene's `BM25Similarity`
      the default (OpenSearch issue 17315); measured on 3.8.0: `_explain` shows "boost * idf *
      tf" with no 2.2 factor (tests/test_parity_opensearch.py).
    - Elasticsearch 8: `LegacyBM25Similarity` as well: `_explain` on 8.17.2 shows
      "2.2 boost" with the default similarity and with an explicit BM25 one (measured;
      Elasticsearch never switched back to Lucene's class). 9.x the same: measured on 9.2.0
      (the parity tests fail loudly if a node scores otherwise).
    """
    major = _major(version)
    if name == "opensearch" and major is not None and major >= 3:
        return "lucene"
    return "legacy"


OPENSEARCH = Engine("opensearch", "OpenSearch", bm25="legacy", search_pipelines=True, plugin=True)
"""OpenSearch, version unknown until `GET /` (`with_version`); 2.x is the tested one."""
ELASTICSEARCH = Engine("elasticsearch", "Elasticsearch", bm25="legacy", search_pipelines=False, plugin=False)
"""Elasticsearch 8/9: the same layout; no search pipelines, no plugin."""
ENGINES: dict[str, Engine] = {e.name: e for e in (OPENSEARCH, ELASTICSEARCH)}


def _opensearch_client(url: str, settings: Settings, auth: tuple[str, str] | None) -> OpenSearch:
    return OpenSearch(
        hosts=[url],
        http_auth=auth,
        headers=_api_key_header(settings),
        verify_certs=settings.cluster_verify_certs,
        ssl_show_warn=settings.cluster_verify_certs,
        ca_certs=_ca_certs(url, settings),
        timeout=settings.cluster_timeout_s,
        max_retries=0,
        retry_on_timeout=False,
        http_compress=False,
        serializer=OrjsonSerializer(),
    )


def _elasticsearch_client(url: str, settings: Settings, auth: tuple[str, str] | None) -> Any:
    if _es is None:
        raise CogrError(
            f"the cluster at {url} is Elasticsearch: install the client with "
            "`pip install 'cogr-search[elasticsearch]'` (the official `elasticsearch` package, 8.x)"
        )
    options: dict[str, object] = {}
    if url.startswith("https"):  # TLS options are refused for http:// nodes
        options["verify_certs"] = settings.cluster_verify_certs
        options["ssl_show_warn"] = settings.cluster_verify_certs
        if settings.cluster_ca_certs:
            options["ca_certs"] = _ca_certs(url, settings)
    if settings.cluster_api_key:
        options["api_key"] = settings.cluster_api_key.get_secret_value()
    return _es.Elasticsearch(
        hosts=[url],
        basic_auth=auth,
        request_timeout=settings.cluster_timeout_s,
        max_retries=0,
        retry_on_timeout=False,
        retry_on_status=(),
        http_compress=False,
        **options,
    )


def _ca_certs(url: str, settings: Settings) -> str | None:
    """COGR_CLUSTER_CA_CERTS for an https cluster, checked before it is used (a typo is one
    line now, not five failed attempts); an http cluster ignores it, so it is not checked."""
    if not url.startswith("https"):
        return str(settings.cluster_ca_certs) if settings.cluster_ca_certs else None
    return check_ca_certs(settings.cluster_ca_certs)


def engine_from_root(body: object, headers: dict[str, str] | None = None, url: str = "URL") -> Engine:
    """The engine (with its version) that answered `GET /` at `url` with `body` and `headers`."""
    version = body.get("version") if isinstance(body, dict) else None
    version = version if isinstance(version, dict) else {}
    number = str(version.get("number")) if version.get("number") else None
    product = {k.lower(): v for k, v in (headers or {}).items()}.get("x-elastic-product")
    if version.get("distribution") == "opensearch":
        return OPENSEARCH.with_version(number)
    if product == "Elasticsearch" or ("build_flavor" in version and "distribution" not in version):
        return ELASTICSEARCH.with_version(number)
    raise CogrError(
        f"the cluster at {url} answered GET / neither as OpenSearch nor as Elasticsearch "
        f"(version {version or body!r:.200}); "
        "set COGR_ENGINE=opensearch or COGR_ENGINE=elasticsearch"
    )


def opensearch_connection(url: str, settings: Settings) -> Any:
    """One opensearch-py connection (a core dependency, engine-blind at this level), for
    the root probe (`cluster/root_probe.py`) that runs before the engine is known."""
    return _opensearch_client(url, settings, _auth(settings)).transport.get_connection()


def no_api_keys(url: str) -> str:
    """The line for an API key sent to OpenSearch (`COGR_ENGINE=opensearch`, or found by the
    probe from the 401's `WWW-Authenticate` realm)."""
    return (f"the cluster at {url} is OpenSearch, which has no API keys: unset COGR_CLUSTER_API_KEY "
            "and set COGR_CLUSTER_USER and COGR_CLUSTER_PASSWORD")


def _api_key_header(settings: Settings) -> dict[str, str] | None:
    """The API key as the header Elasticsearch reads; on the root probe's connection, which
    runs before the engine is known (an OpenSearch client is refused the key later)."""
    if not settings.cluster_api_key:
        return None
    return {"Authorization": f"ApiKey {settings.cluster_api_key.get_secret_value()}"}


def _auth(settings: Settings) -> tuple[str, str] | None:
    if settings.cluster_api_key and settings.cluster_user:
        raise CogrError("COGR_CLUSTER_API_KEY and COGR_CLUSTER_USER are both set: use one way of signing in, not both")
    if not settings.cluster_user:
        return None
    password = settings.cluster_password.get_secret_value() if settings.cluster_password else ""
    return (settings.cluster_user, password)
