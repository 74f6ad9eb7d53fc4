"""docs/guarantees.md: every test it links to exists (so that `make test` runs it), and its
fencing example runs as written and refuses a stale attempt."""

from __future__ import annotations

import re

from psycopg.types.json import Jsonb

from itest_support import ROOT

DOC = ROOT / "docs" / "guarantees.md"
#: [text](../path) links of the document.
LINK = re.compile(r"\[([^\]]+)\]\(\.\./([^)#]+)\)")


def test_every_linked_test_exists():
    text = DOC.read_text()
    links = LINK.findall(text)
    tests = [(label, path) for label, path in links if path.startswith(("tests/", "db/tests/"))]
    assert len(tests) >= 25, tests
    for label, path in tests:
        file = ROOT / path
        assert file.is_file(), f"{label}: no file {path}"
        name, _, function = label.partition("::")
        assert name == path, f"the link text {label!r} names another file than {path}"
        if function:
            assert re.search(rf"^def {re.escape(function)}\(", file.read_text(), re.M), f"no test {function} in {path}"
        else:
            assert path.endswith(".sql"), f"{label}: a Python test is linked as file::test"


def test_the_fencing_example_refuses_a_stale_attempt(conn):
    text = DOC.read_text()
    create, insert = re.findall(r"```sql\n(.*?)```", text, re.S)[0].split("\n\n", 1)
    with conn.transaction(force_rollback=True):
        conn.execute("CREATE SCHEMA fencing_example")
        conn.execute("SET LOCAL search_path = fencing_example")
        conn.execute(create)

        def send(attempt_number: int, invoice: dict) -> int | None:
            row = conn.execute(insert, {"task_id": 7, "attempt_number": attempt_number, "invoice": Jsonb(invoice)})
            found = row.fetchone()
            return None if found is None else found[0]

        assert send(2, {"amount": 2}) == 2  # the first write
        assert send(1, {"amount": 1}) is None  # attempt 1 lost its lease to attempt 2: refused
        assert send(2, {"amount": 2}) == 2  # the same attempt again: harmless
        assert send(3, {"amount": 3}) == 3  # a newer attempt wins
        assert conn.execute("SELECT attempt_number, invoice FROM invoices_sent WHERE task_id = 7").fetchone() == (
            3,
            {"amount": 3},
        )
