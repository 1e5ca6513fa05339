"""The vLLM backend: offline batch generation on a GPU (`LLM.generate`).

Selected by `load_backend` only when a CUDA GPU is present and vLLM imports (the `gpu`
extra); vLLM is imported here and nowhere else. Prompts are rendered with the model's
own chat template by the Hugging Face tokenizer and passed as token ids, so vLLM and
transformers see byte-identical inputs and never add a second BOS token. Outputs use
the same `Generation` record as the transformers backend.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from pathlib import Path

from cogr_search.generators.backend import Generation, GeneratorBackend, Message, SamplingParams


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
        enforce_eager: bool = False,
    ) -> None:
        super().__init__(model_path)
        from transformers import AutoTokenizer
        from vllm import LLM

        self.tokenizer = AutoTokenizer.from_pretrained(str(self.model_path))
        self.llm = LLM(
            model=str(self.model_path),
            dtype=dtype,
            seed=seed,
            gpu_memory_utilization=gpu_memory_utilization,
            max_model_len=max_model_len,
            enforce_eager=enforce_eager,
        )

    def render(self, conversation: Sequence[Message]) -> list[int]:
        ids = self.tokenizer.apply_chat_template(list(conversation), add_generation_prompt=True, tokenize=True)
        if hasattr(ids, "keys"):
            ids = ids["input_ids"]
        return list(ids)

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
        self.llm = None  # type: ignore[assignment]
        try:
            import torch

            torch.cuda.empty_cache()
        except Exception:  # pragma: no cover - best effort on GPU hosts
            pass


def to_vllm_sampling(params: SamplingParams):  # noqa: ANN201 - vllm type
    """Our presets in vLLM's spelling: greedy is temperature 0; top_k -1 means no cut."""
    from vllm import SamplingParams as VLLMSamplingParams

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
