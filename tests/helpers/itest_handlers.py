"""Handlers the process tests load with ``taskforge worker --import tests/helpers/itest_handlers.py``.

The database must know these task types (the tests register them with tf_register_task_type).
"""

from taskforge import handler, synthetic

# The synthetic fail_once logic under a type the tests register with a short fixed backoff.
handler("itest.fail_once")(synthetic.SYNTHETIC_HANDLERS["fail_once"])


@handler("itest.nasty_error")
def nasty_error(payload, ctx):
    """Fails with a message full of NUL characters and unpaired surrogates, far over the size cap."""
    raise ValueError("start\x00nul \ud800 lone-high \udc00 lone-low " + "x\x00\udfff" * 400_000 + " end")


@handler("itest.nan_result")
def nan_result(payload, ctx):
    return {"ratio": float("nan")}


@handler("itest.nul_result")
def nul_result(payload, ctx):
    return {"text": "a\x00b"}


@handler("itest.deep_result")
def deep_result(payload, ctx):
    """A result nested 150 levels deep: JSON can encode it, the database refuses it (over 100)."""
    result: list = []
    for _ in range(149):
        result = [result]
    return {"deep": result}


@handler("itest.sleep_report")
def sleep_report(payload, ctx):
    """Sleeps payload.ms and reports what the context looked like (fencing token, lease state)."""
    lost = ctx.sleep(payload.get("ms", 0) / 1000.0)
    return {
        "fencing_token": list(ctx.fencing_token),
        "cancel_requested": lost,
        "lease_lost": ctx.lease_lost,
        "queue": ctx.queue,
        "priority": ctx.priority,
        "max_attempts": ctx.max_attempts,
    }


@handler("itest.stubborn")
def stubborn(payload, ctx):
    """Ignores its deadline and every signal from the context: plain time.sleep(payload.seconds)."""
    import time

    time.sleep(payload.get("seconds", 0))
    return {"slept": payload.get("seconds", 0), "timed_out_seen": ctx.timed_out}
