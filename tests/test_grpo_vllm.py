"""One GRPO step with vLLM rollouts (colocated) on a small randomly initialised model,
rewarded by the shadow index: the GPU code path of `train rl`. GPU only."""

from __future__ import annotations

from pathlib import Path

import pytest

from cogr_search.generators.backend import vllm_unavailable_reason
from cogr_search.shadow import ItemIndex, QueryView
from cogr_search.runs.config import GRPOSideConfig
from cogr_search.training.rewards import QueryF1Reward

REASON = vllm_unavailable_reason()
pytestmark = [pytest.mark.gpu, pytest.mark.skipif(REASON is not None, reason=f"GRPO with vLLM needs a GPU: {REASON}")]


def _tiny_model(folder: Path) -> Path:
    """A 2-layer llama with the CPU model's tokenizer and random weights (a code-path check)."""
    from transformers import AutoTokenizer, LlamaConfig, LlamaForCausalLM

    from cogr_search.generators.model_cache import ensure_default_model

    tokenizer = AutoTokenizer.from_pretrained(str(ensure_default_model()))
    config = LlamaConfig(vocab_size=len(tokenizer), hidden_size=64, intermediate_size=128, num_hidden_layers=2,
                         num_attention_heads=4, num_key_value_heads=4, max_position_embeddings=512,
                         tie_word_embeddings=True)
    LlamaForCausalLM(config).save_pretrained(str(folder))
    tokenizer.save_pretrained(str(folder))
    return folder


def test_one_grpo_step_with_vllm_rollouts(tmp_path: Path) -> None:
    from cogr_search.training.grpo import train_grpo

    items = ItemIndex.build({"i1": ["lamp"], "i2": ["desk"]}, {"i1": "Lamp", "i2": "Desk"})
    view = QueryView.build({"q1": ["lamp"]}, {"q1": "lamp"}, items, {"q1": {"i1"}})
    reward = QueryF1Reward(view)
    rows = [{"prompt": [{"role": "user", "content": "Query: lamp"}], "query_id": "q1"}] * 2
    config = GRPOSideConfig(learning_rate=1e-5, max_steps=1, num_generations=2, prompts_per_step=2,
                            max_completion_length=16)
    result = train_grpo(_tiny_model(tmp_path / "tiny"), rows, reward, tmp_path / "out", config,
                        progress=False, use_vllm=True)
    assert result.used_vllm and result.steps == 1
    assert reward.completions == 4 and (tmp_path / "out" / "config.json").is_file()
