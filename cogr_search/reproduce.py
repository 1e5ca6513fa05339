"""Declared results: a published figure is a file that a command can check again.

Like Anserini's and Pyserini's regressions, each reproduced result is one small TOML
file (the repository keeps them in reproduce/):

    title = "BM25 on the sample catalog, validation split"
    setup = ["cogr-search ingest {sample} --index {index}"]      # optional, run first
    command = "cogr-search eval --data {sample} --index {index} --method bm25 --json"
    documents = 359          # documents the index (or DATA, without an index) must hold
    tolerance = 0.0005       # absolute, for every metric unless [tolerances] says otherwise
    [metrics]
    P = 0.6843
    "NDCG@10" = 0.7012
    [tolerances]             # optional, per metric
    queries_per_s = 1e9

`reproduce` runs the setup commands, then the command (each a real `cogr-search`
process, so the file says exactly what a user would type), reads the one JSON object
the command prints, and compares every declared metric: OK when |got - expected| <=
tolerance, FAIL otherwise; the document count must match exactly. Placeholders:
`{sample}` is the sample catalog shipped in the package, `{index}` the alias (the file
name by default), `{data}` the folder given with `--data-root`. A metric's name is a key
of that object, or a dotted path into it (`"curve.sft.mean"`).
"""

from __future__ import annotations

import json
import math
import os
import shlex
import subprocess
import sys
import tomllib
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from cogr_search.data import sample_catalog_path
from cogr_search.errors import CogrError, InputError

PROGRAM = "cogr-search"
_KEYS = {"title", "setup", "command", "documents", "tolerance", "metrics", "tolerances", "notes"}


@dataclass(frozen=True)
class Declared:
    """One declared result, as read from its file."""

    path: Path
    title: str
    command: str
    documents: int
    tolerance: float
    metrics: dict[str, float]
    tolerances: dict[str, float] = field(default_factory=dict)
    setup: tuple[str, ...] = ()


@dataclass(frozen=True)
class Check:
    """One comparison: a metric (or `documents`) against its declared value."""

    name: str
    expected: float
    got: float | None
    tolerance: float

    @property
    def ok(self) -> bool:
        return self.got is not None and not math.isnan(self.got) and abs(self.got - self.expected) <= self.tolerance

    def line(self) -> str:
        got = "missing" if self.got is None else f"{self.got:.6g}"
        return f"{'OK' if self.ok else 'FAIL':<5}{self.name:<12} expected {self.expected:.6g}  got {got}  (tolerance {self.tolerance:g})"


def _number(path: Path, key: str, value: object) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise InputError(f"{path}: field {key!r}: expected a number, got {value!r}")
    return float(value)


def _command(path: Path, key: str, value: object) -> str:
    if not isinstance(value, str) or not value.split() or value.split()[0] != PROGRAM:
        raise InputError(f"{path}: field {key!r}: expected a command starting with {PROGRAM!r}, got {value!r}")
    return value


def read_declared(path: Path) -> Declared:
    """Parse and check one declared-result file; `InputError` names the file and field."""
    try:
        raw = tomllib.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise InputError(f"{path}: no such file") from None
    except UnicodeDecodeError as err:
        raise InputError(f"{path}: not valid UTF-8 (byte {err.object[err.start]:#04x} at offset {err.start})") from None
    except tomllib.TOMLDecodeError as err:
        raise InputError(f"{path}: invalid TOML ({err})") from None
    unknown = sorted(set(raw) - _KEYS)
    if unknown:
        raise InputError(f"{path}: unknown field {unknown[0]!r} (allowed: {', '.join(sorted(_KEYS))})")
    for key in ("command", "documents", "metrics"):
        if key not in raw:
            raise InputError(f"{path}: missing field {key!r}")
    metrics = raw["metrics"]
    if not isinstance(metrics, dict) or not metrics:
        raise InputError(f"{path}: field 'metrics': expected a table of metric = value")
    tolerances = raw.get("tolerances", {})
    if not isinstance(tolerances, dict):
        raise InputError(f"{path}: field 'tolerances': expected a table of metric = tolerance")
    documents = raw["documents"]
    if isinstance(documents, bool) or not isinstance(documents, int) or documents < 0:
        raise InputError(f"{path}: field 'documents': expected a whole number, got {documents!r}")
    setup = raw.get("setup", [])
    if not isinstance(setup, list):
        raise InputError(f"{path}: field 'setup': expected a list of commands")
    return Declared(
        path=path,
        title=str(raw.get("title", path.stem)),
        command=_command(path, "command", raw["command"]),
        documents=documents,
        tolerance=_number(path, "tolerance", raw.get("tolerance", 1e-4)),
        metrics={k: _number(path, f"metrics.{k}", v) for k, v in metrics.items()},
        tolerances={k: _number(path, f"tolerances.{k}", v) for k, v in tolerances.items()},
        setup=tuple(_command(path, f"setup[{i}]", c) for i, c in enumerate(setup)),
    )


