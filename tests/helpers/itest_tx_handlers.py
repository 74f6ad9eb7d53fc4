"""Handlers that finalize in their own transaction (``ctx.transaction()``), for
tests/processes/test_worker_transaction.py (``taskforge worker --import`` this file).

``itest.tx_write`` (sync) and ``itest.async_tx_write`` (``async def``) do the same: inside
``ctx.transaction()`` they insert one row ``(task_id, attempt_number, tag)`` into
``public.itest_tx_rows`` (the test creates it) and give ``{"wrote": [task_id, attempt_number]}``
as the result, then return that result too. Payload, every key optional:

* ``tag``: stored with the row (the test's deferred trigger makes ``hold-commit`` wait at COMMIT);
* ``fail``: ``inside`` raises ValueError inside the block; ``result`` gives a result the database
  cannot store (NaN);
* ``hold``: ``{"attempt": n, "at": "inside" | "after", "marker": path, "release": path | null}``:
  on attempt n, write ``at`` to the marker file, after the row's INSERT (``inside``) or once the
  block committed (``after``), then wait until the release file exists (for ever without one);
* ``report``: a path prefix: the handler writes how its block ended to ``<report>-<attempt>.json``,
  as JSON: ``{"committed": true}`` or ``{"refused": reason}``.

The database must know both task types (the tests register them with tf_register_task_type).
"""

import asyncio
import json
import time
from pathlib import Path

from taskforge import handler
from taskforge.context import FinalizeNotAccepted

INSERT_ROW = "INSERT INTO public.itest_tx_rows (task_id, attempt_number, tag) VALUES (%s, %s, %s)"


def _holding(payload, ctx, at):
    """The release file to wait for (None: for ever) when this attempt holds at ``at``, else False."""
    hold = payload.get("hold") or {}
    if hold.get("attempt") != ctx.attempt_number or hold.get("at") != at:
        return False
    Path(hold["marker"]).write_text(at)
    return hold.get("release")


def _released(release):
    return release is not None and Path(release).exists()


def _row(ctx, payload):
    return (ctx.task_id, ctx.attempt_number, payload.get("tag"))


def _give_result(payload, ctx):
    if payload.get("fail") == "inside":
        raise ValueError("raised inside the transaction block")
    if payload.get("fail") == "result":
        ctx.set_result({"ratio": float("nan")})
    else:
        ctx.set_result({"wrote": [ctx.task_id, ctx.attempt_number]})


def _report(payload, ctx, ended):
    if payload.get("report"):
        Path(f"{payload['report']}-{ctx.attempt_number}.json").write_text(json.dumps(ended))


@handler("itest.tx_write")
def tx_write(payload, ctx):
    try:
        with ctx.transaction() as conn:
            conn.execute(INSERT_ROW, _row(ctx, payload))
            release = _holding(payload, ctx, "inside")
            while release is not False and not _released(release):
                time.sleep(0.02)
            _give_result(payload, ctx)
    except FinalizeNotAccepted as exc:
        _report(payload, ctx, {"refused": exc.reason})
        raise
    _report(payload, ctx, {"committed": ctx.committed})
    release = _holding(payload, ctx, "after")
    while release is not False and not _released(release):
        time.sleep(0.02)
    return ctx.transaction_result


@handler("itest.async_tx_write")
async def async_tx_write(payload, ctx):
    try:
        async with ctx.transaction() as aconn:
            await aconn.execute(INSERT_ROW, _row(ctx, payload))
            release = _holding(payload, ctx, "inside")
            while release is not False and not _released(release):
                await asyncio.sleep(0.02)
            _give_result(payload, ctx)
    except FinalizeNotAccepted as exc:
        _report(payload, ctx, {"refused": exc.reason})
        raise
    _report(payload, ctx, {"committed": ctx.committed})
    release = _holding(payload, ctx, "after")
    while release is not False and not _released(release):
        await asyncio.sleep(0.02)
    return ctx.transaction_result
