"""Whether a GRPO phase could have learnt anything, from its own reward figures.

GRPO learns from reward differences inside a group of rollouts of one prompt. A group
whose rollouts all earn the same reward has zero advantage, so it contributes no
gradient; a phase where (almost) every group is like that ends with the weights it
started from. On a small CPU model this is common (every rollout scores F1 0), and it
looks exactly like a phase that ran and learnt: this module turns it into one line."""

from __future__ import annotations

from collections.abc import Mapping

ZERO_STD_LIMIT = 0.9
"""Above this share of equal-reward groups a phase is reported as not learning."""

REMEDIES = (
    "search results in the query prompt (train sft --query-context bm25:5), more GRPO steps "
    "(--query-steps/--item-steps), a higher rollout temperature (--temperature 1.2), "
    "or a larger model on a GPU"
)


def learnt_nothing(figures: Mapping) -> bool:
    """True when the phase's rewards held no signal: mean reward 0, or more than
    `ZERO_STD_LIMIT` of its groups with equal rewards (works on phase metrics entries
    recorded before the note existed)."""
    mean_reward = figures.get("mean_reward")
    share = figures.get("zero_std_share")
    return (mean_reward is not None and mean_reward == 0) or (share is not None and share > ZERO_STD_LIMIT)


def no_learning_note(side: str, grpo: Mapping, groups_per_step: int) -> str | None:
    """The one-line warning for a GRPO phase whose rewards gave no signal, else None.

    `grpo` is the phase's figures (`GRPOResult.as_dict()`: `steps`, `mean_reward`,
    `zero_std_share`); `groups_per_step` is how many prompt groups one optimizer step
    scores, so that the share can be told as "N of M groups"."""
    if not learnt_nothing(grpo):
        return None
    mean_reward = grpo.get("mean_reward")
    share = grpo.get("zero_std_share")
    steps = int(grpo.get("steps") or 0)
    groups = steps * groups_per_step
    flat = groups if share is None else round(share * groups)
    reward = "-" if mean_reward is None else f"{mean_reward:.4f}"
    return (
        f"the {side} generator saw no reward differences in {flat} of {groups} groups "
        f"(mean reward {reward}): nothing was learnt. What usually helps: {REMEDIES}."
    )
