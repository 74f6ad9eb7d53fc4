"""What the fuzz tests of the SQL API (tests/sql/test_fuzz_sql.py) and of the command line
(tests/cli/test_fuzz_cli.py) share: hypothesis settings, strategies for text and JSON arguments
(SQL-injection strings among them), a database of their own, and a snapshot of every table.

The contract they check: a call either succeeds with its documented behaviour or is refused with
SQLSTATE TF400/TF404/TF409 (the command line: exit code 2 or 3 and one line on stderr) and
writes nothing: :func:`snapshot` (a digest of every row of every table of schema taskforge,
enumerated from the catalog) is the same before and after a refused call.

Bounded for ``make test``: FUZZ_EXAMPLES examples per test (``$TASKFORGE_FUZZ_EXAMPLES``
raises it for a longer hunt), no deadline, derandomized (the same examples on every run, no
example database), so CI is reproducible.
"""

from __future__ import annotations

import contextlib
import os
import secrets
from collections.abc import Iterator
from typing import Any

import psycopg
from hypothesis import HealthCheck, settings, strategies as st

from taskforge import database as tfdb
from taskforge.names import QUEUE_PATTERN, TASK_TYPE_PATTERN

__all__ = [
    "FUZZ",
    "INJECTIONS",
    "REFUSALS",
    "fuzz_database",
    "json_values",
    "mostly_valid",
    "objects",
    "payloads",
    "queue_names",
    "snapshot",
    "task_type_names",
    "texts",
]

FUZZ_EXAMPLES = int(os.environ.get("TASKFORGE_FUZZ_EXAMPLES", "60"))
FUZZ = settings(
    max_examples=FUZZ_EXAMPLES,
    deadline=None,
    derandomize=True,
    database=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)

#: The SQLSTATEs of the API's refusals.
REFUSALS = frozenset({"TF400", "TF404", "TF409"})

#: Strings that would change a statement built by pasting text into SQL; they must be stored as data.
INJECTIONS = (
    "'; DROP TABLE taskforge.tasks; --",
    "'); DELETE FROM taskforge.tasks; --",
    "x' OR '1'='1",
    '" OR ""="',
    "$fn$; DROP SCHEMA taskforge CASCADE; $fn$",
    "$$; SELECT pg_sleep(5); $$",
    "\\'; TRUNCATE taskforge.attempts; --",
    "E'\\x27' || (SELECT current_user) || '",
    "1; SELECT pg_terminate_backend(pg_backend_pid())",
    "queue'||pg_sleep(1)||'",
    "%s %(x)s {0} %%",
    "NULL",
    "null",
    "default",
    "'",
    '"',
    "\\",
    ";",
    "--",
    "/*",
    "$1",
    "café ☃ 日本語 🎉",
    "\t\r\n ",
)

_plain = st.characters(exclude_categories=["Cs"], exclude_characters="\x00")

#: Text PostgreSQL can hold: no NUL, no unpaired surrogate (those cannot even be sent as text).
texts = st.one_of(
    st.sampled_from(INJECTIONS),
    st.text(_plain, max_size=40),
    st.builds(lambda a, b: a + b, st.sampled_from(INJECTIONS), st.text(_plain, max_size=8)),
    st.text("ab", min_size=195, max_size=205),  # around the 200-character limits
    st.text("x", min_size=995, max_size=1005),  # around the 1,000 characters of a cancel reason
)
queue_names = st.one_of(st.from_regex(QUEUE_PATTERN, fullmatch=True), texts)
task_type_names = st.one_of(st.from_regex(TASK_TYPE_PATTERN, fullmatch=True), texts)

_json_scalars = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(min_value=-(10**30), max_value=10**30),
    st.floats(allow_nan=False, allow_infinity=False),
    texts,
)
#: Any JSON value jsonb can hold (finite numbers, text without NUL or unpaired surrogates).
json_values = st.recursive(
    _json_scalars,
    lambda children: st.one_of(st.lists(children, max_size=4), st.dictionaries(texts, children, max_size=4)),
    max_leaves=12,
)
#: JSON objects (what a payload must be).
objects = st.dictionaries(texts, json_values, max_size=5)
#: Mostly objects (the valid payloads), sometimes any other JSON value.
payloads = st.one_of(objects, json_values)


def mostly_valid(
    valid: st.SearchStrategy[Any], fuzzed: st.SearchStrategy[Any], odds: int = 2
) -> st.SearchStrategy[Any]:
    """A value of ``valid`` ``odds`` times in ``odds + 1``, else one of ``fuzzed`` (valid or not):
    a call with several arguments is then entirely valid often enough for its success path to be
    checked."""
    return st.integers(0, odds).flatmap(lambda n: fuzzed if n == 0 else valid)


def snapshot(conn: psycopg.Connection[Any]) -> dict[str, str]:
    """Table -> md5 of all its rows (in a fixed order), for every table of schema taskforge."""
    tables = [
        r[0]
        for r in conn.execute(
            "SELECT c.relname FROM pg_class c WHERE c.relnamespace = 'taskforge'::regnamespace "
            "AND c.relkind IN ('r', 'p') ORDER BY 1"
        ).fetchall()
    ]
    digests = conn.execute(
        "SELECT "
        + ", ".join(
            f"(SELECT md5(coalesce(string_agg(t::text, '|' ORDER BY t::text), '')) FROM taskforge.{name} t)"
            for name in tables
        )
    ).fetchone()
    return dict(zip(tables, digests, strict=True))


@contextlib.contextmanager
def fuzz_database(admin_dsn: str) -> Iterator[str]:
    """A freshly migrated database of the fuzz tests' own (their snapshots stay small, and what
    they write stays out of the session's shared database); dropped afterwards, after checking
    that tf_invariant_violations is empty."""
    name = f"taskforge_fuzz_{secrets.token_hex(4)}"
    with psycopg.connect(admin_dsn, autocommit=True) as conn:
        conn.execute(f'CREATE DATABASE "{name}"')
    dsn = tfdb.with_dbname(admin_dsn, name)
    try:
        tfdb.migrate(dsn)
        yield dsn
        with psycopg.connect(dsn, autocommit=True) as conn:
            violations = conn.execute("SELECT * FROM taskforge.tf_invariant_violations").fetchall()
        assert violations == [], violations
    finally:
        with psycopg.connect(admin_dsn, autocommit=True) as conn:
            conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
