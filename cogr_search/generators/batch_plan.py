"""Which requests are generated together: global batches that do not depend on the
number of processes, the shard a rank holds, or where a resume starts.

Why batches must be fixed: a row's keywords depend on the batch it is generated in, not
only on its own seed. Its batch sets its padding, the shared prompt head and the shapes
of every matrix product; a different shape sums in another order, a logit moves in its
last bits, and a sampled token can flip (issue 35: with per-row seeds alone, 2 processes
against 1 gave equal base keywords for 29 of 96 items). So every rank forms the same
batches from the whole request list by one rule, longest prompt first, and takes whole
batches. Each row then meets the same batch, in the same order, whatever N is.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Sequence

Batch = list[int]
"""Positions in the request list, in the order the engine is handed them."""


def plan_batches(lengths: Sequence[int], batch_size: int) -> list[Batch]:
    """Every position in batches of `batch_size`: longest first, ties by position (the
    transformers engine pads each batch to its longest prompt, so sorting pads little).
    A function of the lengths and the size alone: the same on every rank."""
    order = sorted(range(len(lengths)), key=lambda i: (-lengths[i], i))
    step = max(1, batch_size)
    return [order[start : start + step] for start in range(0, len(order), step)]


def pending_batches(plan: Sequence[Batch], ids: Sequence[str], done: Collection[str]) -> list[Batch]:
    """The planned batches that still hold a missing id, each whole: a batch a crash cut
    short is generated again as it was planned (its rows already written are not
    rewritten), so a resumed row meets the same batch as in an uninterrupted run."""
    return [batch for batch in plan if any(ids[i] not in done for i in batch)]


def rank_batches(batches: Sequence[Batch], rank: int, world: int) -> list[Batch]:
    """Rank `rank`'s share: batches rank, rank + N, ... In round k every rank holds its
    k-th batch, so gathering a round by rank restores the plan's order."""
    return list(batches[rank::world])


def prompt_length(engine: object) -> Callable[[Sequence[dict]], int]:
    """How a conversation's length is measured for the plan: the engine's own token count
    where it renders prompts with a tokenizer (both engines do), else characters. Only the
    order of the batches depends on it, never what a row samples given its batch."""
    if getattr(engine, "tokenizer", None) is not None:
        return lambda conversation: len(engine.render(conversation))  # type: ignore[attr-defined]
    return lambda conversation: sum(len(str(m.get("content", ""))) for m in conversation)
