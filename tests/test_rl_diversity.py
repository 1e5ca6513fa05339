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
    assert normalized_vendi(v, k_max=4) == pytest.approx(0.25)
    assert normalized_vendi(v, k_max=8) == pytest.approx(0.125)  # divided by the budget, not by n


def test_orthogonal_vectors_score_their_number() -> None:
    assert vendi_score(np.eye(5)) == pytest.approx(5.0)
    assert vendi_score(3.0 * np.eye(3)[:2]) == pytest.approx(2.0)  # lengths do not matter
    assert normalized_vendi(np.eye(5), k_max=5) == pytest.approx(1.0)
    assert normalized_vendi(np.eye(5), k_max=10) == pytest.approx(0.5)


def test_one_keyword_scores_one_over_k_max_not_the_maximum() -> None:
    one = np.array([[0.3, 0.4]])
    assert vendi_score(one) == pytest.approx(1.0)
    assert normalized_vendi(one, k_max=10) == pytest.approx(0.1)
    assert normalized_vendi(one, k_max=1) == pytest.approx(1.0)  # a budget of one: one keyword fills it


def test_the_empty_set_scores_zero() -> None:
    empty = np.zeros((0, 384))
    assert vendi_score(empty) == 0.0
    assert normalized_vendi(empty, k_max=10) == 0.0


def test_three_vectors_by_hand() -> None:
    # e1, (0.6, 0.8, 0) and e3: K = [[1, .6, 0], [.6, 1, 0], [0, 0, 1]], so K/3 has the
    # eigenvalues 1.6/3 = 8/15, 0.4/3 = 2/15 and 1/3 = 5/15. Their entropy is
    # -(8/15 ln 8/15 + 2/15 ln 2/15 + 5/15 ln 5/15) = 0.33526 + 0.26865 + 0.36620 = 0.97012,
    # and exp(0.97012) = 2.6383 effective keywords.
    v = np.array([[1.0, 0.0, 0.0], [0.6, 0.8, 0.0], [0.0, 0.0, 1.0]])
    assert vendi_score(v) == pytest.approx(2.6383, abs=1e-4)
    assert normalized_vendi(v, k_max=3) == pytest.approx(2.6383 / 3, abs=1e-4)
    assert normalized_vendi(v, k_max=30) == pytest.approx(0.087943, abs=1e-5)


def test_adding_a_new_keyword_never_lowers_the_term() -> None:
    # Divided by n, ["a"] scored 1.0 and ["a", "b" at cosine 0.6] only 1.649 / 2 = 0.82:
    # dropping keywords paid. Divided by k_max the longer set scores more.
    a, b, c = [1.0, 0.0, 0.0], [0.6, 0.8, 0.0], [0.0, 0.0, 1.0]
    scores = [normalized_vendi(np.array(rows), k_max=10) for rows in ([a], [a, b], [a, b, c])]
    assert scores[0] < scores[1] < scores[2]
    assert normalized_vendi(np.array([a, a]), k_max=10) == pytest.approx(scores[0])  # a duplicate adds nothing


def test_a_set_over_the_budget_is_refused() -> None:
    with pytest.raises(ValueError, match="exceed k_max 2"):
        normalized_vendi(np.eye(3), k_max=2)


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
    low, high = embeddings.diversity([paraphrases, distinct], k_max=3)
    assert 1 / 3 < low < high <= 1.0
    cached = len(embeddings)
    assert cached == 5 and embeddings.diversity([distinct], k_max=3) == [high]  # cached per keyword: nothing re-encoded
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
    by_hand = [normalized_vendi(embeddings.matrix(["office", "seat"]), k_max=3),
               normalized_vendi(embeddings.matrix(["office", "office chair"]), k_max=3)]
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
    result = json.loads(outcome.stdout)
    assert result["ids"] == 1  # only q1 is in both
    first, second = result["files"]
    assert first["share_pairs_cosine_over_0.9"] == 1.0 and second["share_pairs_cosine_over_0.9"] == 0.0
    assert 1.0 <= first["mean_vendi"] < second["mean_vendi"] <= 2.0  # effective keywords of two
