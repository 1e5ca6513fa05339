"""The shape of an item document in OpenSearch (DESIGN.md section 3): field names and builders.

Ingest, sync, queries and the benchmarks all name fields and build documents here, so
the mapping in mappings/ and the documents written to it cannot drift apart.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime, timezone
from typing import Protocol

from cogr_search.keywords import DEFAULT_K_MAX, MAX_TERM_BYTES, fits_term_limit, normalize, representation

ID = "id"
TITLE = "title"
DESCRIPTION = "description"
KEYWORDS = "cogr_keywords"
KEYWORDS_TEXT = f"{KEYWORDS}.text"
ROUND = "cogr_round"
MODEL = "cogr_model"
UPDATED_AT = "cogr_updated_at"
CATALOG_FIELDS = (ID, TITLE, DESCRIPTION)
PROVENANCE_FIELDS = (ROUND, MODEL, UPDATED_AT)
KEYWORD_FIELDS = (KEYWORDS, *PROVENANCE_FIELDS)


class ItemLike(Protocol):
    id: str
    title: str
    description: str


def provenance(round_: int, model: str, at: datetime | None = None) -> dict:
    """The provenance fields of documents whose keywords a generator wrote: which round,
    which model (run + round + weights hash), when (UTC, seconds; `at` for fixed output)."""
    when = (at or datetime.now(timezone.utc)).isoformat(timespec="seconds")
    return {ROUND: round_, MODEL: model, UPDATED_AT: when}


def item_keywords(keywords: Sequence[str], title: str, k_max: int | None = DEFAULT_K_MAX) -> list[str]:
    """What `cogr_keywords` holds: `S_i[:k_max] ∪ {normalize(title)}`, the shadow index's set."""
    return representation(keywords, title, k_max)


NEVER_CUT_CHARS = MAX_TERM_BYTES // (18 * 3 * 4)
"""A title this short cannot outgrow the term limit: NFKC expands one character to at
most 18, lowercasing to at most 3, each at most 4 UTF-8 bytes (151 characters)."""


def title_is_cut(title: str) -> bool:
    """Whether the title keyword had to be cut to fit the keyword field's term limit.

    Short titles (nearly all) are answered without normalizing them: a sync asks this of
    every document it copies."""
    return len(title) > NEVER_CUT_CHARS and not fits_term_limit(normalize(title))


def item_document(item: ItemLike, keywords: Sequence[str] = (), k_max: int = DEFAULT_K_MAX) -> dict:
    """A complete item document: catalog fields plus `cogr_keywords` (title-only when no
    keywords were generated), so a document matches on its title from the moment it is
    written, as the shadow index assumes."""
    return {
        ID: item.id,
        TITLE: item.title,
        DESCRIPTION: item.description,
        KEYWORDS: item_keywords(keywords, item.title, k_max),
    }
