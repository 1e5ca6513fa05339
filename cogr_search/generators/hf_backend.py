"""The transformers backend: a causal LM folder on CPU or one GPU.

Speed on CPU (measured in benchmarks/generate.md; the default item prompt is ~100
tokens and a keyword list ~30-50):
- prompts are sorted by token length before batching, so a batch pads little;
- the prompt head every prompt shares (system turn + template start, ~45 tokens) is
  prefilled once and its key/value cache copied to every row: prefill is about half of
  the work at batch 32;
- an own decode loop drops each row from the batch as soon as it ends (transformers'
  `generate` keeps finished rows computing until the longest row ends) and samples
  among the top-k logits without sorting the 49k-token vocabulary;
- `auto` dtype is bfloat16 where the CPU has native bf16 dot products (~1.7x faster
  than float32 here);
- bigger batches amortise the per-step cost until the decode step becomes compute
  bound (around batch 32 on one core).
`decoder="generate"` switches to transformers' `generate` (the reference in tests)."""

from __future__ import annotations

import os
from collections.abc import Iterator, Sequence
from pathlib import Path

from cogr_search.errors import CogrError
from cogr_search.generators.backend import Generation, GeneratorBackend, Message, SamplingParams
from cogr_search.generators.cpu import cpu_flag
from cogr_search.generators.threads import configure_torch_threads
import copy

