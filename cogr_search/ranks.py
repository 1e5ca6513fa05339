"""Where this process stands among the data-parallel training processes.

Launched by `accelerate launch --num_processes N`, `torchrun --nproc-per-node N` or
`--processes N` (`training.launch`), every process runs the same command; the launcher
sets RANK / WORLD_SIZE / LOCAL_RANK. Why a module of its own: Phase 1 and Phase 2 must
know who writes (rank 0 alone owns the run directory, the manifest and every keyword
file, and alone syncs), how bulk generation is split (by position in the id-ordered
request list) and how a trainer's per-device batch keeps the single-process run's
effective batch. The process group itself is accelerate's (`PartialState`): the same
one trl's trainers use, gloo on CPU, NCCL on GPUs.
"""

from __future__ import annotations

import contextlib
import functools
import os
from contextlib import AbstractContextManager
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import TypeVar

from cogr_search.errors import CogrError, InputError
from datetime import timedelta
from cogr_search.settings import load_settings

T = TypeVar("T")


@dataclass(frozen=True)
class Ranks:
    """This process's rank and the number of processes (1: a plain single-process run)."""

    rank: int = 0
    world: int = 1

    @property
    def is_main(self) -> bool:
        return self.rank == 0

    @property
    def distributed(self) -> bool:
        return self.world > 1

    def shard(self, rows: Sequence[T]) -> list[T]:
        """This rank's share of `rows`: positions rank, rank + N, ... (sizes differ by at
        most one, and gathering them back by position restores the order)."""
        return list(rows[self.rank :: self.world])

    def main_only(self, manager: AbstractContextManager[T]) -> AbstractContextManager[T | None]:
        """`manager` on rank 0 (the run's lock: one holder, as with one process), a
        no-op elsewhere."""
        return manager if self.is_main else contextlib.nullcontext()

    def barrier(self) -> None:
        """Wait for every rank (a no-op for one process)."""
        if self.distributed:
            with self._peers():
                _state().wait_for_everyone()

    def gather(self, value: T) -> list[T]:
        """Every rank's `value`, by rank, on every rank (picklable objects)."""
        if not self.distributed:
            return [value]
        import torch.distributed as dist  # heavy: torch, off the CLI's start

        _state()
        out: list = [None] * self.world
        with self._peers():
            dist.all_gather_object(out, value)
        return out

    def broadcast(self, value: T) -> T:
        """Rank 0's `value` on every rank."""
        if not self.distributed:
            return value
        import torch.distributed as dist  # heavy: torch, off the CLI's start

        _state()
        box = [value]
        with self._peers():
            dist.broadcast_object_list(box, src=0)
        return box[0]

    @contextlib.contextmanager
    def _peers(self) -> Iterator[None]:
        """A collective that fails because another rank is gone, as one line: the
        launcher names the rank that failed first; this one only followed."""
        try:
            yield
        except RuntimeError as err:
            first = (str(err).splitlines() or [type(err).__name__])[0]
            raise CogrError(f"rank {self.rank}: another rank stopped ({first[:200]})") from err


def current() -> Ranks:
    """The ranks the launcher set up (none set: one process); the process group is
    joined on first use of a collective."""
    world = int(os.environ.get("WORLD_SIZE", "1") or 1)
    rank = int(os.environ.get("RANK", "0") or 0)
    return Ranks(rank=rank, world=world)


@functools.cache
def _state():  # noqa: ANN202 - accelerate PartialState
    """Join the process group once, through accelerate (what trl's trainers join too:
    the first PartialState sets the group, so the timeout below is the run's)."""
    import torch  # heavy: torch, off the CLI's start
    from accelerate import PartialState  # heavy: torch, accelerate, off the CLI's start


    timeout = load_settings().rank_timeout_s  # COGR_RANK_TIMEOUT_S
    return PartialState(cpu=not torch.cuda.is_available(), timeout=timedelta(seconds=timeout))


def join() -> Ranks:
    """`current()`, with the process group joined when there are several processes.

    Why early: a rank that fails before its first collective would otherwise leave the
    others waiting at the rendezvous rather than at a barrier the launcher watches."""
    ranks = current()
    if ranks.distributed:
        _state()
    return ranks


def per_device_batch(batch: int, accumulation: int, world: int, what: str) -> tuple[int, int]:
    """(per-device batch, gradient accumulation) over `world` processes with the same
    effective batch as (`batch`, `accumulation`) in one process.

    The batch is split first (same number of optimizer steps, less work per device);
    when it does not divide, the accumulation is. Neither dividing is refused: a
    silently larger effective batch would change what the run learns."""
    if world <= 1:
        return batch, accumulation
    if batch % world == 0:
        return batch // world, accumulation
    if accumulation % world == 0:
        return batch, accumulation // world
    raise InputError(
        f"{what}: a batch of {batch} with gradient accumulation {accumulation} cannot be split over {world} "
        f"processes with the same effective batch; make the batch or the accumulation a multiple of {world}"
    )


def rank0_only(*args: object) -> dict:
    """Stands in for a step that rank 0 alone runs (a sync): the other ranks need the step
    in their list, to wait at its barrier, but never call it."""
    raise AssertionError("a rank-0-only step ran on another rank")
