"""Naming a real record without keeping it (issue 56): HMAC-SHA256 of its canonical content under the
lineage's own key.

The key is 32 random bytes created at the lineage's first release, in the ledger's keys folder
(``<ledger>.keys/`` beside a ledger file; a folder of the instance for a database ledger), owner-only
(0700 folder, 0600 file, created with O_EXCL|O_NOFOLLOW; a key another account can read, or a link at
its name, is refused). Without the key a name cannot be inverted by trying candidate
records (a plain hash of a record could be); with it, nothing but names is stored anywhere.

A record's content is its folded cells (engine/exposure.loose: the spelling the exposure parts compare)
as JSON, columns in name order: a re-ordered or re-spelled extract of the same people names each the
same, whatever the row order or the column order.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import os
import secrets
import stat
from pathlib import Path

import numpy as np
import polars as pl

from ..errors import OwnMessage

KEY_BYTES = 32
#: hex characters of a name: 128 bits, no collision among any table's records
NAME_CHARS = 32


class LineageError(OwnMessage, ValueError):
    """The lineage cannot be judged or recorded (one line, no record value)."""


def key_folder(ledger: Path) -> Path:
    """The keys folder of a ledger file: beside it."""
    return ledger.with_name(ledger.name + ".keys")


def _stem(lineage: str) -> str:
    return hashlib.sha256(lineage.encode()).hexdigest()[:32]


def key_path(keys: Path, lineage: str) -> Path:
    return keys / f"{_stem(lineage)}.key"


def head_path(keys: Path, lineage: str) -> Path:
    """Where the lineage's last ledger row (sequence, hash) is kept outside the ledger: a deleted tail of
    rows, which a hash chain alone cannot see, is caught against it."""
    return keys / f"{_stem(lineage)}.head"


def _private_folder(folder: Path, *, create: bool) -> None:
    """The keys folder: a folder (never a link) only this account owns and can open."""
    if folder.is_symlink():
        raise LineageError(f"{folder} is a link: the lineage keys live in a folder of their own")
    if create:
        try:
            folder.mkdir(mode=0o700, parents=False, exist_ok=True)
        except OSError as exc:
            raise LineageError(f"the keys folder {folder} cannot be made ({type(exc).__name__})") from None
    st = folder.lstat()
    if not stat.S_ISDIR(st.st_mode) or st.st_mode & 0o077 or st.st_uid != os.getuid():
        raise LineageError(f"{folder} must be a folder this account owns and only it can open (chmod 700)")


def lineage_key(keys: Path, lineage: str, *, create: bool) -> bytes:
    """The lineage's key from the keys folder ``keys``; created when ``create`` and there is none (its
    first release)."""
    path = key_path(keys, lineage)
    if create and not path.exists() and not path.is_symlink():
        _private_folder(keys, create=True)
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o600)
        try:
            os.write(fd, secrets.token_hex(KEY_BYTES).encode())
            os.fsync(fd)
        finally:
            os.close(fd)
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW)
    except FileNotFoundError:
        raise LineageError(
            f"lineage {lineage!r} has releases but its key {path.name} is missing from {keys}: restore it "
            "(without it no record can be matched)"
        ) from None
    except OSError:
        raise LineageError(f"the key of lineage {lineage!r} ({path}) is a link or unreadable") from None
    try:
        _private_folder(keys, create=False)
        st = os.fstat(fd)
        if st.st_mode & 0o077 or st.st_uid != os.getuid():
            raise LineageError(
                f"the key {path} is readable by other accounts, or not this account's: chmod 600 it"
            )
        text = os.read(fd, 4 * KEY_BYTES).decode("ascii", "replace").strip()
    finally:
        os.close(fd)
    try:
        key = bytes.fromhex(text)
    except ValueError:
        key = b""
    if len(key) != KEY_BYTES:
        raise LineageError(f"the key {path} is not {KEY_BYTES} bytes of hex (edited?)")
    return key


def record_names(frame: pl.DataFrame, key: bytes) -> np.ndarray:
    """One name per row of ``frame``: HMAC-SHA256 of the row's canonical JSON under ``key``, hex."""
    cols = sorted(frame.columns)
    out = np.empty(frame.height, dtype=f"<U{NAME_CHARS}")
    for i, row in enumerate(frame.select(cols).iter_rows()):
        body = json.dumps(row, default=str, ensure_ascii=False, separators=(",", ":")).encode()
        out[i] = hmac.new(key, body, hashlib.sha256).hexdigest()[:NAME_CHARS]
    return out


def fingerprint(names: np.ndarray, key: bytes) -> str:
    """The table's fingerprint: HMAC of its sorted record names (row order does not matter, content
    does). A lineage keeps the holdout's: the union test needs the same holdout throughout."""
    body = "\n".join(np.sort(names).tolist()).encode()
    return hmac.new(key, body, hashlib.sha256).hexdigest()[:NAME_CHARS]


__all__ = [
    "LineageError",
    "fingerprint",
    "head_path",
    "key_folder",
    "key_path",
    "lineage_key",
    "record_names",
]