# A shared prompt head shorter than this is prefilled with the rest: copying its cache
# would cost about what it saves.
MIN_PREFIX_TOKENS = 8


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
        prefix_cache: bool = True,
        decoder: str = "own",
    ) -> None:
        super().__init__(model_path)
        os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
        import torch  # heavy: torch, off the CLI's start
        from transformers import AutoModelForCausalLM, AutoTokenizer  # heavy: transformers, off the CLI's start

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
        self.prefix_cache = prefix_cache
        if decoder not in ("own", "generate"):
            raise CogrError(f"decoder {decoder!r}: expected 'own' or 'generate'")
        self.decoder = decoder
        self._prefix_key: tuple[int, ...] | None = None
        self._prefix_cache = None
        self.end_ids = _end_token_ids(self.model, self.tokenizer)

    def iter_batches(
        self,
        conversations: Sequence[Sequence[Message]],
        params: SamplingParams,
        batch_size: int = 8,
        row_seeds: Sequence[int] | None = None,
    ) -> Iterator[list[tuple[int, Generation]]]:
        """With `row_seeds`, the own decode loop samples each row from a generator of its
        own; `decoder="generate"` ignores them (one stream per batch, seeded by `params`)."""
        import torch  # heavy: torch, off the CLI's start

        prompts = [self.render(c) for c in conversations]
        order = list(range(len(prompts)))
        if self.sort_by_length:
            order.sort(key=lambda i: len(prompts[i]), reverse=True)
        if params.seed is not None:
            torch.manual_seed(params.seed)
        prefix = self._shared_prefix(prompts) if self.prefix_cache else []
        step = max(1, batch_size)
        for start in range(0, len(order), step):
            rows = order[start : start + step]
            seeds = None if row_seeds is None else [row_seeds[i] for i in rows]
            yield list(zip(rows, self._generate_batch([prompts[i] for i in rows], params, prefix, seeds)))

    def _shared_prefix(self, prompts: list[list[int]]) -> list[int]:
        """The token prefix every prompt starts with (system prompt and template head),
        leaving each prompt at least one token of its own; [] when too short to pay."""
        if len(prompts) < 2:
            return []
        first = prompts[0]
        limit = min(len(p) for p in prompts) - 1
        length = 0
        while length < limit and all(p[length] == first[length] for p in prompts):
            length += 1
        return first[:length] if length >= MIN_PREFIX_TOKENS else []

    def _prefix_state(self, prefix: list[int]):  # noqa: ANN202 - transformers Cache
        """The KV cache of `prefix` for batch size 1, computed once and kept."""
        import torch  # heavy: torch, off the CLI's start

        key = tuple(prefix)
        if self._prefix_key != key:
            with torch.inference_mode():
                ids = torch.tensor([prefix], device=self.device)
                self._prefix_cache = self.model(input_ids=ids, use_cache=True, logits_to_keep=1).cache
            self._prefix_key = key
        return self._prefix_cache

    def _layout(self, prompts: list[list[int]], prefix: list[int]):  # noqa: ANN202 - tensors and a Cache
        """Rows as [prefix | padding | own tokens], the padding masked, and a copy of the
        prefix's cache for every row. Positions come from the attention mask, so a row's
        outputs equal those of plain left padding (checked in tests)."""
        import torch  # heavy: torch, off the CLI's start

        pad = self.tokenizer.pad_token_id
        shared = len(prefix)
        width = max(len(p) for p in prompts) - shared
        ids, mask = [], []
        for p in prompts:
            own = p[shared:]
            gap = width - len(own)
            ids.append(p[:shared] + [pad] * gap + own)
            mask.append([1] * shared + [0] * gap + [1] * len(own))
        cache = None
        if shared:
            cache = copy.deepcopy(self._prefix_state(prefix))
            cache.batch_repeat_interleave(len(prompts))
        input_ids = torch.tensor(ids, device=self.device)
        return input_ids, torch.tensor(mask, device=self.device), cache

    def _generate_batch(
        self, prompts: list[list[int]], params: SamplingParams, prefix: list[int], seeds: list[int] | None = None
    ) -> list[Generation]:
        if self.decoder == "generate":
            return self._generate_with_transformers(prompts, params, prefix)
        return self._decode(prompts, params, prefix, seeds)

    def _decode(
        self, prompts: list[list[int]], params: SamplingParams, prefix: list[int], seeds: list[int] | None = None
    ) -> list[Generation]:
        """Our own decode loop. Unlike `generate`, it drops a row from the batch (and its
        cache) as soon as the row emits its end token, so finished rows stop costing
        compute, and it skips `generate`'s per-step bookkeeping. It applies exactly the
        given `SamplingParams` (not the model's generation_config)."""
        import torch  # heavy: torch, off the CLI's start

        input_ids, attention_mask, cache = self._layout(prompts, prefix)
        positions = (attention_mask.cumsum(-1) - 1).clamp(min=0)
        shared = len(prefix)
        pick = _token_picker(params)
        streams = None if seeds is None else [torch.Generator(self.device).manual_seed(seed) for seed in seeds]
        end_ids = torch.tensor(sorted(self.end_ids), device=self.device)
        tokens: list[list[int]] = [[] for _ in prompts]
        finished = [False] * len(prompts)
        active = list(range(len(prompts)))
        with torch.inference_mode():
            out = self.model(
                input_ids=input_ids[:, shared:], attention_mask=attention_mask, position_ids=positions[:, shared:],
                cache=cache, use_cache=True, logits_to_keep=1,
            )
            cache, next_position = out.cache, positions[:, -1:] + 1
            for step in range(params.max_new_tokens):
                chosen = pick(out.logits[:, -1, :].float(), None if streams is None else [streams[r] for r in active])
                ended = torch.isin(chosen, end_ids)
                for row, token, done in zip(active, chosen.tolist(), ended.tolist()):
                    tokens[row].append(token)
                    finished[row] = done
                if step == params.max_new_tokens - 1 or bool(ended.all()):
                    break
                if bool(ended.any()):
                    keep = (~ended).nonzero().flatten()
                    cache.batch_select_indices(keep)
                    attention_mask, next_position, chosen = attention_mask[keep], next_position[keep], chosen[keep]
                    active = [active[i] for i in keep.tolist()]
                attention_mask = torch.cat([attention_mask, attention_mask.new_ones((len(active), 1))], dim=1)
                out = self.model(
                    input_ids=chosen[:, None], attention_mask=attention_mask, position_ids=next_position,
                    cache=cache, use_cache=True,
                )
                next_position = next_position + 1
        return [self._to_generation(row) for row in tokens]

    def _generate_with_transformers(
        self, prompts: list[list[int]], params: SamplingParams, prefix: list[int]
    ) -> list[Generation]:
        """transformers' `generate`: the reference the own loop is tested against, and a
        fallback (`decoder="generate"`) for models the own loop does not suit."""
        import torch  # heavy: torch, off the CLI's start

        input_ids, attention_mask, cache = self._layout(prompts, prefix)
        extra = {"cache": cache} if cache is not None else {}
        with torch.inference_mode():
            output = self.model.generate(
                input_ids=input_ids,
                attention_mask=attention_mask,
                pad_token_id=self.tokenizer.pad_token_id,
                eos_token_id=sorted(self.end_ids),
                **extra,
                **_sampling_kwargs(params),
            )
        new_tokens = output[:, input_ids.shape[1] :].tolist()
        return [self._to_generation(row) for row in new_tokens]

    def _to_generation(self, ids: list[int]) -> Generation:
        end = next((pos for pos, tok in enumerate(ids) if tok in self.end_ids), None)
        content = ids if end is None else ids[:end]
        text = self.tokenizer.decode(content, skip_special_tokens=True)
        return Generation(text=text.strip(), n_tokens=len(ids) if end is None else end + 1, finished=end is not None)

    def close(self) -> None:
        self.model = None  # type: ignore[assignment]


