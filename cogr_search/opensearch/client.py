"""Connecting to OpenSearch, with one retry policy for every call.

opensearch-py's own retries are switched off (`max_retries=0`) so that transient
failures (connection errors, timeouts, 429 and 503) are retried in exactly one place,
with tenacity's exponential backoff, and a cluster that stays unreachable ends in a
one-line `ClusterUnreachable` naming the URL instead of a stack trace.
"""

from __future__ import annotations

import json
import re
from types import SimpleNamespace
from collections.abc import Callable
from typing import TypeVar

from opensearchpy import OpenSearch
from opensearchpy import exceptions as os_exc
from tenacity import (
    RetryError,
    Retrying,
    retry_if_exception,
    stop_after_attempt,
    wait_exponential,
)

from cogr_search.errors import CogrError
from cogr_search.settings import Settings

T = TypeVar("T")

TRANSIENT_STATUS = frozenset({429, 502, 503, 504})


class ClusterUnreachable(CogrError):
    """OpenSearch did not answer after bounded retries."""


def is_transient(exc: BaseException) -> bool:
    """Failures worth retrying: the cluster may answer a moment later."""
    if isinstance(exc, (os_exc.ConnectionError, os_exc.ConnectionTimeout)):
        return True
    return isinstance(exc, os_exc.TransportError) and exc.status_code in TRANSIENT_STATUS


def resolve_url(settings: Settings) -> str:
    """The cluster to use: `COGR_OPENSEARCH_URL`, else the local node recorded under home."""
    if settings.opensearch_url:
        return settings.opensearch_url.rstrip("/")
    record = settings.local_node_home / "node.json"
    if record.exists():
        return str(json.loads(record.read_text())["url"]).rstrip("/")
    return f"http://127.0.0.1:{settings.local_port}"


class Cluster:
    """An OpenSearch client plus the retry policy; `call` is how the project talks to it."""

    def __init__(self, settings: Settings, url: str | None = None) -> None:
        self.settings = settings
        self.url = url or resolve_url(settings)
        auth = None
        if settings.opensearch_user:
            password = settings.opensearch_password.get_secret_value() if settings.opensearch_password else ""
            auth = (settings.opensearch_user, password)
        self.client = OpenSearch(
            hosts=[self.url],
            http_auth=auth,
            verify_certs=settings.opensearch_verify_certs,
            ssl_show_warn=settings.opensearch_verify_certs,
            ca_certs=str(settings.opensearch_ca_certs) if settings.opensearch_ca_certs else None,
            timeout=settings.opensearch_timeout_s,
            max_retries=0,
            retry_on_timeout=False,
            http_compress=False,
        )

    def call(self, fn: Callable[..., T], *args: object, **kwargs: object) -> T:
        """Run `fn(*args, **kwargs)`, retrying transient failures with exponential backoff."""
        retrying = Retrying(
            retry=retry_if_exception(is_transient),
            stop=stop_after_attempt(self.settings.opensearch_retries + 1),
            wait=self._wait,
            reraise=False,
        )
        try:
            return retrying(fn, *args, **kwargs)
        except RetryError as err:
            cause = err.last_attempt.exception()
            raise ClusterUnreachable(
                f"cannot reach OpenSearch at {self.url} after "
                f"{self.settings.opensearch_retries + 1} attempts: {_one_line(cause)}"
            ) from cause

    @property
    def _wait(self) -> wait_exponential:
        return wait_exponential(multiplier=0.25, max=self.settings.opensearch_retry_max_wait_s)

    def backoff_s(self, attempt: int) -> float:
        """Seconds to wait before retry number `attempt` (1-based): the same backoff as
        `call`, for callers that retry part of a request (bulk items the cluster was too
        busy to take)."""
        return self._wait(SimpleNamespace(attempt_number=attempt))  # type: ignore[arg-type]

    def info(self) -> dict:
        """Cluster name and version; also the cheapest check that the cluster answers."""
        return self.call(self.client.info)


_ERRNO = re.compile(r"\[Errno -?\d+\] ([^)'\"]+)")


def _one_line(exc: BaseException | None) -> str:
    if exc is None:
        return "unknown error"
    if isinstance(exc, os_exc.TransportError) and exc.status_code not in (None, "N/A"):
        return f"HTTP {exc.status_code} {exc.error}"
    text = " ".join(str(exc).split())
    if isinstance(exc, (os_exc.ConnectionError, os_exc.ConnectionTimeout)):
        reason = _ERRNO.search(text)  # "[Errno 111] Connection refused" inside urllib3's repr
        if reason:
            return reason.group(1).strip()
        if isinstance(exc, os_exc.ConnectionTimeout):
            return "timed out"
    return f"{type(exc).__name__}: {text}"[:300]


def _root_cause(info: object) -> dict:
    """The first root cause of an OpenSearch error body (`{"error": {"root_cause": [...]}}`)."""
    error = info.get("error") if isinstance(info, dict) else None
    if not isinstance(error, dict):
        return {}
    causes = error.get("root_cause") or [error]
    return causes[0] if isinstance(causes[0], dict) else {}


def describe_error(exc: BaseException) -> str | None:
    """One line for an opensearch-py exception that escaped a command, naming the index
    where the cluster says which; None for exceptions that are not opensearch-py's."""
    from opensearchpy.helpers import BulkIndexError, ScanError

    if isinstance(exc, BulkIndexError):
        errors = exc.errors if isinstance(exc.errors, list) else []
        first = next(iter(errors[0].values()), {}) if errors and isinstance(errors[0], dict) else {}
        reason = (first.get("error") or {}).get("reason", first.get("error")) if isinstance(first, dict) else None
        where = f"index {first.get('_index')!r}, document {first.get('_id')!r}" if isinstance(first, dict) else "bulk"
        return f"OpenSearch rejected {len(errors)} document(s); first: {where}: {str(reason)[:200]}"
    if isinstance(exc, ScanError):
        return f"OpenSearch scroll failed: {' '.join(str(exc).split())[:300]}"
    if isinstance(exc, (os_exc.ConnectionError, os_exc.ConnectionTimeout)):
        return f"cannot reach OpenSearch: {_one_line(exc)}"
    if isinstance(exc, os_exc.TransportError):
        cause = _root_cause(exc.info)
        reason = cause.get("reason") or (exc.info if isinstance(exc.info, str) else "")
        index = cause.get("index")
        where = f" on index {index!r}" if index else ""
        return f"OpenSearch refused the request{where} (HTTP {exc.status_code} {exc.error}): {' '.join(str(reason).split())[:300]}"
    if isinstance(exc, os_exc.OpenSearchException):
        return f"OpenSearch client error: {' '.join(str(exc).split())[:300]}"
    return None


def connect(settings: Settings, url: str | None = None) -> Cluster:
    """A `Cluster` that has answered once; raises `ClusterUnreachable` otherwise."""
    cluster = Cluster(settings, url)
    cluster.info()
    return cluster
