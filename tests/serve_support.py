"""Helpers for the serving tests: a small run directory and a real service process.

The run is round 0 of a run whose two generators are the converted base model
(linked, not copied), with a short generation budget in its config: serving does not
care how well a model was trained, and a run made this way costs seconds instead of
the minutes SFT takes on 2 shared cores. The service is `cogr-search serve` started as
a subprocess on a free loopback port; readiness is `GET /health` answering, polled with
a deadline.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Sequence
from pathlib import Path

from cogr_search.generators.model_cache import ensure_default_model
from cogr_search.generators.prompts import load_prompts
from cogr_search.training.run_dir import RunDir, weights_digest

from tests.conftest import REPO_ROOT, free_port

START_DEADLINE_S = 180.0


def make_base_run(runs_dir: Path, name: str = "serve-test", max_new_tokens: int = 12) -> RunDir:
    """A complete round-0 run whose query and item generators are the base model."""
    model = ensure_default_model()
    run = RunDir.create(name, runs_dir)
    run.write_config({"item_keywords": 10, "query_top_n": 15, "k_max": 30,
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


def http(method: str, url: str, payload: object = None, raw: bytes | None = None, timeout: float = 120.0) -> tuple[int, dict]:
    """(status, JSON body) of one request; HTTP errors are answers, not exceptions."""
    data = raw if raw is not None else (None if payload is None else json.dumps(payload).encode())
    request = urllib.request.Request(url, data=data, method=method, headers={"Content-Type": "application/json"})
    try:
        with urllib.request.urlopen(request, timeout=timeout) as response:
            return response.status, json.loads(response.read())
    except urllib.error.HTTPError as err:
        return err.code, json.loads(err.read())


class ServiceProcess:
    """`cogr-search serve` in a subprocess; a context manager that waits for /health."""

    def __init__(self, run: RunDir, *options: str) -> None:
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.args = [sys.executable, "-m", "cogr_search.cli", "serve", "--run", str(run.root),
                     "--port", str(self.port), *options]
        self.process: subprocess.Popen | None = None

    def __enter__(self) -> ServiceProcess:
        self.process = subprocess.Popen(self.args, env=subprocess_env(), stdout=subprocess.PIPE,
                                        stderr=subprocess.PIPE, text=True)
        deadline = time.monotonic() + START_DEADLINE_S
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise RuntimeError(f"service exited with {self.process.returncode}: {self.process.stderr.read()}")
            try:
                if http("GET", self.url + "/health", timeout=2)[0] == 200:
                    return self
            except OSError:
                pass
            time.sleep(0.2)  # polling a condition with a deadline, not synchronising by sleep
        self.__exit__()
        raise RuntimeError(f"service on {self.url} not ready within {START_DEADLINE_S} s")

    def __exit__(self, *exc: object) -> None:
        if self.process is not None and self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(timeout=20)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()

    def health(self) -> dict:
        return http("GET", self.url + "/health")[1]

    def post(self, route: str, payload: object = None, raw: bytes | None = None) -> tuple[int, dict]:
        return http("POST", self.url + route, payload, raw)

    def expand(self, texts: Sequence[str]) -> list[list[str]]:
        status, body = self.post("/v1/expand/query", {"texts": list(texts)})
        assert status == 200, body
        return body["keywords"]
