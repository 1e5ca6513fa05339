"""Our metrics against an independent implementation: ir-measures (trec_eval's code).

The run has many ties, like Home Depot's identical titles. Two checks:
- given our ranking (ties broken by item id ascending, the project's one tie order),
  trec_eval computes the same P@k, R@k, RR@k, nDCG@k and set P/R/F1 per query;
- given the raw tied scores, trec_eval breaks ties by docno *descending* (its own
  convention), and our metrics on that order equal its numbers: the only difference
  between the two conventions is the tie order, which is why we fix ours explicitly.
"""

from __future__ import annotations

import random

import pytest

from cogr_search.metrics import QueryResult, compute_metrics, query_metrics

ir_measures = pytest.importorskip("ir_measures")  # the `test` extra installs it

KS = (1, 3, 10, 20, 100)  # rankings hold at most 60 items, so MRR@100 is trec_eval's (uncut) RR


def _tied_run(seed: int = 7, queries: int = 40, items: int = 120):
    """(scores per query: {item: score} with few distinct values, relevant sets)."""
    rng = random.Random(seed)
    ids = [f"sku-{n}" for n in rng.sample(range(1000), items)]  # not in sorted order
    scores, relevant = {}, {}
    for q in range(queries):
        qid = f"q{q}"
        retrieved = rng.sample(ids, rng.randint(5, 60))
        scores[qid] = {iid: float(rng.choice((1.5, 2.25, 2.25, 3.0))) for iid in retrieved}  # heavy ties
        rel = set(rng.sample(retrieved, rng.randint(1, min(8, len(retrieved)))))
        rel |= set(rng.sample(ids, rng.randint(0, 2)))  # some relevant items never retrieved
        relevant[qid] = rel
    return scores, relevant


def _ranking(scored: dict[str, float], ids_descending: bool = False) -> list[str]:
    by_id = sorted(scored, reverse=ids_descending)
    return sorted(by_id, key=lambda iid: -scored[iid])  # stable: ties keep the id order


def _measures():
    m = ir_measures
    out = {"P": m.SetP, "R": m.SetR, "F1": m.SetF, "MRR@100": m.RR}
    for k in KS:
        out.update({f"P@{k}": m.P @ k, f"R@{k}": m.R @ k, f"NDCG@{k}": m.nDCG @ k})
    return out


def _per_query(run: list, relevant: dict[str, set[str]]) -> dict[str, dict[str, float]]:
    qrels = [ir_measures.Qrel(q, iid, 1) for q, rel in relevant.items() for iid in sorted(rel)]
    measures = _measures()
    names = {measure: name for name, measure in measures.items()}
    out: dict[str, dict[str, float]] = {}
    for metric in ir_measures.pytrec_eval.iter_calc(list(measures.values()), qrels, run):  # trec_eval itself
        out.setdefault(metric.query_id, {})[names[metric.measure]] = metric.value
    return out


def _assert_agree(ours: dict[str, dict[str, float]], theirs: dict[str, dict[str, float]]) -> None:
    assert ours.keys() == theirs.keys()
    for qid, values in theirs.items():
        for name, value in values.items():
            assert ours[qid][name] == pytest.approx(value, abs=1e-9), (qid, name)


def test_metrics_agree_with_trec_eval_on_our_tie_order() -> None:
    scores, relevant = _tied_run()
    rankings = {q: _ranking(s) for q, s in scores.items()}
    # scores that encode our order exactly, so trec_eval cannot re-break the ties
    run = [ir_measures.ScoredDoc(q, iid, float(len(r) - pos)) for q, r in rankings.items() for pos, iid in enumerate(r)]
    ours = {
        q: query_metrics(QueryResult(len(r), len(set(r) & relevant[q]), r), relevant[q], KS) for q, r in rankings.items()
    }
    _assert_agree(ours, _per_query(run, relevant))
    ties = sum(len(s) - len(set(s.values())) for s in scores.values())
    assert ties > 500  # the run really is full of ties


def test_trec_eval_breaks_ties_by_docno_descending_and_that_is_the_only_difference() -> None:
    scores, relevant = _tied_run(seed=11)
    run = [ir_measures.ScoredDoc(q, iid, score) for q, s in scores.items() for iid, score in s.items()]
    theirs = _per_query(run, relevant)
    descending = {q: _ranking(s, ids_descending=True) for q, s in scores.items()}
    ours_desc = {
        q: query_metrics(QueryResult(len(r), len(set(r) & relevant[q]), r), relevant[q], KS) for q, r in descending.items()
    }
    _assert_agree(ours_desc, theirs)
    ascending = {q: QueryResult(len(s), len(set(s) & relevant[q]), _ranking(s)) for q, s in scores.items()}
    macro_asc = compute_metrics(ascending, relevant, KS)
    macro_desc = compute_metrics({q: QueryResult(len(r), len(set(r) & relevant[q]), r) for q, r in descending.items()}, relevant, KS)
    assert macro_asc["P"] == macro_desc["P"] and macro_asc["F1"] == macro_desc["F1"]  # set metrics ignore order
    assert any(macro_asc[f"NDCG@{k}"] != macro_desc[f"NDCG@{k}"] for k in KS)  # ranked ones move with the tie order
