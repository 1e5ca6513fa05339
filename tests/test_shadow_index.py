"""The item view: representations, retrieval, shadow evaluation results."""

from __future__ import annotations

import pytest

from cogr_search.errors import InputError
from cogr_search.metrics import compute_metrics
from cogr_search.shadow import ItemIndex

TITLES = {"a": "Red Lamp", "b": "Blue Lamp", "c": "Oak Desk", "d": ""}
KEYWORDS = {"a": ["lamp", "Red", "LIGHT"], "b": ["lamp", "blue"], "c": ["desk", "office", "oak desk"], "d": ["x"]}


@pytest.fixture(params=[0, 1], ids=["sparse", "bitsets"])
def index(request: pytest.FixtureRequest) -> ItemIndex:
    return ItemIndex.build(KEYWORDS, TITLES, k_max=2, dense_min_df=request.param)


def test_representation_truncates_then_adds_title(index: ItemIndex) -> None:
    assert index.keywords_of("a") == ["lamp", "red", "red lamp"]  # "light" is beyond k_max=2
    assert index.keywords_of("c") == ["desk", "office", "oak desk"]  # cut by k_max, back as the title
    assert index.keywords_of("d") == ["x"]  # no title keyword
    assert index.title_keyword(index.position("b")) == "blue lamp"
    assert index.title_keyword(index.position("d")) == ""


def test_retrieval_is_exact_keyword_match(index: ItemIndex) -> None:
    assert index.retrieved(["lamp"]) == ["a", "b"]
    assert index.retrieved(["LAMP ", "office"]) == ["a", "b", "c"]
    assert index.retrieved(["lamps", "light"]) == []  # no stemming, "light" was truncated away
    assert index.retrieved([], text="Oak Desk") == ["c"]  # the query text is a keyword too
    assert index.retrieved(["red", "blue", "desk", "x"]) == ["a", "b", "c", "d"]
    assert index.retrieved([]) == []


def test_query_keywords_are_truncated_to_k_max_when_asked(index: ItemIndex) -> None:
    assert index.retrieved(["nothing", "none", "lamp"], k_max=2) == []
    assert index.retrieved(["nothing", "none", "lamp"]) == ["a", "b"]


def test_keywords_for_unknown_items_are_rejected() -> None:
    with pytest.raises(InputError, match="not in the catalog, e.g. 'zz'"):
        ItemIndex.build({"zz": ["x"]}, {"a": "A"})


def test_counterfactual_copy_replaces_one_item(index: ItemIndex) -> None:
    changed = index.with_item("a", ["desk"])
    assert changed.keywords_of("a") == ["desk", "red lamp"]
    assert changed.retrieved(["desk"]) == ["a", "c"]
    assert index.retrieved(["desk"]) == ["c"]  # the original is untouched


def test_query_results_feed_compute_metrics(index: ItemIndex) -> None:
    texts = {"q1": "lamp", "q2": "oak desk", "q3": "nothing"}
    keywords = {"q1": ["red"], "q2": []}
    relevant = {"q1": {"a", "c"}, "q2": {"c"}, "q3": {"b"}}
    results = index.query_results(keywords, texts, relevant, k=10)
    assert results["q1"].n_retrieved == 2 and results["q1"].n_true_positive == 1
    assert results["q1"].ranked[0] == "a"  # matches both "lamp" and "red"
    assert results["q2"].ranked == ["c"]
    assert results["q3"].n_retrieved == 0
    metrics = compute_metrics(results, relevant, ks=(1,))
    assert metrics["queries"] == 3
    assert metrics["F1"] == pytest.approx((2 * 1 / (2 + 2) + 1.0 + 0.0) / 3)


def test_memory_is_reported(index: ItemIndex) -> None:
    assert index.memory_bytes() > 0
