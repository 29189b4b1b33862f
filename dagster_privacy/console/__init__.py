"""The privacy officer's console: a small web app (Starlette, server-rendered, no script) over the
Dagster instance, the sign-off audit table and the publication log. ``dagster-privacy console``."""

from .app import ConsoleSettings, build_console

__all__ = ["ConsoleSettings", "build_console"]
