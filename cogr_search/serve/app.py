"""The HTTP expansion service (`cogr-search serve`): FastAPI routes over `ExpansionService`.

HTTP contract (apps and the OpenSearch plugin code against exactly this):

`POST /v1/expand/query`
    request   {"texts": ["oak dining table", ...]}
              1 to `max_texts` (default 64) strings; each non-empty after trimming and
              at most `max_text_chars` (default 1,000) characters.
    response  200 {"keywords": [["dining table", "oak table", ...], ...],
                   "run": "<run name>", "round": <int>, "model": "<cogr_model tag>"}
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
              S_i ∪ {normalize(title)} (Python: `opensearch.sync.document_keywords`).

`model` is the `cogr_model` provenance tag that `cogr-search sync` writes for this run
and round (`RunDir.model_tag`: run name + round + item weights hash); a document whose
`cogr_model` equals it already carries this model's keywords.

`GET /health`
    200 {"status": "ok", "model_loaded": true, "run", "round", "model",
         "cache": {"query": {"size", "capacity"}, "item": {...}},
         "counters": {"query": {"requests", "texts", "cache_hits", "joined_in_flight",
                                "generation_calls", "generated_texts", "timeouts",
                                "failures"}, "item": {...}},
         "in_flight": {"query": <texts being generated>, "item": ...}, "limits": {...}}

`GET /openapi.json`  the OpenAPI document of these routes.

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
