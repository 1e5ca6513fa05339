"""Keyword -> member postings in CSR form: the inverted index under both shadow views.

A Python dict of sets would cost ~100 bytes per posting and a Python loop per lookup;
CSR arrays (`indptr`, `members`) cost 4 bytes per posting and let numpy gather the
postings of a whole keyword set at once. Members are small integers (item or query
positions); the vocabulary maps normalized keyword strings to term ids.
"""

from __future__ import annotations

import sys
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

import numpy as np


def csr_from_rows(rows: Sequence[Sequence[int]]) -> tuple[np.ndarray, np.ndarray]:
    """(indptr int64, values int32) of a ragged list of int lists."""
    lengths = np.fromiter((len(row) for row in rows), dtype=np.int64, count=len(rows))
    indptr = np.zeros(len(rows) + 1, dtype=np.int64)
    np.cumsum(lengths, out=indptr[1:])
    values = np.fromiter((v for row in rows for v in row), dtype=np.int32, count=int(indptr[-1]))
    return indptr, values


def transpose_csr(indptr: np.ndarray, values: np.ndarray, n_cols: int) -> tuple[np.ndarray, np.ndarray]:
    """Row -> columns CSR turned into column -> rows, rows ascending within a column."""
    rows = np.repeat(np.arange(len(indptr) - 1, dtype=np.int32), np.diff(indptr))
    order = np.argsort(values, kind="stable")
    counts = np.bincount(values, minlength=n_cols)
    t_indptr = np.zeros(n_cols + 1, dtype=np.int64)
    np.cumsum(counts, out=t_indptr[1:])
    return t_indptr, rows[order].astype(np.int32, copy=False)