def _sampling_kwargs(params: SamplingParams) -> dict:
    """transformers' spelling of the presets: top_k 0 and min_p None mean "no cut".

    With a top-k cut (the init/eval/index preset) the warping is done by `TopKTopP`,
    which needs no sort of the whole vocabulary (transformers' top-p warper sorts all
    49k logits of every row at every step: ~20% of a CPU decode step at batch 32).
    """
    kwargs: dict = {"max_new_tokens": params.max_new_tokens}
    if params.greedy or params.temperature <= 0:
        kwargs["do_sample"] = False
        return kwargs
    if params.top_k > 0 and params.min_p <= 0:
        from transformers import LogitsProcessorList  # heavy: transformers, off the CLI's start

        kwargs.update(do_sample=True, temperature=1.0, top_k=0, top_p=1.0)
        kwargs["logits_processor"] = LogitsProcessorList([TopKTopP(params.top_k, params.top_p, params.temperature)])
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


def _token_picker(params: SamplingParams):  # noqa: ANN202 - a function of tensors
    """The next-token rule of the own decode loop: (float32 logits [rows, vocab], one
    torch.Generator per row or None for the global stream) -> token ids [rows]."""
    import torch  # heavy: torch, off the CLI's start

    if params.greedy or params.temperature <= 0:
        return lambda logits, streams=None: logits.argmax(dim=-1)
    if params.top_k > 0 and params.min_p <= 0:
        warp = TopKTopP(params.top_k, params.top_p, params.temperature)

        def top_k_sample(logits, streams=None):  # noqa: ANN001, ANN202
            # sample among the k survivors only: same distribution, no 49k-wide softmax
            values, indices = warp.top(logits)
            choice = _multinomial(torch.softmax(values, dim=-1), streams)
            return indices.gather(-1, choice).squeeze(-1)

        return top_k_sample

    from transformers.generation.logits_process import MinPLogitsWarper, TopPLogitsWarper  # heavy: torch, transformers, off the CLI's start

    def full_sample(logits, streams=None):  # noqa: ANN001, ANN202
        logits = logits / params.temperature
        if params.top_p < 1.0:
            logits = TopPLogitsWarper(params.top_p)(None, logits)
        if params.min_p > 0:
            logits = MinPLogitsWarper(params.min_p)(None, logits)
        return _multinomial(torch.softmax(logits, dim=-1), streams).squeeze(-1)

    return full_sample


def _multinomial(probs, streams):  # noqa: ANN001, ANN202 - torch tensors
    """One draw per row [rows, 1]: from the global stream, or row i from `streams[i]`."""
    import torch  # heavy: torch, off the CLI's start

    if streams is None:
        return torch.multinomial(probs, 1)
    return torch.stack([torch.multinomial(row, 1, generator=stream) for row, stream in zip(probs, streams)])


class TopKTopP:
    """Temperature, top-k, then top-p (transformers' order), computed on the k best
    logits only. Returns logits that are -inf outside the kept set, so transformers'
    softmax + multinomial samples exactly the distribution its own warpers would give."""

    def __init__(self, top_k: int, top_p: float, temperature: float) -> None:
        self.top_k = top_k
        self.top_p = top_p
        self.temperature = temperature

    def top(self, scores):  # noqa: ANN001, ANN201 - torch tensors
        """The k best (logit / temperature, index) pairs; those cut by top-p are -inf."""
        import torch  # heavy: torch, off the CLI's start

        k = min(self.top_k, scores.shape[-1])
        values, indices = torch.topk(scores, k, dim=-1)  # sorted, descending
        values = values / self.temperature
        if self.top_p < 1.0:
            probs = torch.softmax(values, dim=-1)
            before = torch.cumsum(probs, dim=-1) - probs  # mass of strictly better tokens
            drop = before >= self.top_p
            drop[..., 0] = False
            values = values.masked_fill(drop, float("-inf"))
        return values, indices

    def __call__(self, input_ids, scores):  # noqa: ANN001, ANN204 - torch tensors
        import torch  # heavy: torch, off the CLI's start

        values, indices = self.top(scores)
        out = torch.full_like(scores, float("-inf"))
        return out.scatter_(-1, indices, values)


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
    """`auto`: bfloat16 on a GPU and on CPUs with native bf16 dot products (AVX512-BF16,
    AMX), where it decodes ~1.5-2x faster than float32; float32 elsewhere."""
    import torch  # heavy: torch, off the CLI's start

    if name == "auto":
        if device.startswith("cuda"):
            return torch.bfloat16
        return torch.bfloat16 if cpu_has_fast_bf16() else torch.float32
    table = {"float32": torch.float32, "fp32": torch.float32, "bfloat16": torch.bfloat16, "bf16": torch.bfloat16,
             "float16": torch.float16, "fp16": torch.float16}
    if name not in table:
        raise CogrError(f"unknown dtype {name!r}; choose one of {sorted(table)} or auto")
    return table[name]


def cpu_has_fast_bf16() -> bool:
    """True when oneDNN reports native bf16 support on this CPU."""
    import torch  # heavy: torch, off the CLI's start

    try:
        return bool(torch.ops.mkldnn._is_mkldnn_bf16_supported()) and cpu_flag("avx512_bf16", "amx_bf16")
    except (AttributeError, RuntimeError):
        return False
