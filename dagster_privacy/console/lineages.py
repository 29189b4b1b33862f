"""The console's lineage pages (issue 56): the lineages of the ledger, and one lineage's releases. The
ledger is read off the event loop: a locked or slow ledger holds up no other page."""

from __future__ import annotations

from typing import Any

from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.responses import HTMLResponse

from ..errors import safe_reason
from ..lineage import Ledger, LineageError, open_ledger, releases
from . import pages
from .refusal import Refused


def ledger_of(console: Any) -> Ledger:
    """The console's ledger: the one it was given, else where the lineage check writes it."""
    from ..pipeline.lineage_check import default_ledger
    from ..pipeline.settings import privacy_folder

    where = console.settings.ledger or default_ledger(console.instance)
    return open_ledger(where, home=privacy_folder(console.instance))


async def lineages_view(console: Any, request: Request) -> HTMLResponse:
    user, csrf = console.need(request)

    def read() -> tuple[str, list[str]]:
        led = ledger_of(console)  # a database ledger asks its server who it is: off the event loop too
        return led.where, led.lineages()

    try:
        where, names = await run_in_threadpool(read)
    except LineageError as exc:
        raise Refused(409, f"the ledger cannot be read: {safe_reason(exc)}") from None
    return HTMLResponse(pages.lineages_page(names, where, user=user, csrf=csrf))


async def lineage_view(console: Any, request: Request) -> HTMLResponse:
    user, csrf = console.need(request)
    name = request.path_params["name"]

    def read() -> tuple[str, list[Any]]:
        led = ledger_of(console)
        if name not in led.lineages():
            raise Refused(404, "no such lineage in the ledger")
        return led.where, releases(led.entries(name, led.key(name)))

    try:
        where, rel = await run_in_threadpool(read)
        status, problems = f"{len(rel)} release(s), hash chain intact (ledger {where})", []
    except LineageError as exc:
        rel, status, problems = [], "the ledger cannot be read, or does not verify", [safe_reason(exc)]
    return HTMLResponse(pages.lineage_page(name, rel, status, problems, user=user, csrf=csrf))


__all__ = ["ledger_of", "lineage_view", "lineages_view"]
