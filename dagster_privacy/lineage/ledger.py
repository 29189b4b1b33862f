"""The ledger: every release of every lineage, one DuckDB file, only ever appended to (issue 56).

A row is an event on one release: ``reserved`` (judged, may publish: it counts from here on),
``published``, ``refused`` (judged and blocked: it counts as a look, not as exposure) or ``withdrawn``
(it still counts: a record copied once stays copied). The first row of a release carries what it
exposed: per part of exposed_records, the names (names.py) of the training and holdout records it
reproduced. Nothing else about a record is stored.

Reserve-then-commit: a release is reserved before it is published and committed after, so a process
killed between the two leaves a reservation that counts (an over-count, never an under-count). The
judging of a candidate and its reservation happen under the ledger's lock (``<ledger>.lock``, an
exclusive ``flock``): two candidates of one lineage judged at once are judged one after the other, the
second on a union that holds the first.

Each lineage's rows form a hash chain under its key (HMAC-SHA256): a row changed or removed in the middle
is caught on every read; the last row's (sequence, hash) is also kept in ``<ledger>.keys/`` (names.py),
so a deleted tail is caught too.
"""

from __future__ import annotations

import fcntl
import hashlib
import hmac
import json
import os
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import asdict, dataclass
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from ..data.atomic import write_bytes_atomically
from .names import LineageError, head_path

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


