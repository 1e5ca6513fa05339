"""Configuration of Phase 1, in trl's style: a config object that fully describes the
work, handed to the code that does it, and saved into the run as `config.json`.

Why a saved config: resuming must continue the *same* run. A re-run with different
settings that change results is refused with the differing fields named; settings that
only change speed (generation batch size, backend) may differ.
"""

from __future__ import annotations

from typing import Literal

from pydantic import AliasChoices, BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

from cogr_search.errors import InputError
from cogr_search.keywords import DEFAULT_K_MAX, NORMALIZATION_VERSION
from cogr_search.runs.query_context import context_size

LORA_LAYERS_HELP = "With lora: adapters in the top N decoder blocks only (0: every block); a CPU cap like train_layers."
PRECISION_HELP = (
    "Training arithmetic. auto: bf16 mixed precision on a GPU and on CPUs with native bf16 dot products "
    "(float32 master weights; the demo's SFT steps took 0.64-0.85x their float32 time, benchmarks/sft.md), "
    "else float32."
)
Precision = Literal["auto", "bf16", "fp32"]
# Fields a resumed run may change: they affect speed (and, like a dtype, the last bits of
# the arithmetic), not what the run is.
RESUMABLE_CHANGES = frozenset(
    {"generation.batch_size", "generation.backend", "generation.dtype", "context_index", "sft.precision"}
)


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class _Document(_Strict):
    """A config saved into the run: JSON out, validated JSON in (errors name the field)."""

    def to_json(self) -> dict:
        return self.model_dump(mode="json")

    @classmethod
    def from_json(cls, data: dict, origin: str = "config.json"):  # noqa: ANN206 - the subclass
        try:
            return cls.model_validate(data)
        except ValidationError as err:
            first = err.errors()[0]
            field = ".".join(str(p) for p in first["loc"])
            raise InputError(f"{origin}: field {field}: {first['msg']}") from err


class GenerationConfig(_Strict):
    """Bulk generation (base keywords, round-0 keyword files)."""

    backend: Literal["auto", "transformers", "vllm"] = "auto"
    batch_size: int = Field(default=32, ge=1, description="Prompts per batch (32 is fastest on 2 CPU cores).")
    max_new_tokens: int = Field(default=96, ge=8, description="Cap per completion; a 10-keyword list takes ~40-60.")
    dtype: str = Field(default="auto", description="auto: bfloat16 on GPU and on CPUs with native bf16, else float32.")
    seed: int = 0


class SFTConfig(_Strict):
    """One supervised fine-tuning pass (used for both generators)."""

    learning_rate: float = Field(default=1e-4, gt=0)
    epochs: float = Field(default=3.0, gt=0)
    max_steps: int = Field(default=-1, description="Stop after this many optimizer steps (-1: run all epochs).")
    batch_size: int = Field(default=8, ge=1)
    gradient_accumulation_steps: int = Field(default=1, ge=1)
    max_length: int = Field(default=256, ge=16, description="Tokens per example (prompt + completion).")
    warmup_ratio: float = Field(default=0.03, ge=0, lt=1)
    lr_scheduler: str = "linear"
    weight_decay: float = 0.0
    lora: bool = Field(default=False, description="Train LoRA adapters (merged on save) instead of all weights.")
    lora_r: int = Field(default=16, ge=1)
    lora_alpha: int = Field(default=32, ge=1)
    lora_dropout: float = Field(default=0.05, ge=0, lt=1)
    lora_layers: int = Field(default=0, ge=0, description=LORA_LAYERS_HELP)
    activation_checkpointing: bool = Field(default=False, description="Saves memory, costs ~30% time.")
    train_layers: int = Field(default=0, ge=0, description="Train only the top N decoder blocks (0: all); a CPU cap.")
    precision: Precision = Field(default="auto", description=PRECISION_HELP)
    save_steps: int = Field(default=200, ge=1, description="Trainer checkpoint interval, for resuming mid-SFT.")
    logging_steps: int = Field(default=10, ge=1)
    seed: int = 0


class Phase1Config(_Document):
    """Paper Algorithm 1 with the caps that make it fit a CPU."""

    data: str = Field(description="Dataset directory (BEIR or WANDS layout).")
    relevance_threshold: float | None = None
    model: str = Field(description="Base model folder (the converted default model or --model PATH).")
    prompts: str = "default"
    prompts_version: str = ""
    item_keywords: int = Field(default=10, ge=1, description="M: keywords per item from the base model.")
    query_top_n: int = Field(default=15, ge=1, description="N: pooled keywords per training query.")
    k_max: int = Field(default=DEFAULT_K_MAX, ge=1, description="Keyword-set budget: larger sets are oversized.")
    normalization: str = Field(
        default=NORMALIZATION_VERSION, description="Version of keyword normalization the run trained with."
    )
    max_items: int | None = Field(default=None, ge=1)
    items_sample: int | None = Field(
        default=None, ge=1,
        description="Train on a seeded sample of N catalog items holding every judged item of the training queries.",
    )
    max_queries: int | None = Field(default=None, ge=1)
    val_fraction: float = Field(default=0.1, ge=0, lt=1, description="Queries held out (0: train on all).")
    seed: int = 0
    few_shot_init: bool = Field(default=True, description="Show the template's examples to the base model.")
    write_keyword_files: bool = Field(default=True, description="Generate round-0 item/query keyword files.")
    query_context: str | None = Field(
        default=None,
        description="bm25:K: the query prompt shows the titles of the query's top-K BM25 hits (paper Table 4).",
    )
    context_index: str | None = Field(
        default=None, description="The catalog index the search results come from (needed with query_context)."
    )
    generation: GenerationConfig = GenerationConfig()
    sft: SFTConfig = SFTConfig()

    @model_validator(mode="after")
    def _one_item_cap(self) -> Phase1Config:
        if self.items_sample is not None and self.max_items is not None:
            raise ValueError("items_sample (--items) and max_items (--max-items) both cap the items: give one")
        return self

    @field_validator("query_context")
    @classmethod
    def _context_spec(cls, value: str | None) -> str | None:
        try:
            return None if context_size(value) is None else value
        except InputError as err:
            raise ValueError(str(err)) from err



