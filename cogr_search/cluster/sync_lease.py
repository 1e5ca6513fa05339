"""One sync per alias, and a write freeze that cannot outlive the sync that set it.

The lease is a document in the cluster (index `cogr-sync-leases`, id = the alias), so
every host that syncs the alias sees it: created only if absent, holding the owner, host,
pid, phase and expiry, renewed by a heartbeat thread while the sync runs, and changed
only with compare-and-set (`if_seq_no`/`if_primary_term`), so two processes that both
find a stale lease cannot both take it over.

The short write freeze at the end of a sync is recorded in the same document before the
block is set. A holder is stale when its lease has expired, or at once when it ran on
this host and its process is gone (SIGKILL, crash). Whoever finds a stale holder (a
rerun, another sync of the alias, `sync --status`) lifts the freeze it left and says so.
"""

from __future__ import annotations

import contextlib
import os
import socket
import threading
import time
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass

import psutil

from cogr_search.cluster.client import Cluster
from cogr_search.cluster.sync_config import DEFAULT_LEASE_S
from cogr_search.cluster.engines import API_ERRORS, NOT_FOUND, status_of
from cogr_search.cluster.indices import set_write_block, write_blocked
from cogr_search.errors import CogrError

LEASE_INDEX = "cogr-sync-leases"
Notify = Callable[[str], None]


class SyncBusy(CogrError):
    """Another live sync holds the alias."""


class LeaseLost(CogrError):
    """This sync's lease was taken over (it stalled past its expiry): it must not swap."""


@dataclass(frozen=True)
class Holder:
    """The lease document as read, with what is needed to replace it safely."""

    doc: dict
    seq_no: int
    primary_term: int

    @property
    def who(self) -> str:
        return f"{self.doc.get('host')} pid {self.doc.get('pid')}"

    def age_s(self, now: float) -> float:
        return now - float(self.doc.get("acquired_at", now))

    def stale_reason(self, now: float) -> str | None:
        """Why the holder can no longer be syncing, or None while it may be."""
        expires = float(self.doc.get("expires_at", 0))
        if expires < now:
            return f"its lease expired {now - expires:.0f}s ago"
        if self.doc.get("host") == socket.gethostname() and not _alive(self.doc):
            return "its process is gone"
        return None


def _alive(doc: dict) -> bool:
    try:
        proc = psutil.Process(int(doc.get("pid", -1)))
        return proc.status() != psutil.STATUS_ZOMBIE and abs(proc.create_time() - float(doc.get("pid_started", 0))) < 1
    except (psutil.Error, ValueError):
        return False


def _ensure_index(cluster: Cluster) -> None:
    body = {"settings": {"number_of_shards": 1, "auto_expand_replicas": "0-1"}, "mappings": {"dynamic": False}}
    try:
        cluster.call(cluster.client.indices.create, index=LEASE_INDEX, body=body)
    except API_ERRORS as err:
        if "resource_already_exists" not in str(err):
            raise


def read_holder(cluster: Cluster, alias: str) -> Holder | None:
    try:
        found = cluster.call(cluster.client.get, index=LEASE_INDEX, id=alias)
    except NOT_FOUND:
        return None
    if not found.get("found"):
        return None
    return Holder(found["_source"], int(found["_seq_no"]), int(found["_primary_term"]))


def lift_stale_freeze(cluster: Cluster, holder: Holder, reason: str, notify: Notify) -> str | None:
    """Lift the write block a dead sync left on the live version; the index it was on, if any."""
    freeze = holder.doc.get("freeze") or {}
    index = freeze.get("index")
    if not index:
        return None
    try:
        if write_blocked(cluster, index):
            set_write_block(cluster, index, False)
            notify(f"lifted the write block on {index} left by a sync of {holder.who} ({reason})")
    except NOT_FOUND:
        return None
    return index


