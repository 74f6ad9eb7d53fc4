"""Example TaskForge handler: count the words of a text and write the counts to a file.

It shows the handler API: the payload, the context (task id, attempt number, cancel flag) and
the fencing token used to protect the destination from a worker that lost its lease.

Run it (see docs/worker.md for the whole walk-through)::

    psql "$TASKFORGE_DSN" -c "SELECT taskforge.tf_register_task_type('word_count', backoff_base_seconds => 1)"
    taskforge worker --import examples/handlers_example.py --queue examples
    # or, equivalently:  python examples/handlers_example.py --queue examples

Output files go to $WORD_COUNT_OUTPUT_DIR (default ./word-count-output), one per task.
"""

from __future__ import annotations

import fcntl
import json
import os
from collections import Counter
from pathlib import Path

from taskforge import RetryableError, TaskCancelled, TaskContext, handler


def output_dir() -> Path:
    return Path(os.environ.get("WORD_COUNT_OUTPUT_DIR", "word-count-output"))


class StaleAttempt(Exception):
    """A later attempt of the same task already wrote its output: this one must not overwrite it."""


def fenced_write(path: Path, fencing_token: tuple[int, int], document: dict) -> None:
    """Write document to path unless a later attempt of the same task already did.

    Destination-side fencing: the file records the attempt number that wrote it; under an
    exclusive lock, a write from a lower attempt number is refused. A worker whose lease ran out
    (and whose task was handed to attempt N+1) can therefore never overwrite newer output.
    A database destination does the same with
    ``INSERT ... ON CONFLICT (task_id) DO UPDATE ... WHERE dest.attempt_number <= EXCLUDED.attempt_number``.
    """
    task_id, attempt_number = fencing_token
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path.with_name(path.name + ".lock"), "a") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        try:
            written_by = json.loads(path.read_text())["attempt_number"]
        except FileNotFoundError:
            written_by = 0
        if written_by > attempt_number:
            raise StaleAttempt(
                f"task {task_id}: attempt {written_by} already wrote {path}; attempt {attempt_number} is stale"
            )
        tmp = path.with_name(path.name + ".tmp")
        tmp.write_text(json.dumps({**document, "task_id": task_id, "attempt_number": attempt_number}) + "\n")
        os.replace(tmp, path)  # atomic: readers see the old or the new file, never half of one


@handler("word_count")
def word_count(payload: dict, ctx: TaskContext) -> dict:
    """payload: {"text": str, "flaky": bool (optional: fail attempt 1 with a retryable error)}."""
    text = payload.get("text")
    if not isinstance(text, str):
        raise ValueError('payload must be {"text": "..."}')  # ordinary error: the task FAILS
    if payload.get("flaky") and ctx.attempt_number == 1:
        raise RetryableError("simulated temporary failure")  # RETRYING, then attempt 2
    counts = Counter(word.strip(".,;:!?\"'()").lower() for word in text.split())
    counts.pop("", None)
    if ctx.cancel_requested:  # kept current by the worker's lease renewals
        raise TaskCancelled("cancelled before writing the output")
    path = output_dir() / f"task-{ctx.task_id}.json"
    fenced_write(path, ctx.fencing_token, {"counts": dict(counts.most_common())})
    return {"words": sum(counts.values()), "distinct": len(counts), "output": str(path)}


if __name__ == "__main__":
    # `python examples/handlers_example.py [worker options]`: the handler above is registered
    # already, so run the worker command directly (without --import).
    import sys

    from taskforge.cli import main

    main(["worker", *sys.argv[1:]])
