"""The query view of the shadow index, and the CoGR rewards computed against it.

Built once per RL phase from the current query keyword sets, the frozen item index
and the relevance labels. It caches, per query, `n_ret`, `n_tp`, `n_rel` under the
reference item index, plus keyword -> queries postings, so that:

- a query-side reward is one gather over the item postings (`ItemIndex.count`);
- an item-side reward is one bitset union over the query postings (Q_cand) and one
  dot product with a per-item weight vector (see `rewards.py`), never a rebuild of
  the item index.

Ids outside are the caller's strings; inside, queries and items are positions.
Candidate keywords may be raw generator strings: they are normalized (cached) and
de-duplicated here; a set with more than k_max distinct keywords is oversized.
"""

from __future__ import annotations

import sys
from collections.abc import Mapping, Sequence

import numpy as np

from cogr_search.errors import InputError
from cogr_search.keywords import DEFAULT_K_MAX
from cogr_search.shadow.index import ItemIndex, distinct_keywords, query_representation
from cogr_search.shadow.postings import (
    Postings,
    Vocabulary,
    bits_set,
    csr_from_rows,
    popcount_rows,
    transpose_csr,
    unpack_rows,
)
from cogr_search.shadow.rewards import (
    OVERSIZED_ITEM_REWARD,
    OVERSIZED_QUERY_REWARD,
    GainTables,
    ItemWeights,
    f_beta_array,
    item_weights,
    transposed_f_beta,
)

_CHUNK = 64
"""Candidates per union: bounds the bitset block (64 x |items| bits)."""


