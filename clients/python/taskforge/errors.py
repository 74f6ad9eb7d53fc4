"""The one exception of a refused request, :class:`Refused`, and how a database error becomes one.

The SQL API refuses a request with an SQLSTATE of its own (docs/design.md §5, "Errors"): ``TF400``
(an invalid argument), ``TF404`` (no such task, or an unknown worker) or ``TF409`` (an
idempotency key reused with a different request; a retry the task's state does not allow).
Nothing is written when one is raised. The error's ``COLUMN`` field names the argument at fault:
``priority``, or for an element of a batch ``requests[3].priority`` (0-based, as in the JSON
array). :func:`refused_from` reads that field; no message text is ever parsed.

Three classes, so that ``except`` clauses written before this module keep working:

- :class:`Refused` (an ``Exception``): any refusal, from the database or from the client.
- :class:`InvalidArgument` (a ``Refused`` and a ``ValueError``, SQLSTATE ``TF400``): refused by
  the client *before anything was sent*, for a value PostgreSQL could not even receive as its
  argument type (see :mod:`taskforge.checks`). The database's own ``TF400`` is a plain
  :class:`Refused`; ``except Refused`` catches both.
- :class:`TaskNotFound` (a ``Refused`` and a ``LookupError``, SQLSTATE ``TF404``): no task with
  that id, whether a read found no row or the database refused a ``task_id`` (``tf_cancel``,
  ``tf_retry``).

Every function of :mod:`taskforge.client` and :mod:`taskforge.aio` raises these; any other
``psycopg.Error`` (a lost connection, a missing privilege) passes through unchanged.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from contextlib import contextmanager

import psycopg

__all__ = ["InvalidArgument", "Refused", "TaskNotFound", "refusals", "refused_from"]

# "requests[3].priority" -> ("requests", "3", "priority"); "requests[3]" -> ("requests", "3", None).
_ELEMENT = re.compile(r"(?P<array>[A-Za-z_][A-Za-z0-9_]*)\[(?P<index>[0-9]+)\](?:\.(?P<key>.+))?")


class Refused(Exception):
    """A request the SQL API (or the client, before sending) refused; nothing was written.

    Attributes:

    - ``sqlstate``: ``"TF400"``, ``"TF404"`` or ``"TF409"``.
    - ``message``: the whole message, ``"<field>: <problem>"`` (``str()`` of the exception).
    - ``field``: the argument as the error's ``COLUMN`` names it (``"priority"``,
      ``"requests[3].priority"``), or ``None`` when the error names none.
    - ``argument``: the SQL argument name: ``"priority"``; for a batch element, the key inside
      it (``"priority"`` of ``requests[3].priority``), or the array's name when the element as
      a whole is at fault (``"requests"`` of ``requests[3]``).
    - ``index``: the 0-based element of a batch call (``3``), else ``None``.
    - ``element_key``: for a batch element, the key at fault (``"priority"``), ``None`` when the
      element as a whole is (or for a call that is not a batch).
    - ``problem``: the message without its leading ``"<field>: "``.
    """

    def __init__(self, sqlstate: str, message: str, field: str | None = None):
        super().__init__(message)
        self.sqlstate = sqlstate
        self.message = message
        self.field = field
        element = _ELEMENT.fullmatch(field) if field else None
        self.argument: str | None = field
        self.index: int | None = None
        self.element_key: str | None = None
        if element is not None:
            self.element_key = element.group("key")
            self.argument = self.element_key or element.group("array")
            self.index = int(element.group("index"))

    @property
    def problem(self) -> str:
        """The message without the ``"<field>: "`` it starts with (the whole message otherwise)."""
        prefix = f"{self.field}: " if self.field else None
        return self.message[len(prefix) :] if prefix and self.message.startswith(prefix) else self.message

    def __str__(self) -> str:
        return self.message

    def __reduce__(self) -> tuple[object, ...]:  # pickling (an exception's default uses self.args)
        return (Refused, (self.sqlstate, self.message, self.field))


class InvalidArgument(Refused, ValueError):
    """A value refused by the client before anything was sent (SQLSTATE ``TF400``, the database's
    code for the same kind of mistake). ``field`` names the argument as the database would
    (``"priority"``, ``"requests[3].priority"``; ``None``: a request as a whole, before it is
    known which element it is); ``str()`` is ``"<field>: <problem>"``."""

    def __init__(self, field: str | None, problem: str):
        super().__init__("TF400", f"{field}: {problem}" if field else problem, field)

    def __reduce__(self) -> tuple[object, ...]:
        return (InvalidArgument, (self.field, self.problem))


class TaskNotFound(Refused, LookupError):
    """No task with that id (SQLSTATE ``TF404``, field ``task_id``): a read that found no row
    (``task_id`` is then the id asked for) or a call the database refused for it (``task_id`` is
    then ``None``: the message names the id)."""

    def __init__(self, task_id: int | None, message: str | None = None):
        super().__init__("TF404", message or f"task_id: no task {task_id}", "task_id")
        self.task_id = task_id

    def __reduce__(self) -> tuple[object, ...]:
        return (TaskNotFound, (self.task_id, self.message))


def refused_from(exc: psycopg.Error) -> Refused | None:
    """The :class:`Refused` (a :class:`TaskNotFound` for a ``TF404`` naming ``task_id``) that a
    psycopg error of the SQL API stands for, or ``None`` for any other error (an SQLSTATE that
    does not start with ``TF``). Reads the SQLSTATE, the primary message and ``COLUMN``."""
    sqlstate = exc.sqlstate or ""
    if not sqlstate.startswith("TF"):
        return None
    diag = exc.diag
    message = (diag.message_primary or str(exc)).strip()
    field = diag.column_name
    if sqlstate == "TF404" and field == "task_id":
        return TaskNotFound(None, message)
    return Refused(sqlstate, message, field)


@contextmanager
def refusals() -> Iterator[None]:
    """Turn a refusal of the SQL API raised in the block into :class:`Refused` (the psycopg
    error is its ``__cause__``); every other exception passes unchanged. Usable around ``await``
    as well."""
    try:
        yield
    except psycopg.Error as exc:
        refused = refused_from(exc)
        if refused is None:
            raise
        raise refused from exc
