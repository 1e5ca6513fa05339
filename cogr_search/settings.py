"""Settings shared by every command: flags first, then `COGR_*` environment variables.

pydantic-settings reads the environment; the CLI passes flags as overrides, so a value
given on the command line always wins over the environment, which wins over defaults.
This class is the one reader of `COGR_*` variables: every variable the package honours
is a field here (a test fails on an `os.environ` read of a `COGR_*` name elsewhere), so
`Settings.model_fields` is the complete list, with types checked in one place.

Who calls `load_settings()`: the CLI (each command, with its flags), and the few public
entry points a Python app calls without building settings itself, each for its own
default only: `RunDir.open` (the runs folder), `load_backend("auto")` (the engine),
`localnode.ensure_built`/`start` (the Maven project). Everything below them takes the
settings, or the one value, its caller passes: a `Cluster` carries its settings (its
index templates included), and the torch thread count is a process request the CLI
makes once (`generators.threads.request_threads`).
"""

from __future__ import annotations

from pathlib import Path
from typing import Literal

from pydantic import AliasChoices, Field, SecretStr
from pydantic_settings import BaseSettings, SettingsConfigDict


def _aliases(name: str) -> AliasChoices:
    """A connection field's variables: `COGR_CLUSTER_*` first, the older `COGR_OPENSEARCH_*` after
    (aliases name variables only; `load_settings` maps the older keyword names)."""
    return AliasChoices(f"COGR_CLUSTER_{name.upper()}", f"COGR_OPENSEARCH_{name.upper()}")


def _default_home() -> Path:
    return Path.home() / ".cache" / "cogr-search"


class Settings(BaseSettings):
    """Where the cluster (OpenSearch or Elasticsearch) is, how to reach it, and where local state lives.

    The connection fields are `cluster_*` (`COGR_CLUSTER_*`); their earlier names
    `opensearch_*` (`COGR_OPENSEARCH_*`, and `opensearch_*=` keywords of `load_settings`) still work."""

    # An empty variable (`COGR_CLUSTER_CA_CERTS=`) means unset, as in a shell: not the path ".".
    model_config = SettingsConfigDict(env_prefix="COGR_", extra="ignore", populate_by_name=True, env_ignore_empty=True)

    cluster_url: str | None = Field(
        default=None,
        validation_alias=_aliases("url"),
        description="An existing cluster (COGR_CLUSTER_URL, or the older COGR_OPENSEARCH_URL); unset: the local node under `home`.",
    )
    engine: Literal["auto", "opensearch", "elasticsearch"] = Field(
        default="auto",
        description="The cluster's engine (COGR_ENGINE): auto detects it from `GET /`.",
    )
    cluster_user: str | None = Field(default=None, validation_alias=_aliases("user"))
    cluster_password: SecretStr | None = Field(default=None, validation_alias=_aliases("password"))
    cluster_api_key: SecretStr | None = Field(
        default=None, validation_alias=_aliases("api_key"),
        description="An Elasticsearch API key, the `encoded` value `POST _security/api_key` returns (COGR_CLUSTER_API_KEY); "
        "instead of user and password.",
    )
    cluster_verify_certs: bool = Field(default=True, validation_alias=_aliases("verify_certs"))
    cluster_ca_certs: Path | None = Field(default=None, validation_alias=_aliases("ca_certs"))
    cluster_timeout_s: float = Field(default=30.0, validation_alias=_aliases("timeout_s"))
    cluster_retries: int = Field(default=4, ge=0, validation_alias=_aliases("retries"),
                                 description="Retries of transient failures.")
    cluster_retry_max_wait_s: float = Field(default=8.0, validation_alias=_aliases("retry_max_wait_s"))
    home: Path = Field(default_factory=_default_home, description="Caches and the local node.")
    runs_dir: Path = Field(default=Path("runs"), description="Folder of training runs (COGR_RUNS_DIR).")
    torch_threads: int | None = Field(default=None, ge=1, description="torch intra-op threads (COGR_TORCH_THREADS).")
    rank_timeout_s: float = Field(
        default=1800, gt=0, description="Seconds a training rank waits at a barrier (rank 0 may be syncing a large catalog)."
    )
    launched_processes: int | None = Field(
        default=None, description="Set by `--processes N` in the processes it starts, so they do not launch again."
    )
    backend: Literal["auto", "transformers", "vllm"] = Field(
        default="auto", description="Generation backend: auto, transformers or vllm (COGR_BACKEND)."
    )
    mappings_dir: Path | None = Field(default=None, description="Index templates instead of the packaged ones (COGR_MAPPINGS_DIR).")
    plugins_dir: Path | None = Field(default=None, description="Maven project of the plugins and launchers (COGR_PLUGINS_DIR).")
    container_engine: str | None = Field(
        default=None, description="The container engine command for images and test nodes (default: podman, else docker)."
    )
    test_nodes: str | None = Field(
        default=None, description="`containers`: the tests' session nodes run as containers of the project's images."
    )
    test_require: str | None = Field(
        default=None,
        description="What the tests must find rather than skip or deselect, comma-separated: `data` (the shared "
        "data sets beside the clone), `containers` (an engine that builds the images); .ci/run sets both.",
    )
    maven_repo: Path | None = Field(
        default=None, description="Maven's local repository, where stock distributions are fetched to (default ~/.m2/repository)."
    )
    java21_home: Path | None = Field(
        default=None,
        description="A JDK 21+ folder for the OpenSearch 3.x local node and its build (COGR_JAVA21_HOME); "
        "unset: JAVA_HOME or the java on PATH if 21+, else the newest JDK 21+ under /usr/lib/jvm.",
    )
    debug: bool = Field(default=False, description="Show tracebacks instead of one-line errors (read by the CLI's error handler).")
    local_port: int = 9200
    local_heap: str = "1g"
    node_jvm_options: str | None = Field(
        default=None,
        description="JVM options, space-separated, added to every local node's jvm.options.d (COGR_NODE_JVM_OPTIONS); "
        "the tests set -XX:TieredStopAtLevel=1, which halves a short-lived node's start-up CPU.",
    )
    service_url: str | None = Field(default=None, description="Expansion service for pipelines and search (COGR_SERVICE_URL).")
    service_token: SecretStr | None = Field(
        default=None, description="Bearer token sent to the expansion service (COGR_SERVICE_TOKEN)."
    )
    service_token_file: Path | None = Field(
        default=None, description="A file holding that token, read when COGR_SERVICE_TOKEN is unset (COGR_SERVICE_TOKEN_FILE)."
    )
    service_ca_certs: Path | None = Field(
        default=None, description="CA (PEM) that signed the https expansion service's certificate (COGR_SERVICE_CA_CERTS)."
    )
    serve_host: str = Field(default="127.0.0.1", description="Address `serve` binds (COGR_SERVE_HOST).")
    serve_port: int = Field(default=8300, ge=0, le=65535, description="Port `serve` listens on (COGR_SERVE_PORT).")

    @property
    def local_node_home(self) -> Path:
        return self.node_home("opensearch")

    def node_home(self, engine: str) -> Path:
        """Where `cogr-search <engine> start` keeps its node by default."""
        return self.home / engine


def load_settings(**overrides: object) -> Settings:
    """Build settings from the environment, with non-None overrides (CLI flags) on top;
    `opensearch_*` keywords are the older names of the `cluster_*` fields."""
    renamed = {(f"cluster_{k.removeprefix('opensearch_')}" if k.startswith("opensearch_") else k): v
               for k, v in overrides.items()}
    return Settings(**{k: v for k, v in renamed.items() if v is not None})
