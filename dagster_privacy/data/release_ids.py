"""Release ids: what may name a release (it names report directories and publication files, so it is
never a path), and the default one, ``sha256:<16 hex>`` of the synthetic table's content — the same in
the pipeline, the CLI's reports and the console. No Dagster import: the CLI's evaluate uses it."""

from __future__ import annotations

import hashlib
import re

from ..errors import OwnMessage

#: a release id: letters, digits and ``. _ : + -``, at most 128, starting with a letter or digit, no
#: ``..`` — it names report directories and publication files, so it must never be a path
_RELEASE_ID = re.compile(r"[A-Za-z0-9][A-Za-z0-9._:+-]{0,127}")
#: a partition key's hashed form in a release id (partition_release_id)
_HASHED = re.compile(r"p[0-9a-f]{12}")


class ReleaseIdError(OwnMessage, ValueError):
    """A release id outside the safe character set (the id itself is not echoed)."""


def valid_release_id(text: str) -> str:
    """``text`` if it is a safe release id, else :class:`ReleaseIdError`."""
    if not _RELEASE_ID.fullmatch(text) or ".." in text:
        raise ReleaseIdError(
            f"a release id ({len(text)} characters) must be letters, digits and . _ : + -, "
            "at most 128, starting with a letter or digit, without '..'"
        )
    return text


def file_name(text: str) -> str:
    """A file-name part made of a release id, one-to-one: the id's ASCII letters, digits, - and _ (others
    as _; no dot: never '.', '..' or a hidden name; at most 100), then 12 hex of its sha256 — so
    'v1.0' and 'v1_0' never share a file."""
    safe = "".join(ch if (ch.isascii() and ch.isalnum()) or ch in "-_" else "_" for ch in text)[:100]
    return f"{safe or 'release'}-{hashlib.sha256(text.encode()).hexdigest()[:12]}"


def default_release_id(fingerprint: str) -> str:
    """The release id of a synthetic table with this content sha256 when none is given."""
    return f"sha256:{fingerprint[:16]}"


def partition_release_id(release: str, partition: str) -> str:
    """The release id of one partition of a partitioned release: ``<release>+<partition>`` — the partition
    key itself when it is made of release-id characters (no ``+``), else ``p`` and 12 hex of its sha256
    (as is a key spelled that way) — so each partition's report, publication file, sign-off and
    withdrawal name it, and two partitions never share one."""
    plain = (
        len(partition) <= 40
        and _RELEASE_ID.fullmatch(partition)
        and ".." not in partition
        and "+" not in partition  # 'a' + 'b+c' would be 'a+b' + 'c'
        and not _HASHED.fullmatch(partition)  # a key spelled like another key's hashed form
    )
    part = partition if plain else "p" + hashlib.sha256(partition.encode()).hexdigest()[:12]
    return valid_release_id(f"{release}+{part}")  # too long: refused, never cut (two would share it)


__all__ = ["ReleaseIdError", "default_release_id", "file_name", "partition_release_id", "valid_release_id"]
