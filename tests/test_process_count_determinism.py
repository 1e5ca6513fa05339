"""The same keywords at any process count (issue 35, part 2).

Per-row seeds alone did not make it: a rank's batches held other rows, so other
padding and other arithmetic, and a sampled token flipped (2 processes against 1 gave
equal base keywords for 29 of 96 items). Now every rank forms the same global batches
(`generators/batch_plan.py`) and generates whole ones. Checked here: the plan does not
depend on the rank count or a resume, and, with the real CPU model in bf16 and 1, 2
and 3 processes (gloo, torch's launcher), item and query keyword files are byte for
byte the same; with vLLM's CPU build too, in 1 and 2 processes (each engine against
itself: their kernels differ, so the two engines' files are not compared).
"""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator, Sequence
from pathlib import Path

import pytest

from cogr_search.generators.backend import INIT, Generation, GeneratorBackend, Message, SamplingParams
from cogr_search.generators.batch_generate import GenerationRequest, generate_keyword_file
from cogr_search.generators.batch_plan import pending_batches, plan_batches, rank_batches

pytestmark = pytest.mark.slow

REPO = Path(__file__).resolve().parents[1]


def test_every_rank_count_takes_the_same_batches_and_a_round_restores_the_plan() -> None:
    lengths = [5, 9, 9, 2, 7, 7, 7, 1, 3, 8, 4]
    plan = plan_batches(lengths, 3)
    assert plan[0] == [1, 2, 9] and sorted(i for b in plan for i in b) == list(range(11))  # longest first
    for world in (1, 2, 3, 5):
        shares = [rank_batches(plan, rank, world) for rank in range(world)]
        assert sorted(tuple(b) for s in shares for b in s) == sorted(tuple(b) for b in plan)
        rounds = [shares[r][k] for k in range(len(shares[0])) for r in range(world) if k < len(shares[r])]
        assert rounds == plan  # gathered round by round, by rank: the plan's order


def test_a_batch_a_crash_cut_short_is_planned_whole_again() -> None:
    plan = [[0, 1], [2, 3], [4]]
    ids = ["a", "b", "c", "d", "e"]
    assert pending_batches(plan, ids, {"a", "b", "c"}) == [[2, 3], [4]]
    assert pending_batches(plan, ids, set(ids)) == []


class RecordingBackend(GeneratorBackend):
    """Answers with the prompt's last word and records the batches it is handed."""

    name = "recording"

    def __init__(self, fail_after: int | None = None) -> None:
        super().__init__(Path("."))
        self.fail_after = fail_after
        self.batches: list[list[str]] = []

    def iter_batches(self, conversations: Sequence[Sequence[Message]], params: SamplingParams, batch_size: int = 8,
                     row_seeds: Sequence[int] | None = None) -> Iterator[list[tuple[int, Generation]]]:
        if self.fail_after is not None and len(self.batches) >= self.fail_after:
            raise RuntimeError("simulated crash")
        self.batches.append([c[-1]["content"] for c in conversations])
        yield [(i, Generation(c[-1]["content"].split()[-1], 1, True)) for i, c in enumerate(conversations)]


def test_a_resumed_row_meets_the_batch_it_would_have_met(tmp_path: Path) -> None:
    requests = [GenerationRequest(f"id{i}", [{"role": "user", "content": "x" * (i % 4) + f" w{i}"}])
                for i in range(7)]
    whole = RecordingBackend()
    generate_keyword_file(whole, requests, tmp_path / "whole.jsonl", INIT, batch_size=3, progress=False)
    out = tmp_path / "cut.jsonl"
    with pytest.raises(RuntimeError, match="simulated crash"):
        generate_keyword_file(RecordingBackend(fail_after=1), requests, out, INIT, batch_size=3, progress=False)
    lines = out.read_text().splitlines(keepends=True)
    out.write_text(lines[0])  # a crash that kept one row of the first batch
    resumed = RecordingBackend()
    stats = generate_keyword_file(resumed, requests, out, INIT, batch_size=3, progress=False)
    assert resumed.batches == whole.batches  # the cut batch again, whole, then the rest as planned
    assert stats.generated == 6 and out.read_bytes() == (tmp_path / "whole.jsonl").read_bytes()


