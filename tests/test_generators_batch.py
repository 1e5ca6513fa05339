"""Resumable batch generation into keyword files.

The engine here is a small deterministic backend (a text function, not a model): what is
under test is the file handling around it, which must be exact whatever the engine.
The real engines are exercised in test_generators_hf.py and test_phase1_e2e.py.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from pathlib import Path

import pytest

from cogr_search.generators.backend import INIT, Generation, GeneratorBackend, Message, SamplingParams
from cogr_search.generators.batch_generate import (
    GenerationRequest,
    drop_partial_tail,
    generate_keyword_file,
    item_requests,
)
from cogr_search.generators.prompts import load_prompts
from cogr_search.runs.keyword_files import read_keyword_file


class EchoBackend(GeneratorBackend):
    """Answers "<last word of the prompt>, kw <n>"; can fail after some batches."""

    name = "echo"

    def __init__(self, fail_after_batches: int | None = None) -> None:
        super().__init__(Path("."))
        self.fail_after = fail_after_batches
        self.batches: list[int] = []

    def iter_batches(
        self,
        conversations: Sequence[Sequence[Message]],
        params: SamplingParams,
        batch_size: int = 8,
        row_seeds: Sequence[int] | None = None,
    ) -> Iterator[list[tuple[int, Generation]]]:
        for start in range(0, len(conversations), batch_size):
            if self.fail_after is not None and len(self.batches) >= self.fail_after:
                raise RuntimeError("simulated crash")
            rows = list(range(start, min(start + batch_size, len(conversations))))
            self.batches.append(len(rows))
            yield [(i, self._answer(conversations[i])) for i in rows]

    @staticmethod
    def _answer(conversation: Sequence[Message]) -> Generation:
        word = conversation[-1]["content"].split()[-1]
        text = "" if word == "nothing" else f"1. {word}\n2. kw {word}\n3. {word}"
        return Generation(text=text, n_tokens=5, finished=True)


def _requests(n: int) -> list[GenerationRequest]:
    return [GenerationRequest(f"id{i}", [{"role": "user", "content": f"item w{i}"}]) for i in range(n)]


def test_rows_are_parsed_deduplicated_and_truncated(tmp_path: Path) -> None:
    out = tmp_path / "kw.jsonl"
    stats = generate_keyword_file(EchoBackend(), _requests(3), out, INIT, batch_size=2, keep=1, progress=False)
    assert read_keyword_file(out) == {"id0": ["w0"], "id1": ["w1"], "id2": ["w2"]}
    assert (stats.generated, stats.resumed, stats.tokens, stats.empty) == (3, 0, 15, 0)


def test_a_crash_loses_only_the_batch_in_flight_and_a_rerun_finishes(tmp_path: Path) -> None:
    out = tmp_path / "kw.jsonl"
    crashing = EchoBackend(fail_after_batches=2)
    with pytest.raises(RuntimeError, match="simulated crash"):
        generate_keyword_file(crashing, _requests(10), out, INIT, batch_size=3, progress=False)
    assert list(read_keyword_file(out)) == [f"id{i}" for i in range(6)]  # two full batches survived
    resumed = EchoBackend()
    stats = generate_keyword_file(resumed, _requests(10), out, INIT, batch_size=3, progress=False)
    assert (stats.resumed, stats.generated) == (6, 4)
    assert resumed.batches == [3, 1]  # only the missing rows were generated
    rows = read_keyword_file(out)
    assert list(rows) == [f"id{i}" for i in range(10)]
    assert rows["id9"] == ["w9", "kw w9"]
    again = EchoBackend()
    assert generate_keyword_file(again, _requests(10), out, INIT, progress=False).generated == 0
    assert again.batches == []


def test_a_line_cut_by_a_crash_is_dropped_and_regenerated(tmp_path: Path) -> None:
    out = tmp_path / "kw.jsonl"
    generate_keyword_file(EchoBackend(), _requests(2), out, INIT, batch_size=2, progress=False)
    with out.open("a") as handle:
        handle.write('{"id": "id2", "keywo')  # what a crash mid-write leaves
    stats = generate_keyword_file(EchoBackend(), _requests(3), out, INIT, batch_size=2, progress=False)
    assert stats.generated == 1
    assert list(read_keyword_file(out)) == ["id0", "id1", "id2"]


def test_drop_partial_tail(tmp_path: Path) -> None:
    path = tmp_path / "f.jsonl"
    path.write_bytes(b'{"a": 1}\n{"b"')
    assert drop_partial_tail(path) is True
    assert path.read_bytes() == b'{"a": 1}\n'
    assert drop_partial_tail(path) is False
    path.write_bytes(b"no newline at all")
    assert drop_partial_tail(path) is True and path.read_bytes() == b""


def test_empty_outputs_are_written_and_counted(tmp_path: Path) -> None:
    out = tmp_path / "kw.jsonl"
    requests = [GenerationRequest("a", [{"role": "user", "content": "nothing"}]), *_requests(1)]
    stats = generate_keyword_file(EchoBackend(), requests, out, INIT, progress=False)
    assert stats.empty == 1 and stats.empty_ids == ["a"]
    assert read_keyword_file(out)["a"] == []


def test_item_requests_use_the_item_template() -> None:
    class It:
        id, title, description = "x", "Oak table", "Round."

    [request] = item_requests(load_prompts(), [It()], max_keywords=4)
    assert request.id == "x" and "Oak table" in request.conversation[-1]["content"]
