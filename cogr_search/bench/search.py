"""`bench search`: search-time latencies against a real cluster, side by side in one run.

Figures (milliseconds, measured by the client over one keep-alive connection, so all
OpenSearch figures carry the same client overhead and their ratios are meaningful):
- `bm25_*`: the app's plain `match` on the title field;
- `expanded_*`: DESIGN.md's keyword-expanded query with the keywords given;
- `pipeline_cached_*`: the same plain `match` through the search pipeline (the plugin's
  `cogr_expand`), after one warm-up pass so its expansion is cached; null when the
  cluster has no such pipeline;
- `cold_expansion_p50_ms`: one query expanded by the CPU model through the service, uncached;
- `service_cached_*`: the service's cached path over loopback HTTP, at 1 client (latency)
  and at 16 concurrent clients (`service_cached_rps`, `service_cached_c16_*`).
The three OpenSearch figures are interleaved query by query, so machine noise hits
them alike.

`search_latency` (`bench search --in-cluster`) times the service-free route
(docs/students.md): the search pipeline's `cogr_expand` runs the run's query student
inside the node, so there is no service to start; plain BM25 and the same `match`
through the pipeline, interleaved the same way. A pipeline that falls back (model missing
or corrupt) would time plain BM25 twice: every warm-up answer must say `expanded`.
"""

from __future__ import annotations

import base64
import http.client
import json
import os
import statistics
import time
from collections.abc import Sequence
from pathlib import Path
from urllib.parse import quote, urlsplit

from cogr_search.bench.http_load import post_load
from cogr_search.data import load_dataset, sample_catalog_path
from cogr_search.errors import CogrError
from cogr_search.keywords import representation
from cogr_search.cluster.client import Cluster
from cogr_search.cluster.indices import alias_target
from cogr_search.cluster.query import keyword_query
from cogr_search.serve.process import ServiceProcess
from cogr_search.runs.run_dir import RunDir

WARM_UP_TIMEOUT_S = 1800  # generating every query once may take minutes on busy cores


def process_cpu_s(pid: int) -> float | None:
    """CPU seconds (user + system) a process has used, from /proc; None where unavailable.

    Why: on shared cores, requests per second measure the neighbours as much as the
    service; the service's own CPU time per request does not depend on them.
    """
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
    except (OSError, IndexError, ValueError):
        return None


def percentile(values: Sequence[float], q: float) -> float | None:
    """The q-th percentile (nearest rank) of `values`, rounded for the report."""
    if not values:
        return None
    ordered = sorted(values)
    return round(ordered[min(len(ordered) - 1, int(q / 100.0 * len(ordered)))], 3)


class _SearchClient:
    """POST `_search` bodies over one persistent connection; returns client-side ms."""

    @classmethod
    def for_cluster(cls, cluster: Cluster) -> _SearchClient:
        """One connection to `cluster`, with its user and password where it has them."""
        settings, auth = cluster.settings, None
        if settings.cluster_user:
            password = settings.cluster_password.get_secret_value() if settings.cluster_password else ""
            auth = (settings.cluster_user, password)
        return cls(cluster.url, auth)

    def __init__(self, url: str, settings_auth: tuple[str, str] | None) -> None:
        parts = urlsplit(url)
        connection = http.client.HTTPSConnection if parts.scheme == "https" else http.client.HTTPConnection
        self.connection = connection(parts.hostname, parts.port or (443 if parts.scheme == "https" else 80), timeout=60)
        self.headers = {"Content-Type": "application/json"}
        if settings_auth:
            token = base64.b64encode(f"{settings_auth[0]}:{settings_auth[1]}".encode()).decode()
            self.headers["Authorization"] = f"Basic {token}"

    def request(self, method: str, path: str, body: dict | None = None) -> tuple[int, dict, float]:
        data = None if body is None else json.dumps(body).encode()
        started = time.perf_counter()
        self.connection.request(method, path, body=data, headers=self.headers)
        response = self.connection.getresponse()
        payload = response.read()
        elapsed = (time.perf_counter() - started) * 1000.0
        return response.status, (json.loads(payload) if payload else {}), elapsed

    def search(self, index: str, body: dict, pipeline: str | None = None) -> float:
        path = f"/{quote(index)}/_search" + (f"?search_pipeline={quote(pipeline)}" if pipeline else "")
        status, answer, elapsed = self.request("POST", path, body)
        if status != 200:
            raise CogrError(f"search on {index!r} answered HTTP {status}: {json.dumps(answer)[:200]}")
        return elapsed


