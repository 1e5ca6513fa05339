"""One sync per alias, and a write freeze that cannot outlive the sync that set it.

The lease is a document in the cluster (index `A--sync-lease` of alias A, id = the alias;
one index per alias, so that a role can grant a writer its own lease only), so
every host that syncs the alias sees it: created only if absent, holding the owner, host,
pid, phase and expiry, renewed by a heartbeat thread while the sync runs, and changed
only with compare-and-set (`if_seq_no`/`if_primary_term`), so two processes that both
find a stale lease cannot both take it over.

The short write freeze at the end of a sync is recorded in the same document before the
block is set. A holder is stale when its lease has expired, or at once when it ran on
this host and its process is gone (SIGKILL, crash). Whoever finds a stale holder (a
rerun, another sync of the alias, `sync --status`) lifts the freeze it left and says so.

Lifting a block is retried with backoff. A sync that still cannot lift its own freeze
fails with `FreezeLeft`, one line naming the index and `sync --unfreeze`, and keeps the
freeze record in its lease document (phase `left-frozen`) instead of deleting it, so
that `sync --status`, the next sync and `sync --unfreeze` all find the block.
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
from tenacity import Retrying, retry_if_exception, stop_after_attempt

from cogr_search.cluster.client import Cluster
from cogr_search.cluster.sync_config import DEFAULT_LEASE_S
from cogr_search.cluster.engines import API_ERRORS, NOT_FOUND, one_line, status_of
from cogr_search.cluster.indices import alias_target, set_write_block, write_blocked
from cogr_search.cluster.names import LEGACY_LEASE_INDEX, lease_index
from cogr_search.errors import CogrError

LEASE_INDEX = LEGACY_LEASE_INDEX
"""The shared lease index of earlier releases; the lease of alias A is now in `lease_index(A)`."""
LEFT_FROZEN = "left-frozen"
"""The phase of a lease whose sync ended without lifting its freeze."""
UNFREEZE_ATTEMPTS = 5
"""Tries at lifting a write block, each a `Cluster.call` with its own retries of
transient failures; these also cover the failures it does not retry (a 500, a 403)."""
Notify = Callable[[str], None]


class SyncBusy(CogrError):
    """Another live sync holds the alias."""


class LeaseLost(CogrError):
    """This sync's lease was taken over (it stalled past its expiry): it must not swap."""


class FreezeLeft(CogrError):
    """A write block could not be lifted: the index refuses every application's writes
    until `sync --unfreeze` (or a later sync) lifts it."""


def unfreeze_command(alias: str) -> str:
    return f"cogr-search sync --unfreeze --index {alias}"


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
        if self.doc.get("phase") == LEFT_FROZEN:
            return "it ended without lifting its freeze"
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


def _ensure_index(cluster: Cluster, alias: str) -> None:
    body = {"settings": {"number_of_shards": 1, "auto_expand_replicas": "0-1"}, "mappings": {"dynamic": False}}
    try:
        cluster.call(cluster.client.indices.create, index=lease_index(alias), body=body)
    except API_ERRORS as err:
        if "resource_already_exists" not in str(err):
            raise


def read_holder(cluster: Cluster, alias: str) -> Holder | None:
    try:
        found = cluster.call(cluster.client.get, index=lease_index(alias), id=alias)
    except NOT_FOUND:
        return None
    if not found.get("found"):
        return None
    return Holder(found["_source"], int(found["_seq_no"]), int(found["_primary_term"]))


def _retry_unfreeze(err: BaseException) -> bool:
    """Everything but a missing index (nothing left to lift) and a lost lease is tried again."""
    return isinstance(err, (CogrError, *API_ERRORS)) and not isinstance(err, (LeaseLost, *NOT_FOUND))


def lift_write_block(cluster: Cluster, alias: str, index: str) -> None:
    """Allow writes to `index` again, retried with the cluster's backoff, because a block
    left in place makes the live version read-only for every application. Raises
    `FreezeLeft` (one line naming the index and the command that lifts it) if it never goes;
    a deleted index has nothing to lift."""
    retrying = Retrying(retry=retry_if_exception(_retry_unfreeze), stop=stop_after_attempt(UNFREEZE_ATTEMPTS),
                        wait=lambda state: cluster.backoff_s(state.attempt_number), reraise=True)
    try:
        retrying(set_write_block, cluster, index, False)
    except NOT_FOUND:
        return
    except (CogrError, *API_ERRORS) as err:
        raise FreezeLeft(
            f"{index} (a version of alias {alias}) is left frozen, refusing writes: lifting its write block failed "
            f"{UNFREEZE_ATTEMPTS} times ({one_line(err)}); `{unfreeze_command(alias)}` lifts it"
        ) from err


