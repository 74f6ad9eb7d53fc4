"""Example TaskForge ``async def`` handler: call an HTTP API with one shared ``httpx.AsyncClient``.

It shows the async side of the handler API (docs/worker.md, "Async handlers"): the handler is a
coroutine function, so the worker runs it on its event loop, where one process can hold
thousands of such calls at once (``--concurrency``). As in a FastAPI application, the HTTP client
is made once per process and shared by every call (its connection pool is reused); a
cancel request or the attempt's deadline cancels the coroutine, which cancels the request in
flight (``asyncio.CancelledError`` raised at the ``await``).

httpx is this example's dependency, not TaskForge's (``pip install httpx``). Run it::

    psql "$TASKFORGE_DSN" -c "SELECT taskforge.tf_register_task_type('notify_webhook', backoff_base_seconds => 1)"
    taskforge worker --import examples/async_handlers_example.py --queue webhooks --concurrency 500
    taskforge submit notify_webhook --queue webhooks --payload '{"url": "https://example.org/hook", "event": {"id": 7}}'
"""

from __future__ import annotations

from typing import Any

import httpx

from taskforge import RetryableError, TaskContext, handler

#: One client per worker process, made on first use, inside the worker's event loop.
_client: httpx.AsyncClient | None = None


def client() -> httpx.AsyncClient:
    """The process's shared ``httpx.AsyncClient`` (10 s timeout, at most 100 connections)."""
    global _client
    if _client is None:
        _client = httpx.AsyncClient(timeout=httpx.Timeout(10.0), limits=httpx.Limits(max_connections=100))
    return _client


@handler("notify_webhook")
async def notify_webhook(payload: dict[str, Any], ctx: TaskContext) -> dict[str, Any]:
    """POST ``payload["event"]`` to ``payload["url"]``; 5xx and network errors are retried."""
    url = payload["url"]
    task_id, attempt_number = ctx.fencing_token
    try:
        response = await client().post(
            url,
            json=payload.get("event", {}),
            # The receiver deduplicates by the key and refuses an attempt older than one it has seen.
            headers={"Idempotency-Key": f"task-{task_id}", "X-Attempt-Number": str(attempt_number)},
        )
    except httpx.TransportError as exc:  # connection refused, reset, timed out: try again later
        raise RetryableError(f"{url}: {type(exc).__name__}: {exc}") from exc
    if response.status_code >= 500:
        raise RetryableError(f"{url} answered {response.status_code}")
    response.raise_for_status()  # 4xx: an ordinary error, the task fails
    return {"status": response.status_code, "attempt_number": attempt_number}


if __name__ == "__main__":
    # `python examples/async_handlers_example.py [worker options]`: the handler above is
    # registered already, so run the worker command directly (without --import).
    import sys

    from taskforge.cli import main

    main(["worker", *sys.argv[1:]])
