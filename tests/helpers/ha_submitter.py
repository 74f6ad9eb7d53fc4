"""The failover rig's submitter: a process of its own that submits keyed tasks until SIGTERM.

``python ha_submitter.py --dsn DSN --acks FILE --prefix P [--interval S] [--seed N]`` submits
task ``ha.work`` with idempotency key ``P-0``, ``P-1``, ... through :func:`taskforge.client.submit`
on one autocommit connection (:func:`taskforge.database.connect`), one every ``--interval``
seconds. A submit that fails for any reason other than a refusal (connection lost or refused,
a read-only server, a statement cut off) closes the connection and is sent again, with the same
key and payload, every 0.1 s until the database acknowledges it: the key makes the repeat safe.
Each acknowledgement is one JSON line appended to ``--acks``:
``{"key", "task_id", "created", "tries", "at"}`` (``at``: wall-clock seconds after the answer
came), written before the next submit starts, so the file is what a client was told.

The payload of key ``n`` is ``{"key", "ms", "kind", "tx"}`` drawn from ``random.Random(seed + n)``
(see ha_handlers.py): the rig draws the same to check each task's request.

SIGTERM (or SIGINT) stops it after the submit in progress is acknowledged (it keeps trying that
one for at most ``--drain-seconds``); it then prints one JSON line with its figures and exits 0.
A refusal (TF400/TF409, which no retry can fix) exits 1 at once.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import random
import signal
import sys
import threading
import time
from typing import Any

import psycopg

from taskforge import client
from taskforge.database import connect
from taskforge.errors import Refused

TASK_TYPE = "ha.work"
MAX_ATTEMPTS = 5
RETRY_SECONDS = 0.1


def payload_for(prefix: str, n: int, seed: int) -> dict[str, Any]:
    """The request of key ``{prefix}-{n}`` (deterministic)."""
    rng = random.Random(seed + n)
    return {
        "key": f"{prefix}-{n}",
        "ms": rng.randint(50, 400),
        "kind": rng.choices(["ok", "flaky"], weights=[9, 1])[0],
        "tx": rng.random() < 0.5,
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--dsn", required=True)
    parser.add_argument("--acks", required=True)
    parser.add_argument("--prefix", required=True)
    parser.add_argument("--interval", type=float, default=0.1)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--drain-seconds", type=float, default=120.0)
    args = parser.parse_args(argv)

    stop = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stop.set())
    signal.signal(signal.SIGINT, lambda *_: stop.set())

    conn: psycopg.Connection[Any] | None = None
    figures = {"acknowledged": 0, "replays": 0, "failed_tries": 0, "longest_retry_seconds": 0.0}
    n = 0
    with open(args.acks, "a", buffering=1) as acks:
        while not stop.is_set():
            key_payload = payload_for(args.prefix, n, args.seed)
            tries, first = 0, time.monotonic()
            stop_deadline: float | None = None
            while True:
                tries += 1
                try:
                    if conn is None or conn.closed:
                        conn = connect(args.dsn, application_name="ha-submitter")
                    submitted = client.submit(
                        conn,
                        TASK_TYPE,
                        key_payload,
                        max_attempts=MAX_ATTEMPTS,
                        idempotency_key=key_payload["key"],
                    )
                    break
                except Refused as exc:
                    print(f"ha_submitter: refused {key_payload['key']}: {exc}", file=sys.stderr)
                    return 1
                except psycopg.Error as exc:
                    figures["failed_tries"] += 1
                    if tries == 1 or tries % 50 == 0:
                        print(f"ha_submitter: {key_payload['key']} try {tries}: {exc!r}"[:300], file=sys.stderr)
                    with contextlib.suppress(psycopg.Error):
                        if conn is not None:
                            conn.close()
                    conn = None
                    if stop.is_set():
                        stop_deadline = stop_deadline or time.monotonic() + args.drain_seconds
                        if time.monotonic() > stop_deadline:
                            print(json.dumps({"gave_up": key_payload["key"], **figures}))
                            return 2
                    time.sleep(RETRY_SECONDS)
            acks.write(
                json.dumps(
                    {
                        "key": key_payload["key"],
                        "task_id": submitted.task_id,
                        "created": submitted.created,
                        "tries": tries,
                        "at": time.time(),
                    }
                )
                + "\n"
            )
            figures["acknowledged"] += 1
            figures["replays"] += 0 if submitted.created else 1
            figures["longest_retry_seconds"] = max(figures["longest_retry_seconds"], time.monotonic() - first)
            n += 1
            stop.wait(args.interval)
    with contextlib.suppress(psycopg.Error):
        if conn is not None:
            conn.close()
    figures["longest_retry_seconds"] = round(figures["longest_retry_seconds"], 2)
    print(json.dumps(figures))
    return 0


if __name__ == "__main__":
    sys.exit(main())
