"""Progress bars are drawn for a person at a terminal and for no one else: `expand
--file` (one of the long steps that share `cogr_search.progress`) run as a real
subprocess with stderr on a pseudo-terminal, on a pipe, and with --json."""

from __future__ import annotations

import fcntl
import json
import os
import struct
import subprocess
import sys
import termios
from pathlib import Path

import pytest
from click.testing import CliRunner

from cogr_search.cli.main import cli
from cogr_search.progress import progress_bar, progress_wanted
from tests.serve_support import subprocess_env
from tests.student_support import make_keyword_run

BAR = "expand queries.jsonl"


@pytest.fixture(scope="module")
def expand_args(tmp_path_factory: pytest.TempPathFactory) -> list[str]:
    """`expand --file` over 300 queries with a distilled run's query student."""
    folder = tmp_path_factory.mktemp("progress")
    run = make_keyword_run(folder / "runs")
    done = CliRunner().invoke(cli, ["train", "distill", "--run", str(run.root), "--threads", "1", "--json"])
    assert done.exit_code == 0, done.output
    queries = folder / "queries.jsonl"
    queries.write_text("".join(json.dumps({"_id": f"q{n}", "text": f"oak table {n}"}) + "\n" for n in range(300)))
    return ["expand", "--file", str(queries), "--out", str(folder / "keywords.jsonl"), "--run", str(run.root)]


def _run(args: list[str], terminal: bool) -> tuple[int, str]:
    """Run the CLI; return its exit code and everything it wrote on stderr."""
    command = [sys.executable, "-m", "cogr_search.cli", *args]
    if not terminal:
        done = subprocess.run(command, capture_output=True, text=True, env=subprocess_env(), timeout=120)
        return done.returncode, done.stderr
    leader, follower = os.openpty()
    fcntl.ioctl(follower, termios.TIOCSWINSZ, struct.pack("HHHH", 24, 100, 0, 0))  # a new pty is 0 columns wide
    proc = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=follower, env=subprocess_env())
    os.close(follower)
    chunks = []
    while True:  # until the child closes the terminal (EIO), so a full pty buffer never blocks it
        try:
            chunk = os.read(leader, 4096)
        except OSError:
            break
        if not chunk:
            break
        chunks.append(chunk)
    os.close(leader)
    return proc.wait(timeout=120), b"".join(chunks).decode("utf-8", "replace")


def test_a_terminal_gets_a_bar(expand_args: list[str]) -> None:
    code, stderr = _run(expand_args, terminal=True)
    assert code == 0, stderr
    assert BAR in stderr and "/300" in stderr and "query" in stderr
    assert "300 queries ->" in stderr  # the summary line follows the bar


def test_no_bar_into_a_pipe_or_under_json(expand_args: list[str]) -> None:
    code, piped = _run(expand_args, terminal=False)
    assert code == 0, piped
    assert BAR not in piped and "\r" not in piped and "300 queries ->" in piped
    code, as_json = _run([*expand_args, "--json"], terminal=True)
    assert code == 0, as_json
    assert BAR not in as_json and "\r" not in as_json


def test_the_switch_follows_the_stream_and_the_flags(capsys: pytest.CaptureFixture[str]) -> None:
    assert progress_wanted() is False  # pytest's captured stderr is no terminal
    with progress_bar(3, "hidden", "step", enabled=False) as bar:
        bar.update(3)
    assert capsys.readouterr().err == ""
