"""Connecting to OpenSearch, with one retry policy for every call.

opensearch-py's own retries are switched off (`max_retries=0`) so that transient
failures (connection errors, timeouts, 429 and 503) are retried in exactly one place,
with tenacity's exponential backoff, and a cluster that stays unreachable ends in a
one-line `ClusterUnreachable` naming the URL instead of a stack trace.
"""

from __future__ import annotations

import json
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


def _one_line(exc: BaseException | None) -> str:
    if exc is None:
        return "unknown error"
    if isinstance(exc, os_exc.TransportError) and exc.status_code not in (None, "N/A"):
        return f"HTTP {exc.status_code} {exc.error}"
    text = str(exc).strip().splitlines()
    return f"{type(exc).__name__}: {text[0] if text else ''}"[:300]


def connect(settings: Settings, url: str | None = None) -> Cluster:
    """A `Cluster` that has answered once; raises `ClusterUnreachable` otherwise."""
    cluster = Cluster(settings, url)
    cluster.info()
    return cluster
