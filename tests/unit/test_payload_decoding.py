"""A handler slot decodes the claimed payload as part of the attempt (issue 10, item 1): a payload
Python cannot decode fails that attempt with the cause, and the slot (or the dispatcher, with
concurrency 1) goes on. The process-level acceptance test is tests/processes/test_poison_payload.py.
"""

from __future__ import annotations

import json
import logging
import threading

from taskforge.handlers import HandlerRegistry, TaskContext
from taskforge.worker.attempts import RunningAttempt
from taskforge.worker.execute import PAYLOAD_ERROR, Slots

#: The issue's payload, 1001 levels deep: deeper than json.loads can go (recursion limit 1000).
POISON = '{"a":' + "[" * 1000 + "]" * 1000 + "}"
#: The database's limit (tf_submit): 100 levels, the payload object counting as 1.
AT_THE_LIMIT = '{"a":' + "[" * 99 + "]" * 99 + "}"


def attempt(payload: str, task_type: str = "unit.echo") -> RunningAttempt:
    ctx = TaskContext(task_id=7, attempt_number=1, task_type=task_type, queue="q")
    return RunningAttempt(ctx=ctx, payload=payload, next_renew=0.0)


def slots() -> Slots:
    registry = HandlerRegistry()
    registry.register("unit.echo", lambda payload, ctx: payload)
    return Slots(0, registry, lambda item: None, logging.getLogger("test"))


def test_an_undecodable_payload_fails_its_attempt_with_the_cause():
    outcome = slots().run(attempt(POISON))
    assert outcome.outcome == "failed"
    assert outcome.error is not None and outcome.error["type"] == PAYLOAD_ERROR
    assert outcome.error["message"].startswith("the payload could not be decoded: RecursionError")


def test_the_same_slot_runs_the_next_attempt_after_a_poison_payload():
    slot = slots()
    slot.run(attempt(POISON))
    outcome = slot.run(attempt('{"n": 1}'))
    assert (outcome.outcome, outcome.result) == ("succeeded", '{"n": 1}')


def test_a_payload_at_the_databases_limit_decodes_and_round_trips_in_a_thread():
    # Slots run in threads: decode and re-encode (echo) there, with the stack a thread has.
    seen = []
    thread = threading.Thread(target=lambda: seen.append(slots().run(attempt(AT_THE_LIMIT))))
    thread.start()
    thread.join()
    assert seen[0].outcome == "succeeded"
    assert json.loads(seen[0].result) == json.loads(AT_THE_LIMIT)


def test_a_slot_thread_survives_a_poison_payload():
    done: list[RunningAttempt] = []
    finished = threading.Event()

    def on_done(item: RunningAttempt) -> None:
        done.append(item)
        if len(done) == 2:
            finished.set()

    registry = HandlerRegistry()
    registry.register("unit.echo", lambda payload, ctx: payload)
    pool = Slots(1, registry, on_done, logging.getLogger("test"))
    pool.start()
    pool.submit(attempt(POISON))
    pool.submit(attempt("{}"))
    assert finished.wait(10)
    pool.stop()
    assert [item.outcome.outcome for item in done if item.outcome] == ["failed", "succeeded"]
