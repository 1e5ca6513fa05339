"""A non-editable install finds everything it reads at run time.

The wheel is built from a copy of the sources (so the checkout gets no build/ or
egg-info), installed with pip into an empty folder, and a fresh interpreter that
imports the package from there (not from this checkout) loads the index template,
the prompts and the sample catalog.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

from tests.conftest import REPO_ROOT

PROBE = """
import json, cogr_search
from cogr_search.cluster.mappings import item_properties, mappings_dir
from cogr_search.generators.prompts import load_prompts
from cogr_search.data import load_dataset, sample_catalog_path
dataset = load_dataset(sample_catalog_path())
print(json.dumps({
    "package": cogr_search.__file__,
    "mappings": str(mappings_dir()),
    "keyword_field": item_properties()["cogr_keywords"]["type"],
    "prompts": bool(load_prompts()),
    "items": len(dataset.items),
    "threshold": dataset.relevance_threshold,
}))
"""


def _pip(*args: str, cwd: Path) -> None:
    done = subprocess.run([sys.executable, "-m", "pip", *args], cwd=cwd, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]


def test_wheel_ships_mappings_prompts_and_sample_data(tmp_path: Path) -> None:
    source = tmp_path / "src"
    source.mkdir()
    for name in ("pyproject.toml", "README.md"):
        shutil.copy(REPO_ROOT / name, source / name)
    shutil.copytree(REPO_ROOT / "cogr_search", source / "cogr_search", ignore=shutil.ignore_patterns("__pycache__"))
    _pip("wheel", "--no-deps", "--no-build-isolation", "--no-index", "-w", str(tmp_path / "dist"), str(source), cwd=tmp_path)
    (wheel,) = (tmp_path / "dist").glob("cogr_search-*.whl")
    names = set(zipfile.ZipFile(wheel).namelist())
    for needed in (
        "cogr_search/mappings/index/cogr-items.json",
        "cogr_search/mappings/pipelines/cogr.json",
        "cogr_search/mappings/pipelines/cogr-ingest.json",
        "cogr_search/mappings/pipelines/cogr-title-keyword-v1.json",
        "cogr_search/mappings/security/opensearch-roles.json",
        "cogr_search/mappings/security/elasticsearch-roles.json",
        "cogr_search/resources/prompts/default.json",
        "cogr_search/sample_data/homegoods/corpus.jsonl",
        "cogr_search/sample_data/homegoods/cogr-dataset.json",
    ):
        assert needed in names, needed
    target = tmp_path / "site"
    _pip("install", "--no-deps", "--no-index", "--target", str(target), str(wheel), cwd=tmp_path)
    env = {k: v for k, v in os.environ.items() if not k.startswith("COGR_")}
    env["PYTHONPATH"] = str(target)
    done = subprocess.run([sys.executable, "-c", PROBE], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr[-3000:]
    found = json.loads(done.stdout)
    assert Path(found["package"]).is_relative_to(target)  # the installed copy, not the checkout
    assert Path(found["mappings"]).is_relative_to(target)
    assert found["keyword_field"] == "keyword" and found["prompts"]
    assert found["items"] == 359 and found["threshold"] == 1.0
