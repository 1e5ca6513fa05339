"""CoGR rewards from the shadow index: hand-computed cases and a naive-vs-cached property.

The hand-computed catalog (reps are `S ∪ {normalized title or query text}`):

    i1 {light, table lamp, lamp}   i2 {table, office, desk}
    i3 {seat, office, chair}       i4 {sofa}

    q1 {light, lamp}           rel {i1}      retrieves i1          F1 = 1
    q2 {office, office chair}  rel {i3, i4}  retrieves i2, i3      F1 = 2*1/(2+2) = 1/2
    q3 {sofa}                  rel {}        retrieves i4          F1 = 0 (no relevant)
    q4 {desk, table}           rel {i2}      retrieves i2          F1 = 1
"""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from cogr_search.errors import InputError
from cogr_search.keywords import normalize
from cogr_search.shadow import ItemIndex, QueryView

TITLES = {"i1": "Lamp", "i2": "Desk", "i3": "Chair", "i4": "Sofa"}
ITEM_KEYWORDS = {"i1": ["light", "Table Lamp"], "i2": ["table", "office"], "i3": ["seat", "office"], "i4": []}
QUERY_TEXTS = {"q1": "lamp", "q2": "Office Chair", "q3": "sofa", "q4": "table"}
QUERY_KEYWORDS = {"q1": ["light"], "q2": ["office"], "q3": [], "q4": ["desk"]}
RELEVANT = {"q1": {"i1"}, "q2": {"i3", "i4"}, "q4": {"i2"}}


@pytest.fixture(params=[0, 1], ids=["sparse", "bitsets"])
def view(request: pytest.FixtureRequest) -> QueryView:
    """The catalog above, with automatic bitsets (none here) and with every keyword dense."""
    items = ItemIndex.build(ITEM_KEYWORDS, TITLES, dense_min_df=request.param)
    return QueryView.build(QUERY_KEYWORDS, QUERY_TEXTS, items, RELEVANT, dense_min_df=request.param)


def test_cached_counts(view: QueryView) -> None:
    assert view.counts("q1") == (1, 1, 1)
    assert view.counts("q2") == (2, 1, 2)
    assert view.counts("q3") == (1, 0, 0)
    assert view.counts("q4") == (1, 1, 1)
    assert view.reference_total() == pytest.approx(2.5)
    assert view.reference_queries("i2") == ["q2", "q4"]
    assert view.keywords_of("q2") == ["office", "office chair"]


# ------------------------------------------------------------------ query side
@pytest.mark.parametrize(
    ("query", "keywords", "expected"),
    [
        ("q2", ["office", "seat"], 0.5),  # i2, i3: tp 1 of 2 retrieved, 2 relevant
        ("q2", ["SOFA"], 2 / 3),  # i4 only (normalized): P 1, R 1/2
        ("q2", ["office", "sofa"], 0.8),  # i2 i3 i4: 2*2/(3+2)
        ("q2", ["lamp", "office", "sofa"], 2 / 3),  # all four retrieved: 2*2/(4+2)
        ("q2", [], 0.0),  # the text alone matches no item
        ("q1", [], 1.0),  # the text "lamp" is i1's title keyword
        ("q1", ["unknown keyword"], 1.0),
        ("q3", ["sofa", "lamp"], 0.0),  # no relevant item: F1 is 0 whatever is retrieved
        ("q4", ["", " ", "..."], 1.0),  # empty keywords are dropped
    ],
)
def test_query_reward_by_hand(view: QueryView, query: str, keywords: list[str], expected: float) -> None:
    assert view.query_reward(query, keywords) == pytest.approx(expected)


def test_query_reward_oversized_is_zero(view: QueryView) -> None:
    assert view.query_reward("q2", ["office", "sofa"], oversized=True) == 0.0
    many = ["office", "sofa"] + [f"filler {n}" for n in range(29)]
    assert view.query_reward("q2", many) == 0.0  # 31 distinct > k_max = 30
    assert view.query_reward("q2", many[:30]) == pytest.approx(0.8)  # exactly k_max: fine
    assert view.query_reward("q2", many[:2] * 40) == pytest.approx(0.8)  # duplicates do not count


def test_query_reward_f_beta(view: QueryView) -> None:
    # tp 2, retrieved 3, relevant 2: F2 = 5*2 / (4*2 + 3), F0.5 = 1.25*2 / (0.25*2 + 3)
    assert view.query_reward("q2", ["office", "sofa"], beta=2.0) == pytest.approx(10 / 11)
    assert view.query_reward("q2", ["office", "sofa"], beta=0.5) == pytest.approx(2.5 / 3.5)


def test_query_rewards_batch(view: QueryView) -> None:
    group = [["office", "seat"], ["sofa"], ["office", "sofa"], [f"k{n}" for n in range(31)]]
    assert view.query_rewards("q2", group).tolist() == pytest.approx([0.5, 2 / 3, 0.8, 0.0])
    flags = [False, True, False, False]
    assert view.query_rewards("q2", group, oversized=flags).tolist() == pytest.approx([0.5, 0.0, 0.8, 0.0])
    mixed = view.query_rewards(["q1", "q2", "q4"], [[], ["sofa"], ["lamp"]])
    assert mixed.tolist() == pytest.approx([1.0, 2 / 3, 2 / 3])  # q4 + lamp: i1 i2, tp 1
    assert len(view.query_rewards("q1", [])) == 0


