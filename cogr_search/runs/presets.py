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

# Bulk generation capped at 48 tokens: the keyword lists the demo keeps are shorter (p90 22-29
# tokens); what runs past 48 is mostly the raw model repeating its keywords. Against a
# 64-token cap, on the sample catalog's first 64 items: base keywords 0.78-0.91x the time.
_DEMO_GENERATION = {"batch_size": 32, "max_new_tokens": 48}

# Phase 1: short SFT of the top 8 blocks at a high rate, 8 base keywords, 10-keyword targets.
_DEMO_PHASE1 = {
    "val_fraction": 0.25,
    "item_keywords": 8,
    "query_top_n": 10,
    "generation": _DEMO_GENERATION,
    "sft": {"learning_rate": 5e-4, "max_steps": 20, "batch_size": 8, "max_length": 192, "train_layers": 8,
            "save_steps": 10},
}

# Phase 2: one round, 8 GRPO steps a side (12 until 2026-12-03: the demo outgrew its 15
# minutes once it distilled students; 12 steps moved held-out F1 by -0.004 to +0.060, within
# one sample's noise, so fewer steps show least; `--rl-steps 48` is where RL shows). LoRA
# adapters at 10x full fine-tuning's rate: as good as the top 8 blocks at 2e-5 on held-out
# F1, and the one run with a large gain (docs/training.md, third session). Rollouts sampled
# like evaluation, not the paper's T 1.0: a 135M model's T 1.0 lists are mostly worse
# (docs/training.md, "What Phase 2 measured").
_DEMO_SIDE = {"epochs": 1.0, "learning_rate": 2e-4, "max_steps": 8, "num_generations": 4, "prompts_per_step": 2,
              "max_completion_length": 40, "train_layers": 8, "lora": True, "save_steps": 4, "seed": 0,
              "temperature": 0.7, "top_p": 0.8, "top_k": 20}
_DEMO_PHASE2 = {
    "rounds": 1,
    "query": _DEMO_SIDE,
    "item": _DEMO_SIDE,
    "generation": _DEMO_GENERATION,
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
