"""A progress display for long waits (the demo's drain, each benchmark trial), drawn by rich.

On a terminal: a live bar on the stream (stderr by default) with notes printed above it. Otherwise
plain lines: one when a run starts, one every :data:`PLAIN_INTERVAL_SECONDS` while it runs and one
when it ends. Elapsed times are the caller's monotonic clock, never a measurement.
"""

from __future__ import annotations

import sys
import time
from typing import TextIO

from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress as RichProgress, TaskID, TextColumn, TimeElapsedColumn

__all__ = ["PLAIN_INTERVAL_SECONDS", "Progress"]

#: Seconds between plain progress lines when the stream is not a terminal.
PLAIN_INTERVAL_SECONDS = 5.0


def _is_terminal(stream: TextIO) -> bool:
    return hasattr(stream, "isatty") and stream.isatty()


class Progress:
    """``start(label, total)`` starts a bar, ``update(done)`` moves it, ``finish(text)`` ends it;
    ``note(text)`` prints a line (above the bar on a terminal).

    ``stream`` carries the bar and the plain progress lines (default stderr); ``notes`` carries
    the notes (default: ``stream``). A note goes through the live display only when its stream
    is a terminal too, so a redirected ``notes`` stream gets every note as a plain line.
    ``noun`` says what ``done`` counts in plain lines (``12/40 finished``).
    """

    def __init__(
        self,
        stream: TextIO | None = None,
        *,
        notes: TextIO | None = None,
        noun: str = "terminal",
        force_plain: bool = False,
    ):
        self.stream = stream or sys.stderr
        self.notes = notes or self.stream
        self.noun = noun
        self.tty = not force_plain and _is_terminal(self.stream)
        self._notes_live = self.tty and (self.notes is self.stream or _is_terminal(self.notes))
        self._rich: RichProgress | None = None
        self._task: TaskID | None = None
        self._label = ""
        self._total = 0
        self._started = 0.0
        self._last_line = 0.0
        if self.tty:
            self._rich = RichProgress(
                TextColumn("{task.description}"),
                BarColumn(),
                MofNCompleteColumn(),
                TimeElapsedColumn(),
                console=Console(file=self.stream),
                transient=True,
                redirect_stdout=False,
                redirect_stderr=False,
            )

    def note(self, text: str) -> None:
        """One line of news (above the bar on a terminal)."""
        if self._rich is not None and self._notes_live:
            self._rich.console.print(text, markup=False, highlight=False, emoji=False, soft_wrap=True)
        else:
            self.notes.write(text + "\n")
            self.notes.flush()

    def _line(self, text: str) -> None:
        self.stream.write(text + "\n")
        self.stream.flush()

    def start(self, label: str, total: int) -> None:
        """A run of ``total`` items starts."""
        self._label, self._total, self._started = label, total, time.monotonic()
        self._last_line = self._started
        if self._rich is not None:
            if self._task is None:
                self._rich.start()
            else:
                self._rich.remove_task(self._task)
            self._task = self._rich.add_task(label, total=total)
        else:
            self._line(f"{label}: started ({total} tasks)")

    def update(self, done: int, status: str = "") -> None:
        """``done`` of the run's items are done; ``status`` is a short extra (e.g. kills)."""
        if self._rich is not None and self._task is not None:
            self._rich.update(self._task, completed=done, description=f"{self._label}{' ' + status if status else ''}")
            return
        now = time.monotonic()
        if now - self._last_line >= PLAIN_INTERVAL_SECONDS:
            self._last_line = now
            self._line(
                f"{self._label}: {done}/{self._total} {self.noun} after {now - self._started:.0f} s"
                f"{' ' + status if status else ''}"
            )

    def finish(self, text: str) -> None:
        """The run ended; ``text`` summarises it (one line on the stream: ``label: text``)."""
        if self._rich is not None and self._task is not None:
            self._rich.remove_task(self._task)
            self._task = None
            self._rich.stop()
        self._line(f"{self._label}: {text}")

    def close(self) -> None:
        """Stop the live display (idempotent)."""
        if self._rich is not None and self._task is not None:
            self._rich.stop()
            self._task = None