class QueryView:
    """Keyword -> queries postings plus cached reference counts; answers all rewards."""

    def __init__(
        self,
        item_index: ItemIndex,
        query_ids: list[str],
        vocab: Vocabulary,
        query_indptr: np.ndarray,
        query_terms: np.ndarray,
        text_terms: np.ndarray,
        rel_indptr: np.ndarray,
        rel_items: np.ndarray,
        n_rel: np.ndarray,
        k_max: int,
        counts: tuple[np.ndarray, np.ndarray] | None = None,
        dense_min_df: int = 0,
    ) -> None:
        self.item_index = item_index
        self.query_ids = query_ids
        self.positions = {query_id: pos for pos, query_id in enumerate(query_ids)}
        if len(self.positions) != len(query_ids):
            raise InputError("query ids must be unique")
        self.k_max = k_max
        self.query_indptr = query_indptr
        self.query_terms = query_terms
        self.text_terms = text_terms  # query text as an item-vocabulary term, -1 if no item has it
        self.rel_indptr = rel_indptr
        self.rel_items = rel_items
        self.n_rel = n_rel
        n_queries = len(query_ids)
        t_indptr, t_members = transpose_csr(query_indptr, query_terms, len(vocab.terms))
        self.postings = Postings(vocab.terms, vocab.ids, t_indptr, t_members, n_queries, dense_min_df)
        self.relq_indptr, self.relq_queries = transpose_csr(rel_indptr, rel_items, len(item_index))
        # item-vocabulary term -> query-vocabulary term (-1: no query has that keyword)
        qget = vocab.ids.get
        self.item_to_query_term = np.fromiter(
            (qget(t, -1) for t in item_index.terms), dtype=np.int64, count=len(item_index.terms)
        )
        if counts is None:
            counts = self._reference_counts()
        self.n_ret, self.n_tp = counts
        self._gains: dict[float, GainTables] = {}
        self._weights_key: tuple[int, float] | None = None
        self._weights: ItemWeights | None = None

    # ----------------------------------------------------------------- building
    @classmethod
    def build(
        cls,
        query_keywords: Mapping[str, Sequence[str]],
        query_texts: Mapping[str, str],
        item_index: ItemIndex,
        relevant: Mapping[str, set[str]],
        k_max: int = DEFAULT_K_MAX,
        dense_min_df: int = 0,
    ) -> "QueryView":
        """Queries of `query_texts` (in order) with `S_q[:k_max] ∪ {q}` and their labels.

        Queries without keywords are represented by their text alone. Relevant items
        missing from the catalog count in n_rel (they can never be retrieved).
        """
        unknown = [query_id for query_id in query_keywords if query_id not in query_texts]
        if unknown:
            raise InputError(f"keywords for {len(unknown)} query(ies) without text, e.g. {unknown[0]!r}")
        vocab = Vocabulary()
        rows, rel_rows, n_rel, text_terms = [], [], [], []
        item_vocab = item_index.vocab
        for query_id, text in query_texts.items():
            rep = query_representation(query_keywords.get(query_id, ()), text, k_max)
            rows.append(vocab.add_all(rep))
            text_keyword = query_representation((), text, None)
            text_terms.append(item_vocab.get(text_keyword[0], -1) if text_keyword else -1)
            rel = relevant.get(query_id, ())
            rel_rows.append(sorted(item_index.positions[i] for i in rel if i in item_index.positions))
            n_rel.append(len(rel))
        indptr, terms = csr_from_rows(rows)
        rel_indptr, rel_items = csr_from_rows(rel_rows)
        return cls(
            item_index,
            list(query_texts),
            vocab,
            indptr,
            terms,
            np.array(text_terms, dtype=np.int64),
            rel_indptr,
            rel_items,
            np.array(n_rel, dtype=np.int64),
            k_max,
            dense_min_df=dense_min_df,
        )

    def _item_terms_of_query(self, pos: int) -> np.ndarray:
        """The reference representation of a query, in item-vocabulary term ids."""
        terms = self.query_terms[self.query_indptr[pos] : self.query_indptr[pos + 1]]
        return self.item_index.term_ids(self.postings.terms[t] for t in terms)

    def relevant_positions(self, pos: int) -> np.ndarray:
        return self.rel_items[self.rel_indptr[pos] : self.rel_indptr[pos + 1]]

    def _reference_counts(self, item_index: ItemIndex | None = None) -> tuple[np.ndarray, np.ndarray]:
        index = item_index or self.item_index
        n = len(self.query_ids)
        n_ret = np.zeros(n, dtype=np.int64)
        n_tp = np.zeros(n, dtype=np.int64)
        for pos in range(n):
            terms = self.query_terms[self.query_indptr[pos] : self.query_indptr[pos + 1]]
            item_terms = index.term_ids(self.postings.terms[t] for t in terms)
            n_ret[pos], n_tp[pos] = index.count(item_terms, self.relevant_positions(pos))
        return n_ret, n_tp

    # ----------------------------------------------------------------- lookups
    def __len__(self) -> int:
        return len(self.query_ids)

    def position(self, query_id: str) -> int:
        try:
            return self.positions[query_id]
        except KeyError:
            raise InputError(f"unknown query id {query_id!r}") from None

    def keywords_of(self, query_id: str) -> list[str]:
        """The query's reference representation `S_q[:k_max] ∪ {q}`."""
        pos = self.position(query_id)
        terms = self.query_terms[self.query_indptr[pos] : self.query_indptr[pos + 1]]
        return [self.postings.terms[t] for t in terms]

    def counts(self, query_id: str) -> tuple[int, int, int]:
        """Cached (n_ret, n_tp, n_rel) of a query under the reference item index."""
        pos = self.position(query_id)
        return int(self.n_ret[pos]), int(self.n_tp[pos]), int(self.n_rel[pos])

    def gains(self, beta: float = 1.0) -> GainTables:
        tables = self._gains.get(beta)
        if tables is None:
            tables = self._gains[beta] = GainTables.compute(self.n_ret, self.n_tp, self.n_rel, beta)
        return tables

    def reference_total(self, beta: float = 1.0) -> float:
        """sum_q F(I_ret^ref(q), rel(q)): R_old of Eq. 2.3."""
        return float(self.gains(beta).reference.sum())

    def reference_query_positions(self, item_pos: int) -> np.ndarray:
        """Q_ref(i): the queries whose reference result contains item i (sorted)."""
        index = self.item_index
        item_terms = index.item_terms[index.item_indptr[item_pos] : index.item_indptr[item_pos + 1]]
        query_terms = self.item_to_query_term[item_terms]
        query_terms = query_terms[query_terms >= 0]
        bits = self.postings.union_bits([query_terms])
        return np.flatnonzero(unpack_rows(bits, len(self.query_ids))[0])

    def reference_queries(self, item_id: str) -> list[str]:
        return [self.query_ids[q] for q in self.reference_query_positions(self.item_index.position(item_id))]

    def relevant_query_positions(self, item_pos: int) -> np.ndarray:
        return self.relq_queries[self.relq_indptr[item_pos] : self.relq_indptr[item_pos + 1]]

    # ----------------------------------------------------------------- query side
    def query_reward(self, query_id: str, keywords: Sequence[str], oversized: bool = False, beta: float = 1.0) -> float:
        """F_beta of the candidate `S_q` against the frozen item index; 0 if oversized."""
        return float(self.query_rewards(query_id, [keywords], [oversized], beta)[0])

    def query_rewards(
        self,
        query_ids: str | Sequence[str],
        keyword_lists: Sequence[Sequence[str]],
        oversized: Sequence[bool] | None = None,
        beta: float = 1.0,
    ) -> np.ndarray:
        """Rewards of a GRPO group (one query id for all) or of a mixed batch (one id each)."""
        ids = _broadcast_ids(query_ids, len(keyword_lists))
        flags = oversized if oversized is not None else [False] * len(keyword_lists)
        out = np.full(len(keyword_lists), OVERSIZED_QUERY_REWARD, dtype=np.float64)
        vocab_get = self.item_index.vocab.get
        live: list[int] = []
        term_lists: list[list[int]] = []
        relevant: list[np.ndarray] = []
        positions: list[int] = []
        for j, (query_id, keywords) in enumerate(zip(ids, keyword_lists)):
            rep = distinct_keywords(keywords)
            if flags[j] or len(rep) > self.k_max:
                continue
            pos = self.position(query_id)
            terms = [t for t in map(vocab_get, rep) if t is not None]
            text_term = int(self.text_terms[pos])
            if text_term >= 0 and text_term not in terms:
                terms.append(text_term)
            live.append(j)
            term_lists.append(terms)
            relevant.append(self.relevant_positions(pos))
            positions.append(pos)
        for start in range(0, len(live), _CHUNK):
            chunk = slice(start, start + _CHUNK)
            n_ret, n_tp = self.item_index.count_batch(term_lists[chunk], relevant[chunk])
            out[live[chunk]] = f_beta_array(n_tp, n_ret, self.n_rel[positions[chunk]], beta)
        return out

    # ----------------------------------------------------------------- item side
    def _item_weights(self, item_pos: int, beta: float) -> ItemWeights:
        """Cached for the last item: a GRPO group asks for the same item G times."""
        key = (item_pos, beta)
        if self._weights_key != key:
            self._weights = item_weights(
                self.gains(beta),
                self.reference_query_positions(item_pos),
                self.relevant_query_positions(item_pos),
            )
            self._weights_key = key
        assert self._weights is not None
        return self._weights

    def _candidate_query_terms(self, item_pos: int, keywords: Sequence[str]) -> list[int] | None:
        """Query-vocabulary terms of `S_cand ∪ {title}`, or None when oversized."""
        rep = distinct_keywords(keywords)
        if len(rep) > self.k_max:
            return None
        get = self.postings.vocab.get
        terms = [t for t in map(get, rep) if t is not None]
        title_term = int(self.item_index.title_terms[item_pos])
        if title_term >= 0:
            query_term = int(self.item_to_query_term[title_term])
            if query_term >= 0 and query_term not in terms:
                terms.append(query_term)
        return terms

    def _item_batch(self, item_ids, keyword_lists, oversized, fill: float, score) -> np.ndarray:
        """Group candidates by item, chunk them, and apply `score(item_pos, bits)` to the
        Q_cand bitsets of each chunk."""
        ids = _broadcast_ids(item_ids, len(keyword_lists))
        flags = oversized if oversized is not None else [False] * len(keyword_lists)
        out = np.full(len(keyword_lists), fill, dtype=np.float64)
        groups: dict[int, list[int]] = {}
        for j, item_id in enumerate(ids):
            groups.setdefault(self.item_index.position(item_id), []).append(j)
        for item_pos, members in groups.items():
            live: list[int] = []
            term_lists: list[list[int]] = []
            for j in members:
                terms = None if flags[j] else self._candidate_query_terms(item_pos, keyword_lists[j])
                if terms is not None:
                    live.append(j)
                    term_lists.append(terms)
            for start in range(0, len(live), _CHUNK):
                chunk = term_lists[start : start + _CHUNK]
                out[live[start : start + _CHUNK]] = score(item_pos, self.postings.union_bits(chunk))
        return out

    def item_reward(self, item_id: str, keywords: Sequence[str], oversized: bool = False, beta: float = 1.0) -> float:
        """Counterfactual marginal reward of `S_i` (Eq. 2.3); -1 if oversized."""
        return float(self.item_rewards(item_id, [keywords], [oversized], beta)[0])

    def item_rewards(
        self,
        item_ids: str | Sequence[str],
        keyword_lists: Sequence[Sequence[str]],
        oversized: Sequence[bool] | None = None,
        beta: float = 1.0,
    ) -> np.ndarray:
        """Counterfactual rewards of a GRPO group (one item id) or a mixed batch."""

        def score(item_pos: int, bits: np.ndarray) -> np.ndarray:
            weights = self._item_weights(item_pos, beta)
            return weights.base + unpack_rows(bits, len(self.query_ids)) @ weights.weights

        return self._item_batch(item_ids, keyword_lists, oversized, OVERSIZED_ITEM_REWARD, score)

    def transposed_item_reward(
        self, item_id: str, keywords: Sequence[str], oversized: bool = False, beta: float = 1.0
    ) -> float:
        """Item-centric F of Q_ret(i) against rel(i) (paper Table 3 ablation); 0 if oversized."""
        return float(self.transposed_item_rewards(item_id, [keywords], [oversized], beta)[0])

    def transposed_item_rewards(
        self,
        item_ids: str | Sequence[str],
        keyword_lists: Sequence[Sequence[str]],
        oversized: Sequence[bool] | None = None,
        beta: float = 1.0,
    ) -> np.ndarray:
        def score(item_pos: int, bits: np.ndarray) -> np.ndarray:
            relevant = self.relevant_query_positions(item_pos)
            n_cand = popcount_rows(bits)
            rows = np.repeat(np.arange(len(bits)), len(relevant))
            hits = bits_set(bits, rows, np.tile(relevant, len(bits)).astype(np.int64))
            n_hit = np.bincount(rows[hits], minlength=len(bits))
            return transposed_f_beta(n_cand, n_hit, len(relevant), beta)

        return self._item_batch(item_ids, keyword_lists, oversized, OVERSIZED_QUERY_REWARD, score)

    # ----------------------------------------------------------------- reference
    def naive_item_reward(self, item_id: str, keywords: Sequence[str], oversized: bool = False, beta: float = 1.0) -> float:
        """Eq. 2.3 the slow way: rebuild the item index with `S_i` and rerun every query.

        For benchmarks and tests only; `item_reward` must agree with it.
        """
        if oversized or len(distinct_keywords(keywords)) > self.k_max:
            return OVERSIZED_ITEM_REWARD
        counterfactual = self.item_index.with_item(item_id, keywords)
        n_ret, n_tp = self._reference_counts(counterfactual)
        new_total = float(f_beta_array(n_tp, n_ret, self.n_rel, beta).sum())
        return new_total - self.reference_total(beta)

    def memory_bytes(self) -> int:
        """Arrays, vocabulary and id strings of this view (the item index not included)."""
        arrays = (
            self.query_indptr, self.query_terms, self.text_terms, self.rel_indptr, self.rel_items,
            self.n_rel, self.n_ret, self.n_tp, self.relq_indptr, self.relq_queries, self.item_to_query_term,
        )
        ids = sys.getsizeof(self.query_ids) + sys.getsizeof(self.positions) + sum(sys.getsizeof(q) for q in self.query_ids)
        return sum(a.nbytes for a in arrays) + ids + self.postings.memory_bytes()


def _broadcast_ids(ids: str | Sequence[str], n: int) -> list[str]:
    if isinstance(ids, str):
        return [ids] * n
    ids = list(ids)
    if len(ids) != n:
        raise InputError(f"{len(ids)} ids for {n} keyword lists")
    return ids
