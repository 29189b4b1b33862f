"""The ledger: every release of every lineage, one table only ever appended to (issue 56), in a DuckDB
file of its own (file_ledger.py) or in a PostgreSQL database (pg_ledger.py).

A row is an event on one release: ``reserved`` (judged, may publish: it counts from here on),
``published``, ``refused`` (judged and blocked: it counts as a look, not as exposure) or ``withdrawn``
(it still counts: a record copied once stays copied). The first row of a release carries what it
exposed: per part of exposed_records, the names (names.py) of the training and holdout records it
reproduced. Nothing else about a record is stored.

Reserve-then-commit: a release is reserved before it is published and committed after, so a process
killed between the two leaves a reservation that counts (an over-count, never an under-count). The
judging of a candidate and its reservation happen under the ledger's lock (an exclusive ``flock`` on a
file ledger, an advisory lock in a database): two candidates of one lineage judged at once are judged
one after the other, the second on a union that holds the first.

Each lineage's rows form a hash chain under its key (HMAC-SHA256): a row changed or removed in the middle
is caught on every read; the last row's (sequence, hash) is also kept in the keys folder (names.py),
so a deleted tail is caught too.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import os
from abc import ABC, abstractmethod
from collections.abc import Callable
from contextlib import AbstractContextManager
from dataclasses import asdict, dataclass
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from ..data.atomic import write_bytes_atomically
from .names import LineageError, head_path, key_path, lineage_key

TABLE = "lineage_ledger"
GENESIS = "0" * 64
#: the events a release goes through; every one but refused counts its exposure
EVENTS = ("reserved", "published", "refused", "withdrawn")
COUNTED = frozenset({"reserved", "published", "withdrawn"})

COLUMNS: tuple[tuple[str, str], ...] = (
    ("lineage", "VARCHAR NOT NULL"),
    ("seq", "BIGINT NOT NULL"),
    ("recorded_at", "VARCHAR NOT NULL"),
    ("release_id", "VARCHAR NOT NULL"),
    ("event", "VARCHAR NOT NULL"),
    ("look", "BIGINT NOT NULL"),
    ("holdout", "VARCHAR NOT NULL"),
    ("exposed", "VARCHAR NOT NULL"),
    ("summary", "VARCHAR NOT NULL"),
    ("prev_hash", "VARCHAR NOT NULL"),
    ("row_hash", "VARCHAR NOT NULL"),
)
NAMES = tuple(c for c, _ in COLUMNS)


@dataclass(frozen=True)
class Entry:
    lineage: str
    seq: int
    recorded_at: str
    release_id: str
    event: str
    look: int
    holdout: str
    exposed: str  # JSON: {part: [training names, holdout names]} on a release's first row, else {}
    summary: str  # JSON: the figures of the decision it was recorded with (counts only)
    prev_hash: str
    row_hash: str

    def parts(self) -> dict[str, tuple[set[str], set[str]]]:
        return {p: (set(t), set(h)) for p, (t, h) in json.loads(self.exposed).items()}

    def figures(self) -> dict[str, Any]:
        return dict(json.loads(self.summary))


@dataclass(frozen=True)
class Release:
    """A release of the lineage as its events leave it: its first row (what it exposed), its status now."""

    first: Entry
    status: str
    events: tuple[Entry, ...]

    @property
    def release_id(self) -> str:
        return self.first.release_id

    @property
    def counted(self) -> bool:
        return self.status in COUNTED


def releases(entries: list[Entry]) -> list[Release]:
    """The lineage's releases in the order they were first recorded, each with its latest status."""
    by: dict[str, list[Entry]] = {}
    for e in entries:
        by.setdefault(e.release_id, []).append(e)
    out = [Release(first=es[0], status=es[-1].event, events=tuple(es)) for es in by.values()]
    return sorted(out, key=lambda r: r.first.seq)


def _hash(fields: dict[str, Any], key: bytes) -> str:
    body = json.dumps({k: fields[k] for k in NAMES if k != "row_hash"}, sort_keys=True, default=str)
    return hmac.new(key, body.encode(), hashlib.sha256).hexdigest()


def _read_head(head: Path) -> dict[str, Any]:
    """The kept head (sequence, hash), read without following a link; anything else is refused."""
    try:
        fd = os.open(head, os.O_RDONLY | os.O_NOFOLLOW)
        try:
            data = json.loads(os.read(fd, 4096).decode("utf-8"))
        finally:
            os.close(fd)
    except (OSError, ValueError):
        data = None
    if (
        not isinstance(data, dict)
        or not isinstance(data.get("seq"), int)
        or not isinstance(data.get("row_hash"), str)
    ):
        raise LineageError(f"the head record {head} is not one the ledger wrote (edited, or a link)")
    return data


