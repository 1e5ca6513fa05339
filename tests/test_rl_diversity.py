"""R4T's diversity term: the Vendi score by hand, and the query reward with the real MiniLM."""

from __future__ import annotations

import math

import numpy as np
import pytest

from cogr_search.runs.config import Phase2Config
from cogr_search.shadow import ItemIndex, QueryView
from cogr_search.training.diversity import KeywordEmbeddings, near_duplicate_share, normalized_vendi, vendi_score
from cogr_search.training.rewards import QueryF1Reward

TITLES = {"i1": "Lamp", "i2": "Desk", "i3": "Chair", "i4": "Sofa"}
ITEM_KEYWORDS = {"i1": ["light", "table lamp"], "i2": ["table", "office"], "i3": ["seat", "office"], "i4": []}
QUERY_TEXTS = {"q1": "lamp", "q2": "office chair"}
RELEVANT = {"q1": {"i1"}, "q2": {"i3", "i4"}}


def test_identical_vectors_score_one() -> None:
    v = np.array([[0.6, 0.8, 0.0]] * 4)
    assert vendi_score(v) == pytest.approx(1.0)
    assert normalized_vendi(v) == pytest.approx(0.25)


def test_orthogonal_vectors_score_their_number() -> None:
    assert vendi_score(np.eye(5)) == pytest.approx(5.0)
    assert vendi_score(3.0 * np.eye(3)[:2]) == pytest.approx(2.0)  # lengths do not matter
    assert normalized_vendi(np.eye(5)) == pytest.approx(1.0)


def test_two_vectors_at_an_angle_by_hand() -> None:
    # K/2 = [[1, c], [c, 1]] / 2 has eigenvalues (1 + c)/2 and (1 - c)/2
    c = 0.6
    v = np.array([[1.0, 0.0], [c, math.sqrt(1 - c * c)]])
    a, b = (1 + c) / 2, (1 - c) / 2
    assert vendi_score(v) == pytest.approx(math.exp(-(a * math.log(a) + b * math.log(b))))
    assert vendi_score(np.zeros((0, 3))) == 0.0


def test_near_duplicate_share_counts_pairs_above_the_threshold() -> None:
    v = np.array([[1.0, 0.0], [0.99, 0.1], [0.0, 1.0]])
    assert near_duplicate_share(v) == (1, 3)
    assert near_duplicate_share(v[:1]) == (0, 0)


@pytest.fixture(scope="module")
def embeddings() -> KeywordEmbeddings:
    return KeywordEmbeddings()


def test_minilm_sees_paraphrases_as_less_diverse(embeddings: KeywordEmbeddings) -> None:
    paraphrases, distinct = ["office chair", "office chairs", "chair for office"], ["office chair", "lamp", "sofa"]
    low, high = embeddings.diversity([paraphrases, distinct])
    assert 1 / 3 < low < high <= 1.0
    cached = len(embeddings)
    assert cached == 5 and embeddings.diversity([distinct]) == [high]  # cached per keyword: nothing re-encoded
    assert len(embeddings) == cached and embeddings.encoded == 5


def test_query_reward_adds_the_weighted_diversity(embeddings: KeywordEmbeddings) -> None:
    items = ItemIndex.build(ITEM_KEYWORDS, TITLES)
    view = QueryView.build({}, QUERY_TEXTS, items, RELEVANT)
    plain = QueryF1Reward(view, k_max=3)
    diverse = QueryF1Reward(view, k_max=3, diversity_weight=0.5, embeddings=embeddings)
    completions = ["office, seat", "office, office chair", "a, b, c, d"]
    ids = ["q2"] * 3
    f1 = plain(completions=completions, query_id=ids)
    values = diverse(completions=completions, query_id=ids)
    by_hand = [normalized_vendi(embeddings.matrix(["office", "seat"])),
               normalized_vendi(embeddings.matrix(["office", "office chair"]))]
    assert values == pytest.approx([f1[0] + 0.5 * by_hand[0], f1[1] + 0.5 * by_hand[1], 0.0])  # oversized: 0
    assert diverse.__name__ == "query_f1_diversity" and plain.summary() == {}
    summary = diverse.summary()
    assert summary["mean_f1"] == pytest.approx(sum(f1) / 3, abs=1e-4)
    assert summary["mean_diversity"] == pytest.approx(sum(by_hand) / 3, abs=1e-4)


def test_the_weight_is_a_phase2_field_set_by_train_rl() -> None:
    from cogr_search.cli.train_cmds import rl_config_from

    assert Phase2Config().diversity_weight == 0.0
    assert rl_config_from({}, {"diversity_weight": 0.2}).diversity_weight == 0.2
    assert Phase2Config(diversity_weight=0.2).model_dump()["diversity_weight"] == 0.2
    with pytest.raises(ValueError):
        Phase2Config(diversity_weight=-1)


def test_bench_diversity_compares_files_on_shared_ids(tmp_path) -> None:  # noqa: ANN001
    import json

    from click.testing import CliRunner

    from cogr_search.cli.main import cli
    from cogr_search.runs.keyword_files import write_keyword_file

    collapsed, varied = tmp_path / "collapsed.jsonl", tmp_path / "varied.jsonl"
    write_keyword_file(collapsed, [("q1", ["office chair", "chair for office"]), ("q2", ["lamp"])])
    write_keyword_file(varied, [("q1", ["office chair", "floor lamp"]), ("q3", ["sofa"])])
    outcome = CliRunner().invoke(cli, ["bench", "diversity", str(collapsed), str(varied), "--json"])
    assert outcome.exit_code == 0, outcome.output
    result = json.loads(outcome.output)
    assert result["ids"] == 1  # only q1 is in both
    first, second = result["files"]
    assert first["share_pairs_cosine_over_0.9"] == 1.0 and second["share_pairs_cosine_over_0.9"] == 0.0
    assert first["mean_normalized_vendi"] < second["mean_normalized_vendi"]
