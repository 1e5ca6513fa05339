"""Help texts send readers only to files that exist: every `*.md` path any command's
`--help` names is a file of the repository (placeholders such as `<run>/phases.md`,
which name a file a command writes, are not citations)."""

from __future__ import annotations

import re
from pathlib import Path

import click

from cogr_search.cli.main import cli

REPO_ROOT = Path(__file__).resolve().parents[1]
MD_PATH = re.compile(r"[\w./<>-]+\.md\b")


def _helps(command: click.Command, path: list[str]) -> list[tuple[str, str]]:
    """(command line, help text) of `command` and every subcommand under it."""
    found = [(" ".join(path), command.get_help(click.Context(command, info_name=" ".join(path))))]
    if isinstance(command, click.Group):
        for name, sub in sorted(command.commands.items()):
            found += _helps(sub, [*path, name])
    return found


def test_every_md_path_in_a_help_text_exists() -> None:
    helps = _helps(cli, ["cogr-search"])
    assert len(helps) > 30  # every command was reached
    cited = [(line, name.rstrip(".")) for line, text in helps for name in MD_PATH.findall(text) if "<" not in name]
    assert any(name == "docs/students.md" for _, name in cited)  # the check sees real citations
    missing = [f"{line}: {name}" for line, name in cited if not (REPO_ROOT / name).is_file()]
    assert missing == []
    # nor paths that exist only beside a developer's checkout
    assert [line for line, text in helps if "shared/data" in text] == []


def test_index_help_says_what_the_group_does() -> None:
    text = _helps(cli, ["cogr-search"])
    index_help = dict(text)["cogr-search index"]
    assert "inspect" not in index_help and "create" in dict(text)["cogr-search index"].lower()


def test_serve_help_shows_a_request_for_each_route_and_the_openapi_page() -> None:
    text = dict(_helps(cli, ["cogr-search"]))["cogr-search serve"]
    for route in ("/v1/expand/query", "/v1/expand/item", "/health"):
        assert f"curl -s localhost:8300{route}" in text
    assert "/docs" in text and "docs/service.md" in text
