"""The scheduler logs the WARNINGs the sweeps raise for a row they skipped (once per new error,
raised by taskforge._tf_maintenance_failed), with their detail; other notices only at DEBUG.
psycopg drops notices unless a handler is added, so without it the log said nothing."""

from __future__ import annotations

import logging
from types import SimpleNamespace

from taskforge.scheduler import Scheduler


def diag(severity: str, message: str, detail: str | None = None) -> SimpleNamespace:
    return SimpleNamespace(
        severity_nonlocalized=severity, severity=severity, message_primary=message, message_detail=detail
    )


def test_a_skipped_row_is_logged_as_a_warning_with_its_detail(caplog):
    s = Scheduler("dbname=unused")
    assert s._db.notice_handler == s._on_notice, "every connection of the scheduler gets the handler"
    with caplog.at_level(logging.DEBUG, logger="taskforge.scheduler"):
        s._on_notice(
            diag(
                "WARNING",
                "taskforge: tf_recover skipped task 42: boom (SQLSTATE P0001)",
                "The other rows were processed. The row is retried after 2030-01-01 00:01:00+00;\nuntil then ...",
            )
        )
        s._on_notice(diag("NOTICE", "taskforge: something minor"))
    records = [(r.levelno, r.getMessage()) for r in caplog.records]
    assert records == [
        (
            logging.WARNING,
            "tf_recover skipped task 42: boom (SQLSTATE P0001) (The other rows were processed. The row is "
            "retried after 2030-01-01 00:01:00+00; until then ...)",
        ),
        (logging.DEBUG, "database notice: something minor"),
    ]
