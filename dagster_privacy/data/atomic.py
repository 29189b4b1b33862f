"""Writing a file so that readers see the old content or the new, never half of either; nothing is
written through a link, and nothing lands on an input (issue 54: a link planted at a fixed temporary
name made remediate overwrite the training table).

Every file the product writes goes through here: the temporary file is a random name in the target's
folder, created with O_CREAT|O_EXCL|O_NOFOLLOW (a planted file or link at that name is refused, never
followed); just before the rename, the inputs' identities (device, inode) are compared with the output
and the temporary file, and a match refuses the write with the inputs untouched."""

from __future__ import annotations

import os
import uuid
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import IO

from ..errors import OwnMessage


class OutputRefused(OwnMessage, OSError):
    """An output that would land on an input (one line, the output's path only)."""


def input_files(sources: Sequence[object]) -> list[Path]:
    """The local files among input sources: a path, or the file of ``FILE.duckdb:TABLE`` (SQL, frames
    and server URIs name no file here)."""
    out = []
    for src in sources:
        if not isinstance(src, str | Path):
            continue
        text = str(src)
        if ".duckdb:" in text.lower():
            text = text.rpartition(":")[0]
        if "\n" not in text and len(text) < 4096 and Path(text).is_file():
            out.append(Path(text))
    return out


def _identity(st: os.stat_result) -> tuple[int, int]:
    return st.st_dev, st.st_ino


def check_not_input(path: Path, inputs: Sequence[object], *, tmp: Path | None = None) -> None:
    """Refuse when ``path`` (or a link there, or ``tmp``) is one of the input files by identity."""
    ids = set()
    for f in input_files(inputs):
        try:
            ids.add(_identity(os.stat(f)))
        except OSError:
            continue
    seen = []
    for p, follow in ((path, True), (path, False), (tmp, False)):
        if p is None:
            continue
        try:
            seen.append(_identity(os.stat(p, follow_symlinks=follow)))
        except OSError:
            continue
    if ids & set(seen):
        raise OutputRefused(f"{path} is one of the input tables; write the output elsewhere")


def _exclusive(tmp: Path, mode: int) -> int:
    return os.open(
        tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | getattr(os, "O_CLOEXEC", 0), mode
    )


def write_atomically(
    path: str | Path,
    write: Callable[[IO[bytes]], object],
    *,
    inputs: Sequence[object] = (),
    mode: int = 0o666,  # less the umask, as open() gives
    new: bool = False,
) -> None:
    """``write`` into an open binary file created exclusively beside ``path``, then rename it onto
    ``path`` (a link at ``path`` is replaced itself, its target never written); with ``new``, a file or
    link that appeared at ``path`` meanwhile is kept and the write refused (FileExistsError)."""
    path = Path(path)
    check_not_input(path, inputs)
    tmp = path.with_name(f".{path.name[:150]}.{uuid.uuid4().hex}.tmp")  # within a 255-byte name
    fd = _exclusive(tmp, mode)  # raises on anything planted there, which is left as it was
    try:
        with os.fdopen(fd, "wb") as f:
            write(f)
            f.flush()
            os.fsync(f.fileno())
        check_not_input(path, inputs, tmp=tmp)
        if new:
            os.link(tmp, path, follow_symlinks=False)  # fails on anything at path, a link included
        else:
            os.replace(tmp, path)
    finally:
        tmp.unlink(missing_ok=True)


def write_bytes_atomically(path: str | Path, data: bytes, *, inputs: Sequence[object] = ()) -> None:
    """``write_atomically`` of a byte string."""
    write_atomically(path, lambda f: f.write(data), inputs=inputs)


def replace_atomically(
    path: Path, write: Callable[[Path], object], *, suffix: str = ".tmp", inputs: Sequence[object] = ()
) -> None:
    """For a writer that needs a path (a DuckDB copy, a library that picks the format from the
    extension): the temporary name is created exclusively first (no link or file planted there is
    followed), then ``write`` fills it by name, then it is renamed onto ``path``."""
    path = Path(path)
    check_not_input(path, inputs)
    tmp = path.with_name(f".{path.name[:150]}.{uuid.uuid4().hex}{suffix}")
    os.close(_exclusive(tmp, 0o666))  # raises on anything planted there, which is left as it was
    try:
        write(tmp)
        if tmp.is_symlink():  # swapped under us between the creation and the write
            raise OutputRefused(f"{path}: its temporary file was replaced by a link; nothing written")
        check_not_input(path, inputs, tmp=tmp)
        os.replace(tmp, path)
    finally:
        tmp.unlink(missing_ok=True)


__all__ = [
    "OutputRefused",
    "check_not_input",
    "input_files",
    "replace_atomically",
    "write_atomically",
    "write_bytes_atomically",
]