def gather(indptr: np.ndarray, values: np.ndarray, ids: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Concatenated rows `ids` of a CSR, and for each value the position in `ids` it came from.

    Vectorized (no Python loop over ids), so a GRPO batch's keyword sets are gathered in
    a handful of numpy calls.
    """
    starts = indptr[ids]
    lengths = indptr[ids + 1] - starts
    total = int(lengths.sum())
    if total == 0:
        return values[:0], np.zeros(0, dtype=np.int64)
    owner = np.repeat(np.arange(len(ids)), lengths)
    offsets = np.arange(total, dtype=np.int64) - np.repeat(np.cumsum(lengths) - lengths, lengths)
    return values[starts[owner] + offsets], owner


def _popcount_table() -> np.ndarray:
    return np.array([bin(v).count("1") for v in range(256)], dtype=np.int64)


_POPCOUNT8 = _popcount_table()


def popcount_rows(bits: np.ndarray) -> np.ndarray:
    """Number of set bits per row of a (rows, words) uint64 array."""
    if hasattr(np, "bitwise_count"):  # numpy >= 2.0
        return np.bitwise_count(bits).sum(axis=1, dtype=np.int64)
    return _POPCOUNT8[bits.view(np.uint8)].sum(axis=1)


def bits_set(bits: np.ndarray, rows: np.ndarray, members: np.ndarray) -> np.ndarray:
    """Whether member `members[j]` is set in row `rows[j]` of a bitset array."""
    words = bits[rows, members >> 6]
    return ((words >> (members & 63).astype(np.uint64)) & np.uint64(1)).astype(bool)


def unpack_rows(bits: np.ndarray, n_members: int) -> np.ndarray:
    """(rows, n_members) bool matrix of a bitset array (bit j of word w = member 64w + j)."""
    return np.unpackbits(bits.view(np.uint8), axis=1, bitorder="little")[:, :n_members].view(bool)


@dataclass
class Postings:
    """An inverted index: `terms[t]` is keyword t, `members[indptr[t]:indptr[t+1]]` its rows.

    Keywords shared by many members (df >= `dense_min_df`) also get a bitset row: the
    union of a keyword set is then an OR of a few bitset rows plus the scatter of the
    short postings, so its cost stops growing with the frequent keywords' lengths.
    """

    terms: list[str]
    vocab: dict[str, int]
    indptr: np.ndarray
    members: np.ndarray
    n_members: int
    dense_min_df: int = 0
    dense_rows: np.ndarray = field(init=False, repr=False)
    dense_row_of_term: np.ndarray = field(init=False, repr=False)

    def __post_init__(self) -> None:
        if self.dense_min_df <= 0:
            self.dense_min_df = default_dense_min_df(self.n_members)
        df = np.diff(self.indptr)
        dense_terms = np.flatnonzero(df >= self.dense_min_df)
        self.dense_row_of_term = np.full(len(df), -1, dtype=np.int64)
        self.dense_row_of_term[dense_terms] = np.arange(len(dense_terms))
        self.words = (self.n_members + 63) // 64
        self.dense_rows = np.zeros((len(dense_terms), self.words), dtype=np.uint64)
        if len(dense_terms):
            members, owner = gather(self.indptr, self.members, dense_terms)
            flat = self.dense_rows.reshape(-1)
            np.bitwise_or.at(flat, owner * self.words + (members >> 6), _bit(members))
        self._sparse_mask = self.dense_row_of_term < 0

    def term_ids(self, keywords: Iterable[str]) -> list[int]:
        """Ids of the keywords this index knows; unknown keywords match nothing."""
        get = self.vocab.get
        return [t for t in map(get, keywords) if t is not None]

    def members_of(self, term: int) -> np.ndarray:
        return self.members[self.indptr[term] : self.indptr[term + 1]]

    def document_frequency(self) -> np.ndarray:
        return np.diff(self.indptr)

    def union_bits(self, term_lists: Sequence[Sequence[int]]) -> np.ndarray:
        """(len(term_lists), words) uint64: row g is the union of the postings of list g."""
        n_rows = len(term_lists)
        bits = np.zeros((n_rows, self.words), dtype=np.uint64)
        lengths = [len(terms) for terms in term_lists]
        flat = np.fromiter((t for terms in term_lists for t in terms), dtype=np.int64, count=sum(lengths))
        if len(flat) == 0:
            return bits
        owners = np.repeat(np.arange(n_rows), lengths)
        dense = self.dense_row_of_term[flat]
        is_dense = dense >= 0
        if is_dense.any():
            dense_owner, dense = owners[is_dense], dense[is_dense]
            starts = np.flatnonzero(np.r_[True, dense_owner[1:] != dense_owner[:-1]])
            bits[dense_owner[starts]] = np.bitwise_or.reduceat(self.dense_rows[dense], starts, axis=0)
        sparse = ~is_dense
        members, which = gather(self.indptr, self.members, flat[sparse])
        if len(members):
            rows = owners[sparse][which]
            np.bitwise_or.at(bits.reshape(-1), rows * self.words + (members >> 6), _bit(members))
        return bits

    def memory_bytes(self) -> int:
        """Arrays plus the vocabulary dict and its strings (shared by `terms`)."""
        strings = sum(sys.getsizeof(t) for t in self.terms)
        arrays = self.indptr.nbytes + self.members.nbytes + self.dense_rows.nbytes + self.dense_row_of_term.nbytes
        return arrays + sys.getsizeof(self.vocab) + sys.getsizeof(self.terms) + strings


def default_dense_min_df(n_members: int) -> int:
    """A bitset row costs n/8 bytes; at df >= n/64 that is at most twice the posting list."""
    return max(32, n_members // 64)


def _bit(members: np.ndarray) -> np.ndarray:
    return np.left_shift(np.uint64(1), (members & 63).astype(np.uint64))


class Vocabulary:
    """Assigns dense term ids to normalized keywords in first-seen order."""

    def __init__(self) -> None:
        self.terms: list[str] = []
        self.ids: dict[str, int] = {}

    def add_all(self, keywords: Iterable[str]) -> list[int]:
        ids, terms = self.ids, self.terms
        out = []
        for keyword in keywords:
            term = ids.get(keyword)
            if term is None:
                term = ids[keyword] = len(terms)
                terms.append(keyword)
            out.append(term)
        return out
