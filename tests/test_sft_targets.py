"""Phase 1 query targets (paper Algorithm 1) on hand-made examples."""

from __future__ import annotations

from cogr_search.training.sft_targets import pooled_keywords, query_target, query_targets

ITEM_KEYWORDS = {
    "i1": ["oak table", "dining table", "wood furniture", "kitchen"],
    "i2": ["dining table", "oak table", "extendable table"],
    "i3": ["dining table", "chairs", "kitchen"],
    "i4": ["sofa", "living room"],
}


def test_top_n_by_frequency_over_relevant_items_only() -> None:
    target = query_target(ITEM_KEYWORDS, {"i1", "i2", "i3"}, top_n=3)
    # dining table: 3 items; oak table, kitchen: 2 each. i4 is not relevant: no sofa.
    assert target[0] == "dining table"
    assert set(target[1:]) == {"oak table", "kitchen"}
    assert "sofa" not in query_target(ITEM_KEYWORDS, {"i1", "i2", "i3"}, top_n=100)


def test_ties_broken_by_best_position_then_alphabetically() -> None:
    # oak table (count 2) is at position 0 in i1; kitchen (count 2) at best position 2.
    assert query_target(ITEM_KEYWORDS, {"i1", "i2", "i3"}, top_n=3) == ["dining table", "oak table", "kitchen"]
    # count 1 each, all at position 0 or 1: position first, then the alphabet.
    keywords = {"a": ["zeta", "alpha"], "b": ["beta", "gamma"]}
    assert query_target(keywords, {"a", "b"}, top_n=4) == ["beta", "zeta", "alpha", "gamma"]


def test_order_of_relevant_items_does_not_matter() -> None:
    forward = query_target(ITEM_KEYWORDS, ["i1", "i2", "i3"], top_n=5)
    backward = query_target(ITEM_KEYWORDS, ["i3", "i2", "i1"], top_n=5)
    assert forward == backward


def test_keywords_are_normalized_and_counted_once_per_item() -> None:
    ranked = pooled_keywords([["Oak Table", "oak table ", "OAK  TABLE"], ["oak table"]])
    assert [(r.keyword, r.count) for r in ranked] == [("oak table", 2)]


def test_queries_without_keywords_get_no_target_and_unknown_items_are_skipped() -> None:
    targets = query_targets(ITEM_KEYWORDS, {"q2": {"i4"}, "q1": {"i1", "missing"}, "q3": {"missing"}}, top_n=2)
    assert list(targets) == ["q1", "q2"]  # sorted query ids, q3 has nothing to learn from
    assert targets["q1"] == ["oak table", "dining table"]
    assert targets["q2"] == ["sofa", "living room"]
