"""Where a local node's own files (config, data, logs) live: its home, or for a root
caller a folder of the node's system user (`stock`'s docstring says why).

Why a module of its own: the node's configuration (`stock`), its keystore (`keystore`) and
its removal (`cleanup`) all need the folder, and `stock` uses the keystore.
"""

from __future__ import annotations

import hashlib
import os
from pathlib import Path

from cogr_search.localnode import service_user
from cogr_search.localnode.service_user import NodeUser

RUNTIMES = "nodes"


def runtime_dir(home: Path, user: NodeUser | None = None) -> Path:
    """The folder holding the node's config, data and logs (see the module docstring)."""
    user = user if user is not None else _user_for_lookup()
    if user.is_caller:
        return home
    digest = hashlib.sha256(str(home).encode()).hexdigest()[:16]
    return user.home / RUNTIMES / digest


def runtimes_root() -> Path:
    """Where runtime folders outside their homes live (a root caller's nodes)."""
    return service_user.HOME / RUNTIMES


def _user_for_lookup() -> NodeUser:
    """The node's user without creating it (a lookup must not add a system user)."""
    if os.geteuid() != 0:
        return NodeUser(name="caller")

    return NodeUser(name=service_user.NAME, uid=0, gid=0, home=service_user.HOME)
