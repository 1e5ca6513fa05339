"""Prompt screening before GRPO (`training/screening.py`): hand-computed group tests,
and one screening pass with the real CPU model against the hand-computed catalog of
test_rl_rewards.py, whose record must agree with a recomputation of its rewards."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from cogr_search.generators.model_cache import ensure_default_model
from cogr_search.shadow import ItemIndex, QueryView
from cogr_search.runs.config import GenerationConfig, GRPOSideConfig
from cogr_search.training.rewards import QueryF1Reward
from cogr_search.training.screening import rollout_params, screen_rows, varied_groups

from .test_rl_rewards import ITEM_KEYWORDS, QUERY_KEYWORDS, QUERY_TEXTS, RELEVANT, TITLES


def test_varied_groups_by_hand() -> None:
    assert varied_groups([0.0, 0.0, 0.5, 0.5, 0.2, 0.7], 2) == [False, False, True]
    assert varied_groups([-1.0, -1.0, -1.0, 0.0], 4) == [True]
    with pytest.raises(ValueError):
        varied_groups([0.0, 1.0, 0.5], 2)


def test_rollout_params_follow_the_side_config() -> None:
    params = rollout_params(GRPOSideConfig(temperature=0.7, top_p=0.8, top_k=0, max_completion_length=24, seed=3))
    assert (params.temperature, params.top_p, params.top_k, params.max_new_tokens, params.seed) == (0.7, 0.8, -1, 24, 3)


@pytest.mark.model
def test_screening_keeps_the_prompts_whose_rewards_vary_and_resumes_from_its_record(tmp_path: Path) -> None:
    view = QueryView.build(QUERY_KEYWORDS, QUERY_TEXTS, ItemIndex.build(ITEM_KEYWORDS, TITLES), RELEVANT)
    rows = [
        {"prompt": [{"role": "user", "content": f"Write 3 search keywords for: {text}"}], "query_id": q}
        for q, text in QUERY_TEXTS.items()
    ]
    config = GRPOSideConfig(num_generations=4, max_completion_length=24, temperature=1.0)
    reward = QueryF1Reward(view)
    record = tmp_path / "screen_query.json"
    kept, info = screen_rows(ensure_default_model(), rows, "query_id", reward, config,
                             GenerationConfig(batch_size=8), record)

    saved = json.loads(record.read_text())
    assert info["candidates"] == 4 and info["rollouts"] == 16 and "groups" not in info
    fresh = QueryF1Reward(view)
    varied = []
    for group in saved["groups"]:
        assert len(group["completions"]) == 4
        again = fresh(completions=group["completions"], query_id=[group["id"]] * 4)
        assert group["rewards"] == pytest.approx(again, abs=1e-6)
        varied.append(max(again) > min(again))
    ids = [g["id"] for g in saved["groups"]]
    expected = [i for i, v in zip(ids, varied) if v] if any(varied) else ids
    assert [row["query_id"] for row in kept] == saved["ids"] == expected
    assert "q3" not in saved["ids"] or info["kept_all"]  # q3 has no relevant item: every rollout scores 0
    assert info["zero_std_share"] == pytest.approx(1 - sum(varied) / 4, abs=1e-4)

    # a resumed phase reads the record: no model is loaded, the same rows come back
    again_rows, again_info = screen_rows(tmp_path / "no-model-here", rows, "query_id", reward, config,
                                         GenerationConfig(), record)
    assert again_rows == kept and again_info == info
