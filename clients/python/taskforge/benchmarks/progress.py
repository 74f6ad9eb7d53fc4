"""What the running trial is doing, on stderr: a rich progress bar on a terminal, plain lines
(at start, every few seconds, at the end) otherwise. Elapsed times are the harness's monotonic clock."""

from __future__ import annotations

import sys
import time
from typing import TYPE_CHECKING, TextIO

if TYPE_CHECKING:  # rich is imported only on a terminal
    from rich.progress import Progress as RichProgress, TaskID

__all__ = ["Progress"]

#: Seconds between plain progress lines when stderr is not a terminal.
PLAIN_INTERVAL_SECONDS = 5.0


class Progress:
    """``trial(label, total)`` starts a bar, ``update(done)`` moves it, ``done(text)`` ends it;
    ``note(text)`` prints a line above it."""

    def __init__(self, stream: TextIO | None = None, force_plain: bool = False):
        self.stream = stream or sys.stderr
        self.tty = not force_plain and hasattr(self.stream, "isatty") and self.stream.isatty()
        self._rich: RichProgress | None = None
        self._task: TaskID | None = None
        self._label = ""
        self._total = 0
        self._started = 0.0
        self._last_line = 0.0
        if self.tty:
            from rich.console import Console
            from rich.progress import (
                BarColumn,
                MofNCompleteColumn,
                Progress as RichProgress,
                TextColumn,
                TimeElapsedColumn,
            )

            self._rich = RichProgress(
                TextColumn("{task.description}"),
                BarColumn(),
                MofNCompleteColumn(),
                TimeElapsedColumn(),
                console=Console(file=self.stream),
                transient=True,
            )

    def note(self, text: str) -> None:
        """One line of news (above the bar on a terminal)."""
        if self._rich is not None:
            self._rich.console.print(text, markup=False, highlight=False)
        else:
            self.stream.write(text + "\n")
            self.stream.flush()

    def trial(self, label: str, total: int) -> None:
        """A trial of ``total`` tasks starts."""
        self._label, self._total, self._started = label, total, time.monotonic()
        self._last_line = self._started
        if self._rich is not None:
            if self._task is None:
                self._rich.start()
            else:
                self._rich.remove_task(self._task)
            self._task = self._rich.add_task(label, total=total)
        else:
            self.note(f"{label}: started ({total} tasks)")

    def update(self, done: int, status: str = "") -> None:
        """``done`` of the trial's tasks are terminal; ``status`` is a short extra (e.g. kills)."""
        if self._rich is not None and self._task is not None:
            self._rich.update(self._task, completed=done, description=f"{self._label}{' ' + status if status else ''}")
            return
        now = time.monotonic()
        if now - self._last_line >= PLAIN_INTERVAL_SECONDS:
            self._last_line = now
            self.note(
                f"{self._label}: {done}/{self._total} terminal after {now - self._started:.0f} s"
                f"{' ' + status if status else ''}"
            )

    def done(self, text: str) -> None:
        """The trial ended; ``text`` summarises it."""
        if self._rich is not None and self._task is not None:
            self._rich.remove_task(self._task)
            self._task = None
            self._rich.stop()
        self.note(f"{self._label}: {text}")

    def close(self) -> None:
        """Stop the live display (idempotent)."""
        if self._rich is not None and self._task is not None:
            self._rich.stop()
            self._task = None