def now() -> str:
    return datetime.now(timezone.utc).isoformat(timespec="seconds")


class Ledger(ABC):
    """Append-only access to a ledger; a backend (a DuckDB file: file_ledger.py, a PostgreSQL database:
    pg_ledger.py) reads and appends rows, this class checks the chain and keeps the head."""

    #: the keys folder (names.py): the lineages' keys and kept heads, never inside the ledger
    keys: Path
    #: how messages name the ledger (a path, or a database URI without user or password)
    where: str
    #: where it is opened again (open_ledger): a path, or the URI (never with a password)
    location: str

    @abstractmethod
    def locked(self) -> AbstractContextManager[None]:
        """The ledger's exclusive lock, held while a candidate is judged against it and reserved."""

    @abstractmethod
    def _rows(self, lineage: str) -> list[tuple[Any, ...]]:
        """The lineage's rows (columns NAMES), oldest first; none when the ledger has no table yet."""

    @abstractmethod
    def _lineage_names(self) -> list[str]:
        """The lineages with rows, by name."""

    @abstractmethod
    def _append_row(self, lineage: str, build: Callable[[int, str], dict[str, Any]]) -> dict[str, Any]:
        """In one write: the lineage's last (seq, row_hash) → ``build(next seq, previous hash)``, inserted."""

    def key(self, lineage: str) -> bytes | None:
        """The lineage's key, None when it has none (no release recorded)."""
        has = key_path(self.keys, lineage)
        return lineage_key(self.keys, lineage, create=False) if has.exists() or has.is_symlink() else None

    def entries(self, lineage: str, key: bytes | None) -> list[Entry]:
        """The lineage's rows, oldest first, after checking their chain (and the kept head) under ``key``
        (None: the lineage has no key yet, so it must have no rows)."""
        # the kept head first: a writer moves it only after its row is committed, so a head read
        # before the rows is never ahead of them (read after, a recording in between looked like a cut)
        kept = self._kept(lineage)
        rows = [Entry(**dict(zip(NAMES, r, strict=True))) for r in self._rows(lineage)]
        if kept is None and rows:  # the first recording wrote its row, then its head, between the reads
            kept = self._kept(lineage)
        self._verify(lineage, rows, key, kept)
        return rows

    def _kept(self, lineage: str) -> dict[str, Any] | None:
        head = head_path(self.keys, lineage)
        return _read_head(head) if head.is_file() or head.is_symlink() else None

    def lineages(self) -> list[str]:
        """The lineages the ledger holds (names only; each one's rows are checked when read)."""
        return self._lineage_names()

    def _verify(
        self, lineage: str, rows: list[Entry], key: bytes | None, kept: dict[str, Any] | None
    ) -> None:
        if rows and key is None:
            raise LineageError(f"lineage {lineage!r} has rows in {self.where} but no key")
        prev = GENESIS
        for i, r in enumerate(rows, start=1):
            if r.seq != i or r.prev_hash != prev or _hash(asdict(r), key or b"") != r.row_hash:
                raise LineageError(f"the ledger {self.where} was altered: lineage {lineage!r}, row {r.seq}")
            if r.event not in EVENTS:
                raise LineageError(f"the ledger {self.where} holds an unknown event at row {r.seq}")
            prev = r.row_hash
        head = head_path(self.keys, lineage)
        if kept is not None:
            at = next((r for r in rows if r.seq == kept.get("seq")), None)
            if at is None or at.row_hash != kept.get("row_hash"):
                raise LineageError(
                    f"the ledger {self.where} lacks lineage {lineage!r}'s row {kept.get('seq')} recorded in "
                    f"{head.name} (rows deleted or rewritten)"
                )
        elif rows:
            raise LineageError(f"lineage {lineage!r}'s head record {head} is missing")

    def append(self, key: bytes, **fields: Any) -> Entry:
        """Append one event of ``fields['lineage']`` (call under :meth:`locked`, after :meth:`entries`)."""
        lineage = str(fields["lineage"])

        def build(seq: int, prev: str) -> dict[str, Any]:
            row = {k: fields.get(k) for k in NAMES}
            row.update(seq=seq, prev_hash=prev, recorded_at=now())
            row["row_hash"] = _hash(row, key)
            return row

        row = self._append_row(lineage, build)
        head = {"seq": row["seq"], "row_hash": row["row_hash"]}
        write_bytes_atomically(head_path(self.keys, lineage), json.dumps(head).encode())
        return Entry(**row)


__all__ = ["COUNTED", "COLUMNS", "EVENTS", "NAMES", "TABLE", "Entry", "Ledger", "Release", "releases"]
