"""The fenced blocks of README.md and docs/*.md, and the commands in them as a user would type them.

Every block is listed in ``tests/test_docs_blocks.py``'s catalogue with the test that runs or checks
it; the tests take the text from the documents themselves, so a block runs as printed."""

from __future__ import annotations

import contextlib
import os
import re
import shutil
import signal
import subprocess
import time
import urllib.error
import urllib.request
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).parents[1]
DOCUMENTS = (
    "README.md",
    *sorted(f"docs/{p.name}" for p in (ROOT / "docs").glob("*.md")),
    "examples/privacy_release/README.md",
)
BIN = Path(shutil.which("dagster-privacy") or "dagster-privacy").parent


@dataclass(frozen=True)
class Block:
    doc: str  # path from the repository root
    index: int  # the block's position among the document's fenced blocks, from 0
    lang: str
    text: str


def blocks(doc: str | None = None) -> list[Block]:
    found = []
    for name in (doc,) if doc else DOCUMENTS:
        text = (ROOT / name).read_text()
        for i, m in enumerate(re.finditer(r"^```(\w*)\n(.*?)^```", text, flags=re.S | re.M)):
            found.append(Block(name, i, m.group(1), m.group(2)))
    return found


def block(doc: str, index: int) -> Block:
    return blocks(doc)[index]


def commands(text: str) -> list[str]:
    """The shell commands of a block: backslash continuations joined, blank lines dropped."""
    return [c.strip() for c in text.replace("\\\n", " ").splitlines() if c.strip()]


def synopsis(text: str) -> list[str]:
    """The commands of a usage listing: an indented line continues the line above it; comments dropped."""
    lines: list[str] = []
    for line in text.splitlines():
        if line.startswith(" ") and lines:
            lines[-1] += " " + line.strip()
        elif line.strip():
            lines.append(line.split("  #")[0].strip())
    return lines


def clean_env(**extra: str) -> dict[str, str]:
    """The machine's environment without any DAGSTER_* variable (a user's shell), plus ``extra``."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("DAGSTER_")}
    env["PATH"] = f"{BIN}{os.pathsep}{env.get('PATH', '')}"
    return env | extra


def sh(
    command: str, cwd: Path, env: dict[str, str], timeout: float = 600, stdin: str = ""
) -> tuple[int, str]:
    """Runs one printed command line in bash; returns the exit code and stdout + stderr."""
    out = subprocess.run(
        ["bash", "-c", command], cwd=cwd, env=env, input=stdin, capture_output=True, text=True,
        timeout=timeout, start_new_session=True,  # no controlling terminal: a password prompt reads stdin
    )  # fmt: skip
    return out.returncode, out.stdout + out.stderr


class Server:
    """A printed long-running command (a web server), started in its own process group and killed
    with the whole group (``dagster dev`` ignores SIGTERM to its children)."""

    def __init__(self, command: str, cwd: Path, env: dict[str, str], url: str) -> None:
        self.command, self.cwd, self.env, self.url = command, cwd, env, url
        self.log = cwd / f"server-{abs(hash(command))}.log"

    def __enter__(self) -> Server:
        try:  # the printed port must be free, or the test would read whichever server holds it
            with urllib.request.urlopen(self.url, timeout=2):
                raise AssertionError(f"{self.url} answers before {self.command!r} started")
        except urllib.error.HTTPError as exc:
            raise AssertionError(f"{self.url} answers before {self.command!r} started") from exc
        except OSError:
            pass
        with self.log.open("w") as log:
            self.proc = subprocess.Popen(
                ["bash", "-c", f"exec {self.command}"], cwd=self.cwd, env=self.env, stdout=log,
                stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, start_new_session=True,
            )  # fmt: skip
        deadline = time.monotonic() + 180
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise AssertionError(f"{self.command!r} exited {self.proc.returncode}: {self.text()}")
            try:
                with urllib.request.urlopen(self.url, timeout=5):
                    return self
            except OSError:
                time.sleep(0.5)
        self.__exit__()
        raise AssertionError(f"{self.command!r} did not serve {self.url} in 180 s: {self.text()}")

    def text(self) -> str:
        return self.log.read_text(errors="replace")[-3000:]

    def __exit__(self, *exc: object) -> None:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(self.proc.pid, signal.SIGKILL)
        self.proc.wait(timeout=30)
