"""Handlers of the workflow process tests (``taskforge worker --import tests/helpers/itest_flow_handlers.py``).

``itest.flow_step`` (sync) and ``itest.async_flow_step`` (``async def``): sleep ``payload.ms``,
then fail for good when ``payload.fail``, else return ``{"name": payload.name, "parents":
{parent id: parent result}}`` read from ``ctx.parent_results``.
"""

import asyncio
import time

from taskforge import handler


def _result(payload, parents):
    if payload.get("fail"):
        raise ValueError(f"step {payload.get('name')} fails for good")
    return {"name": payload.get("name"), "parents": {str(k): v for k, v in sorted(parents.items())}}


@handler("itest.flow_step")
def flow_step(payload, ctx):
    time.sleep(payload.get("ms", 0) / 1000.0)
    return _result(payload, ctx.parent_results)


@handler("itest.async_flow_step")
async def async_flow_step(payload, ctx):
    await asyncio.sleep(payload.get("ms", 0) / 1000.0)
    return _result(payload, await ctx.load_parent_results())
