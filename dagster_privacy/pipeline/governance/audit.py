"""The sign-off audit table: every decision appended to its own DuckDB file, never rewritten.

The file is ``DAGSTER_PRIVACY_AUDIT``; by default ``$DAGSTER_HOME/dagster_privacy/audit.duckdb`` (next to
the Dagster instance that holds the check evaluations: the instance's own directory when there is one),
else ``~/.dagster_privacy/audit.duckdb``. It is
never the database the real data sits in (``DAGSTER_PRIVACY_DATABASE``): that is refused.

This module only ever INSERTs. Each row carries the hash of the previous row and of itself (a hash
chain), so :func:`verify_chain` detects a row changed or removed in the middle. A chain alone cannot
tell a deleted *tail*, or a table rewritten with every hash recomputed: for that the head (sequence
and hash) is recorded where the audit table's writer does not write — in the Dagster sign-off event
and in the publication log — and :func:`verify_anchors` compares the table with those records
(``dagster-privacy audit verify``). With ``DAGSTER_PRIVACY_AUDIT_KEY`` set when the table is created,
the row hashes are HMAC-SHA256 under that key: without the key nobody can recompute the chain.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import os
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from ...errors import OwnMessage

AUDIT_ENV = "DAGSTER_PRIVACY_AUDIT"
#: optional HMAC key for the row hashes (held by whoever verifies the audit, not by the pipeline's users)
KEY_ENV = "DAGSTER_PRIVACY_AUDIT_KEY"
META = "signoff_audit_meta"
DATABASE_ENV = "DAGSTER_PRIVACY_DATABASE"
TABLE = "signoff_audit"
GENESIS = "0" * 64

COLUMNS: tuple[tuple[str, str], ...] = (
    ("seq", "BIGINT NOT NULL PRIMARY KEY"),
    ("recorded_at", "VARCHAR NOT NULL"),
    ("release_id", "VARCHAR NOT NULL"),
    ("decision", "VARCHAR NOT NULL"),
    ("approver", "VARCHAR NOT NULL"),
    ("os_user", "VARCHAR"),
    ("reason", "VARCHAR NOT NULL"),
    ("report_sha256", "VARCHAR"),
    ("report_path", "VARCHAR"),
    ("asset_key", "VARCHAR NOT NULL"),
    ("synthetic_sha256", "VARCHAR"),
    ("materialization_storage_id", "BIGINT"),
    ("evaluation_run_id", "VARCHAR"),
    ("verdict", "VARCHAR"),
    ("prev_hash", "VARCHAR NOT NULL"),
    ("row_hash", "VARCHAR NOT NULL"),
)
NAMES = tuple(c for c, _ in COLUMNS)


class AuditError(OwnMessage, RuntimeError):
    """The audit table cannot be used (wrong place, locked, or tampered with)."""


@dataclass(frozen=True)
class AuditRow:
    seq: int
    recorded_at: str
    release_id: str
    decision: str
    approver: str
    os_user: str | None
    reason: str
    report_sha256: str | None
    report_path: str | None
    asset_key: str
    synthetic_sha256: str | None
    materialization_storage_id: int | None
    evaluation_run_id: str | None
    verdict: str | None
    prev_hash: str
    row_hash: str


def os_user() -> str | None:
    """The operating-system account that ran the sign-off (recorded beside the declared approver)."""
    import getpass

    try:
        return getpass.getuser()
    except Exception:  # no login name (some containers)
        return None


def default_audit_path(instance: Any = None) -> Path:
    """``DAGSTER_PRIVACY_AUDIT``, else ``<instance directory>/dagster_privacy/audit.duckdb`` (the
    instance's own directory, else ``$DAGSTER_HOME``), else ``~/.dagster_privacy/audit.duckdb``."""
    from ..settings import privacy_folder

    env = os.environ.get(AUDIT_ENV)
    return Path(env) if env else privacy_folder(instance) / "audit.duckdb"


#: the longest name or reason a person may give (an audit row is read on a terminal and a web page)
MAX_TEXT = 2_000


def people_text(what: str, text: str) -> str:
    """``text`` a person typed (``--by``, ``--reason``), refused when it holds a control, format or
    bidirectional character: a carriage return or an escape sequence rewrites what a terminal shows
    (a rejection displayed as another officer's approval), a bidi override reorders it on a page."""
    import unicodedata

    bad = sorted({f"U+{ord(c):04X}" for c in text if unicodedata.category(c) in ("Cc", "Cf", "Zl", "Zp")})
    if bad:
        raise AuditError(f"{what} holds control or bidirectional characters ({', '.join(bad[:5])}): refused")
    if len(text) > MAX_TEXT:
        raise AuditError(f"{what} is {len(text):,} characters long; at most {MAX_TEXT:,}")
    return text


def _guard(path: Path) -> None:
    real_db = os.environ.get(DATABASE_ENV)
    if real_db and os.path.realpath(path) == os.path.realpath(real_db):
        raise AuditError(
            f"the audit table must not live in the real data's database ({DATABASE_ENV}); "
            f"set {AUDIT_ENV} to a file of its own"
        )


def _hash(fields: dict[str, Any], key: bytes | None = None) -> str:
    body = json.dumps({k: fields[k] for k in NAMES if k != "row_hash"}, sort_keys=True, default=str).encode()
    return hmac.new(key, body, hashlib.sha256).hexdigest() if key else hashlib.sha256(body).hexdigest()


def _key() -> bytes | None:
    key = os.environ.get(KEY_ENV, "")
    return key.encode() if key else None


@dataclass(frozen=True)
class Anchor:
    """A record of the chain's head kept outside the audit table: row ``seq`` had hash ``row_hash``."""

    seq: int
    row_hash: str
    where: str


def verify_anchors(rows: list[AuditRow], anchors: list[Anchor]) -> list[str]:
    """What the anchors say is wrong with ``rows`` (empty: the table holds every anchored row unchanged)."""
    by_seq = {r.seq: r for r in rows}
    problems = []
    for a in anchors:
        r = by_seq.get(a.seq)
        if r is None:
            problems.append(
                f"{a.where} records audit row #{a.seq}; the table ends at #{len(rows)} (rows deleted)"
            )
        elif r.row_hash != a.row_hash:
            problems.append(
                f"{a.where} records audit row #{a.seq} with hash {a.row_hash[:12]}…, the table holds "
                f"{r.row_hash[:12]}… (the table was rewritten)"
            )
    return problems


def verify_publications(rows: list[AuditRow], log: list[dict[str, Any]], where: str) -> list[str]:
    """What the publication log says is wrong with the decisions: a release published while the
    latest audited decision on it (up to the head the publication recorded) was not an approval, and
    an audited withdrawal the log lacks (a crash between the two writes)."""
    problems = []
    for entry in log:
        seq = entry.get("audit_seq")
        if entry.get("action") == "publish" and seq:
            last = next((r for r in reversed(rows[: int(seq)]) if r.release_id == entry["release_id"]), None)
            if last is not None and last.decision != "approve":
                problems.append(
                    f"{where}: release {entry['release_id']} was published ({entry['published_at']}) "
                    f"while the latest audited decision on it was #{last.seq} '{last.decision}'"
                )
    problems += _republished(rows, log, where)
    logged = {int(e["audit_seq"]) for e in log if e.get("action") == "withdraw" and e.get("audit_seq")}
    problems += [
        f"{where}: the audited withdrawal #{r.seq} of release {r.release_id} is not in the log"
        for r in rows
        if r.decision == "withdraw" and r.seq not in logged
    ]
    return problems


def _republished(rows: list[AuditRow], log: list[dict[str, Any]], where: str) -> list[str]:
    """Content published again after it was withdrawn, without an audited approval of that content
    recorded after the withdrawal (issue 31 case 3: a publisher racing a withdrawal)."""
    problems, withdrawn = [], {}
    for entry in log:
        sha, seq = entry.get("sha256"), int(entry.get("audit_seq") or 0)
        if entry.get("action") == "withdraw":
            withdrawn[sha] = (seq, entry)
        elif entry.get("action") == "publish" and sha in withdrawn:
            after = withdrawn[sha][0]
            approved = any(
                r.decision == "approve" and r.synthetic_sha256 == sha and after < r.seq <= (seq or len(rows))
                for r in rows
            )
            if not approved:
                problems.append(
                    f"{where}: release {entry['release_id']} was published again ({entry['published_at']}) "
                    f"after its content was withdrawn ({withdrawn[sha][1]['published_at']}) without an "
                    "approval in between"
                )
    return problems


@contextmanager
def _connect(path: Path, *, read_only: bool, attempts: int = 20) -> Iterator[Any]:
    import duckdb

    delay = 0.05
    for i in range(attempts):
        try:
            con = duckdb.connect(str(path), read_only=read_only)
            break
        except (duckdb.IOException, duckdb.ConnectionException) as exc:  # locked by another writer
            if i == attempts - 1:
                raise AuditError(f"the audit table {path} is locked: {type(exc).__name__}") from None
            time.sleep(delay)
            delay = min(delay * 2, 1.0)
    try:
        yield con
    finally:
        con.close()


class AuditLog:
    """Append-only access to the audit table."""

    def __init__(self, path: str | os.PathLike[str] | None = None, *, instance: Any = None) -> None:
        self.path = Path(path) if path is not None else default_audit_path(instance)
        if self.path.suffix.lower() != ".duckdb":  # x.csv was opened as an in-memory database: lost at exit
            raise AuditError(f"the audit table is a DuckDB file (*.duckdb), not {self.path.name}")
        _guard(self.path)

    def append(self, **fields: Any) -> AuditRow:
        """Append one decision; returns the stored row (with its sequence number and hashes)."""
        self.path.parent.mkdir(parents=True, exist_ok=True)
        with _connect(self.path, read_only=False) as con:
            others = con.execute(
                "select count(*) from information_schema.tables where table_name not in (?, ?)", [TABLE, META]
            ).fetchall()[0][0]
            if others:  # the real data's database (configured in code, so no env var names it), or another
                raise AuditError(
                    f"{self.path} holds {others} table(s) besides the audit's: the audit table must live in "
                    "a file of its own, never beside the data"
                )
            con.execute(
                f"create table if not exists {TABLE} (" + ", ".join(f'"{c}" {t}' for c, t in COLUMNS) + ")"
            ).fetchall()
            key = _key()
            self._check_mode(con, key, create=True)
            con.execute("begin transaction").fetchall()
            try:
                last = con.execute(f"select seq, row_hash from {TABLE} order by seq desc limit 1").fetchall()
                seq, prev = (int(last[0][0]) + 1, str(last[0][1])) if last else (1, GENESIS)
                row = {k: fields.get(k) for k in NAMES}
                row.update(seq=seq, prev_hash=prev)
                row["row_hash"] = _hash(row, key)
                con.execute(
                    f"insert into {TABLE} values (" + ", ".join("?" * len(NAMES)) + ")",
                    [row[k] for k in NAMES],
                ).fetchall()
                con.execute("commit").fetchall()
            except BaseException:
                con.execute("rollback").fetchall()
                raise
        return AuditRow(**row)  # type: ignore[arg-type]  # the columns NAMES, as written above

    def rows(self) -> list[AuditRow]:
        """Every decision, oldest first (empty when no decision was ever recorded)."""
        if not self.path.is_file():
            return []
        with _connect(self.path, read_only=True) as con:
            have = con.execute(
                "select count(*) from information_schema.tables where table_name = ?", [TABLE]
            ).fetchall()[0][0]
            if not have:
                return []
            cols = ", ".join(f'"{c}"' for c in NAMES)
            data = con.execute(f"select {cols} from {TABLE} order by seq").fetchall()
        return [AuditRow(**dict(zip(NAMES, r, strict=True))) for r in data]

    @staticmethod
    def _check_mode(con: Any, key: bytes | None, *, create: bool) -> None:
        """The table's hash mode (sha256 or hmac-sha256, fixed by its first decision) fits the key given;
        a table from before modes were recorded is sha256."""
        if create:
            con.execute(f"create table if not exists {META} (hash varchar)").fetchall()
        have = con.execute(
            "select count(*) from information_schema.tables where table_name = ?", [META]
        ).fetchall()
        mode = con.execute(f"select hash from {META}").fetchall() if have[0][0] else []
        if not mode and create:
            empty = con.execute(f"select count(*) from {TABLE}").fetchall()[0][0] == 0
            mode = [("hmac-sha256" if key and empty else "sha256",)]
            con.execute(f"insert into {META} values (?)", list(mode[0])).fetchall()
        keyed = bool(mode) and mode[0][0] == "hmac-sha256"
        if keyed and not key:
            raise AuditError(f"the audit table is keyed (HMAC): set {KEY_ENV} to the key its verifier holds")
        if not keyed and key:
            raise AuditError(
                f"the audit table says it is not keyed, but {KEY_ENV} is set: it was created "
                "without a key, or its mode was changed — do not unset the key to make it verify; "
                "compare it with the recorded heads (dagster-privacy audit verify)"
            )

    def verify_chain(self) -> list[AuditRow]:
        """The rows, after checking the hash chain; raises AuditError when a row was changed or removed."""
        rows, key = self.rows(), _key()
        if rows:
            with _connect(self.path, read_only=True) as con:
                self._check_mode(con, key, create=False)
        prev = GENESIS
        for i, r in enumerate(rows, start=1):
            d = asdict(r)
            if r.seq != i or r.prev_hash != prev or _hash(d, key) != r.row_hash:
                raise AuditError(f"the audit table {self.path} was altered at row {r.seq}")
            prev = r.row_hash
        return rows