class GRPOSideConfig(_Strict):
    """GRPO for one generator (trl `GRPOTrainer`). Defaults are the paper's Table 6 GPU
    values where it gives them (lr 1e-6, 8 rollouts, no KL); CPU runs cap the steps."""

    learning_rate: float = Field(default=1e-6, gt=0, description="Paper: 1e-6 full fine-tuning; LoRA wants ~10x.")
    epochs: float = Field(default=1.0, gt=0, description="Passes over the side's prompts (paper: query 10, item 5).")
    max_steps: int = Field(default=-1, description="Stop after this many optimizer steps (-1: run all epochs).")
    num_generations: int = Field(default=8, ge=2, description="Rollouts per prompt (a GRPO group).")
    prompts_per_step: int = Field(default=4, ge=1, description="Prompts per device step (x num_generations completions).")
    gradient_accumulation_steps: int = Field(default=1, ge=1)
    max_completion_length: int = Field(default=96, ge=8, description="Tokens per rollout (paper: 512).")
    temperature: float = Field(default=1.0, gt=0, description="Rollout sampling (paper Table 5: 1.0, no top-p/top-k cut).")
    top_p: float = Field(default=1.0, gt=0, le=1, description="Rollout nucleus cut (paper: 1.0, none).")
    top_k: int = Field(default=0, ge=0, description="Rollout top-k cut (paper: 0, none).")
    loss_type: str = "dapo"
    scale_rewards: Literal["group", "batch", "none"] = Field(
        default="batch", description="batch: one std for the whole batch, so tiny in-group F1 differences are not blown up."
    )
    lora: bool = False
    lora_r: int = Field(default=16, ge=1)
    lora_alpha: int = Field(default=32, ge=1)
    lora_dropout: float = Field(default=0.05, ge=0, lt=1)
    lora_layers: int = Field(default=0, ge=0, description=LORA_LAYERS_HELP)
    train_layers: int = Field(default=0, ge=0, description="Train only the top N decoder blocks (0: all); a CPU cap.")
    precision: Precision = Field(default="auto", description=PRECISION_HELP)
    save_steps: int = Field(default=50, ge=1, description="Trainer checkpoint interval, for resuming mid-phase.")
    screen: bool = Field(
        default=False,
        description="Roll every prompt out once before training and keep those whose rewards vary (`screening.py`).",
    )
    seed: int = 0


class Phase2Config(_Document):
    """Paper section 2.3: R rounds of query-side then item-side GRPO against frozen indexes."""

    rounds: int = Field(default=5, ge=1, description="Rounds to have in total (a later call may raise it).")
    query: GRPOSideConfig = GRPOSideConfig(epochs=10.0)
    item: GRPOSideConfig = GRPOSideConfig(epochs=5.0)
    reward_beta: float = Field(
        default=1.0, gt=0, validation_alias=AliasChoices("reward_beta", "beta"),
        description="F-beta in both rewards (1: F1; > 1 weighs recall); not GRPO's KL beta (0 here). "
        "Configs saved before it was renamed call it `beta`.",
    )
    item_reward: Literal["marginal", "transposed"] = Field(
        default="marginal", description="marginal: Eq. 2.3; transposed: item-centric F over Q_ret(i) (Table 3)."
    )
    diversity_weight: float = Field(
        default=0.0, ge=0,
        description="R4T's diversity term: query reward F_beta + w * Vendi score of the keyword set's MiniLM "
        "embeddings / set size (0: off; needs the dense extra).",
    )
    max_queries: int | None = Field(default=None, ge=1, description="Training queries used for query-side GRPO.")
    max_items: int | None = Field(default=None, ge=1, description="Items used for item-side GRPO.")
    eval_samples: int = Field(
        default=1, ge=1,
        description="Query keyword samples (seeds) per phase for the shadow metrics: their mean and spread "
                    "show how much of a change is sampling noise. Sample 0 is the round's keyword file.",
    )
    item_samples: int = Field(
        default=1, ge=1,
        description="Item index samples (seeds) per phase for the shadow metrics: on the sample catalog one "
                    "index sample moves validation F1 by up to 0.06, as much as a phase does.",
    )
    generation: GenerationConfig = GenerationConfig()



# Fields a resumed Phase 2 may change: speed, measurement, or more rounds after the ones done.
RL_RESUMABLE_CHANGES = RESUMABLE_CHANGES | {"rounds", "eval_samples", "item_samples", "query.precision", "item.precision"}


def config_differences(old: dict, new: dict, prefix: str = "") -> list[str]:
    """Dotted names of fields whose values differ between two config documents."""
    diffs = []
    for key in sorted(set(old) | set(new)):
        name = f"{prefix}{key}"
        a, b = old.get(key), new.get(key)
        if isinstance(a, dict) and isinstance(b, dict):
            diffs.extend(config_differences(a, b, prefix=f"{name}."))
        elif a != b:
            diffs.append(name)
    return diffs
