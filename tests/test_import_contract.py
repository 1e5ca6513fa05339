"""The import contract (pyproject.toml's `[tool.importlinter]`): the layers hold, every package
is named in them, and an import inside a function is there only to keep a heavy library off
the CLI's start, and says so.

grimp (under import-linter) counts imports inside functions as well, so a kept layers contract
also means no cycle among cogr_search's packages."""

from __future__ import annotations

import ast
import json
import subprocess
import sys
import tomllib
from pathlib import Path

from tests.serve_support import subprocess_env

REPO_ROOT = Path(__file__).resolve().parents[1]
PACKAGE = REPO_ROOT / "cogr_search"
HEAVY = {"torch", "transformers", "trl", "vllm", "datasets", "peft", "accelerate", "sentence_transformers",
         "matplotlib", "scipy", "sklearn", "fastapi", "uvicorn", "testcontainers", "gguf", "pandas"}
"""Libraries whose import costs the CLI's start 0.4 s or more (measured with -X importtime)."""
COMMENT_WORDS = ("heavy:", "optional dependency")


def _layers() -> list[str]:
    config = tomllib.loads((REPO_ROOT / "pyproject.toml").read_text())["tool"]["importlinter"]
    (contract,) = [c for c in config["contracts"] if c["type"] == "layers"]
    return contract["layers"]


def test_lint_imports_keeps_the_layers_contract() -> None:
    lint = Path(sys.executable).with_name("lint-imports")
    done = subprocess.run([str(lint), "--no-cache"], cwd=REPO_ROOT, env=subprocess_env(), capture_output=True,
                          text=True, timeout=300, check=False)
    assert done.returncode == 0, done.stdout[-4000:] + done.stderr[-2000:]
    assert "1 kept, 0 broken" in done.stdout


def test_the_contract_names_every_package_and_module() -> None:
    named = {part.strip().strip("()") for layer in _layers() for part in layer.split("|")}
    present = {f"cogr_search.{p.stem if p.is_file() else p.name}" for p in PACKAGE.iterdir()
               if (p.is_dir() and (p / "__init__.py").exists()) or (p.suffix == ".py" and p.stem != "__init__")}
    assert present - named == set(), "packages or modules missing from the layers contract"
    assert named - present == set(), "layers naming what does not exist"


def _nested_imports() -> list[tuple[Path, int, ast.Import | ast.ImportFrom, str]]:
    found = []
    for path in sorted(PACKAGE.rglob("*.py")):
        lines = path.read_text().splitlines()
        for fn in ast.walk(ast.parse("\n".join(lines))):
            if isinstance(fn, (ast.FunctionDef, ast.AsyncFunctionDef)):
                found += [(path, node.lineno, node, lines[node.lineno - 1]) for node in ast.walk(fn)
                          if isinstance(node, (ast.Import, ast.ImportFrom))]
    return sorted({(p, n): (p, n, node, line) for p, n, node, line in found}.values(), key=lambda row: row[:2])


def _targets(node: ast.Import | ast.ImportFrom) -> list[str]:
    return [node.module or ""] if isinstance(node, ast.ImportFrom) else [alias.name for alias in node.names]


def test_imports_inside_functions_keep_heavy_libraries_off_the_start_and_say_so() -> None:
    nested = _nested_imports()
    uncommented = [f"{p.relative_to(REPO_ROOT)}:{n}" for p, n, _node, line in nested
                   if not any(word in line for word in COMMENT_WORDS)]
    assert uncommented == [], "an import inside a function without its reason (# heavy: ... or # optional dependency)"
    internal = sorted({t for _p, _n, node, _line in nested for t in _targets(node) if t.startswith("cogr_search")})
    light_third_party = sorted({f"{p.relative_to(REPO_ROOT)}:{n} {t}" for p, n, node, _line in nested
                                for t in _targets(node) if not t.startswith("cogr_search") and t.split(".")[0] not in HEAVY})
    assert light_third_party == [], "a light library imported inside a function: import it at the top"
    light = [module for module in internal if not _heavy_libraries_loaded_by(module)]
    assert light == [], "a light cogr_search module imported inside a function: import it at the top"


PROBE = """import importlib, json, sys
before = set(sys.modules)
importlib.import_module(sys.argv[1])
print(json.dumps(sorted({name.split(".")[0] for name in set(sys.modules) - before})))
"""


def _heavy_libraries_loaded_by(module: str) -> set[str]:
    """The heavy libraries that importing ``module`` alone loads (a fresh interpreter)."""
    done = subprocess.run([sys.executable, "-c", PROBE, module], cwd=REPO_ROOT, env=subprocess_env(),
                          capture_output=True, text=True, timeout=120, check=True)
    return set(json.loads(done.stdout)) & HEAVY
