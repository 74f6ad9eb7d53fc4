"""The API against its own OpenAPI document: schemathesis generates requests from
``/api/openapi.json`` and checks every answer (no server error, a documented status code, a
body matching the documented schema, the documented content type).

It runs in-process against the WSGI app, on a database of its own (generated requests cancel,
retry and pause whatever they name, so they must not touch the session's shared database).
Bounded: :data:`MAX_EXAMPLES` per operation, well under a minute in all. (Parametrized by hand
over the document's operations: schemathesis's pytest loader does not run under pytest 9.2.)
"""

from __future__ import annotations

import itertools
import secrets
from collections.abc import Iterator
from typing import Any

import psycopg
import pytest
import schemathesis
from hypothesis import HealthCheck, given, settings
from psycopg.conninfo import make_conninfo

from taskforge import database as tfdb
from taskforge_console import Settings, create_app
from taskforge_console.state import console

from console_support import BEARER, TOKEN

#: Examples per API operation (the run is bounded: 12 operations).
MAX_EXAMPLES = 25
#: Not checked: "a request valid by the document is accepted". The database is the authority on
#: rules a document cannot state (which task types are registered, which state a retry needs,
#: which tasks exist), so a schema-valid request may rightly get 400/404/409.
NOT_CHECKED = schemathesis.checks.positive_data_acceptance


@pytest.fixture(scope="module")
def isolated_app(admin_dsn: str, console_dsn: str) -> Iterator[Any]:
    """A console app over a freshly migrated database of its own (dropped afterwards)."""
    name = f"taskforge_schemathesis_{secrets.token_hex(4)}"
    with psycopg.connect(admin_dsn, autocommit=True) as conn:
        conn.execute(f'CREATE DATABASE "{name}"')
    dsn = tfdb.with_dbname(admin_dsn, name)
    try:
        tfdb.migrate(dsn)
        with psycopg.connect(dsn, autocommit=True) as conn:  # a few tasks to find
            for state_change in ("", "cancel"):
                task_id = conn.execute("SELECT task_id FROM taskforge.tf_submit(task_type => 'noop')").fetchone()[0]
                if state_change:
                    conn.execute("SELECT taskforge.tf_cancel(task_id => %s)", (task_id,))
        role = psycopg.conninfo.conninfo_to_dict(console_dsn)["user"]
        # schemathesis probes with a wrong token, then goes on with the right one: a clock that
        # moves a day at each reading lets every sign-in delay pass at once (nothing is throttled).
        days = itertools.count(step=86400.0)
        app = create_app(Settings(dsn=make_conninfo(dsn, user=role), token=TOKEN), clock=lambda: next(days))
        app.config["TESTING"] = True
        yield app
        console(app).db.close()
    finally:
        with psycopg.connect(admin_dsn, autocommit=True) as conn:
            conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


def _operations() -> list[Any]:
    """The operations of the document, read at collection time from an app with no database
    (the document needs none); each test then calls the app of :func:`isolated_app`."""
    app = create_app(Settings(dsn="dbname=taskforge_document_only"), open_pool=False)
    document = schemathesis.openapi.from_wsgi("/api/openapi.json", app)
    return [result.ok() for result in document.get_all_operations()]


@pytest.mark.parametrize("operation", _operations(), ids=lambda operation: operation.label)
def test_api_matches_its_openapi_document(operation: Any, isolated_app: Any) -> None:
    operation.app = operation.schema.app = isolated_app  # every call, probes included, goes to the real app

    @given(case=operation.as_strategy())
    @settings(
        max_examples=MAX_EXAMPLES,
        deadline=None,
        database=None,
        suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much],
    )
    def conforms(case: Any) -> None:
        case.call_and_validate(headers=BEARER, excluded_checks=[NOT_CHECKED])

    conforms()
