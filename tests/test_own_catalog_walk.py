"""The README's "Your own catalog" walk, run line by line as a new user would: each
command of its marked code block as a real `cogr-search` subprocess, on a ~2,000-item
subset of Crowdflower (../shared/data beside the clone), with the tiny model, against
the session's OpenSearch node.

What the test changes in the lines, and only this: the catalog variable points at the
subset, the index name is the test's own, and `train sft` gets the tiny model and
CI-sized caps appended (click keeps the last value of a repeated option), so the README's
figures stay the ones a user runs. Everything else is the README's text.

`COGR_WALK_CPU_MODEL=1` runs the lines unchanged, with the CPU model the README's user gets:
the README's timings of the walk come from that run
(`COGR_WALK_CPU_MODEL=1 python -m pytest -s tests/test_own_catalog_walk.py`; 79 min on 2 loaded cores)."""

from __future__ import annotations

import json
import os
import re
import shlex
import subprocess
import sys
import time
from pathlib import Path

import pytest

from cogr_search.data import load_dataset
from cogr_search.data.subset import judged_subset, write_beir
from tests.requirements_check import shared_data_set
from tests.serve_support import subprocess_env

pytestmark = pytest.mark.slow

REPO_ROOT = Path(__file__).resolve().parents[1]
MARKER = "<!-- own-catalog walk"
CPU_MODEL = os.environ.get("COGR_WALK_CPU_MODEL") == "1"
"""Run the README's lines as they are, with the default CPU model (a measurement, not CI)."""
CI_SFT = ["--items", "150", "--max-queries", "3", "--max-steps", "1", "--batch-size", "2", "--max-length", "256",
          "--gen-batch-size", "32", "--max-new-tokens", "12"]


def walk_commands(readme: Path) -> list[str]:
    """The marked bash block's commands, continuation lines joined, comments dropped."""
    text = readme.read_text(encoding="utf-8")
    start = text.index(MARKER)
    block = text[text.index("```bash\n", start) + len("```bash\n"): text.index("```", text.index("```bash\n", start) + 7)]
    joined = re.sub(r"\\\n\s*", " ", block)
    lines = (re.sub(r"(^|\s+)#.*$", "", line).strip() for line in joined.splitlines())
    return [line for line in lines if line]


@pytest.fixture(scope="module")
def catalog(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """50 Crowdflower queries and every item judged for them: 1,963 products."""
    source = shared_data_set("crowdflower")
    out = tmp_path_factory.mktemp("crowdflower-2k")
    write_beir(judged_subset(load_dataset(source), 50, seed=0), out, "test_own_catalog_walk: 50 Crowdflower queries")
    return out


def test_the_readme_walk_runs_on_a_crowdflower_subset(catalog: Path, opensearch_url: str, index_name: str,
                                                      tiny_model: Path, tmp_path: Path) -> None:
    commands = walk_commands(REPO_ROOT / "README.md")
    assert commands[0].startswith("C=") and any(c.startswith("cogr-search train sft") for c in commands)
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    launcher = bin_dir / "cogr-search"  # this checkout's CLI under the name the README uses
    launcher.write_text(f'#!/bin/sh\nexec {shlex.quote(sys.executable)} -m cogr_search.cli "$@"\n')
    launcher.chmod(0o755)
    env = {**subprocess_env(), "PATH": f"{bin_dir}{os.pathsep}{os.environ['PATH']}", "C": str(catalog),
           "COGR_CLUSTER_URL": opensearch_url, "COGR_RUNS_DIR": str(tmp_path / "runs")}
    env.pop("COGR_OPENSEARCH_URL", None)
    for command in commands[1:]:
        command = re.sub(r"\bproducts\b", index_name, command)
        if command.startswith("cogr-search train sft") and not CPU_MODEL:
            command = f"{command} --model {shlex.quote(str(tiny_model))} {shlex.join(CI_SFT)}"
        started = time.perf_counter()
        done = subprocess.run(["bash", "-c", command], cwd=tmp_path, env=env, capture_output=True, text=True,
                              timeout=None if CPU_MODEL else 300)
        print(f"{time.perf_counter() - started:6.1f} s  {command}")  # shown with -s: where a slow walk went
        assert done.returncode == 0, f"{command}\n{done.stdout}\n{done.stderr}"
        if CPU_MODEL:
            print("\n".join(line for line in done.stderr.splitlines() if "will take" in line or "F1" in line))
        assert "\r" not in done.stderr  # no bar, ours or a library's, into a pipe
        if command.startswith("cogr-search train sft"):
            assert "base item keywords: first" in done.stderr and "will take about" in done.stderr
    bm25 = json.loads((tmp_path / "bm25.json").read_text())
    hybrid = json.loads((tmp_path / "hybrid.json").read_text())
    assert bm25["method"] == "bm25" and hybrid["method"] == "hybrid"
    assert (tmp_path / "report.md").read_text().count("|") > 10
    if CPU_MODEL:
        print((tmp_path / "report.md").read_text())
