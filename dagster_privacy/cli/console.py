"""``dagster-privacy console``: the privacy officer's web console (serve, add-user). Imports Starlette,
uvicorn and Dagster only when run."""

from __future__ import annotations

import os

import click

from ..console.identity import PROXY_SECRET_HEADER, PROXY_SECRET_MIN

#: where the console reads the proxy's shared secret when no file is given
PROXY_SECRET_ENV = "DAGSTER_PRIVACY_PROXY_SECRET"


@click.group("console", invoke_without_command=True)
@click.option(
    "--instance", "instance_dir", default=None, help="the Dagster instance directory [default: $DAGSTER_HOME]"
)
@click.option(
    "--host", default="127.0.0.1", show_default=True, help="address to bind (a proxy in front for others)"
)
@click.option("--port", default=8088, show_default=True, type=click.IntRange(1, 65535))
@click.option(
    "--users",
    "users_file",
    default=None,
    help="users file (add-user writes it) [default: <instance>/dagster_privacy/console-users.json]",
)
@click.option(
    "--target",
    default=None,
    help="publication target, for withdrawals [default: $DAGSTER_PRIVACY_PUBLISH_TARGET]",
)
@click.option("--audit", "audit_path", default=None, help="audit DuckDB file [default: as for signoff]")
@click.option(
    "--ledger",
    default=None,
    help="the lineages' ledger [default: $DAGSTER_PRIVACY_LEDGER, else beside the instance]",
)
@click.option(
    "--asset",
    default=None,
    help="the synthetic table asset [default: every asset of the instance whose privacy checks ran]",
)
@click.option(
    "--name-prefix",
    default="",
    help="the privacy checks' prefix, for a second policy on the asset (build_privacy_checks(name_prefix=))",
)
@click.option(
    "--proxy-header", default=None, help="identity header set by a reverse proxy (X-Forwarded-User)"
)
@click.option("--trusted-proxy", multiple=True, help="address the proxy header is accepted from (repeat)")
@click.option(
    "--proxy-secret-file",
    default=None,
    help=f"file holding the secret the proxy sends in {PROXY_SECRET_HEADER} (or ${PROXY_SECRET_ENV}); "
    "proxy mode needs one",
)
@click.option("--insecure-cookies", is_flag=True, help="no Secure flag (plain http on a non-local name)")
@click.option("--idle-minutes", default=30.0, show_default=True, type=click.FloatRange(1, 24 * 60))
@click.pass_context
def console_command(  # noqa: PLR0913
    ctx: click.Context,
    instance_dir: str | None,
    host: str,
    port: int,
    users_file: str | None,
    target: str | None,
    audit_path: str | None,
    ledger: str | None,
    asset: str | None,
    name_prefix: str,
    proxy_header: str | None,
    trusted_proxy: tuple[str, ...],
    proxy_secret_file: str | None,
    insecure_cookies: bool,
    idle_minutes: float,
) -> None:
    """Serve the officer console: releases, evidence reports, approve / reject / withdraw, the audit."""
    from .args import UsageFailure

    instance_dir = instance_dir or os.environ.get("DAGSTER_HOME")
    ctx.obj = {"users": users_file, "instance": instance_dir}
    if ctx.invoked_subcommand is not None:
        return
    if not instance_dir or not os.path.isdir(instance_dir):
        raise UsageFailure("give the Dagster instance directory (--instance, or DAGSTER_HOME)")
    if proxy_header and not trusted_proxy:
        raise UsageFailure("--proxy-header needs --trusted-proxy ADDRESS (the proxy's own address)")
    import ipaddress
    import socket

    for address in trusted_proxy:
        try:
            ipaddress.ip_address(address)
        except ValueError:
            raise UsageFailure(f"--trusted-proxy {address}: give the proxy's IP address") from None
    proxy_secret = _proxy_secret(proxy_secret_file) if proxy_header else None
    try:  # a port in use or a host that does not resolve: one line now, not uvicorn's two later
        family = socket.AF_INET6 if ":" in host else socket.AF_INET
        with socket.socket(family) as probe:
            probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            probe.bind((host, port))
    except OSError as exc:
        raise UsageFailure(f"cannot listen on {host}:{port} ({type(exc).__name__})") from None
    import uvicorn

    from ..console import ConsoleSettings, build_console

    try:
        settings = ConsoleSettings(
            instance_dir=instance_dir,
            asset=asset,
            audit=audit_path,
            ledger=ledger,
            target=target or os.environ.get("DAGSTER_PRIVACY_PUBLISH_TARGET"),
            users=users_file or _default_users(instance_dir),
            proxy_header=proxy_header,
            trusted_proxies=tuple(trusted_proxy),
            proxy_secret=proxy_secret,
            name_prefix=name_prefix,
            secure_cookies=not insecure_cookies,
            idle_minutes=idle_minutes,
        )
        app = build_console(settings)
    except Exception as exc:  # an unreadable dagster.yaml, an audit file that is not ours
        from ..errors import safe_reason

        raise UsageFailure(f"the console cannot open {instance_dir}: {safe_reason(exc)}") from None
    click.echo(f"privacy console on http://{host}:{port}/ (instance {instance_dir})", err=True)
    # proxy_headers off: the peer address decides whether an identity header is trusted, and uvicorn
    # would otherwise replace it with what a local client writes in X-Forwarded-For
    uvicorn.run(app, host=host, port=port, log_level="warning", access_log=False, server_header=False,
                proxy_headers=False)  # fmt: skip


