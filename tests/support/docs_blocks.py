"""The fenced blocks of README.md and docs/*.md, and the commands in them as a user would type them.

Every block is listed in ``tests/test_docs_blocks.py``'s catalogue with the test that runs or checks
it; the tests take the text from the documents themselves, so a block runs as printed."""

from __future__ import annotations

import contextlib
import fcntl
import os
import re
import signal
import subprocess
import tempfile
import textwrap
import time
import urllib.error
import urllib.parse
import urllib.request
from dataclasses import dataclass
from pathlib import Path

from webserver import BIN  # the environment's scripts, as the other server tests start them

ROOT = Path(__file__).parents[2]
DOCUMENTS = (
    "README.md",
    *sorted(f"docs/{p.name}" for p in (ROOT / "docs").glob("*.md")),
    "examples/privacy_release/README.md",
)


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
        # a fence may be indented (a block inside a list item): its lines lose the fence's indent
        for i, m in enumerate(re.finditer(r"^([ \t]*)```(\w*)\n(.*?)^\1```", text, flags=re.S | re.M)):
            body = textwrap.dedent(m.group(3)) if m.group(1) else m.group(3)
            found.append(Block(name, i, m.group(2), body))
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


#: a home of the tests' own: what Dagster's CLIs write under ~/.dagster stays out of the user's home
HOME = tempfile.mkdtemp(prefix="dp_docs_home_")


def clean_env(**extra: str) -> dict[str, str]:
    """The machine's environment without any DAGSTER_* variable (a user's shell), plus ``extra``; the
    home is the tests' own and Dagster's telemetry is off (no event log, nothing sent)."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("DAGSTER_")}
    env["PATH"] = f"{BIN}{os.pathsep}{env.get('PATH', '')}"
    return env | {"HOME": HOME, "DAGSTER_DISABLE_TELEMETRY": "1"} | extra


def sh(
    command: str, cwd: Path, env: dict[str, str], timeout: float = 600, stdin: str = ""
) -> tuple[int, str]:
    """Runs one printed command line in bash; returns the exit code and stdout + stderr. On a timeout
    the whole process group is killed (a compound command's children too)."""
    proc = subprocess.Popen(
        ["bash", "-c", command], cwd=cwd, env=env, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT, text=True,
        start_new_session=True,  # no controlling terminal: a password prompt reads stdin
    )  # fmt: skip
    try:
        out, _ = proc.communicate(stdin, timeout=timeout)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        out, _ = proc.communicate()
        raise AssertionError(f"{command!r} ran over {timeout} s: {out[-3000:]}") from None
    return proc.returncode, out


class Server:
    """A printed long-running command (a web server), started in its own process group and killed
    with the whole group (``dagster dev`` ignores SIGTERM to its children)."""

    def __init__(self, command: str, cwd: Path, env: dict[str, str], url: str) -> None:
        self.command, self.cwd, self.env, self.url = command, cwd, env, url
        self.log = cwd / f"server-{abs(hash(command))}.log"

    def __enter__(self) -> Server:
        # a printed port is fixed: one test at a time holds it, across pytest-xdist's workers too
        port = urllib.parse.urlsplit(self.url).port
        self.lock = open(Path(tempfile.gettempdir()) / f"dagster-privacy-docs-port-{port}.lock", "w")  # noqa: SIM115
        fcntl.flock(self.lock, fcntl.LOCK_EX)
        if self._answers():  # the printed port must be free, or the test would read another server
            self.lock.close()
            raise AssertionError(f"{self.url} answers before {self.command!r} started")
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

    def _answers(self) -> bool:
        try:
            with urllib.request.urlopen(self.url, timeout=2):
                return True
        except urllib.error.HTTPError:
            return True
        except OSError:
            return False

    def text(self) -> str:
        return self.log.read_text(errors="replace")[-3000:]

    def __exit__(self, *exc: object) -> None:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(self.proc.pid, signal.SIGKILL)
        self.proc.wait(timeout=30)
        self.lock.close()  # releases the port's lock
