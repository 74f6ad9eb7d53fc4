"""The psycopg connections behind a Django database alias.

* :func:`psycopg_connection`: the psycopg 3 connection of Django's connection in this thread
  (opened if need be), so TaskForge's statements run in Django's transaction: inside
  ``transaction.atomic()`` a submitted task commits or rolls back with the block (a nested block
  is a savepoint) and its NOTIFY is delivered at commit; outside one, Django's autocommit
  commits it at once.
* :func:`worker_dsn`: a libpq connection string of the alias, for the worker's own connections.
"""

from __future__ import annotations

from typing import Any

import psycopg
from django.db import connections
from psycopg import pq
from psycopg.conninfo import make_conninfo

from ... import adapters

__all__ = ["psycopg_connection", "worker_dsn"]


def psycopg_connection(alias: str) -> psycopg.Connection[Any]:
    """The psycopg connection of ``django.db.connections[alias]`` in the calling thread.

    Raises ``TypeError`` when the alias is not PostgreSQL on psycopg 3 (see
    :func:`taskforge.adapters.psycopg_connection`); Django's own errors when it cannot connect.
    """
    return adapters.psycopg_connection(connections[alias])


def _libpq_keywords() -> frozenset[str]:
    return frozenset(option.keyword.decode() for option in pq.Conninfo.get_defaults())


def worker_dsn(alias: str) -> str:
    """A libpq connection string to the database of the alias: the libpq parameters of what
    Django would connect with (``NAME``, ``USER``, ``PASSWORD``, ``HOST``, ``PORT`` and the
    libpq keys of ``OPTIONS``, such as ``sslmode`` or ``service``); Django-only options (a pool,
    the isolation level, server-side binding) are left out."""
    params = connections[alias].get_connection_params()
    keywords = _libpq_keywords()
    return make_conninfo("", **{key: value for key, value in params.items() if key in keywords and value is not None})
