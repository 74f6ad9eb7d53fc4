"""``taskforge console``: the web console and JSON API (package ``taskforge_console``, the
``console`` extra) served by waitress: one process, one connection pool (docs/console.md).

Binds to 127.0.0.1 by default; any other address is refused unless a token
(``TASKFORGE_CONSOLE_TOKEN``) or a password (``TASKFORGE_CONSOLE_PASSWORD``) is configured, or
``--insecure-bind`` is given. ``--read-dsn`` (``TASKFORGE_CONSOLE_READ_DSN``) names a hot standby
the console reads from (docs/console.md, "Reading from a hot standby"). Stops cleanly (exit
code 0) on SIGINT or SIGTERM. Secrets come from the environment only, never from the command
line (where other users of the machine could read them in the process list).
"""

from __future__ import annotations

import ipaddress
import signal
from typing import Any

import click

from ..database import resolve_dsn
from .common import Seconds, SqlInt, Text, dsn_option, fail, pooler_option

__all__ = ["COMMANDS", "bind_problem", "console_cmd", "is_loopback"]


def is_loopback(host: str) -> bool:
    """``localhost`` or a loopback IP literal (127.0.0.0/8, ::1). Other names count as public."""
    name = host.strip().strip("[]").lower()
    if name == "localhost":
        return True
    try:
        return ipaddress.ip_address(name).is_loopback
    except ValueError:
        return False


def bind_problem(host: str, *, auth_configured: bool, insecure_bind: bool) -> str | None:
    """Why serving on ``host`` is refused, or ``None`` when it is allowed."""
    if is_loopback(host) or auth_configured or insecure_bind:
        return None
    return (
        f"--host: refusing to serve on {host!r} (not a loopback address) without authentication: "
        "set TASKFORGE_CONSOLE_TOKEN and/or TASKFORGE_CONSOLE_PASSWORD, or pass --insecure-bind"
    )


@click.command("console")
@dsn_option
@click.option("--host", default="127.0.0.1", show_default=True, type=Text(), help="Address to listen on.")
@click.option("--port", default=8080, show_default=True, type=SqlInt(min=0, max=65535), help="TCP port (0: any free).")
@click.option(
    "--prefix", default="", type=Text(), help="URL path to mount the console under, e.g. /tasks (default: the root)."
)
@click.option("--read-only", is_flag=True, help="Hide and refuse every action (submit, cancel, retry, pause).")
@click.option(
    "--insecure-bind",
    is_flag=True,
    help="Allow a non-loopback --host with no token and no password (anyone who reaches it may act).",
)
@click.option(
    "--statement-timeout",
    default=2.0,
    show_default=True,
    type=Seconds(0.01, 600),
    help="Limit of each read the console sends (seconds, database statement_timeout).",
)
@click.option(
    "--threads",
    default=8,
    show_default=True,
    type=SqlInt(min=1, max=64),
    help="Request threads (= pooled connections).",
)
@click.option(
    "--proxy-hops",
    default=0,
    show_default=True,
    type=SqlInt(min=0, max=5),
    help="Reverse proxies in front whose X-Forwarded-For/-Proto/-Host headers to trust.",
)
@click.option("--secure-cookies", is_flag=True, help="Mark the session cookie Secure (served over HTTPS).")
@click.option(
    "--read-dsn",
    envvar="TASKFORGE_CONSOLE_READ_DSN",
    show_envvar=True,
    default=None,
    type=Text(),
    help="Connection string of a hot standby to read from (pages, API reads, /metrics); actions still go to "
    "--dsn, and reads go there too while the standby cannot be reached.",
)
@pooler_option
def console_cmd(
    dsn: str | None,
    host: str,
    port: int,
    prefix: str,
    read_only: bool,
    insecure_bind: bool,
    statement_timeout: float,
    threads: int,
    proxy_hops: int,
    secure_cookies: bool,
    read_dsn: str | None,
    pooler: str,
) -> None:
    """Serve the web console and JSON API (needs the `console` extra).

    Connect it as a login role holding only taskforge_console (docs/console.md, "Roles"). The
    API token, sign-in password and cookie key come from TASKFORGE_CONSOLE_TOKEN,
    TASKFORGE_CONSOLE_PASSWORD and TASKFORGE_CONSOLE_SECRET_KEY.
    """
    try:
        import waitress

        from taskforge_console import Settings, SettingsError, create_app
        from taskforge_console.state import console
    except ImportError as exc:
        fail(f"the console needs the `console` extra: pip install 'taskforge[console]' ({exc})", 1)
    try:
        settings = Settings.from_env(
            resolve_dsn(dsn),
            prefix=prefix,
            read_only=read_only,
            statement_timeout_ms=max(1, round(statement_timeout * 1000)),
            proxy_hops=proxy_hops,
            secure_cookies=secure_cookies,
            pool_max_size=threads,
            pool_min_size=1,
            pooler=pooler,
            read_dsn=read_dsn,
        )
    except SettingsError as exc:
        fail(str(exc), 2)
    problem = bind_problem(host, auth_configured=settings.auth_required, insecure_bind=insecure_bind)
    if problem is not None:
        fail(problem, 2)
    app = create_app(settings)
    server: Any = waitress.create_server(app, host=host, port=port, threads=threads, ident="taskforge-console")
    shown_host = f"[{host}]" if ":" in host and not host.startswith("[") else host
    notes = [
        note
        for note, on in (
            ("read-only", settings.read_only),
            ("open: no token or password", not settings.auth_required),
            ("reads from --read-dsn", settings.read_dsn is not None),
        )
        if on
    ]
    click.echo(
        f"taskforge console: http://{shown_host}:{server.effective_port}{settings.prefix}/"
        + (f" ({', '.join(notes)})" if notes else ""),
        err=True,
    )
    previous = signal.signal(signal.SIGTERM, _stop_on_sigterm)  # SIGTERM stops it like Ctrl-C (exit 0)
    try:
        server.run()
    except KeyboardInterrupt:
        pass
    finally:
        signal.signal(signal.SIGTERM, previous)
        server.close()
        console(app).db.close()


def _stop_on_sigterm(signum: int, frame: object) -> None:
    raise KeyboardInterrupt


#: The commands of this module (added to the ``taskforge`` group).
COMMANDS: tuple[click.Command, ...] = (console_cmd,)
