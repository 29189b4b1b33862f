"""The privacy officer's console: a small web app (Starlette, server-rendered, no script) over the
Dagster instance, the sign-off audit table and the publication log. ``dagster-privacy console``.
Starlette and Dagster load with ``ConsoleSettings`` / ``build_console``, not with this package (the CLI
reads identity.py's constants at startup)."""

from __future__ import annotations

from typing import Any

__all__ = ["ConsoleSettings", "build_console"]


def __getattr__(name: str) -> Any:
    if name in __all__:
        from . import app

        return getattr(app, name)
    raise AttributeError(name)
