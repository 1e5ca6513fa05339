"""The HTTP expansion service (`cogr-search serve`): FastAPI routes over `ExpansionService`.

HTTP contract (apps and the OpenSearch plugin code against exactly this):

`POST /v1/expand/query`
    request   {"texts": ["oak dining table", ...]}
              1 to `max_texts` (default 64) strings; each non-empty after trimming and
              at most `max_text_chars` (default 1,000) characters.
    response  200 {"keywords": [["dining table", "oak table", ...], ...],
                   "run": "<run name>", "round": <int>, "model": "<cogr_model tag>",
                   "expander": "student" | "llm"}
              `keywords[i]` belongs to `texts[i]`: the query generator's keyword set S_q,
              normalized (DESIGN.md section 1), de-duplicated, truncated to the run's
              `k_max`. It does NOT contain the query itself: the query representation
              is S_q ∪ {normalize(q)}, built by the caller (Python:
              `cogr_search.keywords.representation(S_q, q)`), then sent as
              DESIGN.md's keyword-expanded `bool` query.

`POST /v1/expand/item`
    request   {"items": [{"id": "42", "title": "Oak table", "description": "..."}, ...]}
              1 to `max_texts` items; `title` a non-empty string of at most
              `max_text_chars`; `description` optional (default ""), at most
              `max_description_chars` (default 20,000); `id` optional, any string or
              number, only echoed in error messages.
    response  200 {"keywords": [[...], ...], "run", "round", "model"}
              `keywords[i]` is the item generator's set S_i for `items[i]` (normalized,
              truncated to `k_max`), WITHOUT the title: a document's `cogr_keywords` is
              S_i ∪ {normalize(title)} (Python: `opensearch.documents.item_keywords`).

`expander` says which kind answered: the run's students (`cogr-search train distill`;
the default when the round has them) or its LLM generators (`serve --expander llm`).
`model` is the `cogr_model` provenance tag that `cogr-search sync` writes for this run
and round (`RunDir.model_tag`: run name + round + item weights hash); a document whose
`cogr_model` equals it already carries this model's keywords.

`GET /health`
    200 {"status": "ok", "model_loaded": true, "run", "round", "model", "expander", "torch_loaded",
         "cache": {"query": {"size", "capacity"}, "item": {...}},
         "counters": {"query": {"requests", "texts", "cache_hits", "joined_in_flight",
                                "generation_calls", "generated_texts", "timeouts",
                                "failures"}, "item": {...}},
         "in_flight": {"query": <texts being generated>, "item": ...}, "limits": {...}}

`GET /openapi.json`  the OpenAPI document of these routes.

`GET /`
    200 {"service": "cogr-search expansion service", "routes": [...], "openapi": "/openapi.json"}
    so that a person (or `cogr-search`, given this URL as a cluster by mistake) can tell
    what answers here.
`GET /metrics`
    200 the Prometheus text format (`serve/prometheus.py`): requests and latency per route,
        texts, cache hits, generation calls, overloads, timeouts and failures per side,
        labelled with the expander that answered.

Authentication (`serve --token-file F`): every route but `/health` (and `/metrics`
unless `--metrics-auth`) wants `Authorization: Bearer <the file's content>`, else
    401 {"error": "missing bearer token: ..."} or {"error": "wrong bearer token: ..."}.
TLS (`serve --tls-cert C --tls-key K`): the same routes over https.

Errors: a JSON body {"error": "<one line naming the field and index>"} and
    400  body not UTF-8, not JSON, or not the shape above; an empty text or title
    413  too many texts/items, a text over its length limit, a body over `max_body_bytes`
    503  the generation failed, or the queue is full (retry later)
    504  the generation did not finish within `generation_timeout_s` (default 30 s);
         it keeps running and its result is cached, so a retry usually answers at once.

Behaviour: concurrent requests are batched into one generation call per side (up to
`max_batch` texts); identical texts in flight are generated once; an LRU cache answers
repeats; the model runs in one worker thread, off the event loop, so cached answers
never wait for a generation.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

from fastapi import FastAPI, Request
from fastapi.openapi.utils import get_openapi
from fastapi.responses import Response
from pydantic import BaseModel, Field

from cogr_search.cluster.root_probe import SERVICE_NAME
from cogr_search.serve.auth import OPEN_PATHS, BearerAuth
from cogr_search.serve.batcher import GenerationFailed, GenerationTimeout, Overloaded
from cogr_search.serve.limits import RequestError, item_inputs, parse_body, query_texts
from cogr_search.serve.prometheus import METRICS_PATH, RequestMetrics, exposition, new_registry
from cogr_search.serve.service import ExpansionService

JSON = "application/json"


# Schemas for the OpenAPI document only: bodies are parsed by `limits` (see its docstring).
class QueryRequest(BaseModel):
    texts: list[str] = Field(description="Query texts, 1 to max_texts, each non-empty.")


class ItemIn(BaseModel):
    id: str | int | None = Field(default=None, description="Echoed in error messages only.")
    title: str
    description: str = ""


class ItemRequest(BaseModel):
    items: list[ItemIn]


class ExpandResponse(BaseModel):
    keywords: list[list[str]] = Field(description="One normalized keyword set per input, in order, without the input text.")
    run: str
    round: int
    model: str = Field(description="The cogr_model tag sync writes for this run and round.")
    expander: str = Field(description="Which expander answered: student or llm.")


class ErrorResponse(BaseModel):
    error: str


_ERRORS = {
    400: {"model": ErrorResponse, "description": "Not UTF-8, not JSON, wrong shape, or an empty text."},
    413: {"model": ErrorResponse, "description": "Too many texts, a text over its limit, or a body too large."},
    503: {"model": ErrorResponse, "description": "Generation failed or the queue is full."},
    504: {"model": ErrorResponse, "description": "Generation timed out (its result is cached when it finishes)."},
}


def _json(payload: dict, status: int = 200) -> Response:
    return Response(json.dumps(payload, ensure_ascii=False).encode(), status_code=status, media_type=JSON)


def _error(status: int, message: str) -> Response:
    return _json({"error": message}, status)


def _request_body(model: type[BaseModel]) -> dict:
    ref = {"$ref": f"#/components/schemas/{model.__name__}"}
    return {"requestBody": {"required": True, "content": {JSON: {"schema": ref}}}}


def create_app(service: ExpansionService, token: str | None = None, metrics_auth: bool = False) -> FastAPI:
    """The ASGI app; `service`'s expander must already be loaded (health means ready).

    `token`: callers must send it as a bearer token (`/health` stays open; `/metrics`
    too unless `metrics_auth`)."""

    @asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        service.start()
        try:
            yield
        finally:
            await service.stop()

    app = FastAPI(
        title=SERVICE_NAME,
        version="1",
        description=(__doc__ or "").split("\n\n")[0],
        lifespan=lifespan,
    )

    @app.post("/v1/expand/query", responses={200: {"model": ExpandResponse}, **_ERRORS},
              openapi_extra=_request_body(QueryRequest))
    async def expand_query(request: Request) -> Response:
        texts = query_texts(parse_body(await request.body(), service.limits), service.limits)
        return _json({"keywords": await service.expand_queries(texts), **service.identity()})

    @app.post("/v1/expand/item", responses={200: {"model": ExpandResponse}, **_ERRORS},
              openapi_extra=_request_body(ItemRequest))
    async def expand_item(request: Request) -> Response:
        items = item_inputs(parse_body(await request.body(), service.limits), service.limits)
        return _json({"keywords": await service.expand_items(items), **service.identity()})

    @app.get("/")
    async def root() -> Response:
        return _json({"service": SERVICE_NAME, "openapi": "/openapi.json",
                      "routes": ["POST /v1/expand/query", "POST /v1/expand/item", "GET /health"]})

    @app.get("/health")
    async def health() -> Response:
        return _json(service.health())

    registry = new_registry(service)

    @app.get(METRICS_PATH, response_class=Response,
             responses={200: {"content": {"text/plain": {}}, "description": "Prometheus text format."}})
    async def metrics() -> Response:
        body, content_type = exposition(registry)
        return Response(body, media_type=content_type)

    if token is not None:
        app.add_middleware(BearerAuth, token=token,
                           open_paths=OPEN_PATHS if metrics_auth else OPEN_PATHS | {METRICS_PATH})
    app.add_middleware(RequestMetrics, registry=registry)  # outermost: 401s are counted too

    @app.exception_handler(RequestError)
    async def refused(request: Request, err: RequestError) -> Response:
        return _error(err.status, err.message)

    @app.exception_handler(Overloaded)
    async def overloaded(request: Request, err: Overloaded) -> Response:
        return _error(503, str(err))

    @app.exception_handler(GenerationFailed)
    async def failed(request: Request, err: GenerationFailed) -> Response:
        return _error(503, str(err))

    @app.exception_handler(GenerationTimeout)
    async def timed_out(request: Request, err: GenerationTimeout) -> Response:
        return _error(504, str(err))

    def openapi() -> dict:
        if app.openapi_schema is None:
            schema = get_openapi(title=app.title, version=app.version, description=app.description, routes=app.routes)
            components = schema.setdefault("components", {}).setdefault("schemas", {})
            for model in (QueryRequest, ItemRequest):
                definition = model.model_json_schema(ref_template="#/components/schemas/{model}")
                components.update(definition.pop("$defs", {}))
                components[model.__name__] = definition
            app.openapi_schema = schema
        return app.openapi_schema

    app.openapi = openapi  # type: ignore[method-assign]
    return app
