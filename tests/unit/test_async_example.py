"""examples/async_handlers_example.py runs as documented, against a stand-in for httpx (httpx is
the example's dependency, not TaskForge's, and the suite makes no network calls)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]

STUB = """
import asyncio

CALLS = []


class Timeout:
    def __init__(self, *args, **kwargs):
        pass


class Limits(Timeout):
    pass


class TransportError(Exception):
    pass


class ConnectError(TransportError):
    pass


class HTTPStatusError(Exception):
    pass


class Response:
    def __init__(self, status_code):
        self.status_code = status_code

    def raise_for_status(self):
        if self.status_code >= 400:
            raise HTTPStatusError(f"{self.status_code}")


class AsyncClient:
    made = 0

    def __init__(self, **kwargs):
        AsyncClient.made += 1

    async def post(self, url, json=None, headers=None):
        await asyncio.sleep(0)
        if "down" in url:
            raise ConnectError("connection refused")
        CALLS.append({"url": url, "json": json, "headers": headers})
        return Response({"busy": 503, "gone": 404}.get(url.rsplit("/", 1)[-1], 200))
"""

DRIVER = """
import asyncio, json, sys
import httpx
from taskforge import TaskContext, handlers

handlers.import_handler_module(sys.argv[1])
fn = handlers.registry.get("notify_webhook")

async def main():
    out = {"async": handlers.registry.is_async("notify_webhook")}
    for n, url in enumerate(["http://x/ok", "http://x/ok", "http://x/busy", "http://down/x", "http://x/gone"], 1):
        ctx = TaskContext(task_id=n, attempt_number=2, task_type="notify_webhook", queue="webhooks")
        try:
            value = await fn({"url": url, "event": {"id": n}}, ctx)
        except Exception as exc:
            value = type(exc).__name__
        out[url + f"#{n}"] = handlers.outcome_of_value(value).outcome if isinstance(value, dict) else value
    out["clients"] = httpx.AsyncClient.made
    out["first_call"] = httpx.CALLS[0]
    print(json.dumps(out))

asyncio.run(main())
"""


def test_the_async_example_shares_one_client_and_maps_failures_to_outcomes(tmp_path):
    (tmp_path / "httpx.py").write_text(STUB)
    done = subprocess.run(
        [sys.executable, "-c", DRIVER, str(ROOT / "examples" / "async_handlers_example.py")],
        env={"PYTHONPATH": f"{tmp_path}:{ROOT / 'clients' / 'python'}", "PATH": "/usr/bin:/bin"},
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr
    out = json.loads(done.stdout)
    assert out["async"] is True
    assert out["http://x/ok#1"] == out["http://x/ok#2"] == "succeeded"
    assert out["http://x/busy#3"] == out["http://down/x#4"] == "RetryableError"
    assert out["http://x/gone#5"] == "HTTPStatusError"  # 4xx: an ordinary error, the task fails
    assert out["clients"] == 1  # made once, shared by every call
    assert out["first_call"] == {
        "url": "http://x/ok",
        "json": {"id": 1},
        "headers": {"Idempotency-Key": "task-1", "X-Attempt-Number": "2"},
    }
