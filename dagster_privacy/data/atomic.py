"""Writing a file so that readers see the old content or the new, never half of either, and a symlink
planted at the path is replaced itself, its target never written."""

from __future__ import annotations

import os
import uuid
from collections.abc import Callable
from pathlib import Path


def replace_atomically(path: Path, write: Callable[[Path], None], *, suffix: str = ".tmp") -> None:
    """``write`` a temporary file beside ``path`` (``.<name>.<random><suffix>``: a suffix that keeps the
    extension lets a writer pick the format from it), then ``os.replace`` it onto ``path``; the
    temporary file is gone afterwards whatever happened."""
    tmp = path.with_name(f".{path.name}.{uuid.uuid4().hex}{suffix}")
    try:
        write(tmp)
        os.replace(tmp, path)
    finally:
        tmp.unlink(missing_ok=True)


__all__ = ["replace_atomically"]
