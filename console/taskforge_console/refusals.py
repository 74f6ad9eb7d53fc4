"""What a refusal of the SQL API means to the console: the one map from a
:class:`taskforge.errors.Refused` to the HTTP status and error code of the API (``api/errors.py``)
and to the ``code`` of a refused item of a bulk action (``queries.py``).

=========  ======  =====================  ===================================================
SQLSTATE   HTTP    code                   when
=========  ======  =====================  ===================================================
``TF400``  400     ``invalid_argument``   an argument the database (or the client, before
                                          sending) refused; ``field`` names it
``TF404``  404     ``not_found``          no such task (``field`` = ``task_id``)
``TF409``  409     ``conflict``           idempotency key reused with a different request; a
                                          retry the task's state does not allow
=========  ======  =====================  ===================================================
"""

from __future__ import annotations

from taskforge.errors import Refused

__all__ = ["REFUSAL_STATUS", "refusal_status"]

#: SQLSTATE of the TaskForge SQL API -> (HTTP status, error code) (docs/sql-api.md, "Errors").
REFUSAL_STATUS = {"TF400": (400, "invalid_argument"), "TF404": (404, "not_found"), "TF409": (409, "conflict")}


def refusal_status(exc: Refused) -> tuple[int, str]:
    """``(HTTP status, error code)`` of a refusal; an SQLSTATE the API does not know (the SQL
    API defines no other) is a 400 ``invalid_argument``."""
    return REFUSAL_STATUS.get(exc.sqlstate, REFUSAL_STATUS["TF400"])
