"""Removing a local node completely (`stop --purge`): its process, its runtime folder and
what it wrote into its home.

Why: a root caller's node keeps its config, data and logs outside its home
(`runtime.runtime_dir`), so deleting the home leaves them behind, and a later start on the
same home would find the earlier node's security index (`stock.stale_runtime`). Purging
removes both places; the home itself goes too once nothing else is in it. Only what a
node writes is removed (the names below), never other files a user keeps in the home.
"""

from __future__ import annotations

import contextlib
import shutil
from dataclasses import dataclass
from pathlib import Path

import psutil

from cogr_search.localnode import multinode, process, record, security, stock
from cogr_search.localnode.runtime import runtime_dir, runtimes_root
from cogr_search.localnode.engine_lines import ENGINE_LINES

# What a node writes into its home (a caller's node: its runtime folder's too).
HOME_ENTRIES = (
    record.RECORD_NAME, record.LAST_PORT_NAME, record.LAST_TRANSPORT_PORT_NAME, process.LINE_FILE,
    security.PASSWORD_FILE, security.CA_NAME, stock.LINK, "config", "data", "logs", multinode.RECORD,
    *(f"n{i}" for i in range(1, multinode.MAX_NODES + 1)),
)
LOCK_NAME = ".node.lock"


@dataclass(frozen=True)
class Purged:
    """What `purge` did: whether a node was stopped, the paths removed, and whether the home
    stayed (it holds files no node wrote)."""

    stopped: bool
    removed: tuple[Path, ...]
    home_kept: bool


def purge(home: Path) -> Purged:
    """Stop the node (or cluster) of ``home`` and remove everything it wrote, here and in its
    runtime folder outside the home; a process left running from a deleted home's runtime
    folder is stopped too."""
    home = record.norm_home(home)
    if multinode.is_cluster_home(home):
        stopped = multinode.stop_cluster(home)
        homes = [multinode.layout(home).node_home(i) for i in range(len(multinode.layout(home).ports))]
    else:
        stopped = process.stop(home) if home.is_dir() else False
        homes = []
    below = [h for h in _noted_homes(home) if h != home and h not in homes]  # a deleted cluster's nodes
    removed: list[Path] = []
    for node_home in [*homes, *below, home]:
        stopped = _stop_orphans(node_home) or stopped
        removed += _remove_node(node_home)
    return Purged(stopped=stopped, removed=tuple(removed), home_kept=home.exists())


def _stop_orphans(home: Path) -> bool:
    """Stop the processes running from ``home``'s config folder that no record names (the home
    was deleted while its node ran); True if there was one."""
    arguments = {stock.conf_argument(home, launcher) for launcher in ENGINE_LINES.values()}
    found = False
    for proc in psutil.process_iter(["cmdline"]):
        if arguments.intersection(proc.info["cmdline"] or ()):
            found = process._terminate(proc, grace=30.0) or found
    return found


def _remove_node(home: Path) -> list[Path]:
    """Remove ``home``'s runtime folder (outside it) and the node's entries in it; the home
    too when empty. Returns the paths removed."""
    removed = []
    runtime = runtime_dir(home)
    if runtime != home and runtime.exists():
        shutil.rmtree(runtime)
        removed.append(runtime)
    if not home.is_dir():
        return removed
    for name in HOME_ENTRIES:
        path = home / name
        if path.is_symlink() or path.is_file():
            path.unlink()
        elif path.is_dir():
            shutil.rmtree(path)
        else:
            continue
        removed.append(path)
    with contextlib.suppress(FileNotFoundError):
        (home / LOCK_NAME).unlink()
    with contextlib.suppress(OSError):  # not empty: the user's own files stay, and the home with them
        home.rmdir()
        removed.append(home)
    return removed


def purge_under(root: Path) -> list[Path]:
    """Purge every node whose home is ``root`` or below it, found through the runtime
    folders outside their homes (`stock.HOME_NOTE`) as well as the homes still there; the
    homes purged. Why: a test session's temporary folders are deleted by pytest, not by
    a `stop --purge`, and a root caller's runtime folders would outlive them."""
    root = record.norm_home(root)
    homes = {p.parent for name in (record.LAST_PORT_NAME, multinode.RECORD) for p in root.rglob(name)}
    homes |= {p.parent for p in root.rglob(stock.LINK) if p.is_symlink()}
    mine = sorted(h for h in homes | set(_noted_homes(root)) if h == root or root in h.parents)
    clusters = [h for h in mine if multinode.is_cluster_home(h)]
    mine = [h for h in mine if not any(c in h.parents for c in clusters)]  # a cluster's purge takes its nodes
    for home in mine:
        purge(home)
    return mine


def _noted_homes(root: Path) -> list[Path]:
    """The homes, ``root`` or below it, that runtime folders outside their homes name
    (`stock.HOME_NOTE`), whether or not those homes still exist."""
    homes = []
    for note in runtimes_root().glob(f"*/{stock.HOME_NOTE}"):
        with contextlib.suppress(OSError):
            home = Path(note.read_text().strip())
            if home == root or root in home.parents:
                homes.append(home)
    return homes
