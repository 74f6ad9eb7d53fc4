"""The psycopg connection behind an application's own database handle, so a task is admitted in
the application's transaction: it commits or rolls back with the application's writes, and its
NOTIFY (the wake-up of idle workers) is delivered by PostgreSQL only at commit.

Every function of :mod:`taskforge.client` and :mod:`taskforge.aio` resolves its ``conn``
argument through :func:`psycopg_connection` or :func:`async_psycopg_connection`, so each of these
can be passed directly:

========================================  ==========================================================
``psycopg.Connection`` / ``AsyncConnection``  used as it is
SQLAlchemy ``Connection`` (``postgresql+psycopg``)  its DBAPI connection; a transaction is begun on
                                            the SQLAlchemy side first when none is, so that
                                            ``conn.commit()`` commits the task too
SQLAlchemy ``AsyncConnection`` (``postgresql+psycopg_async``)  likewise, for :mod:`taskforge.aio`
SQLAlchemy ``Session`` / ``AsyncSession``   the connection of its current transaction
Django ``connection`` / ``connections[alias]``  its psycopg connection (Django >= 4.2 with
                                            psycopg 3), opened if needed; inside
                                            ``transaction.atomic()`` the task joins the atomic
                                            block (a nested block is a savepoint)
========================================  ==========================================================

Nothing here imports SQLAlchemy or Django: handles are recognised by the attributes they have.
A handle for another database driver (psycopg2, asyncpg) raises ``TypeError``: TaskForge's client
speaks psycopg 3. A connection configured to load ``jsonb`` as text (Django's, whose ``JSONField``
decodes it) still gives the client decoded payloads and results: :func:`decode_json` sets psycopg's
JSON loader on the client's own cursor only, leaving the connection as the application set it.
"""

from __future__ import annotations

from typing import Any

import psycopg
from psycopg import pq
from psycopg.types.json import JsonbLoader, JsonLoader

__all__ = ["async_psycopg_connection", "decode_json", "psycopg_connection"]


def _driver_connection(fairy: Any, source: Any, wanted: type) -> Any:
    """The DBAPI connection behind a SQLAlchemy pooled-connection proxy, checked to be psycopg 3."""
    raw = getattr(fairy, "driver_connection", None)
    if not isinstance(raw, wanted):
        raise TypeError(
            f"conn: {type(source).__name__} is not backed by a psycopg 3 {wanted.__name__} (got "
            f"{type(raw).__name__}); use the SQLAlchemy dialect "
            f"{'postgresql+psycopg_async' if wanted is psycopg.AsyncConnection else 'postgresql+psycopg'}"
        )
    return raw


def psycopg_connection(conn: Any) -> psycopg.Connection[Any]:
    """The ``psycopg.Connection`` to send TaskForge's statements on, for ``conn`` being a psycopg
    connection, a SQLAlchemy ``Connection`` or ``Session``, or a Django database connection.

    A SQLAlchemy handle that has no transaction in progress gets one begun (the same as its
    autobegin on first use), so the caller's ``commit()``/``rollback()`` covers the task. A Django
    connection is opened when it is not yet (``ensure_connection``); Django's own autocommit and
    ``atomic()`` rules then apply to the statements. Raises ``TypeError`` for anything else,
    including a SQLAlchemy or Django connection on a driver other than psycopg 3.
    """
    if isinstance(conn, psycopg.Connection):
        return conn
    if hasattr(conn, "get_bind") and hasattr(conn, "connection") and hasattr(conn, "in_transaction"):
        conn = conn.connection()  # a Session: the Connection of its current transaction (begun on demand)
    if hasattr(conn, "in_transaction") and hasattr(conn, "begin") and hasattr(conn, "connection"):
        if not conn.in_transaction():
            conn.begin()
        return _driver_connection(conn.connection, conn, psycopg.Connection)  # type: ignore[no-any-return]
    if hasattr(conn, "ensure_connection") and hasattr(conn, "vendor"):
        if conn.vendor != "postgresql":
            raise TypeError(f"conn: a Django connection to {conn.vendor!r}; TaskForge needs PostgreSQL")
        conn.ensure_connection()
        raw = conn.connection
        if not isinstance(raw, psycopg.Connection):
            raise TypeError(
                f"conn: Django's connection uses {type(raw).__module__}, not psycopg 3; install psycopg 3 "
                "(Django prefers it over psycopg2 when both are installed)"
            )
        return raw
    raise TypeError(
        f"conn: expected a psycopg Connection, a SQLAlchemy Connection or Session, or a Django connection; "
        f"got {type(conn).__name__}"
    )


async def async_psycopg_connection(conn: Any) -> psycopg.AsyncConnection[Any]:
    """The ``psycopg.AsyncConnection`` to send TaskForge's statements on, for ``conn`` being a
    psycopg async connection or a SQLAlchemy ``AsyncConnection`` or ``AsyncSession``; the same
    rules as :func:`psycopg_connection` (a transaction is begun when none is). Raises ``TypeError``
    for anything else (a synchronous connection included: use :mod:`taskforge.client`)."""
    if isinstance(conn, psycopg.AsyncConnection):
        return conn
    if hasattr(conn, "get_bind") and hasattr(conn, "connection") and hasattr(conn, "in_transaction"):
        conn = await conn.connection()  # an AsyncSession
    if hasattr(conn, "get_raw_connection") and hasattr(conn, "in_transaction"):
        if not conn.in_transaction():
            await conn.begin()
        fairy = await conn.get_raw_connection()
        return _driver_connection(fairy, conn, psycopg.AsyncConnection)  # type: ignore[no-any-return]
    raise TypeError(
        "conn: expected a psycopg AsyncConnection or a SQLAlchemy AsyncConnection or AsyncSession; "
        f"got {type(conn).__name__}"
    )


def decode_json(cursor: psycopg.Cursor[Any] | psycopg.AsyncCursor[Any]) -> None:
    """Make ``cursor`` decode ``json``/``jsonb`` columns when its connection loads them as text
    (Django registers a text loader); a connection with a JSON loader of its own (psycopg's
    default, or one set with ``set_json_loads``, like the CLI's tolerant one) is left as it is.
    Only this cursor's adapters change."""
    types = cursor.adapters.types
    for name, loader in (("jsonb", JsonbLoader), ("json", JsonLoader)):
        info = types.get(name)
        if info is None:
            continue
        current = cursor.adapters.get_loader(info.oid, pq.Format.TEXT)
        if current is None or not issubclass(current, (JsonLoader, JsonbLoader)):
            cursor.adapters.register_loader(info.oid, loader)
