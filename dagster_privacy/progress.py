"""The progress bar of long work (an evaluation's metrics, a calibration's sweep): rich, on stderr, only
when stderr is a terminal — nothing in pipelines, logs or tests."""

from __future__ import annotations

import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager


@contextmanager
def progress_bar(enabled: bool, total: int, what: str) -> Iterator[Callable[[str], None]]:
    """Yields ``step(description)``: each call counts the step before it done and names the next."""
    if not enabled or not sys.stderr.isatty():
        yield lambda _desc: None
        return
    from rich.console import Console
    from rich.progress import BarColumn, Progress, TextColumn, TimeElapsedColumn

    prog = Progress(
        TextColumn("{task.description}"),
        BarColumn(),
        TextColumn("{task.completed}/{task.total}"),
        TimeElapsedColumn(),
        console=Console(stderr=True),
        transient=True,
    )
    task = prog.add_task(what, total=total)
    prog.start()
    state = {"first": True}

    def step(desc: str) -> None:
        if not state["first"]:
            prog.advance(task)
        state["first"] = False
        prog.update(task, description=f"{what}: {desc}")

    try:
        yield step
    finally:
        prog.stop()


__all__ = ["progress_bar"]
