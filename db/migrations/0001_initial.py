"""TaskForge schema version 1: tables, functions, views, roles, built-in task types.

Applies db/migrations/frozen/0001_initial.sql, a frozen copy of the SQL source made by
`python -m taskforge.dbsource freeze`. Do not edit the frozen file: write a new migration.
"""

from pathlib import Path

from yoyo import step

__depends__ = set()

_FROZEN = Path(__file__).resolve().parent / "frozen" / "0001_initial.sql"


def apply(conn):
    # One simple-protocol execute: the file holds many statements and dollar-quoted bodies.
    conn.cursor().execute(_FROZEN.read_text(encoding="utf-8"))


def rollback(conn):
    conn.cursor().execute("DROP SCHEMA taskforge CASCADE")


steps = [step(apply, rollback)]