class Ledger:
    """Append-only access to a ledger file (``*.duckdb``, of its own: never a data file)."""

    def __init__(self, path: str | os.PathLike[str]) -> None:
        self.path = Path(path)
        if self.path.suffix.lower() != ".duckdb":
            raise LineageError(f"the ledger is a DuckDB file (*.duckdb), not {self.path.name}")
        if self.path.is_symlink() or (self.path.exists() and not self.path.is_file()):
            raise LineageError(f"the ledger {self.path} is not a regular file")
        if not self.path.parent.is_dir():
            raise LineageError(f"the ledger's folder {self.path.parent} does not exist")

    @contextmanager
    def locked(self) -> Iterator[None]:
        """The ledger's exclusive lock, held while a candidate is judged against it and reserved."""
        lock = self.path.with_name(self.path.name + ".lock")
        try:
            fd = os.open(lock, os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW, 0o600)
        except OSError as exc:  # a link planted at its name, a folder we cannot write
            raise LineageError(f"the ledger's lock {lock} cannot be opened ({type(exc).__name__})") from None
        try:
            fcntl.flock(fd, fcntl.LOCK_EX)
            yield
        finally:
            os.close(fd)  # closing releases the lock, also when the process is killed

    def _no_links(self) -> None:
        """DuckDB writes ``<ledger>.wal`` (and ``.tmp``) beside the file: a link planted there would be
        written through."""
        for suffix in (".wal", ".tmp"):
            side = self.path.with_name(self.path.name + suffix)
            planted = side.is_symlink() or (side.exists() and not (side.is_file() or side.is_dir()))
            if planted or (side.is_file() and side.stat().st_nlink > 1):  # a hard link: another file's data
                raise LineageError(f"{side} is a link or not a regular file: remove it")

    @contextmanager
    def _connect(self, *, read_only: bool) -> Iterator[Any]:
        import duckdb

        self._no_links()
        delay = 0.05
        for i in range(40):  # a reader elsewhere (lineage show) holds the file a moment
            try:
                con = duckdb.connect(str(self.path), read_only=read_only)
                break
            except (duckdb.IOException, duckdb.ConnectionException) as exc:
                if "lock" not in str(exc).lower():  # not a database, truncated: no wait makes it one
                    raise LineageError(
                        f"the ledger {self.path} cannot be opened ({type(exc).__name__})"
                    ) from None
                if i == 39:
                    raise LineageError(f"the ledger {self.path} is locked: {type(exc).__name__}") from None
                time.sleep(delay)
                delay = min(2 * delay, 1.0)
            except duckdb.Error as exc:
                raise LineageError(
                    f"the ledger {self.path} cannot be opened ({type(exc).__name__})"
                ) from None
        try:
            yield con
        except duckdb.Error as exc:  # a table of another shape under the ledger's name
            raise LineageError(f"the ledger {self.path} cannot be read ({type(exc).__name__})") from None
        finally:
            con.close()

    def entries(self, lineage: str, key: bytes | None) -> list[Entry]:
        """The lineage's rows, oldest first, after checking their chain (and the kept head) under ``key``
        (None: the lineage has no key yet, so it must have no rows)."""
        rows: list[Entry] = []
        if self.path.is_file():
            with self._connect(read_only=True) as con:
                self._check_tables(con)
                have = con.execute(
                    "select count(*) from information_schema.tables where table_name = ?", [TABLE]
                ).fetchall()[0][0]
                if have:
                    cols = ", ".join(f'"{c}"' for c in NAMES)
                    data = con.execute(
                        f"select {cols} from {TABLE} where lineage = ? order by seq", [lineage]
                    ).fetchall()
                    rows = [Entry(**dict(zip(NAMES, r, strict=True))) for r in data]
        self._verify(lineage, rows, key)
        return rows

    def lineages(self) -> list[str]:
        """The lineages the ledger holds (names only; each one's rows are checked when read)."""
        if not self.path.is_file():
            return []
        with self._connect(read_only=True) as con:
            self._check_tables(con)
            have = con.execute(
                "select count(*) from information_schema.tables where table_name = ?", [TABLE]
            ).fetchall()[0][0]
            if not have:
                return []
            return [
                str(r[0]) for r in con.execute(f"select distinct lineage from {TABLE} order by 1").fetchall()
            ]

    def _verify(self, lineage: str, rows: list[Entry], key: bytes | None) -> None:
        if rows and key is None:
            raise LineageError(f"lineage {lineage!r} has rows in {self.path} but no key")
        prev = GENESIS
        for i, r in enumerate(rows, start=1):
            if r.seq != i or r.prev_hash != prev or _hash(asdict(r), key or b"") != r.row_hash:
                raise LineageError(f"the ledger {self.path} was altered: lineage {lineage!r}, row {r.seq}")
            if r.event not in EVENTS:
                raise LineageError(f"the ledger {self.path} holds an unknown event at row {r.seq}")
            prev = r.row_hash
        head = head_path(self.path, lineage)
        if head.is_file() or head.is_symlink():
            kept = _read_head(head)
            at = next((r for r in rows if r.seq == kept.get("seq")), None)
            if at is None or at.row_hash != kept.get("row_hash"):
                raise LineageError(
                    f"the ledger {self.path} lacks lineage {lineage!r}'s row {kept.get('seq')} recorded in "
                    f"{head.name} (rows deleted or rewritten)"
                )
        elif rows:
            raise LineageError(f"lineage {lineage!r}'s head record {head} is missing")

    def _check_tables(self, con: Any) -> None:
        others = con.execute(
            "select count(*) from information_schema.tables where table_name <> ?", [TABLE]
        ).fetchall()[0][0]
        if others:
            raise LineageError(
                f"{self.path} holds {others} table(s) besides the ledger's: the ledger lives in a file of "
                "its own, never beside the data"
            )

    def append(self, key: bytes, **fields: Any) -> Entry:
        """Append one event of ``fields['lineage']`` (call under :meth:`locked`, after :meth:`entries`)."""
        lineage = str(fields["lineage"])
        with self._connect(read_only=False) as con:
            self._check_tables(con)
            con.execute(
                f"create table if not exists {TABLE} ("
                + ", ".join(f'"{c}" {t}' for c, t in COLUMNS)
                + ", primary key (lineage, seq))"
            ).fetchall()
            last = con.execute(
                f"select seq, row_hash from {TABLE} where lineage = ? order by seq desc limit 1", [lineage]
            ).fetchall()
            seq, prev = (int(last[0][0]) + 1, str(last[0][1])) if last else (1, GENESIS)
            row = {k: fields.get(k) for k in NAMES}
            row.update(seq=seq, prev_hash=prev, recorded_at=now())
            row["row_hash"] = _hash(row, key)
            con.execute(
                f"insert into {TABLE} values (" + ", ".join("?" * len(NAMES)) + ")", [row[k] for k in NAMES]
            ).fetchall()
        head = {"seq": seq, "row_hash": row["row_hash"]}
        write_bytes_atomically(head_path(self.path, lineage), json.dumps(head).encode())
        return Entry(**row)


__all__ = ["COUNTED", "EVENTS", "Entry", "Ledger", "Release", "releases"]