def expand(command: str, placeholders: Mapping[str, str], path: Path) -> list[str]:
    """The command's arguments after `cogr-search`, placeholders filled in."""
    try:
        args = [arg.format_map(placeholders) for arg in shlex.split(command)]
    except KeyError as err:
        raise InputError(f"{path}: {command!r} uses {{{err.args[0]}}}, which is not set (see --data-root, --index)") from None
    return args[1:]


def placeholders(declared: Declared, index: str | None, data_root: Path | None) -> dict[str, str]:
    values = {"sample": str(sample_catalog_path()), "index": index or declared.path.stem.lower()}
    if data_root is not None:
        values["data"] = str(data_root)
    return values


def run_cli(args: Sequence[str], env: Mapping[str, str]) -> str:
    """Run `cogr-search ARGS` as its own process; its stdout, or the error line it printed.

    The child imports the same `cogr_search` as this process (its folder goes first on
    PYTHONPATH), so a checkout reproduces its own code, not another installed copy.
    """
    here = str(Path(__file__).resolve().parents[1])
    path = os.pathsep.join(p for p in (here, os.environ.get("PYTHONPATH", "")) if p)
    done = subprocess.run(
        [sys.executable, "-m", "cogr_search.cli", *args],
        capture_output=True,
        text=True,
        env={**os.environ, "PYTHONPATH": path, **env},
        check=False,
    )
    if done.returncode != 0:
        last = (done.stderr.strip().splitlines() or ["(no message)"])[-1]
        raise CogrError(f"`{PROGRAM} {shlex.join(args)}` exited {done.returncode}: {last}")
    return done.stdout


def _lookup(result: Mapping[str, object], name: str) -> object:
    """`name` in the command's JSON: a top-level key, else a dotted path into nested objects
    ("curve.sft.mean": `train metrics`' curve point of the phase sft)."""
    if name in result:
        return result[name]
    value: object = result
    for part in name.split("."):
        if not isinstance(value, Mapping) or part not in value:
            return None
        value = value[part]
    return value


def check_result(declared: Declared, result: Mapping[str, object], documents: int) -> list[Check]:
    """Every declared metric, then the document count, compared with what the run gave."""
    checks = []
    for name, expected in declared.metrics.items():
        got = _lookup(result, name)
        value = float(got) if isinstance(got, (int, float)) and not isinstance(got, bool) else None
        checks.append(Check(name, expected, value, declared.tolerances.get(name, declared.tolerance)))
    checks.append(Check("documents", float(declared.documents), float(documents), 0.0))
    return checks


def reproduce(
    declared: Declared,
    values: Mapping[str, str],
    env: Mapping[str, str],
    count_documents: Callable[[str], int],
    echo: Callable[[str], None],
) -> list[Check]:
    """Run the setup and the command, and compare. `count_documents(index)` asks the
    cluster; without an `--index` in the command, DATA's item count (`settings.items`)
    is the document count."""
    for command in declared.setup:
        args = expand(command, values, declared.path)
        echo(f"$ {PROGRAM} {shlex.join(args)}")
        run_cli(args, env)
    args = expand(declared.command, values, declared.path)
    if "--json" not in args:
        args.append("--json")
    echo(f"$ {PROGRAM} {shlex.join(args)}")
    output = run_cli(args, env)
    try:
        result = json.loads(output.strip().splitlines()[-1])
    except (json.JSONDecodeError, IndexError):
        raise CogrError(f"{declared.path}: the command did not print one JSON object") from None
    settings = result.get("settings", {}) if isinstance(result, dict) else {}
    index = settings.get("index")
    documents = count_documents(index) if index else int(settings.get("items", -1))
    return check_result(declared, result, documents)
