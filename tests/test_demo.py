"""The demo's whole path on a real node and the real CPU model, shrunk to minutes:
ingest, Phase 1, sync, BM25 vs CoGR evaluation, the report and the example query."""

from __future__ import annotations

from pathlib import Path

import pytest

from cogr_search.demo import DemoOptions, run_demo
from cogr_search.opensearch.indices import alias_target
from cogr_search.settings import load_settings

pytestmark = [pytest.mark.opensearch, pytest.mark.model]


def test_demo_runs_end_to_end_and_resumes(opensearch_url, cluster, index_name, tmp_path: Path, monkeypatch):
    monkeypatch.setenv("COGR_TORCH_THREADS", "1")
    settings = load_settings(opensearch_url=opensearch_url)
    options = DemoOptions(
        index=index_name, run="demo-test", runs_dir=tmp_path, max_items=8, max_queries=8,
        sft_steps=3, sft_batch_size=4, learning_rate=5e-4, gen_batch_size=8, max_new_tokens=48,
    )
    lines: list[str] = []

    result = run_demo(settings, options, echo=lines.append)

    assert alias_target(cluster, index_name) == f"{index_name}-r0-2"
    assert [r["method"] for r in result.reports] == ["bm25", "cogr"]
    assert all(r["queries"] > 0 and 0.0 <= r["F1"] <= 1.0 for r in result.reports)
    assert result.report_path.is_file() and "bm25" in result.report_path.read_text()
    assert result.example["keywords"] and result.example["retrieved"] >= len(result.example["hits"]) > 0
    docs = cluster.client.count(index=index_name, body={"query": {"exists": {"field": "cogr_round"}}})["count"]
    assert docs == 8  # the items Phase 1 generated keywords for carry provenance

    # A second run resumes: no training step runs again, the alias moves to a new version.
    lines.clear()
    again = run_demo(settings, options, echo=lines.append)
    assert not any(line.endswith("...") for line in lines if line.startswith("[demo-test]"))
    assert alias_target(cluster, index_name) == f"{index_name}-r0-3"
    assert again.reports[1]["F1"] == pytest.approx(result.reports[1]["F1"])
