"""The ingest pipeline `cogr-ingest` and the search pipeline `cogr` (DESIGN.md section 5).

Both are thin: the work happens in the project's OpenSearch plugin (plugins/cogr-plugin),
which calls the expansion service (`cogr-search serve`):

- ingest pipeline: the `cogr_keywords` processor fills `cogr_keywords` and the provenance
  fields for each document, `batch_size` documents per call to the item route, and skips
  documents already enriched by the service's current model;
- search pipeline: `cogr_expand` rewrites a plain `match` on a field (default `title`)
  into the keyword-expanded query, falling back to the original query when the service
  fails or is slow, and `cogr_expand_status` reports what happened as `ext.cogr` in the
  response. An existing app then only adds `?search_pipeline=cogr`.

Setting them as index defaults (`index.default_pipeline`, `index.search.default_pipeline`)
applies to the alias's current version; a `sync` copies both settings to the new version
it writes (with the shard and replica counts, `indices.shape_of`), so they stay in force.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from urllib.parse import quote, urlparse


from cogr_search.errors import CogrError
from cogr_search.cluster.client import Cluster
from cogr_search.cluster.definitions import definition, fill
from cogr_search.cluster.engines import API_ERRORS, NOT_FOUND
from cogr_search.cluster.indices import alias_target
from cogr_search.cluster.suggest import missing_advice

INGEST_PIPELINE = "cogr-ingest"
SEARCH_PIPELINE = "cogr"
DEFAULT_BATCH_SIZE = 32  # below the service's default max_texts (64) per request
INGEST_PROCESSOR = "cogr_keywords"
SEARCH_PROCESSOR = "cogr_expand"
STATUS_PROCESSOR = "cogr_expand_status"


@dataclass(frozen=True)
class StudentModels:
    """The stored students the service-free pipelines name (cluster/student_store.py), and
    the run's `k_max` (its serving spec): the processors cut `representation` to it, so a
    run trained at another k_max than the plugin's default (30) serves what it trained."""

    run: str
    round: int
    query_model: str
    item_model: str
    k_max: int


@dataclass(frozen=True)
class PipelineConfig:
    """What the two pipelines are built from; timeouts are OpenSearch time values ("2s").
    With `students`, the processors expand inside the nodes and `service_url` is unused."""

    service_url: str | None
    field: str = "title"
    batch_size: int = DEFAULT_BATCH_SIZE
    search_timeout: str | None = None
    ingest_timeout: str | None = None
    ignore_failure: bool = False
    students: StudentModels | None = None

    @property
    def target(self) -> str:
        """What the pipelines expand with, for reports."""
        if self.students is not None:
            return f"students {self.students.query_model} (query), {self.students.item_model} (item), in the cluster"
        return check_service_url(self.service_url or "")


@dataclass(frozen=True)
class PipelinesState:
    """What `install_pipelines` did, for the command's report."""

    ingest_pipeline: str
    search_pipeline: str
    service_url: str
    defaults_on: str | None


def check_service_url(url: str) -> str:
    """The URL without a trailing slash; a one-line error unless it is http(s)://host[:port]."""
    parsed = urlparse(url)
    if parsed.scheme not in ("http", "https") or not parsed.hostname:
        raise CogrError(f"--service-url {url!r} is not an http:// or https:// URL with a host")
    return url.rstrip("/")


_TIME_VALUE = re.compile(r"\d+(\.\d+)?(nanos|micros|ms|s|m|h|d)")


def check_pipeline_config(config: PipelineConfig) -> None:
    """The service URL and the timeouts, checked before `index create` creates anything:
    the cluster would refuse them only after the index exists."""
    if config.students is None and config.service_url is not None:  # None: students, set once stored
        check_service_url(config.service_url)
    for flag, value in (("--ingest-timeout", config.ingest_timeout), ("--search-timeout", config.search_timeout)):
        if value is not None and not _TIME_VALUE.fullmatch(value):
            raise CogrError(f"{flag} {value!r} is not a time value such as 500ms, 2s or 1m")


def ingest_pipeline_body(config: PipelineConfig) -> dict:
    """The `cogr-ingest` definition (mappings/pipelines/cogr-ingest.json, or
    cogr-ingest-student.json with stored students, filled in)."""
    body = _filled("cogr-ingest", config, "item_model", {"batch_size": config.batch_size})
    processor = body["processors"][0][INGEST_PROCESSOR]
    if config.ingest_timeout:
        processor["timeout"] = config.ingest_timeout
    if config.ignore_failure:
        processor["ignore_failure"] = True
    return body


