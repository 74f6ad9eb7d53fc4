"""The attempts a worker claimed ahead of a free slot (``--prefetch``), and when each starts.

``--concurrency`` counts sync and ``async def`` handlers together. Without prefetch the
dispatcher never claims more than there are free slots, so every claimed attempt starts at once
and the worker makes no :class:`RunPermits`. With prefetch it holds up to ``concurrency +
prefetch`` attempts: the dispatcher hands each turn's claims to :meth:`RunPermits.offer`, which
starts as many as there are free permits (at most ``concurrency`` out at once) and keeps the rest
in one queue, in claim order, whatever their kind. When a handler ends, :meth:`RunPermits.release`
passes its permit to the longest-waiting attempt and starts it from the thread that released it:
a sync one goes to the slots (the thread that just ended a handler takes it), an async one to the
event loop. So the claim order holds across both kinds, and neither can hold the other back.

At INFO each attempt that waited says when its turn came and how long it waited (monotonic
seconds since its claim's answer), beside the dispatcher's "claimed task ..." line.
"""

from __future__ import annotations

import logging
import threading
import time
from collections import deque
from collections.abc import Callable

from .attempts import RunningAttempt
from .logs import attempt_fields

__all__ = ["RunPermits"]


class RunPermits:
    """At most ``limit`` handlers running at once; the attempts beyond wait here in claim order.

    ``start(items)`` hands attempts that were given a permit to the slots or the event loop
    (never blocks); ``logger`` gets the INFO line of each attempt that waited. Thread-safe: the
    dispatcher offers, the slots and the loop release.
    """

    def __init__(
        self, limit: int, start: Callable[[list[RunningAttempt]], None], logger: logging.Logger | None = None
    ) -> None:
        self.limit = limit
        self._start = start
        self._log = logger
        self._running = 0
        self._lock = threading.Lock()
        self._waiting: deque[RunningAttempt] = deque()

    @property
    def running(self) -> int:
        """Permits out now: handlers started (or handed over to start) and not ended."""
        return self._running

    @property
    def waiting(self) -> int:
        """Attempts claimed ahead that wait for a permit."""
        return len(self._waiting)

    def offer(self, items: list[RunningAttempt]) -> None:
        """A turn's claims, in claim order: start what the free permits allow, queue the rest.
        When ``start`` raises, none of ``items`` is kept (the exception propagates)."""
        with self._lock:
            waiting = self._waiting
            waiting.extend(items)
            take = []
            while waiting and self._running < self.limit:
                take.append(waiting.popleft())
                self._running += 1
        if take:
            try:
                self._start(take)
            except BaseException:  # nothing of this offer started: the caller fails them all
                with self._lock:
                    self._running -= len(take)
                    offered = {id(item) for item in items}
                    self._waiting = deque(item for item in self._waiting if id(item) not in offered)
                raise

    def releasing_one(self, on_done: Callable[[RunningAttempt], None]) -> Callable[[RunningAttempt], None]:
        """``on_done`` of the sync slots, after releasing the ended handler's permit."""

        def done(item: RunningAttempt) -> None:
            self.release()
            on_done(item)

        return done

    def releasing_many(self, on_done: Callable[[list[RunningAttempt]], None]) -> Callable[[list[RunningAttempt]], None]:
        """``on_done`` of the event loop (a loop iteration's ended handlers), after releasing their permits."""

        def done(items: list[RunningAttempt]) -> None:
            self.release(len(items))
            on_done(items)

        return done

    def release(self, ended: int = 1) -> None:
        """``ended`` handlers ended: their permits pass to the longest-waiting attempts (started
        here), the others are freed."""
        with self._lock:
            waiting = self._waiting
            take = [waiting.popleft() for _ in range(min(ended, len(waiting)))]
            self._running -= ended - len(take)
        if take:
            if self._log is not None and self._log.isEnabledFor(logging.INFO):
                now = time.monotonic()
                for item in take:
                    self._log.info(
                        "starting task %s attempt %s, claimed ahead, after %.3f s waiting for a slot",
                        item.ctx.task_id,
                        item.ctx.attempt_number,
                        now - item.claimed_at,
                        extra=attempt_fields(item.ctx),
                    )
            self._start(take)
