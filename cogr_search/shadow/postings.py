"""Keyword -> member postings in CSR form: the inverted index under both shadow views.

A Python dict of sets would cost ~100 bytes per posting and a Python loop per lookup;
CSR arrays (`indptr`, `members`) cost 4 bytes per posting and let numpy gather the
postings of a whole keyword set at once. Members are small integers (item or query
positions); the vocabulary maps normalized keyword strings to term ids.
"""

from __future__ import annotations

import sys
from array import array
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from itertools import chain

import numpy as np

from cogr_search.keywords import normalize


def csr_from_rows(rows: Sequence[Sequence[int]]) -> tuple[np.ndarray, np.ndarray]:
    """(indptr int64, values int32) of a ragged list of int lists."""
    lengths = np.fromiter((len(row) for row in rows), dtype=np.int64, count=len(rows))
    indptr = np.zeros(len(rows) + 1, dtype=np.int64)
    np.cumsum(lengths, out=indptr[1:])
    values = np.fromiter((v for row in rows for v in row), dtype=np.int32, count=int(indptr[-1]))
    return indptr, values


class CsrBuilder:
    """Rows appended one at a time straight into flat arrays.

    Building from a list of Python int lists holds a list object and a pointer per
    value until the end (~40 bytes a value, more than the index itself at catalog
    scale); appending to `array` buffers keeps 4 bytes a value and lets each row's
    list be freed as soon as it is added.
    """

    def __init__(self) -> None:
        self._indptr = array("q", [0])
        self._values = array("i")

    def add(self, row: Iterable[int]) -> None:
        self._values.extend(row)
        self._indptr.append(len(self._values))

    def __len__(self) -> int:
        return len(self._indptr) - 1

    def arrays(self) -> tuple[np.ndarray, np.ndarray]:
        """(indptr int64, values int32), as `csr_from_rows` returns them."""
        return np.frombuffer(self._indptr, dtype=np.int64).copy(), np.frombuffer(self._values, dtype=np.int32).copy()


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


@dataclass
class Union:
    """Per-row sets of members: row g = bits of `dense[g]` ∪ {members[k] : rows[k] == g}.

    The sparse pairs are distinct, disjoint from the bitsets and ordered by row, so
    sizes and weighted sums are plain sums of the two parts.
    """

    n_rows: int
    n_members: int
    dense: np.ndarray | None
    rows: np.ndarray
    members: np.ndarray

    def sizes(self) -> np.ndarray:
        sizes = np.bincount(self.rows, minlength=self.n_rows)
        if self.dense is not None:
            sizes += popcount_rows(self.dense)
        return sizes

    def corrected_sums(self, weights: np.ndarray, exceptions: np.ndarray, corrections: np.ndarray) -> np.ndarray:
        """Sum of (weights + corrections at `exceptions`)[m] over each row's members.

        `weights` is patched in place at the (distinct) `exceptions` for the duration of
        the call and restored after, instead of copying a members-sized vector to patch
        a few entries; pass a private working copy.
        """
        saved = weights[exceptions]
        weights[exceptions] += corrections
        try:
            sums = np.bincount(self.rows, weights=weights[self.members], minlength=self.n_rows).astype(np.float64)
            if self.dense is not None:
                sums += unpack_rows(self.dense, self.n_members) @ weights
        finally:
            weights[exceptions] = saved
        return sums

    def segment(self, first: int, stop: int) -> "Union":
        """Rows first..stop-1 as a union of their own (row numbers shifted to 0)."""
        lo, hi = self.rows.searchsorted((first, stop))
        dense = self.dense[first:stop] if self.dense is not None else None
        return Union(stop - first, self.n_members, dense, self.rows[lo:hi] - first, self.members[lo:hi])

    def row(self, g: int = 0, sort: bool = True) -> np.ndarray:
        """Row g's members (int64), sorted unless `sort=False`."""
        lo, hi = self.rows.searchsorted((g, g + 1))  # rows are in ascending order
        part = self.members[lo:hi].astype(np.int64)
        if self.dense is not None:
            part = np.concatenate([part, np.flatnonzero(unpack_rows(self.dense[g : g + 1], self.n_members)[0])])
        if sort:
            part.sort()
        return part


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
    """(rows, n_members) bool matrix of a bitset array (bit j of word w = member 64w + j).

    Reads the uint64 words as little-endian bytes (numpy's layout on x86 and ARM).
    """
    return np.unpackbits(bits.view(np.uint8), axis=1, bitorder="little")[:, :n_members].view(bool)


