"""One interface over the generation engines, and the paper's decoding presets.

Callers hand over chat conversations and sampling parameters and get text back; which
engine runs them (transformers or vLLM, on CPU or GPU) is chosen once by
`backend_choice.load_backend`. torch and vLLM are imported only when an engine loads a
model, so importing this module costs nothing and a host without vLLM never touches it.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable, Iterator, Sequence
from dataclasses import asdict, dataclass, replace
from pathlib import Path
from typing import Any

from cogr_search.errors import CogrError, InputError

Message = dict[str, str]
ProgressCallback = Callable[[int], None]


@dataclass(frozen=True)
class SamplingParams:
    """Decoding settings (paper Table 5). `top_k=-1` means no top-k cut, as in vLLM."""

    temperature: float = 0.7
    top_p: float = 0.8
    top_k: int = 20
    min_p: float = 0.0
    max_new_tokens: int = 96
    greedy: bool = False
    seed: int | None = None

    def with_(self, **changes: object) -> SamplingParams:
        return replace(self, **changes)

    def as_dict(self) -> dict:
        return asdict(self)


# Table 5: RL rollouts sample without any cut; initialisation, evaluation and index
# construction use Qwen's recommended settings. Greedy is for benchmarks and debugging.
ROLLOUT = SamplingParams(temperature=1.0, top_p=1.0, top_k=-1, min_p=0.0)
INIT = SamplingParams(temperature=0.7, top_p=0.8, top_k=20, min_p=0.0)
EVAL = INIT
INDEX = INIT
GREEDY = SamplingParams(temperature=0.0, top_p=1.0, top_k=-1, min_p=0.0, greedy=True)
PRESETS: dict[str, SamplingParams] = {
    "rollout": ROLLOUT,
    "init": INIT,
    "eval": EVAL,
    "index": INDEX,
    "greedy": GREEDY,
}


def preset(name: str, **changes: object) -> SamplingParams:
    """A named preset (`rollout`, `init`, `eval`, `index`, `greedy`) with overrides."""
    try:
        base = PRESETS[name]
    except KeyError:
        raise InputError(f"unknown sampling preset {name!r}; choose one of {sorted(PRESETS)}") from None
    return base.with_(**changes) if changes else base


@dataclass(frozen=True)
class Generation:
    """One completion. `n_tokens` counts the tokens the model actually produced (up to
    and including its end token), never the padding of a finished row in a batch."""

    text: str
    n_tokens: int
    finished: bool


class GeneratorBackend(ABC):
    """A loaded model that turns chat conversations into completions, in batches."""

    name: str = "abstract"

    tokenizer: Any = None
    """The model's Hugging Face tokenizer: both engines render prompts with it (None: an
    engine that renders no prompts, e.g. a test's)."""

    def __init__(self, model_path: Path) -> None:
        self.model_path = Path(model_path)

    def render(self, conversation: Sequence[Message]) -> list[int]:
        """Token ids of a conversation through the model's chat template, ready for the
        assistant's turn. One rendering for every engine, so vLLM and transformers see
        byte-identical inputs and never add a second BOS token."""
        ids = self.tokenizer.apply_chat_template(list(conversation), add_generation_prompt=True, tokenize=True)
        if hasattr(ids, "keys"):  # some tokenizers return a BatchEncoding
            ids = ids["input_ids"]
        return list(ids)

    @abstractmethod
    def iter_batches(
        self,
        conversations: Sequence[Sequence[Message]],
        params: SamplingParams,
        batch_size: int = 8,
        row_seeds: Sequence[int] | None = None,
    ) -> Iterator[list[tuple[int, Generation]]]:
        """Yield each finished batch as (input index, completion) pairs, as soon as it is
        done, so callers can write it out before the next batch starts. The engine may
        reorder inputs (e.g. by prompt length) to pad less. `row_seeds` (one per
        conversation) make each row's sampling independent of its batch."""

    def generate(
        self,
        conversations: Sequence[Sequence[Message]],
        params: SamplingParams,
        batch_size: int = 8,
        on_batch: ProgressCallback | None = None,
    ) -> list[Generation]:
        """Completions in input order; `on_batch(n)` is called after each batch of n."""
        results: list[Generation | None] = [None] * len(conversations)
        for batch in self.iter_batches(conversations, params, batch_size):
            for index, generation in batch:
                results[index] = generation
            if on_batch is not None:
                on_batch(len(batch))
        missing = [i for i, g in enumerate(results) if g is None]
        if missing:
            raise CogrError(f"{self.name} backend returned no completion for {len(missing)} prompts")
        return [g for g in results if g is not None]

    def close(self) -> None:
        """Release the model's memory (engines holding a GPU must override this)."""

    def __enter__(self) -> GeneratorBackend:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def gpu_available() -> bool:
    try:
        import torch  # heavy: torch, off the CLI's start
    except ImportError:
        return False
    return bool(torch.cuda.is_available())
