"""The transformers backend: plain `model.generate` on CPU or one GPU.

Speed choices on CPU (measured in benchmarks/generate.md):
- prompts are sorted by token length before batching, so a batch pads little;
- left padding, `inference_mode`, and generation stops as soon as every row of the
  batch has emitted its end token;
- decoding is dominated by per-step work that does not grow with the batch (weights
  streamed once per step, Python overhead of `generate`), so bigger batches are the
  main lever: throughput grows almost linearly up to batch 32 on 2 cores.
"""

from __future__ import annotations

import os
from collections.abc import Iterator, Sequence
from pathlib import Path

from cogr_search.errors import CogrError
from cogr_search.generators.backend import Generation, GeneratorBackend, Message, SamplingParams
from cogr_search.generators.threads import configure_torch_threads


class HFBackend(GeneratorBackend):
    """A causal LM folder loaded with transformers."""

    name = "transformers"

    def __init__(
        self,
        model_path: Path,
        device: str = "auto",
        dtype: str = "auto",
        num_threads: int | None = None,
        sort_by_length: bool = True,
    ) -> None:
        super().__init__(model_path)
        os.environ.setdefault("HF_HUB_OFFLINE", "1")
        os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
        import torch
        from transformers import AutoModelForCausalLM, AutoTokenizer

        self.threads = configure_torch_threads(num_threads)
        self.device = ("cuda" if torch.cuda.is_available() else "cpu") if device == "auto" else device
        self.dtype = _torch_dtype(dtype, self.device)
        try:
            self.tokenizer = AutoTokenizer.from_pretrained(str(self.model_path))
            self.model = AutoModelForCausalLM.from_pretrained(str(self.model_path), dtype=self.dtype)
        except (OSError, ValueError) as err:
            raise CogrError(f"cannot load model from {self.model_path}: {str(err).splitlines()[0]}") from err
        self.model.to(self.device).eval()
        self.tokenizer.padding_side = "left"
        if self.tokenizer.pad_token is None:
            self.tokenizer.pad_token = self.tokenizer.eos_token
        self.sort_by_length = sort_by_length
        self.end_ids = _end_token_ids(self.model, self.tokenizer)

    def render(self, conversation: Sequence[Message]) -> list[int]:
        """Token ids of a conversation through the model's chat template, ready for the
        assistant's turn."""
        ids = self.tokenizer.apply_chat_template(list(conversation), add_generation_prompt=True, tokenize=True)
        if isinstance(ids, dict) or hasattr(ids, "keys"):  # some tokenizers return a BatchEncoding
            ids = ids["input_ids"]
        return list(ids)

    def iter_batches(
        self, conversations: Sequence[Sequence[Message]], params: SamplingParams, batch_size: int = 8
    ) -> Iterator[list[tuple[int, Generation]]]:
        import torch

        prompts = [self.render(c) for c in conversations]
        order = list(range(len(prompts)))
        if self.sort_by_length:
            order.sort(key=lambda i: len(prompts[i]), reverse=True)
        if params.seed is not None:
            torch.manual_seed(params.seed)
        step = max(1, batch_size)
        for start in range(0, len(order), step):
            rows = order[start : start + step]
            yield list(zip(rows, self._generate_batch([prompts[i] for i in rows], params)))

    def _generate_batch(self, prompts: list[list[int]], params: SamplingParams) -> list[Generation]:
        import torch

        batch = self.tokenizer.pad({"input_ids": prompts}, padding=True, return_tensors="pt").to(self.device)
        with torch.inference_mode():
            output = self.model.generate(
                input_ids=batch["input_ids"],
                attention_mask=batch["attention_mask"],
                pad_token_id=self.tokenizer.pad_token_id,
                eos_token_id=sorted(self.end_ids),
                **_sampling_kwargs(params),
            )
        new_tokens = output[:, batch["input_ids"].shape[1] :].tolist()
        return [self._to_generation(row) for row in new_tokens]

    def _to_generation(self, ids: list[int]) -> Generation:
        end = next((pos for pos, tok in enumerate(ids) if tok in self.end_ids), None)
        content = ids if end is None else ids[:end]
        text = self.tokenizer.decode(content, skip_special_tokens=True)
        return Generation(text=text.strip(), n_tokens=len(ids) if end is None else end + 1, finished=end is not None)

    def close(self) -> None:
        self.model = None  # type: ignore[assignment]


def _sampling_kwargs(params: SamplingParams) -> dict:
    """transformers' spelling of the presets: top_k 0 and min_p None mean "no cut"."""
    kwargs: dict = {"max_new_tokens": params.max_new_tokens}
    if params.greedy or params.temperature <= 0:
        kwargs["do_sample"] = False
        return kwargs
    kwargs.update(
        do_sample=True,
        temperature=params.temperature,
        top_p=params.top_p,
        top_k=params.top_k if params.top_k > 0 else 0,
    )
    if params.min_p > 0:
        kwargs["min_p"] = params.min_p
    return kwargs


def _end_token_ids(model: object, tokenizer: object) -> set[int]:
    """Every id that ends an assistant turn: the tokenizer's and the generation config's."""
    ids: set[int] = set()
    for value in (getattr(tokenizer, "eos_token_id", None), getattr(model.generation_config, "eos_token_id", None)):
        if isinstance(value, int):
            ids.add(value)
        elif isinstance(value, (list, tuple)):
            ids.update(int(v) for v in value)
    im_end = tokenizer.convert_tokens_to_ids("<|im_end|>") if "<|im_end|>" in tokenizer.get_vocab() else None
    if im_end is not None:
        ids.add(im_end)
    return ids


def _torch_dtype(name: str, device: str):  # noqa: ANN202 - torch type
    import torch

    if name == "auto":
        return torch.bfloat16 if device.startswith("cuda") else torch.float32
    table = {"float32": torch.float32, "fp32": torch.float32, "bfloat16": torch.bfloat16, "bf16": torch.bfloat16,
             "float16": torch.float16, "fp16": torch.float16}
    if name not in table:
        raise CogrError(f"unknown dtype {name!r}; choose one of {sorted(table)} or auto")
    return table[name]
