"""The trl-shaped reward functions of Phase 2 on the hand-computed catalog of
test_shadow_rewards.py, called the way trl 1.16 calls them: keyword arguments
`prompts`, `completions` (chat turns), `completion_ids`, and every dataset column.

    i1 {light, table lamp, lamp}   i2 {table, office, desk}
    i3 {seat, office, chair}       i4 {sofa}
    q1 {light, lamp} rel {i1}; q2 {office, office chair} rel {i3, i4}; q4 {desk, table} rel {i2}
"""

from __future__ import annotations

import pytest

from cogr_search.shadow import ItemIndex, QueryView
from cogr_search.training.rewards import ItemMarginalReward, QueryF1Reward, completion_text

TITLES = {"i1": "Lamp", "i2": "Desk", "i3": "Chair", "i4": "Sofa"}
ITEM_KEYWORDS = {"i1": ["light", "Table Lamp"], "i2": ["table", "office"], "i3": ["seat", "office"], "i4": []}
QUERY_TEXTS = {"q1": "lamp", "q2": "Office Chair", "q3": "sofa", "q4": "table"}
QUERY_KEYWORDS = {"q1": ["light"], "q2": ["office"], "q3": [], "q4": ["desk"]}
RELEVANT = {"q1": {"i1"}, "q2": {"i3", "i4"}, "q4": {"i2"}}


@pytest.fixture()
def view() -> QueryView:
    items = ItemIndex.build(ITEM_KEYWORDS, TITLES)
    return QueryView.build(QUERY_KEYWORDS, QUERY_TEXTS, items, RELEVANT)


def _turns(*texts: str) -> list[list[dict]]:
    return [[{"role": "assistant", "content": text}] for text in texts]


def test_query_reward_parses_chat_completions_and_scores_f1(view: QueryView) -> None:
    reward = QueryF1Reward(view, k_max=3)
    completions = _turns("office, seat", "1. SOFA", "office, sofa", "lamp, office, sofa, desk")
    values = reward(
        prompts=[[{"role": "user", "content": "Query: Office Chair"}]] * 4,
        completions=completions,
        completion_ids=[[1]] * 4,
        query_id=["q2"] * 4,
        trainer_state=None,
    )
    # i2,i3 -> 2*1/(2+2); i4 -> P 1 R 1/2; i2 i3 i4 -> 2*2/(3+2); 4 distinct > k_max 3 -> 0
    assert values == pytest.approx([0.5, 2 / 3, 0.8, 0.0])
    assert reward.calls == 1 and reward.completions == 4 and reward.seconds > 0
    assert reward.__name__ == "query_f1"


def test_query_reward_mixed_batch_equals_one_by_one(view: QueryView) -> None:
    reward = QueryF1Reward(view)
    ids = ["q1", "q2", "q4", "q3"]
    texts = ["unknown keyword", "office, sofa", "", "sofa, lamp"]
    batch = reward(completions=texts, query_id=ids)  # plain-text completions too
    single = [view.query_reward(q, [k.strip() for k in t.split(",") if k.strip()]) for q, t in zip(ids, texts)]
    assert batch == pytest.approx(single)
    assert batch == pytest.approx([1.0, 0.8, 1.0, 0.0])


def test_item_reward_is_the_counterfactual_change_in_total_f1(view: QueryView) -> None:
    reward = ItemMarginalReward(view, k_max=3)
    # i4 gains "office": q2 retrieves i2 i3 i4 -> F1 0.8 (was 0.5): +0.3.
    # i4 gains "lamp" too: q1 retrieves i1 i4 -> 2/3 (was 1): -1/3 in addition.
    values = reward(completions=_turns("office", "office, lamp", "a, b, c, d"), item_id=["i4"] * 3)
    assert values == pytest.approx([0.3, 0.3 - 1 / 3, -1.0])
    naive = [view.naive_item_reward("i4", ["office"]), view.naive_item_reward("i4", ["office", "lamp"])]
    assert values[:2] == pytest.approx(naive)


def test_transposed_item_reward(view: QueryView) -> None:
    reward = ItemMarginalReward(view, transposed=True)
    # i3 with {office}: retrieved by q2 only (rel(i3) = {q2}) -> F 1; with {desk}: by q4 -> 0
    assert reward(completions=["office", "desk"], item_id=["i3", "i3"]) == pytest.approx([1.0, 0.0])
    assert reward.__name__ == "item_transposed_f"


def test_completion_text_rejects_unknown_shapes() -> None:
    assert completion_text("a, b") == "a, b"
    assert completion_text([{"role": "assistant", "content": "x"}]) == "x"
    with pytest.raises(TypeError):
        completion_text(42)
