"""CoGR rewards from cached counts (paper Eq. 2.1-2.3, Appendix B.3), as array arithmetic.

Query side: F_beta(I_ret(q), rel(q)) of a candidate `S_q`, 0 when oversized.

Item side: the counterfactual marginal reward of a candidate `S_i`,
    R_i(S_i) = sum_q F(I_ret^cand(q)) - sum_q F(I_ret^ref(q)),   -1 when oversized.
Only queries in Q_cand Δ Q_ref change, and each changes by a known amount given the
cached reference counts (n_ret, n_tp, n_rel) and whether i is relevant to q:

    entering q's retrieved set:  F(tp + r, ret + 1, rel) - F(tp, ret, rel)
    leaving  q's retrieved set:  F(tp - r, ret - 1, rel) - F(tp, ret, rel)

with r = [i ∈ rel(q)]. `GainTables` precomputes these four deltas per query, so an
item's reward is   sum over leaving of `leave[q]` + sum over entering of `enter[q]`.
Writing W[q] = enter[q] for q ∉ Q_ref and W[q] = -leave[q] for q ∈ Q_ref gives
    R_i(S_i) = sum_{q ∈ Q_ref} leave[q] + sum_{q ∈ Q_cand} W[q],
which needs only the (deduplicated) set Q_cand per candidate: one union over the
query postings and one weighted sum, never a rebuild of the index. (Queries in
Q_cand ∩ Q_ref contribute W = -leave, cancelling their term in the constant: only the
symmetric difference is left, as in Appendix B.3.)
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

OVERSIZED_QUERY_REWARD = 0.0
OVERSIZED_ITEM_REWARD = -1.0


def f_beta_array(tp: np.ndarray, ret: np.ndarray, rel: np.ndarray, beta: float) -> np.ndarray:
    """Vectorized F-beta from counts: (1 + b^2) tp / (b^2 rel + ret); 0 when undefined."""
    b2 = beta * beta
    denominator = b2 * rel.astype(np.float64) + ret
    out = np.zeros(np.broadcast(tp, ret, rel).shape, dtype=np.float64)
    np.divide((1.0 + b2) * tp, denominator, out=out, where=denominator > 0)
    return out


@dataclass(frozen=True)
class GainTables:
    """Per query: reference F and the change when one item enters or leaves its result."""

    reference: np.ndarray
    enter_irrelevant: np.ndarray
    enter_relevant: np.ndarray
    leave_irrelevant: np.ndarray
    leave_relevant: np.ndarray

    @classmethod
    def compute(cls, n_ret: np.ndarray, n_tp: np.ndarray, n_rel: np.ndarray, beta: float) -> "GainTables":
        ref = f_beta_array(n_tp, n_ret, n_rel, beta)
        # leaving is only ever evaluated where the item was retrieved (n_ret >= 1, and
        # n_tp >= 1 when it is relevant); clip so the unused entries stay finite
        ret_less = np.maximum(n_ret - 1, 0)
        tp_less = np.maximum(n_tp - 1, 0)
        return cls(
            reference=ref,
            enter_irrelevant=f_beta_array(n_tp, n_ret + 1, n_rel, beta) - ref,
            enter_relevant=f_beta_array(n_tp + 1, n_ret + 1, n_rel, beta) - ref,
            leave_irrelevant=f_beta_array(n_tp, ret_less, n_rel, beta) - ref,
            leave_relevant=f_beta_array(tp_less, ret_less, n_rel, beta) - ref,
        )


@dataclass(frozen=True)
class ItemWeights:
    """One item's reward as `base + sum of W[q] over q ∈ Q_cand` (see module doc).

    W equals `enter_irrelevant` except on `queries` (Q_ref ∪ rel(i)), where it is
    `enter_irrelevant + corrections`; keeping only the exceptions avoids copying a
    |Q|-sized vector per item.
    """

    base: float
    queries: np.ndarray
    corrections: np.ndarray

    def dense(self, gains: GainTables) -> np.ndarray:
        weights = gains.enter_irrelevant.copy()
        weights[self.queries] += self.corrections
        return weights


def item_weights(
    gains: GainTables, reference_queries: np.ndarray, relevant_queries: np.ndarray, marks: np.ndarray | None = None
) -> ItemWeights:
    """W's exceptions and the constant for one item, from Q_ref and its relevant queries.

    `marks` is an all-zero int8 array over queries, returned all-zero; passing one
    saves an allocation per item.
    """
    ref, rel = reference_queries, relevant_queries
    enter = gains.enter_irrelevant
    leave = gains.leave_irrelevant[ref]
    if len(rel) == 0:
        return ItemWeights(float(leave.sum()), ref, -leave - enter[ref])
    marks = marks if marks is not None else np.zeros(len(enter), dtype=np.int8)
    marks[rel] = 2
    marks[ref] |= 1
    ref_is_rel = marks[ref] == 3
    rel_outside = rel[marks[rel] == 2]
    marks[rel] = 0
    marks[ref] = 0
    leave[ref_is_rel] = gains.leave_relevant[ref[ref_is_rel]]
    queries = np.concatenate([ref, rel_outside])
    corrections = np.concatenate([-leave - enter[ref], gains.enter_relevant[rel_outside] - enter[rel_outside]])
    return ItemWeights(float(leave.sum()), queries, corrections)


def transposed_f_beta(n_cand: np.ndarray, n_hit: np.ndarray, n_rel: np.ndarray, beta: float) -> np.ndarray:
    """Item-centric F: Q_ret(i) (queries retrieving the item) against rel(i) (its queries)."""
    return f_beta_array(n_hit, n_cand, n_rel, beta)