def _proxy_secret(path: str | None) -> str:
    """The proxy's shared secret, from a file or the environment (never the command line: argv is
    readable by every local user); proxy mode without one is refused."""
    from .args import UsageFailure

    if path:
        import stat

        try:
            st = os.lstat(path)
            if stat.S_ISLNK(st.st_mode) or not stat.S_ISREG(st.st_mode):
                raise UsageFailure(f"--proxy-secret-file {path}: not a regular file (a link is refused)")
            if st.st_mode & 0o077 or st.st_uid != os.geteuid():
                raise UsageFailure(
                    f"--proxy-secret-file {path}: readable by others or not this user's: chmod 600 it, "
                    "owned by the user the console runs as (every reader could forge an officer)"
                )
            secret = open(path, encoding="utf-8").read().strip()  # noqa: SIM115
        except (OSError, UnicodeError):
            raise UsageFailure(f"--proxy-secret-file {path}: cannot be read") from None
    else:
        secret = os.environ.get(PROXY_SECRET_ENV, "").strip()
    if len(secret) < PROXY_SECRET_MIN:
        raise UsageFailure(
            f"proxy mode needs the proxy's shared secret of at least {PROXY_SECRET_MIN} characters "
            f"(--proxy-secret-file FILE or ${PROXY_SECRET_ENV}): an address proves nothing on a shared host"
        )
    return secret


def _default_users(instance_dir: str) -> str:
    return os.path.join(instance_dir, "dagster_privacy", "console-users.json")


@console_command.command("add-user")
@click.argument("name")
@click.option("--role", type=click.Choice(["viewer", "officer"]), required=True)
@click.option("--proxy-only", is_flag=True, help="no password: the user signs in through the proxy only")
@click.option("--password-stdin", is_flag=True, help="read the password from standard input")
@click.pass_context
def add_user(ctx: click.Context, name: str, role: str, proxy_only: bool, password_stdin: bool) -> None:
    """Add or replace a console user (password asked twice unless --password-stdin)."""
    import sys

    from ..console.identity import IdentityError, Users
    from .args import UsageFailure

    path = ctx.obj["users"] or (_default_users(ctx.obj["instance"]) if ctx.obj["instance"] else None)
    if path is None:
        raise UsageFailure("give --users FILE or --instance DIR (or DAGSTER_HOME)")
    password = None
    if not proxy_only:
        password = (sys.stdin.readline().rstrip("\n") if password_stdin
                    else click.prompt("password", hide_input=True, confirmation_prompt=True))  # fmt: skip
    try:
        Users(path).add(name, role, password)
    except IdentityError as exc:
        raise UsageFailure(str(exc)) from None
    click.echo(f"user {name.strip()} ({role}) saved in {path}")
