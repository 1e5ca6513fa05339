"""Loading each layout into the same Dataset, and choosing the relevance threshold."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from cogr_search.data import ColumnMapping, load_dataset, sample_catalog_path
from cogr_search.errors import InputError

FIXTURES = Path(__file__).parent / "fixtures"
WANDS = FIXTURES / "wands_small"


def write_beir(directory: Path, corpus: list[dict], queries: list[dict], qrels: list[tuple], header: bool = True) -> Path:
    directory.mkdir(parents=True, exist_ok=True)
    (directory / "corpus.jsonl").write_text("".join(json.dumps(r) + "\n" for r in corpus), encoding="utf-8")
    (directory / "queries.jsonl").write_text("".join(json.dumps(r) + "\n" for r in queries), encoding="utf-8")
    lines = (["query-id\tcorpus-id\tscore"] if header else []) + ["\t".join(map(str, r)) for r in qrels]
    (directory / "qrels.tsv").write_text("\n".join(lines) + "\n", encoding="utf-8")
    return directory


CORPUS = [
    {"_id": "a", "title": "oak table", "text": "solid oak"},
    {"_id": "b", "title": "pine table", "text": ""},
    {"_id": 7, "title": "lamp"},
]
QUERIES = [{"_id": "q1", "text": "oak table"}, {"_id": "q2", "text": "lamp"}]


def test_wands_fixture_loads_with_exact_partial_threshold() -> None:
    ds = load_dataset(WANDS)
    assert ds.layout == "wands"
    assert len(ds.items) == 6 and len(ds.queries) == 3
    assert ds.relevance_threshold == 1.0
    assert ds.labels["0"] == {"0": 2.0, "3": 1.0, "1": 0.0}
    assert ds.relevant() == {"0": {"0", "3"}, "1": {"1", "4"}, "2": {"2", "5"}}
    # csv quoting: doubled quotes inside a quoted field, a stray quote mid-field kept as text
    assert ds.items["3"].description == 'queen bed frame; tabs and "quotes" inside'
    assert ds.items["1"].description == 'this slow cooker has a 7 qt "ceramic" insert.'
    assert ds.items["2"].description == ""


def test_beir_ids_numbers_become_text_and_header_is_optional(tmp_path: Path) -> None:
    ds = load_dataset(write_beir(tmp_path / "x", CORPUS, QUERIES, [("q1", "a", 2), ("q2", 7, 1)], header=False))
    assert set(ds.items) == {"a", "b", "7"}
    assert ds.items["7"].description == ""
    assert ds.labels == {"q1": {"a": 2.0}, "q2": {"7": 1.0}}


def test_dataset_without_a_threshold_is_refused_with_its_score_values(tmp_path: Path) -> None:
    qrels = [("q1", "a", 1), ("q1", "b", 1), ("q2", "7", 3), ("q2", "a", 2)]
    ds = load_dataset(write_beir(tmp_path / "other", CORPUS, QUERIES, qrels))
    assert ds.relevance_threshold is None and set(ds.items) == {"a", "b", "7"}  # items still usable (ingest)
    with pytest.raises(InputError, match=r"other: no relevance threshold: its label scores are 1 \(2\), 2 \(1\), 3 \(1\); "
                       r"set relevance_threshold in .*cogr-dataset.json or pass --relevance-threshold X"):
        ds.relevant()
    assert load_dataset(tmp_path / "other", relevance_threshold=2).relevant() == {"q2": {"7", "a"}}


def test_known_name_with_scores_off_its_scale_is_refused(tmp_path: Path) -> None:
    ds = load_dataset(write_beir(tmp_path / "homedepot", CORPUS, QUERIES, [("q1", "a", 0), ("q1", "b", 1)]))
    with pytest.raises(InputError, match=r"named 'homedepot', but its label scores \(0 \(1\), 1 \(1\)\) are not on that set's scale"):
        ds.relevant()


def test_threshold_precedence_override_then_json_then_name(tmp_path: Path) -> None:
    qrels = [("q1", "a", 2), ("q1", "b", 1), ("q2", "7", 3)]
    named = write_beir(tmp_path / "homedepot", CORPUS, QUERIES, qrels)
    assert load_dataset(named).relevance_threshold == 2.0
    assert load_dataset(named).relevant() == {"q1": {"a"}, "q2": {"7"}}
    (named / "cogr-dataset.json").write_text(json.dumps({"name": "mine", "relevance_threshold": 3}))
    ds = load_dataset(named)
    assert (ds.name, ds.relevance_threshold) == ("mine", 3.0)
    assert ds.relevant() == {"q2": {"7"}}
    assert load_dataset(named, relevance_threshold=1).relevant() == {"q1": {"a", "b"}, "q2": {"7"}}
    assert ds.relevant(threshold=1) == {"q1": {"a", "b"}, "q2": {"7"}}


def test_crowdflower_directory_name_sets_threshold_three(tmp_path: Path) -> None:
    ds = load_dataset(write_beir(tmp_path / "crowdflower", CORPUS, QUERIES, [("q1", "a", 3), ("q1", "b", 2.5)]))
    assert ds.relevant() == {"q1": {"a"}}


def test_repeated_pairs_are_averaged_by_default_and_rejected_on_request(tmp_path: Path) -> None:
    directory = write_beir(tmp_path / "d", CORPUS, QUERIES, [("q1", "a", 3), ("q1", "a", 2), ("q2", "7", 1)])
    ds = load_dataset(directory)
    assert ds.labels["q1"]["a"] == 2.5
    assert "1 repeated" in ds.notes[0]
    assert load_dataset(directory, duplicate_labels="max").labels["q1"]["a"] == 3
    with pytest.raises(InputError, match=r"qrels.tsv:3: duplicate label .*first on line 2"):
        load_dataset(directory, duplicate_labels="error")


def test_plain_csv_catalog_with_column_mapping(tmp_path: Path) -> None:
    path = tmp_path / "export.csv"
    path.write_text('sku,name,desc,price\nA1,"Oak table, 6 seat",Solid oak.,100\nB2,Lamp,,20\n', encoding="utf-8")
    ds = load_dataset(path, columns=ColumnMapping.parse("id=sku,title=name,description=desc"))
    assert ds.items["A1"].title == "Oak table, 6 seat"
    assert ds.items["A1"].description == "Solid oak."
    assert ds.queries == {} and ds.layout == "catalog"


def test_plain_jsonl_catalog_default_columns(tmp_path: Path) -> None:
    path = tmp_path / "items.jsonl"
    path.write_text('{"id": 1, "title": "mug"}\n{"id": 2, "title": "cup", "description": "tea cup"}\n', encoding="utf-8")
    ds = load_dataset(path)
    assert ds.items["2"].description == "tea cup" and ds.items["1"].description == ""


def test_catalog_layout_described_by_json_with_queries_and_text_grades(tmp_path: Path) -> None:
    (tmp_path / "p.tsv").write_text("sku\tname\nA\toak table\nB\tpine table\n", encoding="utf-8")
    (tmp_path / "q.jsonl").write_text('{"qid": "1", "q": "oak"}\n', encoding="utf-8")
    (tmp_path / "l.csv").write_text("qid,sku,grade\n1,A,Exact\n1,B,Partial\n", encoding="utf-8")
    spec = {
        "name": "shop",
        "layout": "catalog",
        "relevance_threshold": 2,
        "items": {"file": "p.tsv", "columns": {"id": "sku", "title": "name"}},
        "queries": {"file": "q.jsonl", "columns": {"id": "qid", "text": "q"}},
        "labels": {"file": "l.csv", "columns": {"query": "qid", "item": "sku", "score": "grade"},
                   "grades": {"exact": 2, "partial": 1}},
    }
    (tmp_path / "cogr-dataset.json").write_text(json.dumps(spec))
    ds = load_dataset(tmp_path)
    assert ds.name == "shop" and ds.labels == {"1": {"A": 2.0, "B": 1.0}}
    assert ds.relevant() == {"1": {"A"}}


def test_sample_catalog_is_shipped_and_consistent() -> None:
    ds = load_dataset(sample_catalog_path())
    assert ds.name == "homegoods" and ds.relevance_threshold == 1.0
    assert 250 <= len(ds.items) <= 420 and 150 <= len(ds.queries) <= 170
    relevant = ds.relevant()
    assert set(relevant) == set(ds.queries)
    assert min(len(r) for r in relevant.values()) >= 3
    assert all(any(s == 0 for s in graded.values()) for graded in ds.labels.values())
    assert {s for graded in ds.labels.values() for s in graded.values()} == {0.0, 1.0, 2.0}


def test_sample_catalog_generator_is_deterministic(tmp_path: Path) -> None:
    from cogr_search.sample_data import make_homegoods

    import random

    rng = random.Random(make_homegoods.SEED)
    products = make_homegoods.make_products(rng)
    queries, qrels = make_homegoods.judge(products, rng)
    make_homegoods.write(tmp_path, products, queries, qrels)
    for name in ("corpus.jsonl", "queries.jsonl", "qrels.tsv"):
        assert (tmp_path / name).read_bytes() == (sample_catalog_path() / name).read_bytes(), name


def test_unknown_directory_names_what_it_expected(tmp_path: Path) -> None:
    (tmp_path / "notes.txt").write_text("x")
    with pytest.raises(InputError, match="not a dataset: expected BEIR files"):
        load_dataset(tmp_path)


def test_copy_of_wands_is_independent_of_file_order(tmp_path: Path) -> None:
    target = tmp_path / "w"
    shutil.copytree(WANDS, target)
    lines = (target / "label.csv").read_text().splitlines()
    (target / "label.csv").write_text("\n".join([lines[0], *reversed(lines[1:])]) + "\n")
    assert load_dataset(target).relevant() == load_dataset(WANDS).relevant()
