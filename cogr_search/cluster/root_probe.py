"""`GET /` on the cluster URL, read carefully enough to say in one line what is wrong.

Why: the URL and the credentials are the first things a new user gets wrong, and each
mistake looks different on the wire: a web server answers HTML, the expansion service
answers JSON of its own, a TLS port drops plain HTTP, a plain port fails the TLS
handshake, a secured cluster answers 401. Each becomes a `CogrError` that names the URL
and what to do. Nothing is known about the engine yet, so the wording is "the cluster at
URL", never an engine's name. Only what may pass on its own (a refused connection while
a node starts, a timeout, 429/503) is raised as the client's error, for `Cluster.call`
to retry.
"""

from __future__ import annotations

import json
import socket
import ssl
from urllib.parse import urlsplit, urlunsplit

from opensearchpy import exceptions as os_exc

from cogr_search.errors import CogrError
from cogr_search.settings import Settings
from cogr_search.cluster.engines import no_api_keys, opensearch_connection

SERVICE_NAME = "cogr-search expansion service"
"""What the expansion service's `GET /` answers in its `service` field (serve/app.py)."""
_NON_2XX = tuple(range(300, 600))
_TRANSIENT = frozenset({429, 502, 503, 504})
_WHERE = "COGR_CLUSTER_URL (or --cluster-url)"


def probe_root(url: str, settings: Settings) -> tuple[dict, dict[str, str]]:
    """The body and headers of a search engine's `GET /`, for `engine_from_root`; a
    one-line `CogrError` for anything else that answers there."""
    connection = opensearch_connection(url, settings)
    try:
        status, raw_headers, data = connection.perform_request("GET", "/", ignore=_NON_2XX)
    except os_exc.SSLError as err:
        raise _tls_mistake(url, err, settings) from err
    except os_exc.ConnectionTimeout:
        raise
    except os_exc.ConnectionError as err:
        if urlsplit(url).scheme == "http" and "refused" not in str(err).lower() and _speaks_tls(url):
            raise CogrError(
                f"the cluster at {url} speaks TLS, not plain HTTP: use {_with_scheme(url, 'https')} "
                "(and COGR_CLUSTER_CA_CERTS for the CA that signed its certificate)"
            ) from err
        raise
    headers = {key.lower(): value for key, value in dict(raw_headers or {}).items()}
    if status == 401:
        if settings.cluster_api_key and "opensearch" in headers.get("www-authenticate", "").lower():
            raise CogrError(no_api_keys(url))
        raise CogrError(credentials_refused("the cluster", url, settings))
    if status == 403:  # a secured cluster: signed in, but no role of the user allows GET /
        who = f"user {settings.cluster_user!r}" if settings.cluster_user else "these credentials"
        raise CogrError(
            f"the cluster at {url} refused {who} its root endpoint GET / (HTTP 403): the user holds no role that "
            "allows cluster:monitor/main; a security admin maps it to one (`cogr-search security roles --apply "
            "--alias ALIAS --writer-user USER`, docs/security.md)"
        )
    if status in _TRANSIENT:
        raise os_exc.TransportError(status, "unavailable", data)  # retried by Cluster.call
    body = _json(data)
    if headers.get("x-elastic-product") == "Elasticsearch":  # Elasticsearch without rest-root answers 405
        return body if isinstance(body, dict) else {}, headers
    if isinstance(body, dict) and body.get("service") == SERVICE_NAME:
        raise CogrError(
            f"{url} is the cogr-search expansion service, not a cluster: point {_WHERE} at OpenSearch or "
            "Elasticsearch (the service's URL goes in COGR_SERVICE_URL)"
        )
    if 200 <= status < 300 and isinstance(body, dict) and isinstance(body.get("version"), dict):
        return body, headers
    raise CogrError(
        f"the cluster at {url} is not OpenSearch or Elasticsearch: GET / answered {_what(status, headers, body, data)}; "
        f"point {_WHERE} at the search engine's HTTP port (9200 by default)"
    )


def credentials_refused(who: str, url: str, settings: Settings) -> str:
    """The line for a 401: no credentials given, or the ones given were refused."""
    if settings.cluster_api_key:
        return (f"{who} at {url} refused the API key (HTTP 401): check COGR_CLUSTER_API_KEY (the `encoded` value "
                "of POST _security/api_key; an expired or invalidated key is refused too)")
    if not settings.cluster_user:
        return (f"{who} at {url} requires credentials (HTTP 401): set COGR_CLUSTER_USER and "
                "COGR_CLUSTER_PASSWORD")
    return (f"{who} at {url} refused the credentials of user {settings.cluster_user!r} (HTTP 401): check "
            "COGR_CLUSTER_USER and COGR_CLUSTER_PASSWORD")


def _tls_mistake(url: str, err: os_exc.SSLError, settings: Settings) -> BaseException:
    """A TLS failure as one line: an untrusted certificate (with no CA given, or with a CA
    that is not the one that signed it), or a port that does not speak TLS."""
    text = " ".join(str(err).split())
    if "CERTIFICATE_VERIFY_FAILED" in text:
        reason = text.split("certificate verify failed:")[-1].split("(_ssl")[0].strip(" )") or "not trusted"
        if settings.cluster_ca_certs and settings.cluster_verify_certs:
            return CogrError(
                f"the cluster at {url} presents a certificate that the CA in COGR_CLUSTER_CA_CERTS="
                f"{settings.cluster_ca_certs} did not verify ({reason}): point COGR_CLUSTER_CA_CERTS at the CA "
                "file that signed the cluster's certificate"
            )
        return CogrError(
            f"the cluster at {url} presents a certificate this machine does not trust ({reason}): set "
            "COGR_CLUSTER_CA_CERTS to the CA file that signed it"
        )
    if not _speaks_tls(url):
        return CogrError(f"the cluster at {url} does not speak TLS: use {_with_scheme(url, 'http')}")
    return err


def _speaks_tls(url: str) -> bool:
    """Whether a TLS handshake succeeds at the URL's host and port (certificate unchecked:
    the question is only which protocol the port speaks)."""
    parts = urlsplit(url)
    port = parts.port or (443 if parts.scheme == "https" else 80)
    context = ssl.create_default_context()
    context.check_hostname = False
    context.verify_mode = ssl.CERT_NONE
    try:
        with socket.create_connection((parts.hostname or "localhost", port), timeout=5) as sock:
            with context.wrap_socket(sock, server_hostname=parts.hostname):
                return True
    except (OSError, ssl.SSLError):
        return False


def _with_scheme(url: str, scheme: str) -> str:
    return urlunsplit(urlsplit(url)._replace(scheme=scheme))


def _json(data: str | None) -> object:
    try:
        return json.loads(data) if data else None
    except ValueError:
        return None


def _what(status: int, headers: dict[str, str], body: object, data: str | None) -> str:
    """`HTTP 200 text/html ("<!DOCTYPE HTML ...")` or `HTTP 200 JSON without "version"`."""
    if isinstance(body, dict):
        return f"HTTP {status} JSON without a \"version\" object (keys: {', '.join(sorted(body)[:6]) or 'none'})"
    kind = (headers.get("content-type") or "no content type").split(";")[0]
    start = " ".join((data or "").split())[:40]
    return f"HTTP {status} {kind}" + (f" ({start!r})" if start else " with an empty body")
