"""The query view of the shadow index, and the CoGR rewards computed against it.

Built once per RL phase from the current query keyword sets, the frozen item index
and the relevance labels. It caches, per query, `n_ret`, `n_tp`, `n_rel` under the
reference item index, plus keyword -> queries postings, so that:

- a query-side reward is one union over the item postings (`ItemIndex.count_batch`);
- an item-side reward is one union over the query postings (Q_cand) and a sum of a
  per-item weight vector over it (see `rewards.py`), never a rebuild of the item index.

Ids outside are the caller's strings; inside, queries and items are positions.
Candidate keywords may be raw generator strings: they are normalized (cached) and
de-duplicated here; a set with more than k_max distinct keywords is oversized.
"""

from __future__ import annotations

import sys
from array import array
from collections.abc import Iterator, Mapping, Sequence

import numpy as np

from cogr_search.errors import InputError
from cogr_search.keywords import DEFAULT_K_MAX, keyword_set, representation
from cogr_search.shadow.index import ItemIndex
from cogr_search.shadow.postings import CsrBuilder, Postings, Union, Vocabulary, transpose_csr
from cogr_search.shadow.rewards import (
    OVERSIZED_ITEM_REWARD,
    OVERSIZED_QUERY_REWARD,
    GainTables,
    f_beta_array,
    item_weights,
    transposed_f_beta,
)

QUERY_DENSE_FRACTION = 8
"""Query keywords get bitset rows only when shared by >= 1/8 of all queries: item-side
rewards sum weights over the union, and summing over a bitset means unpacking it,
which only pays off for very long postings."""

_CHUNK = 64
"""Candidates per union: bounds the per-row scratch arrays (64 rows x members)."""