def test_batch_larger_than_a_chunk_matches_single_calls(view: QueryView) -> None:
    group = [["office"], ["sofa"], ["lamp", "seat"], ["desk"]] * 40
    batch = view.query_rewards("q2", group)
    assert batch.tolist() == pytest.approx([view.query_reward("q2", k) for k in group])
    items = view.item_rewards("i2", group)
    assert items.tolist() == pytest.approx([view.item_reward("i2", k) for k in group])


def test_unknown_ids_are_input_errors(view: QueryView) -> None:
    with pytest.raises(InputError, match="unknown query id 'nope'"):
        view.query_reward("nope", ["x"])
    with pytest.raises(InputError, match="unknown item id 'nope'"):
        view.item_reward("nope", ["x"])
    with pytest.raises(InputError, match="2 ids for 1 keyword lists"):
        view.item_rewards(["i1", "i2"], [["x"]])


# ------------------------------------------------------------------ item side
@pytest.mark.parametrize(
    ("item", "keywords", "expected"),
    [
        # same queries reached ({office, desk}): nothing changes
        ("i2", ["office"], 0.0),
        # leaves q2 (irrelevant: F1 1/2 -> 2/3), enters q1 (irrelevant: 1 -> 2/3)
        ("i2", ["lamp"], 1 / 6 - 1 / 3),
        # leaves q2 (+1/6), stays in q4 via its title "desk", enters q3 (no relevant: 0)
        ("i2", ["sofa"], 1 / 6),
        # enters q2 (relevant: 1/2 -> 2*2/5) and q1 (irrelevant: 1 -> 2/3); q3 unchanged
        ("i4", ["office", "lamp", "light"], 0.3 - 1 / 3),
        # leaves q2 although relevant (1/2 -> 0)
        ("i3", [], -0.5),
        # the title keyword always stays: i1 keeps q1 through "lamp"
        ("i1", [], 0.0),
        ("i1", ["Office Chair"], -0.5 + 0.4),  # enters q2 via its text: 2*1/(3+2) = 0.4
    ],
)
def test_item_reward_by_hand(view: QueryView, item: str, keywords: list[str], expected: float) -> None:
    assert view.item_reward(item, keywords) == pytest.approx(expected)
    assert view.naive_item_reward(item, keywords) == pytest.approx(expected)


def test_item_reward_oversized_is_minus_one(view: QueryView) -> None:
    assert view.item_reward("i2", ["office"], oversized=True) == -1.0
    many = [f"k{n}" for n in range(31)]
    assert view.item_reward("i2", many) == -1.0
    assert view.naive_item_reward("i2", many) == -1.0
    assert view.item_reward("i2", many[:30]) == pytest.approx(1 / 6)  # leaves q2, keeps q4 by title


def test_item_rewards_batch_and_mixed_items(view: QueryView) -> None:
    group = view.item_rewards("i2", [["office"], ["lamp"], ["sofa"], [f"k{n}" for n in range(31)]])
    assert group.tolist() == pytest.approx([0.0, -1 / 6, 1 / 6, -1.0])
    mixed = view.item_rewards(["i4", "i2", "i4", "i3"], [["office", "lamp", "light"], ["sofa"], [], []])
    assert mixed.tolist() == pytest.approx([0.3 - 1 / 3, 1 / 6, 0.0, -0.5])
    flags = view.item_rewards("i2", [["sofa"], ["sofa"]], oversized=[True, False])
    assert flags.tolist() == pytest.approx([-1.0, 1 / 6])


def test_item_reward_f_beta(view: QueryView) -> None:
    # i4 enters q2 (relevant): F2 from 5*1/(8+2)=1/2 to 5*2/(8+3)=10/11; enters q1 (irrelevant):
    # F2 from 1 to 5*1/(4+2)=5/6
    expected = (10 / 11 - 0.5) + (5 / 6 - 1.0)
    assert view.item_reward("i4", ["office", "lamp"], beta=2.0) == pytest.approx(expected)
    assert view.naive_item_reward("i4", ["office", "lamp"], beta=2.0) == pytest.approx(expected)


def test_transposed_item_reward(view: QueryView) -> None:
    # Q_cand(i4, [office]) = {q2, q3 (its title "sofa")}, rel(i4) = {q2}: F1 = 2*1/(2+1)
    assert view.transposed_item_reward("i4", ["office"]) == pytest.approx(2 / 3)
    assert view.transposed_item_reward("i4", []) == pytest.approx(0.0)  # only q3
    assert view.transposed_item_reward("i2", ["office"]) == pytest.approx(2 * 1 / (2 + 1))  # q2 q4 vs {q4}
    assert view.transposed_item_reward("i2", [f"k{n}" for n in range(31)]) == 0.0
    assert view.transposed_item_rewards("i4", [["office"], ["lamp"]]).tolist() == pytest.approx([2 / 3, 0.0])


