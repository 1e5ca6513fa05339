"""Malformed input fails with one line naming file, line and field; nothing half-loads."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from cogr_search.data import load_dataset
from cogr_search.errors import InputError

FIXTURES = Path(__file__).parent / "fixtures"
GOOD_CORPUS = ['{"_id": "a", "title": "oak table", "text": "solid oak"}', '{"_id": "b", "title": "lamp", "text": ""}']
GOOD_QUERIES = ['{"_id": "q1", "text": "oak"}']
GOOD_QRELS = ["query-id\tcorpus-id\tscore", "q1\ta\t2", "q1\tb\t0"]


def beir(tmp_path: Path, corpus=GOOD_CORPUS, queries=GOOD_QUERIES, qrels=GOOD_QRELS) -> Path:
    for name, lines in (("corpus.jsonl", corpus), ("queries.jsonl", queries), ("qrels.tsv", qrels)):
        (tmp_path / name).write_text("\n".join(lines) + "\n", encoding="utf-8")
    return tmp_path


def wands_copy(tmp_path: Path, name: str, replace: tuple[str, str]) -> Path:
    target = tmp_path / "w"
    shutil.copytree(FIXTURES / "wands_small", target)
    path = target / name
    text = path.read_text(encoding="utf-8")
    assert replace[0] in text
    path.write_text(text.replace(replace[0], replace[1], 1), encoding="utf-8")
    return target


@pytest.mark.parametrize(
    ("corpus", "match"),
    [
        ([GOOD_CORPUS[0], '{"_id": "b", "title": "lamp"'], r"corpus.jsonl:2: invalid JSON"),
        ([GOOD_CORPUS[0], '["b", "lamp"]'], r"corpus.jsonl:2: expected a JSON object, got list"),
        ([GOOD_CORPUS[0], '{"title": "lamp"}'], r"corpus.jsonl:2: field '_id': expected a string id, got null"),
        ([GOOD_CORPUS[0], '{"_id": "  ", "title": "lamp"}'], r"corpus.jsonl:2: field '_id': empty id"),
        ([GOOD_CORPUS[0], '{"_id": "b", "title": 5}'], r"corpus.jsonl:2: field 'title': expected text, got 5"),
        ([GOOD_CORPUS[0], '{"_id": "b", "title": "", "text": ""}'], r"corpus.jsonl:2: item 'b' has neither"),
        ([GOOD_CORPUS[0], "", GOOD_CORPUS[0]], r"corpus.jsonl:3: duplicate item id 'a' \(first on line 1\)"),
    ],
)
def test_bad_corpus_rows(tmp_path: Path, corpus: list[str], match: str) -> None:
    with pytest.raises(InputError, match=match):
        load_dataset(beir(tmp_path, corpus=corpus))


@pytest.mark.parametrize(
    ("queries", "match"),
    [
        (['{"_id": "q1"}'], r"queries.jsonl:1: field 'text': missing"),
        (['{"_id": "q1", "text": " "}'], r"queries.jsonl:1: field 'text': query 'q1' is empty"),
        ([GOOD_QUERIES[0], GOOD_QUERIES[0]], r"queries.jsonl:2: duplicate query id 'q1'"),
    ],
)
def test_bad_query_rows(tmp_path: Path, queries: list[str], match: str) -> None:
    with pytest.raises(InputError, match=match):
        load_dataset(beir(tmp_path, queries=queries))


@pytest.mark.parametrize(
    ("qrels", "match"),
    [
        ([*GOOD_QRELS, "q9\ta\t1"], r"qrels.tsv:4: label points at unknown query id 'q9'"),
        ([*GOOD_QRELS, "q1\tzz\t1"], r"qrels.tsv:4: label points at unknown item id 'zz'"),
        ([*GOOD_QRELS, "q1\ta"], r"qrels.tsv:4: expected 3 tab-separated fields"),
        ([*GOOD_QRELS, "q1 a 1"], r"qrels.tsv:4: expected 3 tab-separated fields"),
        ([GOOD_QRELS[0], "q1\ta\thigh"], r"qrels.tsv:2: field 'score': expected a number, got 'high'"),
        ([GOOD_QRELS[0], "q1\ta\tnan"], r"qrels.tsv:2: field 'score': expected a finite number"),
    ],
)
def test_bad_qrels_rows(tmp_path: Path, qrels: list[str], match: str) -> None:
    with pytest.raises(InputError, match=match):
        load_dataset(beir(tmp_path, qrels=qrels))


def test_trec_style_qrels_with_iteration_column_are_read(tmp_path: Path) -> None:
    ds = load_dataset(beir(tmp_path, qrels=["q1\t0\ta\t2"]))
    assert ds.labels == {"q1": {"a": 2.0}}


def test_latin1_file_names_line_and_byte() -> None:
    with pytest.raises(InputError, match=r"latin1_beir/corpus.jsonl:2: not valid UTF-8 \(byte 0xe9 at column 27\)"):
        load_dataset(FIXTURES / "malformed" / "latin1_beir")


def test_utf16_file_is_named(tmp_path: Path) -> None:
    directory = beir(tmp_path)
    (directory / "queries.jsonl").write_bytes(GOOD_QUERIES[0].encode("utf-16"))
    with pytest.raises(InputError, match=r"queries.jsonl:1: file is UTF-16 encoded"):
        load_dataset(directory)


def test_utf8_bom_is_accepted_in_every_wands_file() -> None:
    with_bom = load_dataset(FIXTURES / "malformed" / "bom_wands")
    plain = load_dataset(FIXTURES / "wands_small")
    assert with_bom.items == plain.items and with_bom.labels == plain.labels


def test_bom_and_crlf_in_beir(tmp_path: Path) -> None:
    directory = beir(tmp_path)
    (directory / "qrels.tsv").write_bytes(b"\xef\xbb\xbf" + "\r\n".join(GOOD_QRELS).encode() + b"\r\n")
    assert load_dataset(directory).labels == {"q1": {"a": 2.0, "b": 0.0}}


@pytest.mark.parametrize(
    ("name", "replace", "match"),
    [
        ("label.csv", ("\tPartial", "\tMaybe"), r"label.csv:3: field 'label': expected Exact, Partial or Irrelevant, got 'Maybe'"),
        ("label.csv", ("1\t0\t3\t", "1\t0\t99\t"), r"label.csv:3: label points at unknown item id '99'"),
        ("label.csv", ("3\t1\t1\t", "3\t7\t1\t"), r"label.csv:5: label points at unknown query id '7'"),
        ("product.csv", ("\n4\tcrock", "\n0\tcrock"), r"product.csv:6: duplicate product id '0' \(first on line 2\)"),
        ("product.csv", ("product_name", "name"), r"product.csv:1: missing column 'product_name'"),
        ("query.csv", ("\n2\tblue velvet chair\tAccent Chairs", "\n2"), r"query.csv:4: field 'query': missing"),
        ("product.csv", ('"queen bed', '"queen bed\n\nmore'), None),
    ],
)
def test_bad_wands_rows(tmp_path: Path, name: str, replace: tuple[str, str], match: str | None) -> None:
    directory = wands_copy(tmp_path, name, replace)
    if match is None:  # a quoted field spanning lines is legal; the next record keeps its line number
        assert load_dataset(directory).items["3"].description.startswith("queen bed\n\nmore")
        return
    with pytest.raises(InputError, match=match):
        load_dataset(directory)


def test_wands_line_numbers_count_multiline_records(tmp_path: Path) -> None:
    directory = wands_copy(tmp_path, "product.csv", ('"queen bed', '"queen bed\nmore'))
    text = (directory / "product.csv").read_text()
    (directory / "product.csv").write_text(text.replace("\n4\tcrock", "\n0\tcrock"))
    with pytest.raises(InputError, match=r"product.csv:7: duplicate product id '0'"):
        load_dataset(directory)


def test_bad_dataset_json_is_reported(tmp_path: Path) -> None:
    directory = beir(tmp_path)
    (directory / "cogr-dataset.json").write_text(json.dumps({"name": "x", "relevance_treshold": 2}))
    with pytest.raises(InputError, match=r"cogr-dataset.json: unknown key 'relevance_treshold'"):
        load_dataset(directory)


def test_missing_path_and_wrong_file_type(tmp_path: Path) -> None:
    with pytest.raises(InputError, match="no such file or directory"):
        load_dataset(tmp_path / "nope")
    (tmp_path / "x.parquet").write_bytes(b"PAR1")
    with pytest.raises(InputError, match=r"x.parquet: expected a dataset directory or a .csv"):
        load_dataset(tmp_path / "x.parquet")


def test_csv_catalog_mapping_errors(tmp_path: Path) -> None:
    from cogr_search.data import ColumnMapping

    path = tmp_path / "c.csv"
    path.write_text("sku,name\nA,oak\nB,pine,extra\n", encoding="utf-8")
    with pytest.raises(InputError, match=r"c.csv:2: field 'id': missing"):
        load_dataset(path)
    with pytest.raises(InputError, match=r"c.csv:3: row has 3 fields but the header has 2"):
        load_dataset(path, columns=ColumnMapping.parse("id=sku,title=name"))
    with pytest.raises(InputError, match=r"--columns 'sku': expected FIELD=COLUMN"):
        ColumnMapping.parse("sku")
