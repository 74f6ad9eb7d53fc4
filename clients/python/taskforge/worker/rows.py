"""The worker's statements on the wire: typed result rows, and array parameters as literals.

Rows: ``tf_finalize_and_claim`` answers with :class:`TurnRow` and ``tf_renew_many`` with
:class:`RenewRow` (named tuples over the columns of ``sql.FINALIZE_AND_CLAIM`` and
``sql.RENEW_MANY``, in their order). :data:`TURN_ROWS` and :data:`RENEW_ROWS` are the psycopg row
factories that build them straight from each row's values (``tuple.__new__``, no Python call).

Parameters: the statements cast every array parameter (``%(task_ids)s::bigint[]``,
``%(results)s::text[]::jsonb[]``, ...), so the worker sends each array as one PostgreSQL array
literal string, built with ``str.join``: psycopg adapts a Python list element by element in
Python (about 1.4 microseconds per integer and 5.6 per JSON text on the reference machine),
a string in one step. An empty batch is sent as empty lists.
"""

from __future__ import annotations

import functools
from collections.abc import Iterable, Sequence
from typing import Any, NamedTuple

from psycopg.rows import RowFactory

__all__ = ["RENEW_ROWS", "TURN_ROWS", "RenewRow", "TurnRow", "int_array", "text_array"]


class TurnRow(NamedTuple):
    """One row of ``tf_finalize_and_claim`` (``sql.FINALIZE_AND_CLAIM``).

    ``kind`` is ``finalized`` (one per element sent, in input order: ``accepted``,
    ``task_state``, ``reason``) or ``claimed`` (one per task claimed: ``task_type``, ``payload``
    as JSON text, ``queue``, ``priority``, ``max_attempts``, ``timeout_seconds`` in seconds or
    None, ``traceparent``, the W3C trace context given at submit or None); the columns of the
    other kind are None.
    """

    kind: str
    task_id: int
    attempt_number: int
    accepted: bool | None
    task_state: str | None
    reason: str | None
    task_type: str
    payload: str
    queue: str
    priority: int
    max_attempts: int
    timeout_seconds: float | None
    traceparent: str | None


class RenewRow(NamedTuple):
    """One row of ``tf_renew_many`` (``sql.RENEW_MANY``), one per element, in input order:
    ``renewed``, ``cancel_requested`` (None for ``not_found``) and ``reason`` (None when renewed,
    else ``busy`` or why the lease is lost)."""

    task_id: int
    attempt_number: int
    renewed: bool
    cancel_requested: bool | None
    reason: str | None


def _maker(cls: type[Any]) -> RowFactory[Any]:
    make = functools.partial(tuple.__new__, cls)

    def factory(cursor: Any) -> Any:
        return make

    return factory


#: psycopg row factories (``cursor.row_factory = TURN_ROWS``) of the two row types.
TURN_ROWS: RowFactory[TurnRow] = _maker(TurnRow)
RENEW_ROWS: RowFactory[RenewRow] = _maker(RenewRow)


def int_array(values: Iterable[int]) -> str:
    """A PostgreSQL array literal of whole numbers: ``[7, 8]`` -> ``'{7,8}'``."""
    return "{" + ",".join(map(str, values)) + "}"


def text_array(values: Sequence[str | None]) -> str:
    """A PostgreSQL array literal of texts (None -> NULL): every element double-quoted, with
    ``\\`` and ``"`` escaped, so any text (JSON, a name spelled ``null``) arrives unchanged."""
    return "{" + ",".join(["NULL" if v is None else _quote(v) for v in values]) + "}"


def _quote(text: str) -> str:
    if "\\" in text or '"' in text:
        text = text.replace("\\", "\\\\").replace('"', '\\"')
    return '"' + text + '"'
