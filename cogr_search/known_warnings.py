"""The library warnings a cogr-search command does not show: each one known, harmless, and
raised where the project cannot change the call. The one place such warnings are filtered.

A warning is matched by its category and its exact text (anchored at both ends), so any
other warning, or a new wording of one of these, still reaches the terminal. Before a
warning joins this list, the call that raises it is fixed in the project's own code
where it can be.
"""

from __future__ import annotations

import re
import warnings
from dataclasses import dataclass


@dataclass(frozen=True)
class KnownWarning:
    category: type[Warning]
    text: str
    why: str  # where it comes from, and why it is harmless here


KNOWN_WARNINGS = (
    KnownWarning(
        FutureWarning,
        "`is_gradient_checkpointing` is deprecated and will be removed in v6. Use `is_activation_checkpointing` "
        "instead.",
        "transformers 5 renamed the property; trl 1.16 reads the old name around every GRPO rollout "
        "(trl.models.utils.unwrap_model_for_generation, disable_gradient_checkpointing) and peft 0.21 in "
        "PeftModel.__init__ (every LoRA run). The project's own code never reads it; the old name keeps "
        "working until transformers 6, which these pins do not install.",
    ),
)


def filter_known_warnings() -> None:
    """Hide the `KNOWN_WARNINGS` for this process (a command's start calls this once)."""
    for known in KNOWN_WARNINGS:
        warnings.filterwarnings("ignore", message=re.escape(known.text) + r"\Z", category=known.category)
