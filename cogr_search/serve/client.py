"""The Python API for existing apps: expand a query, search the alias, explain the hits.

    from cogr_search.serve.client import CogrSearch
    search = CogrSearch.from_service(client, "http://127.0.0.1:8300", index="products")
    result = search.search("oak dining table", size=10, filters=[{"term": {"brand": "acme"}}], explain=True)
    for hit in result.hits:
        print(hit.id, hit.score, hit.matched)

The query sent is DESIGN.md's keyword-expanded `bool` query (built by
`opensearch.query.keyword_query`, the same one evaluation sends), so what an app gets is
what was measured. `client` is the app's own opensearch-py or elasticsearch-py client
(`cluster.client` of a `Cluster`): expansion is client-side, so it works the same on both engines.
Expansions are LRU-cached in the client, in front of whichever
expander it uses (a run's local generators or a remote service).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import asdict, dataclass
from pathlib import Path

from typing import Any

from cogr_search.errors import CogrError, InputError
from cogr_search.keywords import representation
from cogr_search.cluster.engines import API_ERRORS, NOT_FOUND, Engine, status_of
from cogr_search.cluster.query import KEYWORD_FIELD, keyword_query
from cogr_search.serve.cache import MISSING, LRUCache
from cogr_search.serve.expander import Expander
from cogr_search.serve.expander import ServiceExpander, open_expander
from cogr_search.serve.auth import service_token
from cogr_search.settings import load_settings
from cogr_search.cluster.suggest import missing_advice


@dataclass(frozen=True)
class Hit:
    """One search hit; `matched` (with `explain`) lists the query keywords it carries."""

    id: str
    score: float | None
    source: dict | None
    matched: list[str] | None = None


@dataclass(frozen=True)
class SearchResult:
    """Hits plus what produced them: the expansion and the exact query body sent."""

    text: str
    keywords: list[str]
    representation: list[str]
    total: int
    hits: list[Hit]
    took_ms: int
    body: dict

    def as_dict(self) -> dict:
        return asdict(self)


class CogrSearch:
    """Keyword-expanded search over one alias for an app that holds an opensearch-py or
    elasticsearch-py client."""

    def __init__(
        self,
        client: Any,
        expander: Expander,
        *,
        index: str | None = None,
        cache_size: int = 1024,
        k_max: int | None = None,
    ) -> None:
        self.client = client
        self.expander = expander
        self.index = index
        self.k_max = k_max or expander.k_max  # the run's, unless the caller insists
        self.cache: LRUCache[list[str]] = LRUCache(cache_size)

    @classmethod
    def from_run(cls, client: Any, run: str | Path, round_: int | None = None, *,
                 runs_dir: Path | None = None, index: str | None = None, expander: str = "auto",
                 **options: object) -> CogrSearch:
        """Expand with `run`'s query expander loaded in this process: its student when the
        round has one (`expander="auto"`), else its query generator (the `train` extra)."""
        chosen = open_expander(run, round_, expander=expander, runs_dir=runs_dir, sides=("query",), **options)
        return cls(client, chosen, index=index)

    @classmethod
    def from_service(cls, client: Any, url: str, *, index: str | None = None, timeout_s: float = 60.0,
                     token: str | None = None, ca_certs: Path | None = None) -> CogrSearch:
        """Expand through a running `cogr-search serve` at `url`, sending `token` as a bearer
        token and trusting `ca_certs` for https (both unset: `COGR_SERVICE_TOKEN` (or
        `_TOKEN_FILE`) and `COGR_SERVICE_CA_CERTS`, when set)."""

        if token is None or ca_certs is None:
            settings = load_settings()
            token = token if token is not None else service_token(settings)
            ca_certs = ca_certs if ca_certs is not None else settings.service_ca_certs
        return cls(client, ServiceExpander(url, timeout_s=timeout_s, token=token, ca_certs=ca_certs), index=index)

    # -- expansion -------------------------------------------------------------------
    def expand_many(self, texts: Sequence[str]) -> list[list[str]]:
        """Keyword sets S_q in input order; cache misses go to the expander in one call."""
        for i, text in enumerate(texts):
            if not isinstance(text, str) or not text.strip():
                raise InputError(f"query text {i} is empty")
        results = [self.cache.get(t) for t in texts]
        missing = list(dict.fromkeys(t for t, r in zip(texts, results) if r is MISSING))
        if missing:
            fresh = dict(zip(missing, self.expander.expand_queries(missing)))
            for text, keywords in fresh.items():
                self.cache.put(text, keywords)
            results = [fresh[t] if r is MISSING else r for t, r in zip(texts, results)]
        return [list(r) for r in results]  # type: ignore[arg-type]

    def expand(self, text: str) -> list[str]:
        """The query generator's keywords S_q for `text` (without the text itself)."""
        return self.expand_many([text])[0]

    def representation(self, text: str, keywords: Sequence[str] | None = None) -> list[str]:
        """`S_q ∪ {normalize(q)}`, what the query matches with."""
        return representation(self.expand(text) if keywords is None else keywords, text, self.k_max)

    # -- the request -----------------------------------------------------------------
    def body(
        self,
        text: str,
        *,
        keywords: Sequence[str] | None = None,
        filters: list[dict] | None = None,
        size: int = 10,
        from_: int = 0,
        source: bool | list[str] | None = None,
        explain: bool = False,
    ) -> dict:
        """The `_search` body: the keyword-expanded query with the caller's filters,
        `size`, `from` and `_source`; `explain` also fetches each hit's keywords."""
        body: dict = {
            "query": keyword_query(self.representation(text, keywords), filters),
            "size": size,
            "from": from_,
        }
        if source is not None:
            body["_source"] = source
        if explain:
            body["docvalue_fields"] = [KEYWORD_FIELD]  # a keyword field's doc values: present whatever _source is
        return body

    def search(
        self,
        text: str,
        index: str | None = None,
        *,
        keywords: Sequence[str] | None = None,
        filters: list[dict] | None = None,
        size: int = 10,
        from_: int = 0,
        source: bool | list[str] | None = None,
        explain: bool = False,
    ) -> SearchResult:
        """Search the alias (`index`, else the client's default) with the expanded query."""
        target = index or self.index
        if not target:
            raise InputError("search: no index given (pass index= or CogrSearch(..., index=NAME))")
        kws = self.expand(text) if keywords is None else list(keywords)
        body = self.body(text, keywords=kws, filters=filters, size=size, from_=from_, source=source, explain=explain)
        try:
            response = Engine.unwrap(self.client.search(index=target, body=body))
        except NOT_FOUND:
            raise CogrError(f"index {target!r} not found: {missing_advice(self.client, target, 'ingest it first')}") from None
        except API_ERRORS as err:
            raise CogrError(f"search on {target!r} failed: HTTP {status_of(err)} {getattr(err, 'error', '')}") from None
        query_keys = body["query"]["bool"]["filter"][0]["terms"][KEYWORD_FIELD]
        hits = [_hit(raw, query_keys if explain else None) for raw in response["hits"]["hits"]]
        total = response["hits"]["total"]
        return SearchResult(
            text=text,
            keywords=kws,
            representation=list(query_keys),
            total=int(total["value"] if isinstance(total, dict) else total),
            hits=hits,
            took_ms=int(response.get("took", 0)),
            body=body,
        )

    def close(self) -> None:
        self.expander.close()


def _hit(raw: dict, query_keys: list[str] | None) -> Hit:
    matched = None
    if query_keys is not None:
        carried = set(raw.get("fields", {}).get(KEYWORD_FIELD, []))
        matched = [k for k in query_keys if k in carried]
    return Hit(id=raw["_id"], score=raw.get("_score"), source=raw.get("_source"), matched=matched)
