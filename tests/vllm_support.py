"""What the vLLM tests share: the check that vLLM runs here (it is part of `make setup`, so
its absence fails rather than skips), and a small random llama that vLLM's CPU attention
accepts (head size 64: the suite's `tiny_model` has 16, which it refuses)."""

from __future__ import annotations

from pathlib import Path

import pytest

from cogr_search.generators.backend_choice import vllm_unavailable_reason

REASON = vllm_unavailable_reason()


@pytest.fixture(autouse=True)
def vllm_installed() -> None:
    if REASON is not None:
        pytest.fail(f"vLLM is part of the set-up (make setup) but cannot run: {REASON}")


def small_llama(folder: Path, seed: int = 0, max_positions: int = 2048) -> Path:
    """2 blocks of width 128 (two heads of 64), random weights, with the CPU model's tokenizer
    and chat template: a code-path check, not a model."""
    import torch  # heavy: torch, kept off collection of the suite
    from transformers import AutoTokenizer, LlamaConfig, LlamaForCausalLM  # heavy: transformers

    from cogr_search.generators.model_cache import ensure_default_model

    torch.manual_seed(seed)
    tokenizer = AutoTokenizer.from_pretrained(str(ensure_default_model()))
    config = LlamaConfig(vocab_size=len(tokenizer), hidden_size=128, intermediate_size=256, num_hidden_layers=2,
                         num_attention_heads=2, num_key_value_heads=2, max_position_embeddings=max_positions,
                         tie_word_embeddings=True)
    LlamaForCausalLM(config).save_pretrained(str(folder))
    tokenizer.save_pretrained(str(folder))
    return folder