def _lift_if_blocked(cluster: Cluster, alias: str, index: str) -> bool:
    """Whether `index` was blocked (and is no longer); `FreezeLeft` if it stays blocked."""
    try:
        blocked = write_blocked(cluster, index)
    except NOT_FOUND:
        return False
    if blocked:
        lift_write_block(cluster, alias, index)
    return blocked


def lift_stale_freeze(cluster: Cluster, holder: Holder, reason: str, notify: Notify) -> str | None:
    """Lift the write block a dead sync left on the live version; the index it was on, if
    any. `FreezeLeft` if the block stays."""
    freeze = holder.doc.get("freeze") or {}
    index = freeze.get("index")
    if not index:
        return None
    if _lift_if_blocked(cluster, str(holder.doc.get("alias")), index):
        notify(f"lifted the write block on {index} left by a sync of {holder.who} ({reason})")
    return index


def unfreeze(cluster: Cluster, alias: str) -> list[str]:
    """`sync --unfreeze`: give writes back to the index a sync left frozen (its lease's
    freeze record) and to the alias's serving version, and drop that sync's lease; the
    indices whose block was lifted. Refused while a live sync holds the alias: its freeze
    is lifted by the sync itself, and lifting it early would let writes slip past its
    final catch-up."""
    holder = read_holder(cluster, alias)
    if holder is not None and holder.stale_reason(time.time()) is None:
        raise SyncBusy(f"alias {alias!r} is being synced by {holder.who} (phase {holder.doc.get('phase')}): "
                       "its freeze ends with it; nothing lifted")
    recorded = ((holder.doc.get("freeze") or {}).get("index") if holder is not None else None)
    serving = alias_target(cluster, alias)
    if serving is None and recorded is None:
        raise CogrError(f"alias {alias!r} does not exist")
    lifted = [index for index in dict.fromkeys(filter(None, (recorded, serving)))
              if _lift_if_blocked(cluster, alias, index)]
    if holder is not None:
        _drop_lease(cluster, alias, holder)
    return lifted


def _drop_lease(cluster: Cluster, alias: str, holder: Holder) -> None:
    """Delete a stale lease as read (compare-and-set): one that changed since was taken
    over by a new sync, and is its own."""
    try:
        cluster.call(cluster.client.delete, index=lease_index(alias), id=alias,
                     if_seq_no=holder.seq_no, if_primary_term=holder.primary_term)
    except NOT_FOUND:
        return
    except API_ERRORS as err:
        if status_of(err) != 409:
            raise


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
        _ensure_index(self.cluster, self.alias)
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
        """Stop renewing and delete the lease (only if still ours), unless it holds a
        freeze that could not be lifted: then it is kept, marked `left-frozen` (stale at
        once), so that the record of the block outlives this sync."""
        self._stop.set()
        if self._heartbeat is not None:
            self._heartbeat.join(timeout=self.ttl_s)
        with self._guard, contextlib.suppress(*API_ERRORS):
            if self._seq is None or self.lost is not None:
                return
            if self._doc.get("freeze"):
                self._doc.update(phase=LEFT_FROZEN)
                self._write()
                return
            self.cluster.call(self.cluster.client.delete, index=lease_index(self.alias), id=self.alias,
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
        crash inside it leaves a freeze that the next sync or `sync --status` lifts.
        `FreezeLeft` if the block cannot be lifted (the body's own failure chained to it)."""
        self._update(phase="freeze", freeze={"index": index, "since": time.time()})
        set_write_block(self.cluster, index, True)
        try:
            yield
        except BaseException as failure:
            self._end_freeze(index, failure)
            raise
        self._end_freeze(index)

    def _end_freeze(self, index: str, failure: BaseException | None = None) -> None:
        """Lift the block, then drop its record. The record stays when the block does
        (release() keeps it for `sync --unfreeze`); once the block is gone, a record that
        could not be cleared is harmless (release() deletes the document, and whoever
        finds it later sees no block to lift), so that failure does not fail the sync."""
        try:
            lift_write_block(self.cluster, self.alias, index)
        except FreezeLeft as left:
            if failure is None:
                raise
            raise FreezeLeft(f"{left}; the sync had failed first: {one_line(failure)}") from failure
        with self._guard:
            self._doc["freeze"] = None  # release() deletes, not keeps, the lease even if the write below fails
        with contextlib.suppress(CogrError, *API_ERRORS):
            self._update()

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
            written = self.cluster.call(self.cluster.client.index, index=lease_index(self.alias), id=self.alias,
                                        body=self._doc, **params)
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
