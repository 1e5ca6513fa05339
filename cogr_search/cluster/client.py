"""Connecting to the cluster (OpenSearch or Elasticsearch), with one retry policy for every call.

The clients' own retries are switched off (`max_retries=0`) so that transient failures
(connection errors, timeouts, 429 and 503) are retried in exactly one place, with
tenacity's exponential backoff, and a cluster that stays unreachable ends in a one-line
`ClusterUnreachable` naming the URL instead of a stack trace. Which engine answers, and
everything that differs between the two, is `Cluster.engine` (`cluster/engines.py`).
"""

from __future__ import annotations

import re
from types import SimpleNamespace
from collections.abc import Callable
from typing import Any, TypeVar

from tenacity import (
    RetryError,
    Retrying,
    retry_if_exception,
    stop_after_attempt,
    wait_exponential,
)

from cogr_search.errors import CogrError
from cogr_search.cluster import engines
from cogr_search.cluster.engines import ENGINES, Engine, engine_from_root, is_transient, one_line, status_of
from cogr_search.cluster.connection_checks import check_url
from cogr_search.cluster.names import STUDENT_INDEX
from cogr_search.cluster.root_probe import credentials_refused, probe_root
from cogr_search.settings import Settings
from cogr_search.cluster.names import LEGACY_LEASE_INDEX

T = TypeVar("T")

__all__ = ["Cluster", "ClusterUnreachable", "describe_error", "is_transient"]

_VERSION_SUFFIX = re.compile(r"--?r\d+-\d+$")  # a version, A--r<round>-<n> or the older A-r<round>-<n>


class ClusterUnreachable(CogrError):
    """The cluster did not answer after bounded retries."""


def alias_of(kwargs: dict[str, object]) -> str | None:
    """The alias a client call addresses: its `index` (`A`, `A,A--*`, a version `A--r1-2` or
    an earlier release's `A-r1-2`, its lease index `A--sync-lease`), or the document id in
    the earlier releases' shared lease index (`cogr-sync-leases`/`A`); None for other
    indices (the students' `cogr-students` among them)."""
    index = kwargs.get("index")
    if not isinstance(index, str):
        return None
    if index == LEGACY_LEASE_INDEX:
        return str(kwargs["id"]) if kwargs.get("id") else None
    if index == STUDENT_INDEX:  # shared by every alias, named after none
        return None
    first = index.split(",")[0].split("--")[0].removesuffix("-*")  # names.py: `--` ends the alias
    if not first or first.startswith(".") or "*" in first:
        return None
    return _VERSION_SUFFIX.sub("", first)


class Cluster:
    """A client for the cluster's engine plus the retry policy; `call` is how the project
    talks to it.

    The engine is detected on first use of `engine` or `client` (one `GET /`, retried
    like any call) unless `COGR_ENGINE` or the `engine` argument names it.
    """

    def __init__(self, settings: Settings, url: str | None = None, engine: Engine | None = None,
                 origin: str | None = None) -> None:
        self.settings = settings
        url = url or settings.cluster_url
        if not url:
            url, origin = f"http://127.0.0.1:{settings.local_port}", "the default"
        self.url = check_url(url.rstrip("/"))
        self.origin = origin
        """Where the URL came from when nobody named it (`cogr_search.connect.locate`), else None."""
        if engine is None and settings.engine != "auto":
            engine = ENGINES[settings.engine]
        self._engine = engine
        self._client: Any = None
        self.alias: str | None = None
        """The alias the latest call addressed: a refusal of a call that names none (a raw
        request) is still said with the role of this alias."""

    @property
    def engine(self) -> Engine:
        """OpenSearch or Elasticsearch, with the version `GET /` reported."""
        if self._engine is None:
            body, headers = self.call(probe_root, self.url, self.settings)
            self._engine = engine_from_root(body, headers, self.url)
        return self._engine

    @property
    def client(self) -> Any:
        """The engine's own Python client (opensearch-py or elasticsearch-py)."""
        if self._client is None:
            self._client = self.engine.client(self.url, self.settings)
        return self._client

    def call(self, fn: Callable[..., T], *args: object, **kwargs: object) -> T:
        """Run `fn(*args, **kwargs)`, retrying transient failures with exponential backoff;
        the response comes back as a plain dict whichever client answered."""
        retrying = Retrying(
            retry=retry_if_exception(is_transient),
            stop=stop_after_attempt(self.settings.cluster_retries + 1),
            wait=self._wait,
            reraise=False,
        )
        self.alias = alias_of(kwargs) or self.alias
        try:
            return Engine.unwrap(retrying(fn, *args, **kwargs))
        except engines.API_ERRORS as err:
            label = self._engine.label if self._engine else "the cluster"
            if status_of(err) == 403:
                err.cogr_alias = self.alias  # type: ignore[attr-defined]  # for the role named in its line
                # the students' index: only the writer, which deploys them, has a grant there
                err.cogr_writer_only = kwargs.get("index") == STUDENT_INDEX  # type: ignore[attr-defined]
            if status_of(err) == 401:  # the engine is known here: the probe reports its own 401
                raise CogrError(credentials_refused(label, self.url, self.settings)) from err
            if status_of(err) == 403 and not getattr(err, "info", None) and self.settings.cluster_user:
                raise CogrError(self._silent_403(label, fn, kwargs)) from err
            raise
        except RetryError as err:
            cause = err.last_attempt.exception()
            label = self._engine.label if self._engine else "the cluster"
            origin = f" ({self.origin}; set COGR_CLUSTER_URL to choose)" if self.origin else ""
            raise ClusterUnreachable(
                f"cannot reach {label} at {self.url}{origin} after "
                f"{self.settings.cluster_retries + 1} attempts: {one_line(cause)}"
            ) from cause

    def _silent_403(self, label: str, fn: Callable[..., object], kwargs: dict[str, object]) -> str:
        """The line for a 403 without a body (a HEAD request, e.g. whether an index exists):
        the engine names no action, so the line names the user, the call and its index."""
        index = kwargs.get("index") or kwargs.get("name")
        on = f" on {index!r}" if index else ""
        role = f"cogr_writer_{self.alias or '<alias>'}"
        return (f"{label} at {self.url} refused user {self.settings.cluster_user!r} the request {getattr(fn, '__qualname__', fn.__name__)}{on} (HTTP 403; a HEAD "
                f"request carries no reason): that user lacks a privilege{on}; the role {role} grants what ingest and "
                "sync need (`cogr-search security roles --print --alias ALIAS` shows what each grants)")

    def request(self, method: str, path: str, body: object = None, params: dict | None = None) -> Any:
        """A raw REST call, retried like `call` (for APIs neither client wraps the same way)."""
        return self.call(self.engine.request, self.client, method, path, body, params)

    @property
    def _wait(self) -> wait_exponential:
        return wait_exponential(multiplier=0.25, max=self.settings.cluster_retry_max_wait_s)

    def backoff_s(self, attempt: int) -> float:
        """Seconds to wait before retry number `attempt` (1-based): the same backoff as
        `call`, for callers that retry part of a request (bulk items the cluster was too
        busy to take)."""
        return self._wait(SimpleNamespace(attempt_number=attempt))  # type: ignore[arg-type]

    def info(self) -> dict:
        """Cluster name and version; also the cheapest check that the cluster answers."""
        return self.call(self.client.info)


def describe_error(exc: BaseException) -> str | None:
    """One line for a client exception (either engine's) that escaped a command, naming
    the index where the cluster says which; None for exceptions that are not the clients'."""
    return engines.describe_error(exc)