class SyncLease:
    """Held for the whole of one sync (`with SyncLease(...) as lease:`)."""

    def __init__(self, cluster: Cluster, alias: str, ttl_s: float = DEFAULT_LEASE_S, notify: Notify = lambda m: None):
        self.cluster, self.alias, self.ttl_s, self.notify = cluster, alias, ttl_s, notify
        self.owner = uuid.uuid4().hex
        self._seq: tuple[int, int] | None = None
        self._doc: dict = {}
        self._guard = threading.Lock()
        self._stop = threading.Event()
        self._heartbeat: threading.Thread | None = None
        self.lost: str | None = None

    # -- taking and giving back

    def __enter__(self) -> "SyncLease":
        self.acquire()
        return self

    def __exit__(self, *exc: object) -> None:
        self.release()

    def acquire(self) -> None:
        """Create the lease, or take over a stale one (lifting its freeze); refuse a live one."""
        _ensure_index(self.cluster)
        me = psutil.Process(os.getpid())
        now = time.time()
        self._doc = {"alias": self.alias, "owner": self.owner, "host": socket.gethostname(), "pid": me.pid,
                     "pid_started": me.create_time(), "acquired_at": now, "expires_at": now + self.ttl_s,
                     "phase": "starting", "freeze": None}
        while True:
            holder = read_holder(self.cluster, self.alias)
            if holder is None:
                if self._write(create=True):
                    break
                continue  # someone created it in between: look again
            reason = holder.stale_reason(time.time())
            if reason is None:
                raise SyncBusy(
                    f"alias {self.alias!r} is being synced by {holder.who} (phase {holder.doc.get('phase')}, "
                    f"for {holder.age_s(time.time()):.0f}s); wait for it, or see `cogr-search sync --status --index {self.alias}`"
                )
            lift_stale_freeze(self.cluster, holder, reason, self.notify)
            self.notify(f"took over the sync lease of {self.alias} from {holder.who} ({reason})")
            self._seq = (holder.seq_no, holder.primary_term)
            if self._write():
                break
        self._heartbeat = threading.Thread(target=self._beat, name=f"sync-lease-{self.alias}", daemon=True)
        self._heartbeat.start()

    def release(self) -> None:
        """Stop renewing and delete the lease (only if still ours)."""
        self._stop.set()
        if self._heartbeat is not None:
            self._heartbeat.join(timeout=self.ttl_s)
        with self._guard, contextlib.suppress(*API_ERRORS):
            if self._seq is not None and self.lost is None:
                self.cluster.call(self.cluster.client.delete, index=LEASE_INDEX, id=self.alias,
                                  if_seq_no=self._seq[0], if_primary_term=self._seq[1])

    # -- while held

    def phase(self, name: str) -> None:
        """Record what the sync is doing (shown by `sync --status`), renewing the lease."""
        self._update(phase=name)

    def check(self) -> None:
        """Raise if the lease was lost: a sync that stalled past its expiry must not swap."""
        if self.lost is not None:
            raise LeaseLost(f"sync of {self.alias}: {self.lost}; nothing was swapped, rerun the sync")

    @contextlib.contextmanager
    def freeze(self, index: str) -> Iterator[None]:
        """Refuse writes to `index` for the body of the `with`, recorded first so that a
        crash inside it leaves a freeze that the next sync or `sync --status` lifts."""
        self._update(phase="freeze", freeze={"index": index, "since": time.time()})
        set_write_block(self.cluster, index, True)
        try:
            yield
        finally:
            with contextlib.suppress(CogrError, *API_ERRORS):
                set_write_block(self.cluster, index, False)
                self._update(freeze=None)

    def _update(self, **fields: object) -> None:
        self.check()
        with self._guard:
            self._doc.update(fields, expires_at=time.time() + self.ttl_s)
            if not self._write():
                self.lost = "its lease was taken over by another process"
        self.check()

    def _write(self, create: bool = False) -> bool:
        """Write the lease document; False when someone else changed it first."""
        params: dict = {"op_type": "create"} if create else {"if_seq_no": self._seq[0], "if_primary_term": self._seq[1]}
        try:
            # No refresh: every reader GETs the lease by id, which is realtime, and the write is
            # durable when it returns (a forced refresh cost ~15 ms on each of a sync's updates).
            written = self.cluster.call(self.cluster.client.index, index=LEASE_INDEX, id=self.alias, body=self._doc,
                                        **params)
        except API_ERRORS as err:
            if status_of(err) == 409:
                return False
            raise
        self._seq = (int(written["_seq_no"]), int(written["_primary_term"]))
        return True

    def _beat(self) -> None:
        while not self._stop.wait(self.ttl_s / 3):
            try:
                self._update()
            except LeaseLost:
                return
            except (CogrError, *API_ERRORS):
                continue  # a missed renewal; the next one may get through before the expiry
