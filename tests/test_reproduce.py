"""`cogr-search reproduce`: declared results rerun through the real CLI and a real node.

The sample catalog's BM25 figures are pinned by reproduce/homegoods-bm25.toml: if a
change moves them, this test fails and the declared file (and docs/evaluation.md) must
be updated on purpose.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from cogr_search.cli.main import cli
from cogr_search.errors import InputError
from cogr_search.reproduce import check_result, read_declared
from tests.conftest import REPO_ROOT

DECLARED = REPO_ROOT / "reproduce" / "homegoods-bm25.toml"


@pytest.mark.opensearch
def test_sample_catalog_bm25_figures_reproduce(opensearch_url: str, index_name: str) -> None:
    args = ["reproduce", str(DECLARED), "--index", index_name, "--opensearch-url", opensearch_url]
    result = CliRunner().invoke(cli, args)
    assert result.exit_code == 0, result.output
    lines = [line for line in result.output.splitlines() if line.startswith(("OK", "FAIL"))]
    assert len(lines) == len(read_declared(DECLARED).metrics) + 1 and all(line.startswith("OK") for line in lines)
    assert "OK   documents    expected 359  got 359" in result.output


@pytest.mark.opensearch
def test_a_moved_figure_fails_with_its_name(opensearch_url: str, index_name: str, tmp_path: Path) -> None:
    text = DECLARED.read_text(encoding="utf-8").replace("F1 = 0.719231", "F1 = 0.75").replace("documents = 359", "documents = 360")
    moved = tmp_path / "moved.toml"
    moved.write_text(text, encoding="utf-8")
    result = CliRunner().invoke(cli, ["reproduce", str(moved), "--index", index_name, "--opensearch-url", opensearch_url, "--json"])
    assert result.exit_code == 1
    payload = json.loads(result.stdout)
    failed = {c["name"] for c in payload["checks"] if not c["ok"]}
    assert failed == {"F1", "documents"} and payload["ok"] is False


def test_dry_run_prints_the_commands_and_runs_nothing() -> None:
    result = CliRunner().invoke(cli, ["reproduce", str(DECLARED), "--dry-run", "--index", "never-created",
                                      "--opensearch-url", "http://127.0.0.1:9"])
    assert result.exit_code == 0, result.output
    assert "cogr-search eval --data " in result.output and "--index never-created" in result.output
    assert "expect F1 = 0.719231 ± 0.0001" in result.output


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("command = 'ls'\ndocuments = 1\n[metrics]\nP = 1", "field 'command': expected a command starting with 'cogr-search'"),
        ("command = 'cogr-search eval'\n[metrics]\nP = 1", "missing field 'documents'"),
        ("command = 'cogr-search eval'\ndocuments = 1\n[metrics]\nP = 'high'", "field 'metrics.P': expected a number"),
        ("command = 'cogr-search eval'\ndocuments = 1\nmetric = 2\n[metrics]\nP = 1", "unknown field 'metric'"),
        ("command = [", "invalid TOML"),
    ],
)
def test_bad_declared_files_name_the_field(tmp_path: Path, text: str, message: str) -> None:
    path = tmp_path / "bad.toml"
    path.write_text(text, encoding="utf-8")
    with pytest.raises(InputError, match=message):
        read_declared(path)
    result = CliRunner().invoke(cli, ["reproduce", str(path), "--dry-run"])
    assert result.exit_code == 1 and message.split(":")[0] in result.output


@pytest.mark.parametrize("path", sorted((REPO_ROOT / "reproduce").glob("*.toml")), ids=lambda p: p.name)
def test_every_declared_file_parses_and_expands(path: Path, tmp_path: Path) -> None:
    result = CliRunner().invoke(cli, ["reproduce", str(path), "--dry-run", "--data-root", str(tmp_path)])
    assert result.exit_code == 0, result.output
    declared = read_declared(path)
    assert declared.metrics and declared.documents > 0 and "{" not in result.output.split("expect")[0]


def test_a_dotted_metric_name_reads_a_nested_figure(tmp_path: Path) -> None:
    """`train metrics --json` nests its curve points: "curve.sft.mean" reads them; a path
    that is not there is a failed check, not an error."""
    path = tmp_path / "curve.toml"
    path.write_text('command = "cogr-search train metrics --run r --eval-samples 4"\ndocuments = 359\n'
                    'tolerance = 0.01\n[metrics]\n"curve.sft.mean" = 0.30\n"curve.rl-item-r9.mean" = 0.5\n')
    declared = read_declared(path)
    checks = check_result(declared, {"curve": {"sft": {"mean": 0.305}}}, 359)
    assert [(c.name, c.got, c.ok) for c in checks] == [
        ("curve.sft.mean", 0.305, True), ("curve.rl-item-r9.mean", None, False), ("documents", 359.0, True)]
