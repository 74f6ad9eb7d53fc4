"""Connection poolers between TaskForge and PostgreSQL (PgBouncer): the one home of their rules.

A pooler in *transaction* mode (PgBouncer ``pool_mode = transaction``) lends a server connection
to a client for one transaction only, so nothing may outlive a transaction on a connection:

* no automatic prepared statements: psycopg prepares a statement it has run 5 times on the
  connection, and the next client lent that server connection meets ``_pg3_N already exists``
  (:func:`connect_kwargs` turns preparing off with ``prepare_threshold=None``);
* no startup options: PgBouncer refuses ``options`` in the startup packet, so the worker's
  ``lock_timeout`` and ``statement_timeout`` are set per transaction instead
  (:func:`startup_options` leaves them out; :data:`PER_TRANSACTION_SETTINGS` with
  :func:`transaction_settings`, sent in an explicit transaction with the statement);
* no session state: no ``SET`` without ``LOCAL``, no session advisory locks, and no ``LISTEN``
  (a notification reaches whichever client holds that server connection then, or nobody):
  notifications need a direct connection (:data:`LISTEN_DSN_ENV`), else the process polls.

The mode is named by ``--pooler`` on the commands, or by ``$TASKFORGE_POOLER``
(:func:`resolve_pooler`): ``none`` (the default: a direct connection, or a pooler in *session*
mode, which keeps a server connection for the whole client session) or ``transaction``.
Durations are seconds (sent as whole milliseconds, at least 1 ms).
"""

from __future__ import annotations

import os
from typing import Any

from psycopg.conninfo import conninfo_to_dict

__all__ = [
    "LISTEN_DSN_ENV",
    "NONE",
    "PER_TRANSACTION_SETTINGS",
    "POOLERS",
    "POOLER_ENV",
    "TRANSACTION",
    "connect_kwargs",
    "listens",
    "milliseconds",
    "resolve_pooler",
    "startup_options",
    "transaction_settings",
]

#: The environment variable naming the pooler mode when ``--pooler`` is not given.
POOLER_ENV = "TASKFORGE_POOLER"
#: The environment variable of the direct DSN notifications are listened on (``--listen-dsn``).
LISTEN_DSN_ENV = "TASKFORGE_LISTEN_DSN"
#: A direct connection, or a pooler in session mode: sessions keep their state.
NONE = "none"
#: A pooler in transaction mode: nothing may outlive a transaction on a connection.
TRANSACTION = "transaction"
#: The accepted modes, in the order the help lists them.
POOLERS = (NONE, TRANSACTION)

#: Sets the two timeouts for the rest of the transaction (``is_local`` true): sent after BEGIN,
#: before a statement run in transaction mode, then COMMIT (four round trips: PgBouncer 1.18 lost
#: track of a pipelined pair now and then and kept the server connection linked to the client).
#: Parameters: ``lock_timeout`` and ``statement_timeout``, each a number of milliseconds as text,
#: or NULL to keep the server's.
PER_TRANSACTION_SETTINGS = (
    "SELECT set_config('lock_timeout', coalesce(%(lock_timeout)s, current_setting('lock_timeout')), true), "
    "set_config('statement_timeout', coalesce(%(statement_timeout)s, current_setting('statement_timeout')), true)"
)


def resolve_pooler(value: str | None = None) -> str:
    """The pooler mode: ``value``, else (None or empty) ``$TASKFORGE_POOLER``, else ``none``; one
    of :data:`POOLERS` (any case). Raises ``ValueError`` naming ``pooler`` for any other text."""
    chosen = value if value else os.environ.get(POOLER_ENV) or NONE
    mode = chosen.strip().lower()
    if mode not in POOLERS:
        source = "pooler" if value else f"${POOLER_ENV}"
        raise ValueError(f"{source}: must be one of {', '.join(POOLERS)}, got {chosen!r}")
    return mode


def milliseconds(seconds: float) -> int:
    """``seconds`` as whole milliseconds, at least 1."""
    return max(1, round(seconds * 1000))


def connect_kwargs(pooler: str) -> dict[str, Any]:
    """Keyword arguments of ``psycopg.connect`` (and of pools) for ``pooler``: in transaction
    mode ``prepare_threshold=None`` (psycopg prepares nothing); nothing otherwise."""
    return {"prepare_threshold": None} if pooler == TRANSACTION else {}


def startup_options(
    dsn: str, pooler: str, lock_timeout: float | None = None, statement_timeout: float | None = None
) -> dict[str, Any]:
    """The ``options`` keyword of ``psycopg.connect``, as a dict to splat (empty when there is
    nothing to send). Passing ``options`` makes libpq ignore ``$PGOPTIONS``, so the value keeps,
    in this order, ``$PGOPTIONS``, the options of the DSN and then ``-c lock_timeout=`` and ``-c
    statement_timeout=`` for the given seconds (None: not set); a later ``-c`` wins. In
    transaction mode the two timeouts are left out (they are set per transaction:
    :func:`transaction_settings`) and the caller's own options are passed on as given."""
    parts = [os.environ.get("PGOPTIONS") or "", str(conninfo_to_dict(dsn).get("options") or "")]
    if pooler != TRANSACTION:
        if lock_timeout is not None:
            parts.append(f"-c lock_timeout={milliseconds(lock_timeout)}")
        if statement_timeout is not None:
            parts.append(f"-c statement_timeout={milliseconds(statement_timeout)}")
    options = " ".join(p.strip() for p in parts if p.strip())
    return {"options": options} if options else {}


def transaction_settings(
    pooler: str, lock_timeout: float | None, statement_timeout: float | None
) -> dict[str, str | None] | None:
    """The parameters of :data:`PER_TRANSACTION_SETTINGS` for the given seconds (None: keep the
    server's), or None when nothing is to be sent: not transaction mode, or neither timeout set."""
    if pooler != TRANSACTION or (lock_timeout is None and statement_timeout is None):
        return None
    return {
        "lock_timeout": None if lock_timeout is None else str(milliseconds(lock_timeout)),
        "statement_timeout": None if statement_timeout is None else str(milliseconds(statement_timeout)),
    }


def listens(pooler: str, listen_dsn: str | None = None) -> bool:
    """Whether a process may LISTEN: always on a direct connection (``none``); in transaction
    mode only on ``listen_dsn``, a direct connection to the server."""
    return pooler != TRANSACTION or bool(listen_dsn)