def _query_texts(run: RunDir, data: Path | None, limit: int) -> tuple[list[str], str]:
    """Query texts from --data, else the run's own dataset, else the sample catalog."""
    source = data or Path(run.config().data or sample_catalog_path())
    return _dataset_queries(source if source.exists() else sample_catalog_path(), limit)


def _dataset_queries(source: Path, limit: int) -> tuple[list[str], str]:
    """The first `limit` distinct query texts of a labelled dataset, and where they came from."""
    texts = list(dict.fromkeys(q.text for q in load_dataset(source).queries.values() if q.text.strip()))
    if not texts:
        raise CogrError(f"{source}: no queries to benchmark with")
    return texts[:limit], str(source)


def _pipeline_state(client: _SearchClient, name: str) -> str | None:
    """None when the search pipeline exists, else why the pipeline figures are null."""
    status, _, _ = client.request("GET", f"/_search/pipeline/{quote(name)}")
    if status == 200:
        return None
    return f"no search pipeline {name!r} on the cluster (install it with `cogr-search index create --pipelines`)"


def run(
    cluster: Cluster,
    alias: str,
    run_name: str | None,
    round_: int | None = None,
    *,
    runs_dir: Path | None = None,
    data: Path | None = None,
    max_queries: int = 200,
    passes: int = 5,
    field: str = "title",
    pipeline: str = "cogr",
    cold_samples: int = 5,
    clients: int = 16,
    requests: int = 10_000,
    in_cluster: bool = False,
) -> dict:
    """Measure everything once, in one process, against `alias` and a fresh service (with
    `in_cluster`: against `alias` and its in-cluster pipeline alone, no service, no run)."""
    if in_cluster:
        texts, source = _dataset_queries(data or sample_catalog_path(), max_queries)
        result = search_latency(cluster, alias, pipeline, texts, passes=passes, field=field)
        result["settings"]["queries_from"] = source
        return result
    if run_name is None:
        raise CogrError("bench search: --run names the run whose query generator the service serves "
                        "(or --in-cluster times the plugin's students, with no service)")
    run_dir = RunDir.open(run_name, runs_dir)
    round_ = run_dir.require_round(round_)
    if alias_target(cluster, alias) is None:
        raise CogrError(f"alias {alias!r} does not exist: ingest and sync (or ingest --enrich) first")
    texts, source = _query_texts(run_dir, data, max_queries)
    client = _SearchClient.for_cluster(cluster)
    pipeline_note = _pipeline_state(client, pipeline)

    # A long generation timeout: the warm-up expands every query, on cores others may be using.
    options = ("--round", str(round_), "--sides", "query", "--generation-timeout", str(WARM_UP_TIMEOUT_S))
    with ServiceProcess(run_dir.root, *options, env=dict(os.environ)) as service:
        cold = []
        for text in texts[:cold_samples]:  # each text's first expansion: the model runs
            started = time.perf_counter()
            service.expand([text], timeout=WARM_UP_TIMEOUT_S)
            cold.append((time.perf_counter() - started) * 1000.0)
        keywords = {}
        for start in range(0, len(texts), 16):  # the rest in batches (also warms the cache)
            chunk = texts[start:start + 16]
            keywords.update(zip(chunk, service.expand(chunk, timeout=WARM_UP_TIMEOUT_S)))

        bm25, expanded, piped = [], [], []
        plain = {t: {"query": {"match": {field: t}}, "size": 10} for t in texts}
        bodies = {t: {"query": keyword_query(representation(keywords[t], t)), "size": 10} for t in texts}
        for text in texts:  # warm-up: caches in OpenSearch and the pipeline's expansion
            client.search(alias, plain[text])
            client.search(alias, bodies[text])
            if pipeline_note is None:
                client.search(alias, plain[text], pipeline)
        for _ in range(passes):
            for text in texts:
                bm25.append(client.search(alias, plain[text]))
                expanded.append(client.search(alias, bodies[text]))
                if pipeline_note is None:
                    piped.append(client.search(alias, plain[text], pipeline))

        cached_bodies = [json.dumps({"texts": [t]}).encode() for t in texts]
        host, port = "127.0.0.1", service.port
        single = post_load(host, port, "/v1/expand/query", cached_bodies, clients=1, requests=min(requests, 3_000))
        cpu_before = process_cpu_s(service.process.pid)
        loaded = post_load(host, port, "/v1/expand/query", cached_bodies, clients=clients, requests=requests)
        cpu_after = process_cpu_s(service.process.pid)
        health = service.health()

    errors = single.errors + loaded.errors
    if errors:
        raise CogrError(f"the service answered {errors} cached requests with an error status")
    return {
        "bm25_p50_ms": percentile(bm25, 50),
        "bm25_p99_ms": percentile(bm25, 99),
        "expanded_p50_ms": percentile(expanded, 50),
        "expanded_p99_ms": percentile(expanded, 99),
        "pipeline_cached_p50_ms": percentile(piped, 50),
        "pipeline_cached_p99_ms": percentile(piped, 99),
        "pipeline_vs_bm25_p50": round(statistics.median(piped) / statistics.median(bm25), 3) if piped else None,
        "expanded_vs_bm25_p50": round(statistics.median(expanded) / statistics.median(bm25), 3),
        "pipeline_note": pipeline_note,
        "cold_expansion_p50_ms": percentile(cold, 50),
        "service_cached_p50_ms": percentile(single.latencies_ms, 50),
        "service_cached_p99_ms": percentile(single.latencies_ms, 99),
        "service_cached_c16_p50_ms": percentile(loaded.latencies_ms, 50),
        "service_cached_c16_p99_ms": percentile(loaded.latencies_ms, 99),
        "service_cached_rps": round(loaded.rps, 1),
        "service_cached_cpu_us_per_request": (
            round((cpu_after - cpu_before) / len(loaded.latencies_ms) * 1e6, 1)
            if cpu_before is not None and cpu_after is not None else None
        ),
        "load_average_1m": round(os.getloadavg()[0], 2),
        "settings": {
            "index": alias, "run": run_dir.name, "round": round_, "model": health["model"], "queries": len(texts),
            "queries_from": source, "passes": passes, "field": field, "pipeline": pipeline,
            "cold_samples": len(cold), "clients": clients, "requests": len(loaded.latencies_ms),
            "opensearch": cluster.url, "cores": os.cpu_count(),
        },
    }


