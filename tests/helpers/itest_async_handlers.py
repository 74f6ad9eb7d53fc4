"""Async handlers the process tests load with ``taskforge worker --import tests/helpers/itest_async_handlers.py``.

The database must know these task types (the tests register them with tf_register_task_type).
"""

import asyncio
import json
import time
from pathlib import Path

from taskforge import handler


@handler("itest.async_cancellable")
async def cancellable(payload, ctx):
    """Awaits asyncio.sleep (not ctx.async_sleep) and writes down, to ``payload.marker``, whether
    and how a CancelledError reached it, then lets it propagate."""
    marker = Path(payload["marker"]) if payload.get("marker") else None
    try:
        await asyncio.sleep(payload.get("seconds", 60))
    except asyncio.CancelledError:
        if marker is not None:
            marker.write_text(
                json.dumps({"cancelled": True, "cancel_requested": ctx.cancel_requested, "timed_out": ctx.timed_out})
            )
        raise
    return {"slept": payload.get("seconds", 60)}


@handler("itest.async_blocker")
async def blocker(payload, ctx):
    """Blocks the worker's event loop: a plain time.sleep inside async def (the user's bug the
    worker must notice)."""
    time.sleep(payload.get("seconds", 3))
    return {"blocked_seconds": payload.get("seconds", 3)}