# ------------------------------------------------------------------ property test
def _f(tp: int, ret: int, rel: int, beta: float) -> float:
    b2 = beta * beta
    denominator = b2 * rel + ret
    return (1 + b2) * tp / denominator if denominator else 0.0


def _rep(keywords: list[str], text: str, k_max: int) -> set[str]:
    base = list(dict.fromkeys(k for k in map(normalize, keywords) if k))[:k_max]
    return set(base) | ({normalize(text)} - {""})


def _total(item_reps: dict[str, set[str]], query_reps: dict[str, set[str]], rel: dict[str, set[str]], beta: float) -> float:
    total = 0.0
    for query_id, qrep in query_reps.items():
        retrieved = {i for i, irep in item_reps.items() if irep & qrep}
        relevant = rel.get(query_id, set())
        total += _f(len(retrieved & relevant), len(retrieved), len(relevant), beta)
    return total


WORDS = ["red", "Red ", "blue", "lamp", "desk lamp", "sofa", "chair", "oak", "x"]


@st.composite
def instances(draw: st.DrawFn) -> dict:
    n_items = draw(st.integers(1, 7))
    n_queries = draw(st.integers(1, 6))
    keyword_sets = st.lists(st.sampled_from(WORDS), max_size=5)
    items = [f"i{n}" for n in range(n_items)]
    queries = [f"q{n}" for n in range(n_queries)]
    return {
        "titles": {i: draw(st.sampled_from(WORDS + ["", "Unique " + i])) for i in items},
        "item_keywords": {i: draw(keyword_sets) for i in items},
        "query_texts": {q: draw(st.sampled_from(WORDS + ["nothing"])) for q in queries},
        "query_keywords": {q: draw(keyword_sets) for q in queries},
        "relevant": {q: set(draw(st.lists(st.sampled_from(items), max_size=3))) for q in queries},
        "target": draw(st.sampled_from(items)),
        "candidates": draw(st.lists(keyword_sets, min_size=1, max_size=4)),
        "k_max": draw(st.integers(1, 4)),
        "beta": draw(st.sampled_from([1.0, 0.5, 2.0])),
        "dense": draw(st.sampled_from([0, 1, 2])),
    }


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(instances())
def test_cached_rewards_equal_naive_recomputation(case: dict) -> None:
    k_max, beta = case["k_max"], case["beta"]
    items = ItemIndex.build(case["item_keywords"], case["titles"], k_max=k_max, dense_min_df=case["dense"])
    view = QueryView.build(
        case["query_keywords"], case["query_texts"], items, case["relevant"], k_max=k_max, dense_min_df=case["dense"]
    )
    item_reps = {i: _rep(case["item_keywords"][i], case["titles"][i], k_max) for i in case["titles"]}
    query_reps = {q: _rep(case["query_keywords"][q], case["query_texts"][q], k_max) for q in case["query_texts"]}
    rel = case["relevant"]
    reference = _total(item_reps, query_reps, rel, beta)
    assert view.reference_total(beta) == pytest.approx(reference)

    target = case["target"]
    expected_item, expected_query, expected_transposed = [], [], []
    for candidate in case["candidates"]:
        oversized = len({k for k in map(normalize, candidate) if k}) > k_max
        cand_rep = _rep(candidate, case["titles"][target], k_max)
        # item side: Eq. 2.3 by brute force
        changed = dict(item_reps, **{target: cand_rep})
        expected_item.append(-1.0 if oversized else _total(changed, query_reps, rel, beta) - reference)
        # transposed: queries retrieving the candidate vs queries the item is relevant to
        q_ret = {q for q, qrep in query_reps.items() if qrep & cand_rep}
        q_rel = {q for q, r in rel.items() if target in r}
        expected_transposed.append(0.0 if oversized else _f(len(q_ret & q_rel), len(q_ret), len(q_rel), beta))
        # query side: the candidate as the first query's keywords
        query = next(iter(query_reps))
        qrep = _rep(candidate, case["query_texts"][query], k_max)
        retrieved = {i for i, irep in item_reps.items() if irep & qrep}
        relevant = rel.get(query, set())
        expected_query.append(0.0 if oversized else _f(len(retrieved & relevant), len(retrieved), len(relevant), beta))

    candidates = case["candidates"]
    assert view.item_rewards(target, candidates, beta=beta).tolist() == pytest.approx(expected_item, abs=1e-9)
    assert view.transposed_item_rewards(target, candidates, beta=beta).tolist() == pytest.approx(expected_transposed)
    first_query = next(iter(case["query_texts"]))
    assert view.query_rewards(first_query, candidates, beta=beta).tolist() == pytest.approx(expected_query)
    assert view.naive_item_reward(target, candidates[0], beta=beta) == pytest.approx(expected_item[0], abs=1e-9)