# -- the real CPU model in 1, 2 and 3 processes ---------------------------------------

ITEMS, QUERIES, BATCH, TOKENS, SEED = 10, 8, 2, 20, 7


def _worker(out: Path, backend: str) -> None:
    """One rank: the item and query keyword files, as Phase 1 writes them."""
    from cogr_search.data import load_dataset, sample_catalog_path
    from cogr_search.generators.batch_generate import generate_with_model, item_requests, query_requests
    from cogr_search.generators.model_cache import ensure_default_model
    from cogr_search.generators.prompts import load_prompts
    from cogr_search.generators.threads import request_threads
    from cogr_search.ranks import join

    request_threads(int(os.environ.get("COGR_TORCH_THREADS", "1")))
    ranks = join()
    dataset = load_dataset(sample_catalog_path())
    prompts = load_prompts()
    items = [dataset.items[i] for i in sorted(dataset.items)[:ITEMS]]
    queries = [dataset.queries[q] for q in sorted(dataset.queries)[:QUERIES]]
    params = INIT.with_(max_new_tokens=TOKENS, seed=SEED)
    files = {"items": item_requests(prompts, items, 8), "queries": query_requests(prompts, queries, 8)}
    for name, requests in files.items():
        generate_with_model(ensure_default_model(), requests, out / f"{name}.jsonl", params, backend=backend,
                            dtype="auto", batch_size=BATCH, progress=False, ranks=ranks)


def _generate(out: Path, processes: int, backend: str = "transformers") -> dict[str, bytes]:
    env = {**os.environ, "PYTHONPATH": str(REPO), "COGR_TORCH_THREADS": "1", "COGR_RANK_TIMEOUT_S": "300"}
    command = [sys.executable, "-m", "torch.distributed.run", "--nproc-per-node", str(processes),
               "--master-port", str(_free_port()), __file__, str(out), backend]
    done = subprocess.run(command, env=env, capture_output=True, text=True, timeout=900)
    assert done.returncode == 0, done.stderr[-4000:]
    return {name: (out / f"{name}.jsonl").read_bytes() for name in ("items", "queries")}


def _free_port() -> int:
    import socket

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@pytest.mark.model
def test_one_two_and_three_processes_write_the_same_keyword_files_with_the_cpu_model(tmp_path: Path) -> None:
    from cogr_search.runs.keyword_files import read_keyword_file

    files = {n: _generate(tmp_path / f"p{n}", n) for n in (1, 2, 3)}
    for name in ("items", "queries"):
        assert files[2][name] == files[1][name], name
        assert files[3][name] == files[1][name], name
    rows = read_keyword_file(tmp_path / "p1" / "items.jsonl")
    assert len(rows) == ITEMS and len({tuple(k) for k in rows.values()}) > ITEMS // 2  # real, varied keywords


@pytest.mark.model
def test_vllm_writes_the_same_keyword_files_in_one_and_two_processes_with_the_cpu_model(tmp_path: Path) -> None:
    """vLLM against itself (issue 35: each engine at any process count): every rank runs
    its own engine on the plan's whole batches, each row with its own seed."""
    from cogr_search.runs.keyword_files import read_keyword_file
    from tests.vllm_support import REASON

    assert REASON is None, f"vLLM is part of the set-up (make setup) but cannot run: {REASON}"
    files = {n: _generate(tmp_path / f"p{n}", n, "vllm") for n in (1, 2)}
    for name in ("items", "queries"):
        assert files[2][name] == files[1][name], name
    rows = read_keyword_file(tmp_path / "p1" / "items.jsonl")
    assert len(rows) == ITEMS and len({tuple(k) for k in rows.values()}) > ITEMS // 2


if __name__ == "__main__":
    _worker(Path(sys.argv[1]), sys.argv[2])
