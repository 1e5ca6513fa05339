"""The vLLM backend: same interface and output record as transformers, GPU only."""

from __future__ import annotations

import pytest

from cogr_search.errors import CogrError
from cogr_search.generators.backend import GREEDY, INIT, load_backend, vllm_unavailable_reason

REASON = vllm_unavailable_reason()


@pytest.mark.skipif(REASON is None, reason="vLLM can run here; this checks the refusal on hosts without it")
def test_asking_for_vllm_without_a_gpu_is_a_clear_error(tmp_path) -> None:  # noqa: ANN001
    with pytest.raises(CogrError, match="vLLM backend cannot run here"):
        load_backend(tmp_path, "vllm")


@pytest.mark.gpu
@pytest.mark.skipif(REASON is not None, reason=f"vLLM backend needs a GPU and vllm: {REASON}")
def test_vllm_generates_in_input_order_with_the_shared_record() -> None:
    from cogr_search.generators.model_cache import ensure_default_model
    from cogr_search.generators.prompts import load_prompts

    prompts = load_prompts()
    conversations = [prompts.query_messages(q, 5) for q in ("oak table", "lamp", "bath towel")]
    with load_backend(ensure_default_model(), "vllm", gpu_memory_utilization=0.3) as backend:
        assert backend.name == "vllm"
        greedy = backend.generate(conversations, GREEDY.with_(max_new_tokens=16), batch_size=2)
        again = backend.generate(conversations, GREEDY.with_(max_new_tokens=16), batch_size=3)
        sampled = backend.generate(conversations, INIT.with_(max_new_tokens=16, seed=1), batch_size=3)
    assert [g.text for g in greedy] == [g.text for g in again]
    assert all(1 <= g.n_tokens <= 16 for g in greedy + sampled)
    assert all(g.finished or g.n_tokens == 16 for g in greedy + sampled)
