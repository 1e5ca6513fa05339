"""Settings shared by every command: flags first, then `COGR_*` environment variables.

pydantic-settings reads the environment; the CLI passes flags as overrides, so a value
given on the command line always wins over the environment, which wins over defaults.
This class is the one reader of `COGR_*` variables: every variable the package honours
is a field here (a test fails on an `os.environ` read of a `COGR_*` name elsewhere), so
`Settings.model_fields` is the complete list, with types checked in one place.
"""

from __future__ import annotations

from pathlib import Path
from typing import Literal

from pydantic import AliasChoices, Field, SecretStr
from pydantic_settings import BaseSettings, SettingsConfigDict


def _default_home() -> Path:
    return Path.home() / ".cache" / "cogr-search"


class Settings(BaseSettings):
    """Where the cluster (OpenSearch or Elasticsearch) is, how to reach it, and where local state lives.

    The `opensearch_*` connection fields keep their names (and `COGR_OPENSEARCH_*`
    variables) for compatibility; they apply to either engine."""

    model_config = SettingsConfigDict(env_prefix="COGR_", extra="ignore", populate_by_name=True)

    opensearch_url: str | None = Field(
        default=None,
        validation_alias=AliasChoices("COGR_CLUSTER_URL", "COGR_OPENSEARCH_URL"),
        description="An existing cluster (COGR_CLUSTER_URL, or the older COGR_OPENSEARCH_URL); unset: the local node under `home`.",
    )
    engine: Literal["auto", "opensearch", "elasticsearch"] = Field(
        default="auto",
        description="The cluster's engine (COGR_ENGINE): auto detects it from `GET /`.",
    )
    opensearch_user: str | None = None
    opensearch_password: SecretStr | None = None
    opensearch_verify_certs: bool = True
    opensearch_ca_certs: Path | None = None
    opensearch_timeout_s: float = 30.0
    opensearch_retries: int = Field(default=4, ge=0, description="Retries of transient failures.")
    opensearch_retry_max_wait_s: float = 8.0

    home: Path = Field(default_factory=_default_home, description="Caches and the local node.")
    runs_dir: Path = Field(default=Path("runs"), description="Folder of training runs (COGR_RUNS_DIR).")
    torch_threads: int | None = Field(default=None, ge=1, description="torch intra-op threads (COGR_TORCH_THREADS).")
    backend: str = Field(default="auto", description="Generation backend: auto, hf or vllm (COGR_BACKEND).")
    mappings_dir: Path | None = Field(default=None, description="Index templates instead of the packaged ones (COGR_MAPPINGS_DIR).")
    plugins_dir: Path | None = Field(default=None, description="Maven project of the local-node launcher (COGR_PLUGINS_DIR).")
    debug: bool = Field(default=False, description="Show tracebacks instead of one-line errors (read by the CLI's error handler).")
    local_port: int = 9200
    local_heap: str = "1g"
    service_url: str | None = Field(default=None, description="Expansion service for pipelines and search (COGR_SERVICE_URL).")
    serve_host: str = Field(default="127.0.0.1", description="Address `serve` binds (COGR_SERVE_HOST).")
    serve_port: int = Field(default=8300, ge=0, le=65535, description="Port `serve` listens on (COGR_SERVE_PORT).")

    @property
    def local_node_home(self) -> Path:
        return self.home / "opensearch"


def load_settings(**overrides: object) -> Settings:
    """Build settings from the environment, with non-None overrides (CLI flags) on top."""
    return Settings(**{k: v for k, v in overrides.items() if v is not None})
