"""Keyword normalization and parsing: the one definition of "the same keyword".

Matching in CoGR is exact equality of normalized keywords (DESIGN.md section 1), so
the shadow index, OpenSearch documents, the serving path and the Java plugin must all
normalize identically. The rules below are mirrored in Java (plugins/) and pinned by
the shared test vectors in tests/vectors/normalize.jsonl; change them only together.

`normalize(text)`:
1. Unicode NFKC (full-width letters, ligatures, NBSP and other compatibility forms fold
   to their plain equivalents).
2. Lowercase with the locale-independent full Unicode mapping (Python `str.lower`, Java
   `toLowerCase(Locale.ROOT)`): "İ" becomes "i̇", "ß" stays "ß" (no case folding).
3. Control and format characters (categories Cc, Cf: soft hyphen, zero-width space,
   joiners, BOM) are removed, except whitespace controls, which count as whitespace.
4. Every run of whitespace (the characters in `WHITESPACE`) becomes one space.
5. Leading and trailing characters that are whitespace, punctuation (categories P*),
   or "decorative" symbols (So: emoji, ®, ©, °; Sk: backtick, ^) are stripped.
   Math and currency symbols (Sm, Sc) are kept: "c++", "$5", "<10" survive.
6. The result may be "" (nothing left); callers drop it.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Iterable
from dataclasses import dataclass

NORMALIZATION_VERSION = "1"
"""Bumped with any change to `normalize` (and its Java and Painless ports): a run records
the version it trained with, and serving refuses a run of another version."""

DEFAULT_K_MAX = 30
"""Keyword-set budget K_max (paper Section 3.3): larger sets are *oversized*."""

MAX_KEYWORD_CHARS = 128
"""Generated items longer than this are run-on text, not keywords: `parse_keywords`
drops them. (Titles and queries used as keywords are not subject to it.)"""

WHITESPACE = (
    "\t\n\x0b\x0c\r\x1c\x1d\x1e\x1f \x85\xa0\u1680"
    "\u2000\u2001\u2002\u2003\u2004\u2005\u2006\u2007\u2008\u2009\u200a"
    "\u2028\u2029\u202f\u205f\u3000"
)
"""Exactly the characters Python's `str.isspace` accepts, spelled out for the Java port."""

_STRIP_CATEGORIES = frozenset({"Pc", "Pd", "Ps", "Pe", "Pi", "Pf", "Po", "So", "Sk"})
_DROP_CATEGORIES = frozenset({"Cc", "Cf"})
_WHITESPACE_SET = frozenset(WHITESPACE)
_WHITESPACE_RUN = re.compile("[" + re.escape(WHITESPACE) + "]+")


def _is_edge_junk(char: str) -> bool:
    return char in _WHITESPACE_SET or unicodedata.category(char) in _STRIP_CATEGORIES


def _drop_invisible(text: str) -> str:
    """Remove Cc/Cf characters that are not whitespace (soft hyphen, ZWSP, BOM, ...)."""
    if text.isprintable():  # fast path: no Cc/Cf/Z* except plain space
        return text
    return "".join(
        c for c in text if c in _WHITESPACE_SET or unicodedata.category(c) not in _DROP_CATEGORIES
    )


def normalize(text: str) -> str:
    """The canonical form of one keyword (rules in the module docstring); "" if empty."""
    text = unicodedata.normalize("NFKC", text).lower()
    text = _drop_invisible(text)
    start, end = 0, len(text)
    while start < end and _is_edge_junk(text[start]):
        start += 1
    while end > start and _is_edge_junk(text[end - 1]):
        end -= 1
    return _WHITESPACE_RUN.sub(" ", text[start:end])


MAX_TERM_BYTES = 32766
"""Lucene's limit on one indexed term (UTF-8 bytes): a longer keyword would make
OpenSearch reject the whole document, so `term` cuts keywords (in practice: very long
titles) to fit, here, once, for the shadow index and OpenSearch alike."""

_TERMS: dict[str, str] = {}
_TERMS_MAX = 1 << 20


def fits_term_limit(keyword: str) -> bool:
    """Whether a normalized keyword is short enough to be one indexed term."""
    return len(keyword) * 4 <= MAX_TERM_BYTES or len(keyword.encode("utf-8")) <= MAX_TERM_BYTES


def _fit(keyword: str) -> str:
    if fits_term_limit(keyword):
        return keyword
    cut = keyword.encode("utf-8")[:MAX_TERM_BYTES].decode("utf-8", errors="ignore")
    return normalize(cut)


def _already_normal(text: str) -> bool:
    """A cheap, exact test for the common case of a keyword already in normal form:
    printable ASCII (NFKC leaves it alone, nothing invisible), no uppercase, letters or
    digits at both ends (nothing to strip), single spaces, within the term limit."""
    return (
        text.isascii()
        and text.isprintable()
        and text[:1].isalnum()
        and text[-1:].isalnum()
        and "  " not in text
        and len(text) <= MAX_TERM_BYTES
        and text.lower() == text
    )


def term(text: str) -> str:
    """`normalize(text)` cut to the term limit.

    Keywords already in normal form (most generated ones) are returned as they are;
    others are memoized, because rollouts and syncs repeat the same keywords endlessly
    (a plain dict, cleared past ~1M entries, costs less than `lru_cache`'s bookkeeping).
    """
    if _already_normal(text):
        return text
    found = _TERMS.get(text)
    if found is None:
        if len(_TERMS) >= _TERMS_MAX:
            _TERMS.clear()
        found = _TERMS[text] = _fit(normalize(text))
    return found


