"""tf_finalize's error_text from a real driver (issue 10, item 4): a message that would be invalid
as jsonb is stored as {"message": ...}; a NUL, which no PostgreSQL text can hold, is refused
before the function runs (by psycopg, or by the server for a binary parameter), nothing changes,
and the same call with the NUL removed is accepted. The pgTAP file db/tests/tf_finalize/
test_error_text.sql covers the rest of the contract.
"""

from __future__ import annotations

import psycopg
import pytest

from sqlcore_helpers import claim, register_worker, submit, unique_name

FINALIZE_TEXT = (
    "SELECT accepted, task_state FROM taskforge.tf_finalize(task_id => %(task_id)s, worker_id => %(worker_id)s,"
    " attempt_number => 1, outcome => 'failed', error_text => {placeholder})"
)


def running_task(conn: psycopg.Connection) -> tuple[int, object]:
    queue = unique_name("errtext")
    worker_id = register_worker(conn, queues=[queue])
    task_id = submit(conn, queue)[0]
    assert claim(conn, worker_id, [queue])[0][0] == task_id
    return task_id, worker_id


def state(conn: psycopg.Connection, task_id: int) -> tuple[str, object]:
    return conn.execute("SELECT state, last_error FROM taskforge.tasks WHERE task_id = %s", (task_id,)).fetchone()


def test_a_message_that_is_not_valid_jsonb_is_stored_through_error_text(conn):
    task_id, worker_id = running_task(conn)
    # As JSON this message fails in the jsonb parser (22P05 for \u0000, 22P02 for a lone surrogate escape).
    message = 'bad\\u0000byte and \\ud800 "quoted"\n'
    params = {"task_id": task_id, "worker_id": worker_id, "text": message}
    row = conn.execute(FINALIZE_TEXT.format(placeholder="%(text)s"), params).fetchone()
    assert row == (True, "FAILED")
    assert state(conn, task_id) == ("FAILED", {"message": message})


@pytest.mark.parametrize("placeholder", ["%(text)s", "%(text)b"])
def test_a_nul_in_error_text_never_reaches_the_function(conn, placeholder):
    task_id, worker_id = running_task(conn)
    params = {"task_id": task_id, "worker_id": worker_id, "text": "bad\x00byte"}
    with pytest.raises(psycopg.DataError) as refused:
        conn.execute(FINALIZE_TEXT.format(placeholder=placeholder), params)
    # Text format: psycopg refuses it before sending; binary: the server, before any function (22021).
    assert refused.value.sqlstate in (None, "22021")
    assert state(conn, task_id) == ("RUNNING", None)
    params["text"] = params["text"].replace("\x00", "")
    assert conn.execute(FINALIZE_TEXT.format(placeholder=placeholder), params).fetchone() == (True, "FAILED")
    assert state(conn, task_id) == ("FAILED", {"message": "badbyte"})
