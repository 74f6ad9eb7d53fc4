"""An embedded PostgreSQL (the ``pgserver`` package, extra ``demo``): the demo's database when
none is configured, and the test suite's server when no other one answers (conftest.py).

pgserver ships its own PostgreSQL build (16.x), listens on a Unix socket only, trusts local
connections, and, run as root, creates a system user ``pgserver`` to own the data directory
(PostgreSQL refuses to run as root).
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from psycopg.conninfo import conninfo_to_dict, make_conninfo

__all__ = ["Embedded", "EmbeddedError", "start"]


class EmbeddedError(RuntimeError):
    """The embedded PostgreSQL cannot be started; the message says why."""


@dataclass
class Embedded:
    """A running embedded server: ``admin_dsn`` connects as the superuser ``postgres`` to the
    ``postgres`` database through the server's Unix socket."""

    server: Any  # pgserver.PostgresServer (no type hints)
    admin_dsn: str
    pgdata: Path

    @property
    def socket_dir(self) -> str:
        return str(conninfo_to_dict(self.admin_dsn).get("host") or "")

    def stop(self) -> None:
        """Stop the server (and delete its data directory if it was started with ``delete``)."""
        self.server.cleanup()


def start(pgdata: Path, *, cleanup_mode: str = "stop") -> Embedded:
    """Start (or reuse) the server whose data directory is ``pgdata`` (initdb on first use).

    ``cleanup_mode``: ``stop`` keeps the data for the next start, ``delete`` removes it on
    :meth:`Embedded.stop`. Raises :class:`EmbeddedError` when pgserver is not installed or the
    server does not start (the message names the server log).
    """
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # platformdirs warns when XDG_RUNTIME_DIR is unset
            import pgserver
    except ImportError:
        raise EmbeddedError(
            "the embedded PostgreSQL needs the pgserver package: pip install 'taskforge[demo]'"
        ) from None
    pgdata = pgdata.resolve()
    pgdata.parent.mkdir(parents=True, exist_ok=True)
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            server = pgserver.get_server(pgdata, cleanup_mode=cleanup_mode)
    except Exception as exc:  # initdb/pg_ctl/useradd failures: one clear message, the cause kept
        raise EmbeddedError(
            f"cannot start the embedded PostgreSQL in {pgdata}: {type(exc).__name__}: {exc} "
            f"(server log: {pgdata / 'log'})"
        ) from exc
    params = {k: v for k, v in conninfo_to_dict(server.get_uri()).items() if v not in ("", None)}
    params["dbname"] = "postgres"
    return Embedded(server=server, admin_dsn=make_conninfo("", **params), pgdata=pgdata)