def keyword_set(keywords: Iterable[str]) -> list[str]:
    """Normalize an already-split list, drop empties, de-duplicate keeping first order."""
    cache = _TERMS  # inline lookup first: this runs once per keyword of every rollout
    seen = dict.fromkeys([cache[k] if k in cache else term(k) for k in keywords])
    seen.pop("", None)
    return list(seen)


def representation(keywords: Iterable[str], text: str | None, k_max: int | None = DEFAULT_K_MAX) -> list[str]:
    """`S[:k_max] ∪ {normalize(text)}`: what an item (text = title) or query (text = q)
    matches with (DESIGN.md section 1).

    The one definition used by the shadow index, sync, ingest and queries, so the
    shadow index and the documents written to OpenSearch hold the same set. `S` is
    truncated to `k_max` first, as at serving time; every keyword fits `MAX_TERM_BYTES`.
    """
    base = keyword_set(keywords)
    if k_max is not None:
        base = base[:k_max]
    text_term = term(text) if text else ""
    if text_term and text_term not in base:
        base.append(text_term)
    return base


@dataclass(frozen=True)
class ParsedKeywords:
    """Generator output as a keyword set; `oversized` means more than k_max distinct."""

    keywords: list[str]
    oversized: bool


_SEPARATORS = re.compile(
    r"""(?:
        (?<!\d),                 # a comma after anything but a digit
      | ,(?!\d{3}(?!\d))          # a digit's comma not followed by exactly three digits
      | [;\n\r\u2028\u2029\uff0c\uff1b\u3001]
    )""",
    re.VERBOSE,
)
"""List separators. A comma between a digit and a group of exactly three digits is a
thousands separator ("2,000 lb capacity", "1,250,000"), not a list break; "1,2,3" and
"2, 000" still split."""
_LIST_MARKER = re.compile(
    r"""^\s*(?:
        \(?\d{1,3}[.):](?=\s|$)      # 1.  2)  (3)  4:
      | [-*\u2022\u00b7\u2013\u2014+>#]+(?=\s|$)   # bullets: - * • · – — + > #
    )\s*""",
    re.VERBOSE,
)
_LABEL = re.compile(r"^\s*(?:keywords?|output|answer)\s*:\s*", re.IGNORECASE)
_QUOTES = "\"'`\u2018\u2019\u201a\u201b\u201c\u201d\u201e\u00ab\u00bb\u2039\u203a"


_LINE_BREAK = re.compile(r"\r\n|[\n\r\u2028\u2029]")
_INTRO_WORDS = re.compile(
    r"\b(?:here|here['\u2019]s|you|i(?=\s)|we|these|following|below|list\s+of|keywords|suggestions|response)\b",
    re.IGNORECASE,
)
"""Words of a sentence that introduces a list ("here's a list of ...", "you could search
for:"), and that a keyword line ending in ':' ("outdoor patio umbrella 9 ft:") lacks."""
_HERE_IS = re.compile(
    r"^(?:(?:sure|okay|ok|certainly)\s*[,!.]?\s*)?here(?:['\u2019]s|\s+is|\s+are)\b"
    r".*\b(?:keywords?|list|terms|quer(?:y|ies)|items?|suggestions|ideas|tags)\b",
    re.IGNORECASE,
)
"""A line opening with "here is/here's/here are ..." that speaks of the keywords or list."""


def _is_preamble(line: str) -> bool:
    """Whether the first line of an output is a sentence introducing the list.

    Either it ends in ':' and its last clause (after any comma or semicolon) has an
    introducing word, so "lamp, desk:" or a heading that is a keyword stay keywords; or it
    is a "here is/here's/here are ... keywords/list" sentence. A list item (numbered or
    bulleted) is never one.
    """
    if not line or _LIST_MARKER.match(line):
        return False
    if line.endswith(":"):
        return bool(_INTRO_WORDS.search(re.split(r"[,;]", line)[-1]))
    return bool(_HERE_IS.match(line))


def _drop_preamble(text: str) -> str:
    """The output without a leading sentence that introduces the list.

    Base models open with one ("Here's a list of 10 search keywords for finding the
    item:"); kept, it would become a keyword that no item or query ever shares. On a
    one-line answer ("Here are some keywords: lamp, desk") only the part up to the first
    ':' goes.
    """
    first, *rest = _LINE_BREAK.split(text.strip(), maxsplit=1)
    line = first.strip()
    if not _is_preamble(line):
        return text
    tail = rest[0] if rest else ""
    if not line.endswith(":") and ":" in line:
        tail = line.split(":", 1)[1] + "\n" + tail
    return tail


def _clean_item(item: str) -> str:
    item = _LIST_MARKER.sub("", item, count=1)
    return item.strip().strip(_QUOTES)


def parse_keywords(text: str, k_max: int = DEFAULT_K_MAX) -> ParsedKeywords:
    """Parse generator output (comma/semicolon/newline lists, numbered or bulleted).

    Numbers written with thousands separators stay one keyword (see `_SEPARATORS`). A
    leading sentence that introduces the list is not a keyword (see `_drop_preamble`).

    All distinct keywords are kept, in first-seen order; callers truncate with
    `keywords[:k_max]` when serving. Items longer than `MAX_KEYWORD_CHARS` after
    normalization are dropped: an unbroken run-on sentence is not a keyword and would
    exceed what a keyword field should hold.
    """
    text = _LABEL.sub("", _drop_preamble(text), count=1)
    seen: dict[str, None] = {}
    for raw in _SEPARATORS.split(text):
        norm = normalize(_clean_item(raw))
        if norm and len(norm) <= MAX_KEYWORD_CHARS:
            seen.setdefault(norm, None)
    keywords = list(seen)
    return ParsedKeywords(keywords=keywords, oversized=len(keywords) > k_max)
