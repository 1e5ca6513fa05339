"""The side-by-side Markdown table and the PNG plot from saved eval results."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from cogr_search.cli.main import cli
from cogr_search.errors import InputError
from cogr_search.evaluation.report import load_reports, markdown


def fake_report(method: str, f1: float) -> dict:
    metrics = {"P": 0.5, "R": 0.25, "F1": f1, "queries": 12, "method": method, "queries_per_s": 99.5}
    for k in (10, 100, 1000):
        metrics.update({f"MRR@{k}": 0.9, f"NDCG@{k}": 0.8, f"P@{k}": 0.1, f"R@{k}": 0.2, f"F1@{k}": 0.15})
    metrics["curve"] = {"k": [1, 10, 100], "P": [0.9, 0.5, 0.1], "R": [0.1, 0.4, 0.8], "F1": [0.2, 0.45, 0.2]}
    metrics["settings"] = {"dataset": "homegoods", "split": "val", "cutoff": 7}
    return metrics


def test_markdown_has_one_row_per_method() -> None:
    text = markdown([fake_report("bm25", 0.3333), fake_report("dense", 0.4444)])
    rows = [line for line in text.splitlines() if line.startswith("| bm25") or line.startswith("| dense")]
    assert len(rows) == 4  # main table and the @10/@1000 table
    assert "| bm25 | homegoods | val | 12 | 7 | 99.5 | 0.5000 | 0.2500 | 0.3333 |" in text


def test_report_command_writes_markdown_and_png(tmp_path: Path) -> None:
    paths = []
    for method, value in (("bm25", 0.3), ("dense", 0.4)):
        path = tmp_path / f"{method}.json"
        path.write_text(json.dumps(fake_report(method, value)))
        paths.append(str(path))
    md, png = tmp_path / "out" / "report.md", tmp_path / "out" / "plot.png"
    result = CliRunner().invoke(cli, ["report", *paths, "--markdown", str(md), "--plot", str(png)])
    assert result.exit_code == 0, result.output
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and png.stat().st_size > 5000
    assert "![precision and recall per cutoff](plot.png)" in md.read_text()


def test_not_a_report_is_named(tmp_path: Path) -> None:
    path = tmp_path / "x.json"
    path.write_text('{"F1": 1}')
    with pytest.raises(InputError, match=r"x.json: not an eval report \(missing 'method'\)"):
        load_reports([path])


def test_student_and_llm_reports_of_one_run_read_differently() -> None:
    student, llm = fake_report("cogr", 0.2), fake_report("cogr", 0.1)
    student["settings"].update(expander="student", run="runs/hg", round=1)
    llm["settings"].update(expander="llm", run="runs/hg", round=1)
    text = markdown([student, llm, fake_report("bm25", 0.3)])
    assert "| cogr (student expander, run hg round 1) | homegoods |" in text
    assert "| cogr (llm expander, run hg round 1) | homegoods |" in text
    assert "| bm25 | homegoods |" in text
