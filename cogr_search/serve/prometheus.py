"""`GET /metrics`: the expansion service in the Prometheus text format (prometheus-client).

Two sources, so nothing is counted twice:

- `RequestMetrics`, an ASGI middleware outermost in the app: requests per route and
  status (401s included) and their latency per route, as a histogram;
- `ServiceCollector`, read at scrape time from the batchers' own `Counters` (the numbers
  `/health` shows): texts, cache hits, generation calls, overloads, timeouts and failures
  per side, labelled with the expander that answered (`student` or `llm`).

Each app has its own `CollectorRegistry`, not the process-global one, so several services
in one process (tests, benchmarks) never mix their numbers.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator

from prometheus_client import CONTENT_TYPE_LATEST, CollectorRegistry, Counter, Histogram, generate_latest
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, InfoMetricFamily, Metric
from prometheus_client.registry import Collector

from cogr_search.serve.auth import ASGIApp, Scope
from cogr_search.serve.service import ExpansionService

METRICS_PATH = "/metrics"
ROUTES = frozenset({"/v1/expand/query", "/v1/expand/item", "/health", METRICS_PATH, "/openapi.json", "/docs"})
"""Paths reported by name; anything else is `other`, so a scanner cannot blow up the label set."""
# From a cached answer (sub-millisecond) to a generation near the default 30 s timeout.
LATENCY_BUCKETS = (0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0)
# Counters field -> (metric name without _total, help)
SIDE_COUNTERS = {
    "requests": ("cogr_expand_requests", "Expansion requests per side."),
    "texts": ("cogr_expand_texts", "Texts (queries) or items asked for."),
    "cache_hits": ("cogr_cache_hits", "Texts answered from the LRU cache."),
    "joined_in_flight": ("cogr_joined_in_flight", "Texts that joined an identical text already being generated."),
    "generation_calls": ("cogr_generation_calls", "Batched calls to the expander."),
    "generated_texts": ("cogr_generated_texts", "Texts the expander generated."),
    "overloads": ("cogr_overloads", "Requests refused with 503 because the queue was full."),
    "timeouts": ("cogr_timeouts", "Requests answered 504: the generation did not finish in time."),
    "failures": ("cogr_generation_failures", "Batched expander calls that raised (their requests got 503)."),
}


class ServiceCollector(Collector):
    """The batchers' counters, cache sizes and in-flight texts, read when scraped."""

    def __init__(self, service: ExpansionService) -> None:
        self.service = service

    def collect(self) -> Iterator[Metric]:
        identity = self.service.identity()
        expander = str(identity["expander"])
        info = InfoMetricFamily("cogr_expander", "The run, round and model served, and which expander answers.")
        info.add_metric([], {k: str(v) for k, v in identity.items()})
        yield info
        batchers = {side: b for side, b in (("query", self.service.query), ("item", self.service.item)) if b is not None}
        for field, (name, doc) in SIDE_COUNTERS.items():
            family = CounterMetricFamily(name, doc, labels=["side", "expander"])
            for side, batcher in batchers.items():
                family.add_metric([side, expander], getattr(batcher.counters, field))
            yield family
        entries = GaugeMetricFamily("cogr_cache_entries", "Entries in the LRU cache.", labels=["side"])
        in_flight = GaugeMetricFamily("cogr_in_flight_texts", "Texts being generated now.", labels=["side"])
        for side, batcher in batchers.items():
            entries.add_metric([side], batcher.cache.stats()["size"])
            in_flight.add_metric([side], batcher.in_flight)
        yield entries
        yield in_flight


class RequestMetrics:
    """Counts every HTTP request by route and status, and times it by route."""

    def __init__(self, app: ASGIApp, registry: CollectorRegistry) -> None:
        self.app = app
        self.requests = Counter("cogr_http_requests", "HTTP requests by route and status.", ["route", "status"],
                                registry=registry)
        self.latency = Histogram("cogr_http_request_duration_seconds", "Time to answer, by route.", ["route"],
                                 buckets=LATENCY_BUCKETS, registry=registry)

    async def __call__(self, scope: Scope, receive: Callable, send: Callable) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        route = scope["path"] if scope["path"] in ROUTES else "other"
        status = 500  # what the client sees if the app raises before answering
        started = time.perf_counter()

        async def send_status(message: dict) -> None:
            nonlocal status
            if message["type"] == "http.response.start":
                status = message["status"]
            await send(message)

        try:
            await self.app(scope, receive, send_status)
        finally:
            self.latency.labels(route).observe(time.perf_counter() - started)
            self.requests.labels(route, str(status)).inc()


def new_registry(service: ExpansionService) -> CollectorRegistry:
    """A registry holding `service`'s collector (the request metrics join it with the middleware)."""
    registry = CollectorRegistry(auto_describe=True)
    registry.register(ServiceCollector(service))
    return registry


def exposition(registry: CollectorRegistry) -> tuple[bytes, str]:
    """The body and content type of `GET /metrics`."""
    return generate_latest(registry), CONTENT_TYPE_LATEST
