"""Every `COGR_*` variable is read through the settings object."""

from __future__ import annotations

import re
from pathlib import Path

from cogr_search.settings import Settings, load_settings
from tests.conftest import REPO_ROOT

READ = re.compile(r"os\.(?:environ(?:\.get)?|getenv)\s*[\[(]\s*([A-Za-z_\.]+|\"[^\"]+\"|'[^']+')")
# Modules outside this change's area that still read their variable directly; each has
# a Settings field ready (runs_dir, torch_threads, backend, plugins_dir). Shrink this
# as they switch to `load_settings()`; the test fails on any read not listed here.
PENDING: dict[str, str] = {}


ENVVAR = re.compile(r"envvar\s*=\s*\"(COGR_[A-Z_]+)\"")
PENDING_CLICK: dict[str, list[str]] = {}  # click options never read the environment


def test_no_click_option_reads_a_cogr_variable_itself() -> None:
    found = {}
    for path in sorted((REPO_ROOT / "cogr_search").rglob("*.py")):
        names = ENVVAR.findall(path.read_text(encoding="utf-8"))
        if names:
            found[path.relative_to(REPO_ROOT).as_posix()] = names
    assert found == PENDING_CLICK


def _direct_reads() -> dict[str, str]:
    found = {}
    for path in sorted((REPO_ROOT / "cogr_search").rglob("*.py")):
        rel = path.relative_to(REPO_ROOT).as_posix()
        for match in READ.finditer(path.read_text(encoding="utf-8")):
            name = match.group(1)
            if "COGR" in name or name.endswith("_ENV"):
                assert rel not in found, f"{rel}: more than one direct read"
                found[rel] = name
    return found


def test_no_cogr_variable_is_read_around_the_settings() -> None:
    assert _direct_reads() == PENDING


def test_every_variable_has_a_field(monkeypatch, tmp_path: Path) -> None:
    env = {
        "COGR_CLUSTER_URL": "http://127.0.0.1:1",
        "COGR_RUNS_DIR": str(tmp_path / "runs"),
        "COGR_TORCH_THREADS": "2",
        "COGR_BACKEND": "transformers",
        "COGR_MAPPINGS_DIR": str(tmp_path),
        "COGR_PLUGINS_DIR": str(tmp_path / "plugins"),
        "COGR_DEBUG": "1",
        "COGR_ENGINE": "elasticsearch",
    }
    for key, value in env.items():
        monkeypatch.setenv(key, value)
    monkeypatch.delenv("COGR_OPENSEARCH_URL", raising=False)
    s = load_settings()
    assert (s.cluster_url, s.runs_dir, s.torch_threads, s.backend) == ("http://127.0.0.1:1", tmp_path / "runs", 2, "transformers")
    assert (s.mappings_dir, s.plugins_dir, s.debug, s.engine) == (tmp_path, tmp_path / "plugins", True, "elasticsearch")
    monkeypatch.setenv("COGR_OPENSEARCH_URL", "http://127.0.0.1:2")
    assert load_settings().cluster_url == "http://127.0.0.1:1"  # the engine-neutral name wins over the older one
    monkeypatch.delenv("COGR_CLUSTER_URL")
    assert load_settings().cluster_url == "http://127.0.0.1:2"  # the older name still works
    monkeypatch.setenv("COGR_CLUSTER_URL", "http://127.0.0.1:1")
    assert load_settings(opensearch_url="http://127.0.0.1:3").cluster_url == "http://127.0.0.1:3"  # flags win
    monkeypatch.setenv("OPENSEARCH_URL", "http://elsewhere:9")  # no prefix: not ours
    monkeypatch.delenv("COGR_OPENSEARCH_URL")
    monkeypatch.delenv("COGR_CLUSTER_URL")
    assert load_settings().cluster_url is None
    assert "runs_dir" in Settings.model_fields


def test_mappings_dir_override_goes_through_the_settings(monkeypatch, tmp_path: Path) -> None:
    from cogr_search.cluster.mappings import mappings_dir

    monkeypatch.setenv("COGR_MAPPINGS_DIR", str(tmp_path))
    assert mappings_dir(load_settings().mappings_dir) == tmp_path
    monkeypatch.delenv("COGR_MAPPINGS_DIR")
    assert load_settings().mappings_dir is None
    assert (mappings_dir(load_settings().mappings_dir) / "cogr-items.json").is_file()


def test_unknown_engine_is_a_settings_error(monkeypatch) -> None:
    import pydantic
    import pytest

    monkeypatch.setenv("COGR_ENGINE", "solr")
    with pytest.raises(pydantic.ValidationError, match="engine"):
        load_settings()


def test_backend_accepts_exactly_the_documented_values(monkeypatch) -> None:
    import pydantic
    import pytest

    for value in ("auto", "transformers", "vllm"):
        monkeypatch.setenv("COGR_BACKEND", value)
        assert load_settings().backend == value
    monkeypatch.setenv("COGR_BACKEND", "hf")
    with pytest.raises(pydantic.ValidationError, match="backend"):
        load_settings()


def test_resolve_url_finds_a_local_node_of_either_engine(tmp_path: Path) -> None:
    import json

    from cogr_search.connect import resolve_url

    settings = Settings(home=tmp_path, cluster_url=None, local_port=9299)
    assert resolve_url(settings) == "http://127.0.0.1:9299"
    record = {"pid": 1, "port": 9201, "url": "http://127.0.0.1:9201/"}
    (tmp_path / "elasticsearch").mkdir()
    (tmp_path / "elasticsearch" / "node.json").write_text(json.dumps(record))
    assert resolve_url(settings) == "http://127.0.0.1:9201"
    (tmp_path / "opensearch").mkdir()
    (tmp_path / "opensearch" / "node.json").write_text(json.dumps({**record, "port": 9200, "url": "http://127.0.0.1:9200"}))
    assert resolve_url(settings) == "http://127.0.0.1:9200"
    assert resolve_url(load_settings(home=tmp_path, opensearch_url="http://db:9200/")) == "http://db:9200"


def test_a_whole_model_validation_error_names_the_model_not_a_setting() -> None:
    """A pydantic error with no field (a library's own config check, e.g. vLLM's ModelConfig
    refusing max_model_len) is not one of ours: the CLI's line names the model, not
    `setting '?' (flag or COGR_?)`; a field's error still names the setting."""
    import pydantic
    import pytest

    from cogr_search.cli.main import describe_failure

    class ModelConfig(pydantic.BaseModel):
        max_model_len: int = 2048

        @pydantic.model_validator(mode="after")
        def check(self):  # noqa: ANN202
            raise ValueError("max_model_len (2048) is greater than the derived max_model_len")

    with pytest.raises(pydantic.ValidationError) as whole:
        ModelConfig()
    assert describe_failure(whole.value).startswith("ModelConfig: Value error, max_model_len (2048)")
    with pytest.raises(pydantic.ValidationError) as field:
        ModelConfig(max_model_len="many")
    assert describe_failure(field.value).startswith("setting 'max_model_len' (flag or COGR_MAX_MODEL_LEN)")