def search_pipeline_body(config: PipelineConfig) -> dict:
    """The `cogr` definition (mappings/pipelines/cogr.json, or cogr-student.json with stored
    students, filled in): expansion on the way in, its status on the way out."""
    body = _filled("cogr", config, "query_model", {"field": config.field})
    if config.search_timeout:
        body["request_processors"][0][SEARCH_PROCESSOR]["timeout"] = config.search_timeout
    return body


def _filled(name: str, config: PipelineConfig, model_side: str, values: dict) -> dict:
    """Pipeline ``name``'s definition with ``values`` and where it expands: the run's stored
    student of ``model_side`` (`<name>-student.json`), else the service (`<name>.json`)."""
    students = config.students
    if students is not None:
        return fill(definition(f"pipelines/{name}-student.json"),
                    {**values, "student": getattr(students, model_side), "run": students.run,
                     "round": students.round, "k_max": students.k_max})
    return fill(definition(f"pipelines/{name}.json"), {**values, "service_url": check_service_url(config.service_url or "")})


def _reason(err: BaseException) -> str:
    """OpenSearch's root cause as one line, with the processor type and property it names."""
    info = err.info if isinstance(err.info, dict) else {}
    error = info.get("error", {})
    cause = (error.get("root_cause") or [error])[0] if isinstance(error, dict) else {}
    if not isinstance(cause, dict) or not cause.get("reason"):
        return f"HTTP {err.status_code} {err.error}"
    where = ", ".join(
        f"{key.removeprefix('processor_').removesuffix('_name')} {cause[key]}"
        for key in ("processor_type", "processor_tag", "property_name")
        if cause.get(key)
    )
    return f"{cause['reason']}" + (f" ({where})" if where else "")


def require_pipelines(cluster: Cluster, what: str) -> None:
    """A one-line error (before anything is written) where the cluster cannot run the
    plugin's pipelines: Elasticsearch has no search pipelines, and the plugin is
    OpenSearch-only (`Engine.require_search_pipelines`)."""
    cluster.engine.require_search_pipelines(what)


def _put(cluster: Cluster, kind: str, name: str, body: dict) -> None:
    path = f"/_ingest/pipeline/{quote(name, safe='')}" if kind == "ingest" else f"/_search/pipeline/{quote(name, safe='')}"
    try:
        cluster.request("PUT", path, body=body)
    except API_ERRORS as err:
        reason = _reason(err)
        hint = ""
        if "No processor type exists" in reason:
            hint = "; is the cogr-search plugin installed on the cluster? (plugins/README.md)"
        raise CogrError(f"cannot create {kind} pipeline {name!r} on {cluster.url}: {reason}{hint}") from err


def set_default_pipelines(cluster: Cluster, alias: str, ingest_name: str, search_name: str) -> str:
    """Make the pipelines the defaults of the alias's current version; returns that index."""
    index = alias_target(cluster, alias)
    if index is None:
        advice = missing_advice(cluster.client, alias, f"run `cogr-search index create --index {alias}` first")
        raise CogrError(f"alias {alias!r} does not exist: {advice}")
    settings = {"index": {"default_pipeline": ingest_name, "search.default_pipeline": search_name}}
    cluster.call(cluster.client.indices.put_settings, index=index, body=settings)
    return index


def install_pipelines(
    cluster: Cluster,
    config: PipelineConfig,
    ingest_name: str = INGEST_PIPELINE,
    search_name: str = SEARCH_PIPELINE,
    default_on: str | None = None,
) -> PipelinesState:
    """Create (or replace) both pipelines; with `default_on` (an alias) make them its defaults."""
    require_pipelines(cluster, "index create --pipelines")
    _put(cluster, "ingest", ingest_name, ingest_pipeline_body(config))
    _put(cluster, "search", search_name, search_pipeline_body(config))
    index = set_default_pipelines(cluster, default_on, ingest_name, search_name) if default_on else None
    return PipelinesState(ingest_name, search_name, config.target, index)


def check_pipeline(cluster: Cluster, name: str) -> None:
    """A one-line error unless ingest pipeline `name` exists (checked before a load through it)."""
    require_pipelines(cluster, "ingest --enrich --pipeline")
    try:
        cluster.call(cluster.client.ingest.get_pipeline, id=name)
    except NOT_FOUND:
        raise CogrError(
            f"ingest pipeline {name!r} does not exist on {cluster.url}: "
            "create it with `cogr-search index create --index NAME --pipelines --service-url URL`"
        ) from None


def enriched_count(cluster: Cluster, alias: str) -> int:
    """Documents behind `alias` that carry a `cogr_model` tag (written by sync or the pipeline)."""
    body = {"query": {"exists": {"field": "cogr_model"}}}
    return cluster.call(cluster.client.count, index=alias, body=body)["count"]
