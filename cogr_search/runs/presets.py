"""Named presets of the training configs: documents laid over the configs' defaults.

`demo` is what `cogr-search demo` trains with, sized to finish within 15 minutes on two
CPU cores; `train sft --preset demo` and `train rl --preset demo` train the same way on
any catalog. A preset is a partial config document, so flags and `--config FILE` work
on top of it exactly as on the defaults.
"""

from __future__ import annotations

import json
from collections.abc import Mapping

from cogr_search.errors import InputError

# Phase 1: short SFT of the top 8 blocks at a high rate, 8 base keywords, 10-keyword targets.
_DEMO_PHASE1 = {
    "val_fraction": 0.25,
    "item_keywords": 8,
    "query_top_n": 10,
    "generation": {"batch_size": 32, "max_new_tokens": 64},
    "sft": {"learning_rate": 5e-4, "max_steps": 20, "batch_size": 8, "max_length": 192, "train_layers": 8,
            "save_steps": 10},
}

# Phase 2: one round, 12 GRPO steps a side. LoRA adapters at 10x full fine-tuning's rate: as
# good as the top 8 blocks at 2e-5 on held-out F1, and the one run with a large gain
# (docs/training.md, third session). Rollouts sampled like evaluation, not the paper's
# T 1.0: a 135M model's T 1.0 lists are mostly worse (docs/training.md, "What Phase 2 measured").
_DEMO_SIDE = {"epochs": 1.0, "learning_rate": 2e-4, "max_steps": 12, "num_generations": 4, "prompts_per_step": 2,
              "max_completion_length": 40, "train_layers": 8, "lora": True, "save_steps": 6, "seed": 0,
              "temperature": 0.7, "top_p": 0.8, "top_k": 20}
_DEMO_PHASE2 = {
    "rounds": 1,
    "query": _DEMO_SIDE,
    "item": _DEMO_SIDE,
    "generation": {"batch_size": 32, "max_new_tokens": 64},
}

PHASE1_PRESETS: dict[str, dict] = {"demo": _DEMO_PHASE1}
PHASE2_PRESETS: dict[str, dict] = {"demo": _DEMO_PHASE2}


def preset(presets: dict[str, dict], name: str | None, defaults: dict) -> dict:
    """`defaults` (a config document) with the named preset laid over it (None: as is)."""
    if name is None:
        return defaults
    try:
        chosen = presets[name]
    except KeyError:
        raise InputError(f"unknown preset {name!r}; choose one of {sorted(presets)}") from None
    return _merged(defaults, chosen)


def with_changes(doc: dict, changes: Mapping[str, object]) -> dict:
    """A copy of a config document with dotted fields (`sft.max_steps`) set: what flags,
    presets and callers' changes all do to a config before it is validated."""
    out = json.loads(json.dumps(doc))
    for dotted, value in changes.items():
        *parents, leaf = dotted.split(".")
        node = out
        for part in parents:
            node = node.setdefault(part, {})
        node[leaf] = value
    return out


def _merged(base: dict, over: dict) -> dict:
    out = dict(base)
    for key, value in over.items():
        out[key] = _merged(out.get(key) or {}, value) if isinstance(value, dict) else value
    return out
