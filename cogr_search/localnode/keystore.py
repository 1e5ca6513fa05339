"""Secure settings of a stock node, put into its keystore with the distribution's own
`bin/opensearch-keystore` or `bin/elasticsearch-keystore` (`create`, then `add --stdin
--force`), as operators do.

Why the tool and not a file written here: the keystore's format is the distribution's
business, and a secure setting (such as the plugin's `plugins.cogr.service_token`) must
never sit in `opensearch.yml`. Before the first start `stock.prepare` calls `put`; on a
running node, `put` then `POST _nodes/reload_secure_settings` swaps a reloadable one.
"""

from __future__ import annotations

import subprocess
from collections.abc import Mapping
from pathlib import Path

from cogr_search.localnode.engine_lines import EngineLine, LocalNodeError
from cogr_search.localnode.service_user import NodeUser
from cogr_search.localnode.distribution import ensure_distribution, java_env
from cogr_search.localnode.service_user import node_user
from cogr_search.localnode.runtime import runtime_dir

def put(dist: Path, config: Path, env: Mapping[str, str], user: NodeUser, engine: EngineLine,
        values: Mapping[str, str]) -> None:
    """Create ``config``'s keystore if it has none, then set each of ``values`` (replacing
    an older value), running the tool as the node's user so the node can read the file."""
    if not values:
        return
    name = engine.engine.name  # opensearch or elasticsearch: the tool's and the file's prefix
    tool = dist / "bin" / f"{name}-keystore"
    tool_env = {**env, engine.conf_variable: str(config)}
    if user.home is not None:
        tool_env["HOME"] = str(user.home)
    if not (config / f"{name}.keystore").is_file():
        _tool(tool, tool_env, user, ["create"])
    for setting, value in values.items():
        _tool(tool, tool_env, user, ["add", "--stdin", "--force", setting], stdin=value)


def put_into_node(home: Path, engine: EngineLine, values: Mapping[str, str]) -> None:
    """`put` for the node of ``home`` (started or not), with its distribution and config folder."""

    user = node_user()
    put(ensure_distribution(engine, user), runtime_dir(home, user) / "config", java_env(engine), user, engine, values)


def _tool(tool: Path, env: Mapping[str, str], user: NodeUser, args: list[str], stdin: str | None = None) -> None:
    done = subprocess.run([str(tool), *args], input=stdin, env=dict(env), capture_output=True,
                          text=True, check=False, **user.popen_args())
    if done.returncode != 0:
        last = (done.stderr.strip() or done.stdout.strip()).splitlines()[-1:] or ["(no output)"]
        # never the value: it is a secret
        raise LocalNodeError(f"{tool.name} {' '.join(args)} failed (exit {done.returncode}): {last[0]}")
