"""Who a local node runs as: the caller, or, when the caller is root, a dedicated system user.

Why: the stock OpenSearch and Elasticsearch distributions refuse to run as root ("can not
run opensearch as root", with no override in 2.19), and these machines, CI and most
containers run as root. So a root caller starts the node as ``cogr-search``, a system user
without a login shell that this module creates once (``useradd --system``), and gives it
the node's files; a non-root caller runs the node as itself.

Root also keeps its caches and homes under ``/root``, which no other user may enter, so a
node started by root keeps what the node reads and writes (its distribution and its
runtime folder) under the user's own ``/var/lib/cogr-search``.
"""

from __future__ import annotations

import os
import pwd
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

from cogr_search.localnode.engine_lines import LocalNodeError

NAME = "cogr-search"
HOME = Path("/var/lib/cogr-search")


@dataclass(frozen=True)
class NodeUser:
    """The account a node process runs as (``uid`` None: the caller itself)."""

    name: str
    uid: int | None = None
    gid: int | None = None
    home: Path | None = None

    @property
    def is_caller(self) -> bool:
        return self.uid is None

    def popen_args(self) -> dict:
        """Arguments for `subprocess.Popen` that switch to this user (none for the caller)."""
        if self.is_caller:
            return {}
        return {"user": self.uid, "group": self.gid, "extra_groups": []}

    def give(self, *paths: Path) -> None:
        """Make ``paths`` (recursively) this user's, so the node may write there."""
        if self.is_caller:
            return
        for path in paths:
            for dirpath, dirnames, filenames in os.walk(path):
                os.chown(dirpath, self.uid, self.gid)
                for name in dirnames + filenames:
                    os.lchown(os.path.join(dirpath, name), self.uid, self.gid)


def node_user() -> NodeUser:
    """The caller when it is not root; else the ``cogr-search`` system user, created once."""
    if os.geteuid() != 0:
        return NodeUser(name=pwd.getpwuid(os.geteuid()).pw_name)
    try:
        entry = pwd.getpwnam(NAME)
    except KeyError:
        entry = _create()
    home = Path(entry.pw_dir)
    home.mkdir(parents=True, exist_ok=True)
    os.chown(home, entry.pw_uid, entry.pw_gid)
    home.chmod(0o755)
    return NodeUser(name=NAME, uid=entry.pw_uid, gid=entry.pw_gid, home=home)


def _create() -> pwd.struct_passwd:
    useradd = shutil.which("useradd") or "/usr/sbin/useradd"
    if not Path(useradd).exists():
        raise LocalNodeError(
            f"the node must not run as root and 'useradd' is missing to create the user {NAME}; "
            "run cogr-search as an ordinary user"
        )
    cmd = [useradd, "--system", "--home-dir", str(HOME), "--create-home", "--shell", "/usr/sbin/nologin", NAME]
    done = subprocess.run(cmd, capture_output=True, text=True, check=False)
    if done.returncode not in (0, 9):  # 9: created meanwhile by a concurrent caller
        raise LocalNodeError(f"could not create the user {NAME} ({' '.join(cmd)}): {done.stderr.strip()}")
    print(
        f"created the system user {NAME} ({HOME}): local nodes run as it, since OpenSearch and "
        "Elasticsearch refuse to run as root",
        file=sys.stderr,
    )
    return pwd.getpwnam(NAME)
