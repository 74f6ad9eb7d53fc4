"""ctx.transaction() refusals that need no database: a context without a worker, ``with`` on a
running event loop, and an attempt already finalized by a transaction (each refused before any
connection is asked for: the pool's DSN below would not connect)."""

from __future__ import annotations

import asyncio
import logging

import pytest

from taskforge.context import TransactionVerdict
from taskforge.handlers import TaskContext
from taskforge.worker.transaction import TransactionPools

NOWHERE = "host=/nonexistent dbname=none connect_timeout=1"


def context(pools: TransactionPools | None) -> TaskContext:
    return TaskContext(task_id=1, attempt_number=1, task_type="t", queue="q", worker_id="w", transactions=pools)


def test_a_context_without_a_worker_has_no_transaction():
    with pytest.raises(RuntimeError, match=r"needs a context made by a worker"):
        context(None).transaction()


def test_with_on_a_running_event_loop_is_refused():
    ctx = context(TransactionPools(NOWHERE, size=1, logger=logging.getLogger("test")))

    async def handler():
        with ctx.transaction():
            pass

    with pytest.raises(RuntimeError, match=r"async with ctx\.transaction"):
        asyncio.run(handler())


def test_an_attempt_finalized_by_a_transaction_opens_no_other():
    pools = TransactionPools(NOWHERE, size=1, logger=logging.getLogger("test"))
    ctx = context(pools)
    ctx.mark_transaction_verdict(TransactionVerdict(True, "SUCCEEDED", None, None))
    assert ctx.committed
    with pytest.raises(RuntimeError, match=r"already finalized by ctx.transaction"), ctx.transaction():
        pass
    ctx.set_result({"a": 1})
    assert ctx.transaction_result == {"a": 1}
    pools.close()
    with pytest.raises(ValueError, match=r"^size: must be at least 1"):
        TransactionPools(NOWHERE, size=0, logger=logging.getLogger("test"))


def test_a_database_out_of_reach_makes_the_block_retryable_not_a_failure():
    """No connection within the pool's wait (a restart, a failover): entering the block raises
    RetryableError (the attempt is retried), not the pool's PoolTimeout, which the worker would
    record as an ordinary error and fail the task for good. A real pool, a real refused connect."""
    from psycopg_pool import PoolTimeout

    from taskforge.handlers import RetryableError

    pools = TransactionPools(NOWHERE, size=1, logger=logging.getLogger("test"), wait_seconds=0.5)
    ctx = context(pools)
    with pytest.raises(RetryableError, match=r"no database connection") as raised, ctx.transaction():
        pytest.fail("the block must not start")
    assert isinstance(raised.value.__cause__, PoolTimeout)
    with pytest.raises(RetryableError, match=r"no database connection"):
        ctx.transaction().__enter__()  # the block was left: a new one may be tried (and fails alike)
    pools.close()


def test_the_async_block_is_retryable_too_when_the_database_is_out_of_reach():
    from psycopg_pool import PoolTimeout

    from taskforge.handlers import RetryableError

    pools = TransactionPools(NOWHERE, size=1, logger=logging.getLogger("test"), wait_seconds=0.5)
    ctx = context(pools)

    async def handler() -> None:
        try:
            async with ctx.transaction():
                pytest.fail("the block must not start")
        finally:
            await pools.aclose()

    with pytest.raises(RetryableError, match=r"no database connection") as raised:
        asyncio.run(handler())
    assert isinstance(raised.value.__cause__, PoolTimeout)
