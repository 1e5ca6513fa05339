"""The item view of the shadow index: keyword -> items, with BM25 ranking inside matches.

This is the frozen index that query-side rewards and shadow evaluation run against
(DESIGN.md section 2). Items are represented as `S_i ∪ {normalize(title)}`, `S_i`
truncated to k_max as at serving time, which is exactly what sync writes into
`cogr_keywords`. Inside, items are integer positions (catalog order) and keywords are
integer term ids; outside, callers see their own item ids and keyword strings.

Retrieval unions are `Postings.union`s (bitsets for frequent keywords, deduplicated
short postings for the rest), so counting a candidate's retrieved set never sorts.
"""

from __future__ import annotations

import sys
from array import array
from collections.abc import Iterable, Mapping, Sequence

import numpy as np

from cogr_search.errors import InputError
from cogr_search.keywords import DEFAULT_K_MAX, representation, term
from cogr_search.metrics import QueryResult
from cogr_search.shadow.bm25 import BM25Index, Bm25Variant, boost_factor
from cogr_search.shadow.postings import CsrBuilder, Postings, Vocabulary, transpose_csr

class ItemIndex:
    """Items' keyword sets as CSR arrays, the inverted index over them, lazy BM25 stats."""

    def __init__(
        self,
        item_ids: list[str],
        vocab: Vocabulary,
        item_indptr: np.ndarray,
        item_terms: np.ndarray,
        title_terms: np.ndarray,
        k_max: int,
        dense_min_df: int = 0,
        bm25_variant: Bm25Variant = "legacy",
    ) -> None:
        boost_factor(bm25_variant)  # an unknown variant fails here, not at the first ranking
        self.bm25_variant = bm25_variant
        self.item_ids = item_ids
        self.positions = {item_id: pos for pos, item_id in enumerate(item_ids)}
        if len(self.positions) != len(item_ids):
            raise InputError("item ids must be unique")
        self.terms = vocab.terms
        self.vocab = vocab.ids
        self.item_indptr = item_indptr
        self.item_terms = item_terms
        self.title_terms = title_terms
        self.k_max = k_max
        t_indptr, t_members = transpose_csr(item_indptr, item_terms, len(vocab.terms))
        self.postings = Postings(vocab.terms, vocab.ids, t_indptr, t_members, len(item_ids), dense_min_df)
        self._bm25: BM25Index | None = None
        self._id_order: np.ndarray | None = None

    # ----------------------------------------------------------------- building
    @classmethod
    def build(
        cls,
        item_keywords: Mapping[str, Sequence[str]],
        titles: Mapping[str, str],
        k_max: int = DEFAULT_K_MAX,
        dense_min_df: int = 0,
        bm25_variant: Bm25Variant = "legacy",
    ) -> "ItemIndex":
        """Index every item of `titles` (catalog order) with `S_i[:k_max] ∪ {title}`.

        Items without keywords are represented by their title alone. Keywords for an id
        that is not in `titles` are an error: the title keyword would be missing.
        `dense_min_df` (0: automatic) is the document frequency from which a keyword
        also gets a bitset row; it changes speed and memory, never results.
        `bm25_variant` is the engine's scoring (`legacy`: OpenSearch, `lucene`:
        Elasticsearch); it scales scores, and matters for exact ties only.
        """
        unknown = [item_id for item_id in item_keywords if item_id not in titles]
        if unknown:
            raise InputError(
                f"keywords for {len(unknown)} item(s) not in the catalog, e.g. {unknown[0]!r}"
            )
        reps = (representation(item_keywords.get(item_id, ()), title, k_max) for item_id, title in titles.items())
        title_keywords = (term(title) if title else "" for title in titles.values())
        return cls.from_representations(list(titles), reps, title_keywords, k_max, dense_min_df, bm25_variant)

    @classmethod
    def from_representations(
        cls,
        item_ids: list[str],
        reps: Iterable[Sequence[str]],
        title_keywords: Iterable[str],
        k_max: int,
        dense_min_df: int = 0,
        bm25_variant: Bm25Variant = "legacy",
    ) -> "ItemIndex":
        """Index final, normalized representations as they are (no truncation).

        `reps` and `title_keywords` may be iterators: each representation is turned into
        term ids and dropped, so a catalog's keyword strings never all live at once.
        """
        vocab = Vocabulary()
        rows = CsrBuilder()
        title_terms = array("i")
        for rep, title in zip(reps, title_keywords):
            rows.add(vocab.add_all(rep))
            # an item's title term only counts where its representation holds it (a
            # document that was never synced has no keywords at all, title included)
            title_terms.append(vocab.ids[title] if title and title in rep else -1)
        if len(rows) != len(item_ids):
            raise InputError(f"{len(rows)} representations for {len(item_ids)} items")
        indptr, terms = rows.arrays()
        title_terms = np.frombuffer(title_terms, dtype=np.int32).copy()
        return cls(item_ids, vocab, indptr, terms, title_terms, k_max, dense_min_df, bm25_variant)

    def title_keyword(self, pos: int) -> str:
        term = int(self.title_terms[pos])
        return self.terms[term] if term >= 0 else ""

    def with_item(self, item_id: str, keywords: Sequence[str]) -> "ItemIndex":
        """A full rebuild with one item's keywords replaced: the naive counterfactual."""
        pos = self.position(item_id)
        reps = [self.keywords_of_position(p) for p in range(len(self))]
        reps[pos] = representation(keywords, self.title_keyword(pos), self.k_max)
        titles = [self.title_keyword(p) for p in range(len(self))]
        return ItemIndex.from_representations(
            self.item_ids, reps, titles, self.k_max, self.postings.dense_min_df, self.bm25_variant
        )

    # ----------------------------------------------------------------- lookups
    def __len__(self) -> int:
        return len(self.item_ids)

    def position(self, item_id: str) -> int:
        try:
            return self.positions[item_id]
        except KeyError:
            raise InputError(f"unknown item id {item_id!r}") from None

    def keywords_of_position(self, pos: int) -> list[str]:
        terms = self.item_terms[self.item_indptr[pos] : self.item_indptr[pos + 1]]
        return [self.terms[t] for t in terms]

    def keywords_of(self, item_id: str) -> list[str]:
        """The item's representation as indexed: `S_i[:k_max]` then its title keyword."""
        return self.keywords_of_position(self.position(item_id))

    def term_ids(self, keywords: Iterable[str]) -> np.ndarray:
        """Term ids of already-normalized keywords; keywords no item has are skipped."""
        return np.array(self.postings.term_ids(keywords), dtype=np.int64)

    # ----------------------------------------------------------------- retrieval
    def retrieved_positions(self, term_ids: Sequence[int] | np.ndarray) -> np.ndarray:
        """Sorted positions of the items sharing at least one term with the query."""
        if len(term_ids) == 1:
            return self.postings.members_of(int(term_ids[0])).astype(np.int64)
        return self.postings.union([term_ids]).row(0)

    def count(self, term_ids: Sequence[int] | np.ndarray, relevant_positions: np.ndarray) -> tuple[int, int]:
        """(|I_ret|, |I_ret ∩ rel|) of one query without materializing the retrieved set."""
        n_ret, n_tp = self.count_batch([term_ids], [relevant_positions])
        return int(n_ret[0]), int(n_tp[0])

    def count_batch(
        self, term_lists: Sequence[Sequence[int] | np.ndarray], relevant: Sequence[np.ndarray]
    ) -> tuple[np.ndarray, np.ndarray]:
        """(|I_ret|, |I_ret ∩ rel|) for each row's term ids, one union for the batch."""
        union = self.postings.union(term_lists)
        n_ret = union.sizes()
        lengths = [len(r) for r in relevant]
        if sum(lengths) == 0:
            return n_ret, np.zeros(len(term_lists), dtype=np.int64)
        rows = np.repeat(np.arange(len(term_lists)), lengths)
        hits = self.postings.contains(union, rows, np.concatenate(relevant).astype(np.int64))
        return n_ret, np.bincount(rows[hits], minlength=len(term_lists))

    def retrieved(self, keywords: Sequence[str], text: str | None = None, k_max: int | None = None) -> list[str]:
        """Item ids retrieved by `keywords ∪ {normalize(text)}` (exact keyword match)."""
        rep = representation(keywords, text, k_max)
        return [self.item_ids[p] for p in self.retrieved_positions(self.term_ids(rep))]

    # ----------------------------------------------------------------- ranking
    @property
    def bm25(self) -> BM25Index:
        """Token statistics, built on first use: rewards never need them."""
        if self._bm25 is None:
            self._bm25 = BM25Index(self.item_indptr, self.item_terms, self.terms, self.bm25_variant)
        return self._bm25

    @property
    def id_order(self) -> np.ndarray:
        """Each position's rank in item-id order: the tie-break of every ranking.

        Equal BM25 scores are ordered by item id ascending (code point order, which is
        the UTF-8 byte order OpenSearch sorts `keyword` fields in), so shadow and
        OpenSearch rankings agree however the items were loaded or segmented.
        """
        if self._id_order is None:
            order = np.empty(len(self.item_ids), dtype=np.int64)
            order[np.array(sorted(range(len(self.item_ids)), key=self.item_ids.__getitem__), dtype=np.int64)] = np.arange(
                len(self.item_ids), dtype=np.int64
            )
            self._id_order = order
        return self._id_order

    def search(
        self, keywords: Sequence[str], text: str | None = None, k: int | None = 1000, k_max: int | None = None
    ) -> tuple[int, list[tuple[str, float]]]:
        """(|I_ret|, top-k (item id, BM25 score)) for the keyword-expanded query."""
        rep = representation(keywords, text, k_max)
        retrieved = self.retrieved_positions(self.term_ids(rep))
        positions, scores = self.bm25.rank(rep, retrieved, k, self.id_order)
        return len(retrieved), [(self.item_ids[p], float(s)) for p, s in zip(positions, scores)]

    def query_results(
        self,
        query_keywords: Mapping[str, Sequence[str]],
        query_texts: Mapping[str, str],
        relevant: Mapping[str, set[str]],
        k: int = 1000,
        k_max: int | None = DEFAULT_K_MAX,
    ) -> dict[str, QueryResult]:
        """A `QueryResult` per query of `query_texts`, for `metrics.compute_metrics`.

        Query keyword sets are truncated to k_max, as at serving time.
        """
        results: dict[str, QueryResult] = {}
        for query_id, text in query_texts.items():
            rep = representation(query_keywords.get(query_id, ()), text, k_max)
            retrieved = self.retrieved_positions(self.term_ids(rep))
            rel = [self.positions[i] for i in relevant.get(query_id, ()) if i in self.positions]
            n_tp = int(np.count_nonzero(np.isin(rel, retrieved, assume_unique=True))) if rel else 0
            positions, _ = self.bm25.rank(rep, retrieved, k, self.id_order)
            results[query_id] = QueryResult(len(retrieved), n_tp, [self.item_ids[p] for p in positions])
        return results

    def memory_bytes(self) -> int:
        """Arrays, vocabulary and id strings (not the lazily built BM25 statistics)."""
        arrays = self.item_indptr.nbytes + self.item_terms.nbytes + self.title_terms.nbytes
        ids = sys.getsizeof(self.item_ids) + sys.getsizeof(self.positions) + sum(sys.getsizeof(i) for i in self.item_ids)
        return arrays + ids + self.postings.memory_bytes()
