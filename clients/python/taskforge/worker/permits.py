"""How many handlers run at once when a worker holds more attempts than slots (``--prefetch``).

``--concurrency`` counts sync and ``async def`` handlers together. Without prefetch the
dispatcher never claims more than there are free slots, so nothing here is needed (the worker
makes no :class:`RunPermits` then). With prefetch it holds up to ``concurrency + prefetch``
attempts, and a handler starts only with a permit, at most ``concurrency`` of them out at once:

* a sync slot thread blocks in :meth:`RunPermits.acquire` (threads may block);
* the event loop never blocks: :meth:`RunPermits.start_or_queue` takes a permit or queues the
  async attempt, and a permit that frees goes to the longest-queued async attempt first
  (:meth:`RunPermits.release` hands it to the runner's ``start_async``), else to a blocked slot
  thread.
"""

from __future__ import annotations

import threading
from collections import deque
from collections.abc import Callable

from .attempts import RunningAttempt

__all__ = ["RunPermits"]


class RunPermits:
    """At most ``limit`` handlers running at once, sync and async together (module docstring).

    ``start_async(item)``: set by the async runner; starts a queued async attempt that was
    handed a permit (called from whichever thread released it).
    """

    def __init__(self, limit: int) -> None:
        self.limit = limit
        self.start_async: Callable[[RunningAttempt], None] | None = None
        self._running = 0
        self._cond = threading.Condition(threading.Lock())
        self._queued: deque[RunningAttempt] = deque()  # async attempts waiting for a permit

    @property
    def running(self) -> int:
        """Permits out now (handlers started and not ended)."""
        return self._running

    def acquire(self) -> None:
        """A sync slot thread: wait until a handler may start, then take a permit."""
        with self._cond:
            while self._running >= self.limit:
                self._cond.wait()
            self._running += 1

    def start_or_queue(self, item: RunningAttempt) -> bool:
        """The event loop: True when ``item`` may start now (a permit was taken for it); False
        when it was queued (``start_async`` receives it with a permit once one frees)."""
        with self._cond:
            if self._running < self.limit:
                self._running += 1
                return True
            self._queued.append(item)
            return False

    def release(self) -> None:
        """A handler ended: its permit passes to the longest-queued async attempt, else frees
        (waking a sync slot thread that waits)."""
        with self._cond:
            if not self._queued:
                self._running -= 1
                self._cond.notify()
                return
            item = self._queued.popleft()
        start = self.start_async
        if start is None:
            raise RuntimeError("an async attempt is queued for a permit but no runner starts it")
        start(item)
