"""Helpers for the serving tests: a small run directory and a real service process.

The run is round 0 of a run whose two generators are the converted base model
(linked, not copied), with a short generation budget in its config: serving does not
care how well a model was trained, and a run made this way costs seconds instead of
the minutes SFT takes on 2 shared cores. The service is `cogr-search serve` started as
a subprocess on a free loopback port; readiness is `GET /health` answering, polled with
a deadline.
"""

from __future__ import annotations

import os
from pathlib import Path

from cogr_search.generators.model_cache import ensure_default_model
from cogr_search.generators.prompts import load_prompts
from cogr_search.serve import process
from cogr_search.serve.process import http_json as http
from cogr_search.runs.run_dir import RunDir, weights_digest

from tests.conftest import REPO_ROOT

__all__ = ["ServiceProcess", "http", "make_base_run", "subprocess_env"]


def make_base_run(
    runs_dir: Path, name: str = "serve-test", max_new_tokens: int = 12, k_max: int = 30, model: Path | None = None
) -> RunDir:
    """A complete round-0 run whose query and item generators are `model` (default: the CPU
    model; tests of a path whose keywords' meaning does not matter pass the tiny one)."""
    model = model or ensure_default_model()
    run = RunDir.create(name, runs_dir)
    run.write_config({"data": "", "model": str(model), "item_keywords": 10, "query_top_n": 15, "k_max": k_max,
                      "generation": {"max_new_tokens": max_new_tokens, "dtype": "auto"}})
    load_prompts().save(run.prompts_path)
    digest = weights_digest(model)
    for side in ("query", "item"):
        folder = run.checkpoint_path(0, side)
        folder.parent.mkdir(parents=True, exist_ok=True)
        if not folder.exists():
            folder.symlink_to(model.resolve(), target_is_directory=True)
    run.mark_done("round-0", weights_sha256={"query": digest, "item": digest}, phase="base")
    return run


def subprocess_env() -> dict[str, str]:
    """This checkout first on the path (subprocesses must run the code under test)."""
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([str(REPO_ROOT), env.get("PYTHONPATH", "")]).rstrip(os.pathsep)
    env["COGR_TORCH_THREADS"] = "1"  # the cores are shared: see generators/threads.py
    return env


class ServiceProcess(process.ServiceProcess):
    """The service for a test: this checkout's code, one torch thread."""

    def __init__(self, run: RunDir, *options: str, token: str | None = None, ca_certs: Path | None = None) -> None:
        super().__init__(run.root, *options, env=subprocess_env(), token=token, ca_certs=ca_certs)