@dataclass
class Postings:
    """An inverted index: `terms[t]` is keyword t, `members[indptr[t]:indptr[t+1]]` its rows.

    Keywords shared by many members (df >= `dense_min_df`) also get a bitset row: the
    union of a keyword set is then an OR of a few bitset rows plus the short postings,
    so its cost stops growing with the frequent keywords' lengths.

    Not thread-safe: unions reuse scratch arrays owned by the index.
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
        df = self._df = np.diff(self.indptr)
        if self.dense_min_df <= 0:
            self.dense_min_df = default_dense_min_df(self.n_members, df, self.members.nbytes)
        dense_terms = np.flatnonzero(df >= self.dense_min_df)
        self.dense_row_of_term = np.full(len(df), -1, dtype=np.int64)
        self.dense_row_of_term[dense_terms] = np.arange(len(dense_terms))
        self.words = (self.n_members + 63) // 64
        self.dense_rows = np.zeros((len(dense_terms), self.words), dtype=np.uint64)
        if len(dense_terms):
            members, owner = gather(self.indptr, self.members, dense_terms)
            flat = self.dense_rows.reshape(-1)
            np.bitwise_or.at(flat, owner * self.words + (members >> 6), _bit(members))
        self._raw_terms: dict[str, int] = {}
        self._rows = np.arange(_MAX_ROWS)
        self._stamp = np.zeros(0, dtype=np.int32)
        self._flags = np.zeros((0, self.n_members), dtype=bool)

    def term_ids(self, keywords: Iterable[str]) -> list[int]:
        """Ids of already-normalized keywords; keywords this index lacks are skipped."""
        get = self.vocab.get
        return [t for t in map(get, keywords) if t is not None]

    def lookup(self, keywords: Iterable[str]) -> list[int]:
        """Ids of raw keywords (normalized on first sight, then cached); unknown ones skipped.

        One dict lookup per keyword on the reward hot path instead of a normalization
        cache plus a vocabulary lookup. Two spellings of one keyword may both appear;
        unions do not care.
        """
        resolved = list(map(self._raw_terms.get, keywords))
        if None in resolved:
            resolved = [self._resolve(k) if t is None else t for k, t in zip(keywords, resolved)]
        return [t for t in resolved if t >= 0]

    def _resolve(self, keyword: str) -> int:
        if len(self._raw_terms) >= _RAW_CACHE_MAX:
            self._raw_terms.clear()
        term = self._raw_terms[keyword] = self.vocab.get(normalize(keyword), -1)
        return term

    def members_of(self, term: int) -> np.ndarray:
        return self.members[self.indptr[term] : self.indptr[term + 1]]

    def document_frequency(self) -> np.ndarray:
        return np.diff(self.indptr)

    def union(self, term_lists: Sequence[Sequence[int]]) -> "Union":
        """The union of the postings of each term list, as a `Union` (one row per list).

        Frequent terms are OR-ed as bitset rows; the short postings are gathered, those
        already covered by the bitsets dropped, and duplicates removed by a first-
        occurrence stamp (see `Union`). Only plain fancy indexing and reductions: no
        sorting, no `ufunc.at`, no O(members) clearing per row.
        """
        n_rows = len(term_lists)
        lengths = [len(terms) for terms in term_lists]
        total = sum(lengths)
        flat = np.fromiter(chain.from_iterable(term_lists), dtype=np.int64, count=total)
        owners = (self._rows[:n_rows] if n_rows <= _MAX_ROWS else np.arange(n_rows)).repeat(lengths)
        dense_bits = None
        if len(self.dense_rows) and total:
            dense = self.dense_row_of_term[flat]
            is_dense = dense >= 0
            n_dense = int(np.count_nonzero(is_dense))
            if n_dense:
                dense_owner, dense = owners[is_dense], dense[is_dense]
                change = np.empty(n_dense, dtype=bool)
                change[0] = True
                np.not_equal(dense_owner[1:], dense_owner[:-1], out=change[1:])
                starts = np.flatnonzero(change)
                dense_bits = np.zeros((n_rows, self.words), dtype=np.uint64)
                dense_bits[dense_owner[starts]] = np.bitwise_or.reduceat(self.dense_rows[dense], starts, axis=0)
                sparse = ~is_dense
                flat, owners = flat[sparse], owners[sparse]
        members, rows = self._gather_rows(flat, owners)
        if dense_bits is not None and len(members):
            outside = ~bits_set(dense_bits, rows, members)
            rows, members = rows[outside], members[outside]
        if len(members):
            first = self._first_occurrence(rows, members, n_rows)
            rows, members = rows[first], members[first]
        return Union(n_rows, self.n_members, dense_bits, rows, members)

    def _gather_rows(self, terms: np.ndarray, owners: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Concatenated postings of `terms`, and the owner row of each member."""
        if len(terms) == 0:
            return self.members[:0], owners[:0]
        starts = self.indptr[terms]
        lengths = self._df[terms]
        ends = lengths.cumsum()
        positions = np.arange(int(ends[-1])) + (starts - ends + lengths).repeat(lengths)
        return self.members[positions], owners.repeat(lengths)

    def _row_blocks(self, rows: np.ndarray, n_rows: int) -> list[tuple[int, int, int]]:
        """(first row, start, stop) of consecutive row blocks whose scratch fits `_SCRATCH_CELLS`.

        The scratch arrays hold one cell per (row, member): 64 rows over 4M items would
        be 1 GiB of stamps. Blocks of `_SCRATCH_CELLS // n_members` rows keep them at a
        fixed size whatever the catalog; `rows` must be ascending.
        """
        per_block = max(1, _SCRATCH_CELLS // max(self.n_members, 1))
        if n_rows <= per_block:
            return [(0, 0, len(rows))]
        firsts = np.arange(0, n_rows + per_block, per_block)
        bounds = rows.searchsorted(firsts).tolist()
        return [(int(f), lo, hi) for f, lo, hi in zip(firsts.tolist(), bounds, bounds[1:]) if hi > lo]

    def _first_occurrence(self, rows: np.ndarray, members: np.ndarray, n_rows: int) -> np.ndarray:
        """True at exactly one occurrence of each distinct (row, member) pair.

        Scatter each pair's own index into a stamp array and read it back: whichever
        write lands last, exactly one index per distinct pair survives, so exactly one
        occurrence compares equal. Only cells written in this call are read, so the
        stamp array never needs clearing.
        """
        blocks = self._row_blocks(rows, n_rows)
        cells_needed = min(n_rows, max(1, _SCRATCH_CELLS // max(self.n_members, 1))) * self.n_members
        if len(self._stamp) < cells_needed:
            self._stamp = np.zeros(cells_needed, dtype=np.int32)
        index = np.arange(len(members), dtype=np.int32)
        if len(blocks) == 1:
            cells = rows * self.n_members + members
            self._stamp[cells] = index
            return self._stamp[cells] == index
        keep = np.empty(len(members), dtype=bool)
        for first, lo, hi in blocks:
            cells = (rows[lo:hi] - first) * self.n_members + members[lo:hi]
            self._stamp[cells] = index[lo:hi]
            keep[lo:hi] = self._stamp[cells] == index[lo:hi]
        return keep

    def contains(self, union: "Union", rows: np.ndarray, members: np.ndarray) -> np.ndarray:
        """Whether `members[k]` is in row `rows[k]` of a union made by this index (rows ascending)."""
        found = np.zeros(len(members), dtype=bool)
        if union.dense is not None:
            found |= bits_set(union.dense, rows, members)
        if len(union.members):
            per_block = max(1, _SCRATCH_CELLS // max(self.n_members, 1))
            if self._flags.shape[0] < min(union.n_rows, per_block):
                self._flags = np.zeros((min(union.n_rows, per_block), self.n_members), dtype=bool)
            whole = union.n_rows <= per_block  # one block: no need to find its bounds
            for first in range(0, union.n_rows, per_block):
                stop = first + per_block
                u_lo, u_hi = (0, len(union.rows)) if whole else union.rows.searchsorted((first, stop))
                q_lo, q_hi = (0, len(rows)) if whole else rows.searchsorted((first, stop))
                if u_lo == u_hi or q_lo == q_hi:
                    continue
                u_rows, u_members = union.rows[u_lo:u_hi] - first, union.members[u_lo:u_hi]
                self._flags[u_rows, u_members] = True
                found[q_lo:q_hi] |= self._flags[rows[q_lo:q_hi] - first, members[q_lo:q_hi]]
                self._flags[u_rows, u_members] = False
        return found

    def memory_bytes(self) -> int:
        """Arrays, scratch buffers, caches, the vocabulary dict and its strings."""
        strings = sum(sys.getsizeof(t) for t in self.terms)
        arrays = self.indptr.nbytes + self.members.nbytes + self.dense_rows.nbytes + self.dense_row_of_term.nbytes
        arrays += self._df.nbytes + self._rows.nbytes + self._stamp.nbytes + self._flags.nbytes
        arrays += sys.getsizeof(self._raw_terms)
        return arrays + sys.getsizeof(self.vocab) + sys.getsizeof(self.terms) + strings


_MAX_ROWS = 1024
_SCRATCH_CELLS = 1 << 24
"""Cells of the per-call scratch arrays (64 MiB of int32 stamps): see `_row_blocks`."""
_RAW_CACHE_MAX = 1 << 20


def default_dense_min_df(n_members: int, df: np.ndarray, posting_bytes: int, fraction: int = 256) -> int:
    """Document frequency from which a keyword gets a bitset row.

    At df >= n/256 a bitset row (n/8 bytes) is at most 8x its posting list and turns
    thousands of scattered writes into one vectorized OR. The bitsets together may use
    at most max(32 MiB, 2x the postings); past that, only the most frequent keywords
    get one.
    """
    threshold = max(32, n_members // fraction)
    row_bytes = ((n_members + 63) // 64) * 8
    max_rows = max(32 * 2**20, 2 * posting_bytes) // max(row_bytes, 1)
    if np.count_nonzero(df >= threshold) > max_rows:
        threshold = int(np.partition(df, len(df) - max_rows)[len(df) - max_rows]) + 1
    return threshold


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