def _expanded_search_ms(client: _SearchClient, alias: str, body: dict, pipeline: str, text: str) -> float:
    """One search through the pipeline; refused unless the plugin expanded it."""
    status, answer, elapsed = client.request("POST", f"/{quote(alias)}/_search?search_pipeline={quote(pipeline)}", body)
    if status != 200:
        raise CogrError(f"search through {pipeline!r} answered HTTP {status}: {str(answer)[:200]}")
    cogr = answer.get("ext", {}).get("cogr", {})
    if not cogr.get("expanded"):
        raise CogrError(f"pipeline {pipeline!r} did not expand {text!r} (it fell back: {cogr.get('reason', cogr)}): "
                        "timing it would time plain BM25")
    return elapsed


def search_latency(cluster: Cluster, alias: str, pipeline: str, texts: Sequence[str], *, passes: int = 5,
                   field: str = "title") -> dict:
    """Plain BM25 and the in-cluster pipeline on the same `match` bodies, p50/p99 in ms."""
    if alias_target(cluster, alias) is None:
        raise CogrError(f"alias {alias!r} does not exist: ingest first")
    client = _SearchClient.for_cluster(cluster)
    note = _pipeline_state(client, pipeline)
    if note is not None:
        raise CogrError(note)
    bodies = {t: {"query": {"match": {field: t}}, "size": 10} for t in texts}
    # The first search through the pipeline: where no node has loaded the student yet, this
    # is the load on first use (reading its chunks, checking the digest, building the model).
    first_ms = _expanded_search_ms(client, alias, bodies[texts[0]], pipeline, texts[0])
    for text in texts:  # warm-up, and the check that every query expands
        client.search(alias, bodies[text])
        _expanded_search_ms(client, alias, bodies[text], pipeline, text)
    bm25, piped = [], []
    for _ in range(passes):
        for text in texts:
            bm25.append(client.search(alias, bodies[text]))
            piped.append(client.search(alias, bodies[text], pipeline))
    return {
        "bm25_p50_ms": percentile(bm25, 50),
        "bm25_p99_ms": percentile(bm25, 99),
        "in_cluster_p50_ms": percentile(piped, 50),
        "in_cluster_p99_ms": percentile(piped, 99),
        "in_cluster_vs_bm25_p50": round(statistics.median(piped) / statistics.median(bm25), 3),
        "first_search_ms": round(first_ms, 1),
        "load_average_1m": round(os.getloadavg()[0], 2),
        "settings": {"index": alias, "pipeline": pipeline, "queries": len(texts), "passes": passes, "field": field,
                     "cluster": cluster.url, "cores": os.cpu_count()},
    }