_REFERENCE_CHUNK = 8
"""Queries per union when caching reference counts: a GRPO group's rows, so the build
needs no more item-side scratch than query rewards do."""


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
        if dense_min_df <= 0:
            dense_min_df = max(32, n_queries // QUERY_DENSE_FRACTION)
        self.postings = Postings(vocab.terms, vocab.ids, t_indptr, t_members, n_queries, dense_min_df)
        self.relq_indptr, self.relq_queries = transpose_csr(rel_indptr, rel_items, len(item_index))
        # item-vocabulary term -> query-vocabulary term (-1: no query has that keyword)
        qget = vocab.ids.get
        self.item_to_query_term = np.fromiter(
            (qget(t, -1) for t in item_index.terms), dtype=np.int64, count=len(item_index.terms)
        )
        title_terms = item_index.title_terms
        mapped = self.item_to_query_term[item_index.item_terms]
        keep = mapped >= 0
        self._ref_terms = mapped[keep]
        self._ref_indptr = np.zeros(len(item_index) + 1, dtype=np.int64)
        item_of_term = np.repeat(np.arange(len(item_index)), np.diff(item_index.item_indptr))
        np.cumsum(np.bincount(item_of_term[keep], minlength=len(item_index)), out=self._ref_indptr[1:])
        to_query = self.item_to_query_term.tolist()
        self._title_query_terms = [to_query[t] if t >= 0 else -1 for t in title_terms.tolist()]
        if counts is None:
            counts = self._reference_counts()
        self.n_ret, self.n_tp = counts
        self._gains: dict[float, GainTables] = {}
        self._marks = np.zeros(n_queries, dtype=np.int8)
        self._work: dict[float, np.ndarray] = {}

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
        rows, rel_rows = CsrBuilder(), CsrBuilder()
        n_rel, text_terms = array("q"), array("q")
        item_vocab, item_positions = item_index.vocab, item_index.positions
        for query_id, text in query_texts.items():
            rep = representation(query_keywords.get(query_id, ()), text, k_max)
            rows.add(vocab.add_all(rep))
            text_keyword = representation((), text, None)
            text_terms.append(item_vocab.get(text_keyword[0], -1) if text_keyword else -1)
            rel = relevant.get(query_id, ())
            rel_rows.add(sorted(item_positions[i] for i in rel if i in item_positions))
            n_rel.append(len(rel))
        indptr, terms = rows.arrays()
        rel_indptr, rel_items = rel_rows.arrays()
        return cls(
            item_index,
            list(query_texts),
            vocab,
            indptr,
            terms,
            np.frombuffer(text_terms, dtype=np.int64).copy(),
            rel_indptr,
            rel_items,
            np.frombuffer(n_rel, dtype=np.int64).copy(),
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
        """(n_ret, n_tp) of every reference representation, `_REFERENCE_CHUNK` queries per union."""
        index = item_index or self.item_index
        iget = index.vocab.get
        to_item = np.fromiter((iget(t, -1) for t in self.postings.terms), dtype=np.int64, count=len(self.postings.terms))
        mapped = to_item[self.query_terms]
        n = len(self.query_ids)
        n_ret = np.zeros(n, dtype=np.int64)
        n_tp = np.zeros(n, dtype=np.int64)
        for start in range(0, n, _REFERENCE_CHUNK):
            stop = min(start + _REFERENCE_CHUNK, n)
            term_lists = [
                terms[terms >= 0] for terms in np.split(
                    mapped[self.query_indptr[start] : self.query_indptr[stop]],
                    self.query_indptr[start + 1 : stop] - self.query_indptr[start],
                )
            ]
            relevant = [self.relevant_positions(pos) for pos in range(start, stop)]
            n_ret[start:stop], n_tp[start:stop] = index.count_batch(term_lists, relevant)
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

    def _working_weights(self, beta: float) -> np.ndarray:
        """A private copy of `enter_irrelevant`, patched per item during a reward call."""
        work = self._work.get(beta)
        if work is None:
            work = self._work[beta] = self.gains(beta).enter_irrelevant.copy()
        return work

    def reference_total(self, beta: float = 1.0) -> float:
        """sum_q F(I_ret^ref(q), rel(q)): R_old of Eq. 2.3."""
        return float(self.gains(beta).reference.sum())

    def reference_query_positions(self, item_pos: int) -> np.ndarray:
        """Q_ref(i): the queries whose reference result contains item i (sorted)."""
        return self.postings.union([self._reference_terms(item_pos)]).row(0)

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
        lookup = self.item_index.postings.lookup
        live: list[int] = []
        term_lists: list[list[int]] = []
        relevant: list[np.ndarray] = []
        positions: list[int] = []
        single = self.position(query_ids) if isinstance(query_ids, str) else None
        for j, (query_id, keywords) in enumerate(zip(ids, keyword_lists)):
            if flags[j] or self.is_oversized(keywords):
                continue
            pos = single if single is not None else self.position(query_id)
            terms = lookup(keywords)
            text_term = self.text_terms[pos]
            if text_term >= 0:
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
    def is_oversized(self, keywords: Sequence[str]) -> bool:
        """More than k_max distinct normalized keywords (cheap when the list is short)."""
        return len(keywords) > self.k_max and len(keyword_set(keywords)) > self.k_max

    def _reference_terms(self, item_pos: int) -> list[int]:
        """Query-vocabulary terms of the item's reference representation."""
        return self._ref_terms[self._ref_indptr[item_pos] : self._ref_indptr[item_pos + 1]].tolist()

    def _candidate_query_terms(self, item_pos: int, keywords: Sequence[str]) -> list[int]:
        """Query-vocabulary terms of `S_cand ∪ {title}` (the title keyword always stays)."""
        terms = self.postings.lookup(keywords)
        title_term = self._title_query_terms[item_pos]
        if title_term >= 0:
            terms.append(title_term)
        return terms

    def _item_chunks(
        self, item_ids: str | Sequence[str], keyword_lists: Sequence[Sequence[str]], oversized: Sequence[bool] | None
    ) -> Iterator[tuple[Union, list[int], list[int], np.ndarray, np.ndarray]]:
        """Unions of Q_cand for the live candidates, chunk by chunk, with Q_ref rows.

        Each chunk holds, per item, one row for its reference representation followed
        by rows for its candidates, so one union call serves a whole GRPO batch.
        Yields (union, item positions, reference rows, candidate rows, output slots).
        """
        flags = oversized if oversized is not None else [False] * len(keyword_lists)
        if isinstance(item_ids, str) and len(keyword_lists) < _CHUNK:  # one GRPO group: no grouping
            item_pos = self.item_index.position(item_ids)
            live = [j for j, keywords in enumerate(keyword_lists) if not flags[j] and not self.is_oversized(keywords)]
            if live:
                rows = [self._reference_terms(item_pos)]
                rows += [self._candidate_query_terms(item_pos, keyword_lists[j]) for j in live]
                yield self.postings.union(rows), [item_pos], [0], np.arange(1, len(rows)), np.array(live)
            return
        ids = _broadcast_ids(item_ids, len(keyword_lists))
        groups: dict[int, list[int]] = {}
        for j, item_id in enumerate(ids):
            if not flags[j] and not self.is_oversized(keyword_lists[j]):
                groups.setdefault(self.item_index.position(item_id), []).append(j)
        rows: list[list[int]] = []
        items: list[int] = []
        ref_rows: list[int] = []
        cand_rows: list[int] = []
        slots: list[int] = []
        for item_pos, members in groups.items():
            for start in range(0, len(members), _CHUNK - 1):
                piece = members[start : start + _CHUNK - 1]
                if len(rows) + 1 + len(piece) > _CHUNK:
                    yield self.postings.union(rows), items, ref_rows, np.array(cand_rows), np.array(slots)
                    rows, items, ref_rows, cand_rows, slots = [], [], [], [], []
                items.append(item_pos)
                ref_rows.append(len(rows))
                rows.append(self._reference_terms(item_pos))
                for j in piece:
                    cand_rows.append(len(rows))
                    slots.append(j)
                    rows.append(self._candidate_query_terms(item_pos, keyword_lists[j]))
        if rows:
            yield self.postings.union(rows), items, ref_rows, np.array(cand_rows), np.array(slots)

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
        out = np.full(len(keyword_lists), OVERSIZED_ITEM_REWARD, dtype=np.float64)
        gains = self.gains(beta)
        enter = self._working_weights(beta)
        for union, items, ref_rows, cand_rows, slots in self._item_chunks(item_ids, keyword_lists, oversized):
            bounds = [*ref_rows, union.n_rows]
            for k, item_pos in enumerate(items):
                # this item's rows: its reference row, then its candidates
                part = union if len(items) == 1 else union.segment(bounds[k], bounds[k + 1])
                weights = item_weights(gains, part.row(0, sort=False), self.relevant_query_positions(item_pos), self._marks)
                sums = part.corrected_sums(enter, weights.queries, weights.corrections)
                if len(items) == 1:
                    out[slots] = weights.base + sums[cand_rows]
                    continue
                mine = (cand_rows > bounds[k]) & (cand_rows < bounds[k + 1])
                out[slots[mine]] = weights.base + sums[cand_rows[mine] - bounds[k]]
        return out

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
        out = np.full(len(keyword_lists), OVERSIZED_QUERY_REWARD, dtype=np.float64)
        for union, items, ref_rows, cand_rows, slots in self._item_chunks(item_ids, keyword_lists, oversized):
            owner = np.repeat(np.arange(len(items)), np.diff([*ref_rows, union.n_rows]))
            relevant = [self.relevant_query_positions(item_pos).astype(np.int64) for item_pos in items]
            n_rel = np.array([len(r) for r in relevant])[owner]
            rows = np.repeat(np.arange(union.n_rows), n_rel)
            members = np.concatenate([relevant[k] for k in owner]) if len(rows) else rows
            hits = self.postings.contains(union, rows, members)
            n_hit = np.bincount(rows[hits], minlength=union.n_rows)
            scores = transposed_f_beta(union.sizes(), n_hit, n_rel, beta)
            out[slots] = scores[cand_rows]
        return out

    # ----------------------------------------------------------------- reference
    def naive_item_reward(self, item_id: str, keywords: Sequence[str], oversized: bool = False, beta: float = 1.0) -> float:
        """Eq. 2.3 the slow way: rebuild the item index with `S_i` and rerun every query.

        For benchmarks and tests only; `item_reward` must agree with it.
        """
        if oversized or len(keyword_set(keywords)) > self.k_max:
            return OVERSIZED_ITEM_REWARD
        counterfactual = self.item_index.with_item(item_id, keywords)
        n_ret, n_tp = self._reference_counts(counterfactual)
        new_total = float(f_beta_array(n_tp, n_ret, self.n_rel, beta).sum())
        return new_total - self.reference_total(beta)

    def memory_bytes(self) -> int:
        """Arrays, caches, vocabulary and id strings of this view (not the item index)."""
        arrays = [
            self.query_indptr, self.query_terms, self.text_terms, self.rel_indptr, self.rel_items,
            self.n_rel, self.n_ret, self.n_tp, self.relq_indptr, self.relq_queries, self.item_to_query_term,
            self._ref_terms, self._ref_indptr, self._marks, *self._work.values(),
        ]
        for tables in self._gains.values():
            arrays += [tables.reference, tables.enter_irrelevant, tables.enter_relevant,
                       tables.leave_irrelevant, tables.leave_relevant]
        ids = sys.getsizeof(self.query_ids) + sys.getsizeof(self.positions) + sum(sys.getsizeof(q) for q in self.query_ids)
        titles = sys.getsizeof(self._title_query_terms) + 32 * len(self._title_query_terms)  # list + int objects
        return sum(a.nbytes for a in arrays) + ids + titles + self.postings.memory_bytes()


def _broadcast_ids(ids: str | Sequence[str], n: int) -> list[str]:
    if isinstance(ids, str):
        return [ids] * n
    ids = list(ids)
    if len(ids) != n:
        raise InputError(f"{len(ids)} ids for {n} keyword lists")
    return ids
