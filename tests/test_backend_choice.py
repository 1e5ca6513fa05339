"""What `--backend auto` picks, job by job, on the machine the suite runs on: the measured
rules of `vllm_is_faster_here` (benchmarks/generate.md, benchmarks/rl.md), read through the
same calls `train sft`, `train rl` and `bench rl` make."""

from __future__ import annotations

import pytest

from cogr_search.generators.backend import gpu_available
from cogr_search.generators.backend_choice import resolve_backend, vllm_unavailable_reason
from cogr_search.generators.cpu import cpu_flag
from cogr_search.runs.config import GRPOSideConfig
from cogr_search.training.grpo import rollout_backend

PAPER = GRPOSideConfig(lora=True)  # Table 5: T 1.0, no cut, so trl's importance correction runs
DEMO = GRPOSideConfig(lora=True, temperature=0.7, top_p=0.8, top_k=20)  # a cut: no correction
VLLM_HERE = vllm_unavailable_reason() is None
ON_GPU = gpu_available()


@pytest.fixture(autouse=True)
def _auto(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("COGR_BACKEND", "auto")  # the suite pins transformers; these test auto itself


def test_auto_keeps_keyword_files_on_transformers_on_a_cpu() -> None:
    expected = "vllm" if ON_GPU and VLLM_HERE else "transformers"
    assert resolve_backend("auto") == expected


def test_auto_takes_vllm_for_cut_sampling_rollouts_on_avx512() -> None:
    fast_here = VLLM_HERE and (ON_GPU or cpu_flag("avx512f"))
    assert rollout_backend("auto", DEMO) == ("vllm" if fast_here else "transformers")
    full_fine_tuning = PAPER.model_copy(update={"lora": False})
    assert rollout_backend("auto", full_fine_tuning) == ("vllm" if fast_here else "transformers")


def test_auto_keeps_lora_with_the_importance_correction_on_transformers_on_a_cpu() -> None:
    expected = "vllm" if ON_GPU and VLLM_HERE else "transformers"
    assert rollout_backend("auto", PAPER) == expected


@pytest.mark.skipif(not VLLM_HERE, reason=f"vLLM cannot run here: {vllm_unavailable_reason()}")
def test_an_explicit_backend_is_never_second_guessed(monkeypatch: pytest.MonkeyPatch) -> None:
    assert rollout_backend("vllm", PAPER) == "vllm"
    assert rollout_backend("transformers", DEMO) == "transformers"
    monkeypatch.setenv("COGR_BACKEND", "vllm")  # COGR_BACKEND answers `auto` before the rules do
    assert rollout_backend("auto", PAPER) == "vllm"
