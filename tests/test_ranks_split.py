"""How work splits over data-parallel ranks, without starting any: the per-device batch
that keeps the effective batch, the shards of a request list, and per-row sampling
seeds that make a row's keywords independent of the batch it lands in (what lets the
keyword files of an N-process run equal the single-process ones; the processes
themselves are tested in test_training_ranks.py)."""

from __future__ import annotations

from pathlib import Path

import pytest

from cogr_search.errors import InputError
from cogr_search.generators.backend import INIT
from cogr_search.generators.batch_generate import row_seed
from cogr_search.training.launch import _root_failure, argv_without_processes
from cogr_search.ranks import Ranks, per_device_batch


@pytest.mark.parametrize(("batch", "accumulation", "world", "expected"), [
    (8, 1, 1, (8, 1)),
    (8, 1, 2, (4, 1)),
    (6, 4, 4, (6, 1)),  # the batch does not divide: the accumulation does
    (512, 8, 8, (64, 8)),
])
def test_per_device_batch_keeps_the_effective_batch(batch: int, accumulation: int, world: int,
                                                    expected: tuple[int, int]) -> None:
    per_device, steps = per_device_batch(batch, accumulation, world, "x")
    assert (per_device, steps) == expected
    assert per_device * steps * world == batch * accumulation


def test_a_batch_that_cannot_be_split_is_refused_naming_the_fields() -> None:
    with pytest.raises(InputError, match="GRPO of query .* multiple of 4"):
        per_device_batch(6, 3, 4, "GRPO of query (prompts_per_step x num_generations, gradient_accumulation_steps)")


def test_shards_cover_every_row_once_and_interleave_back_in_order() -> None:
    rows = [f"i{k}" for k in range(11)]
    shards = [Ranks(rank, 3).shard(rows) for rank in range(3)]
    assert sorted(r for shard in shards for r in shard) == sorted(rows)
    assert max(map(len, shards)) - min(map(len, shards)) <= 1
    woven = [shards[k % 3][k // 3] for k in range(len(rows))]
    assert woven == rows


def test_row_seeds_depend_on_the_run_seed_and_the_id_only() -> None:
    assert row_seed(0, "hg-1") == row_seed(0, "hg-1")
    assert len({row_seed(0, "hg-1"), row_seed(1, "hg-1"), row_seed(0, "hg-2")}) == 3
    assert 0 <= row_seed(7, "x") < 2**63


def test_argv_loses_only_the_processes_flag() -> None:
    argv = ["train", "rl", "--run", "r", "--processes", "2", "--rounds", "1", "--processes=4", "--quiet"]
    assert argv_without_processes(argv) == ["train", "rl", "--run", "r", "--rounds", "1", "--quiet"]


def test_the_rank_that_failed_is_named_not_the_one_the_launcher_stopped() -> None:
    from torch.distributed.elastic.multiprocessing.errors import ProcessFailure

    def failure(rank: int, exitcode: int, timestamp: int) -> ProcessFailure:
        record = ProcessFailure(local_rank=rank, pid=100 + rank, exitcode=exitcode, error_file="")
        record.timestamp = timestamp
        return record

    stopped, crashed = failure(0, -15, 10), failure(1, 1, 11)
    assert _root_failure({0: stopped, 1: crashed})[0] == 1
    assert _root_failure({0: failure(0, -9, 12), 1: crashed})[0] == 1  # the earlier of two real failures


@pytest.mark.model
def test_a_seeded_row_samples_the_same_keywords_in_any_batch(tiny_model: Path) -> None:
    from cogr_search.generators.hf_backend import HFBackend

    conversations = [[{"role": "user", "content": f"Keywords for item {word}"}]
                     for word in ("oak table", "lamp", "blue velvet sofa with cushions", "rug")]
    seeds = [row_seed(0, str(k)) for k in range(len(conversations))]
    params = INIT.with_(max_new_tokens=12, seed=0)
    backend = HFBackend(tiny_model, dtype="float32")
    try:
        alone = [g for k in range(4) for _, g in next(backend.iter_batches([conversations[k]], params, 1,
                                                                           row_seeds=[seeds[k]]))]
        batched = [None] * 4
        for batch in backend.iter_batches(conversations, params, batch_size=4, row_seeds=seeds):
            for index, generation in batch:
                batched[index] = generation
        pairs = [None] * 4
        for batch in backend.iter_batches(conversations, params, batch_size=2, row_seeds=seeds):
            for index, generation in batch:
                pairs[index] = generation
    finally:
        backend.close()
    assert [g.text for g in batched] == [g.text for g in alone] == [g.text for g in pairs]
    assert len({g.text for g in batched}) > 1  # not one repeated string
