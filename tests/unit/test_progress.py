"""taskforge.progress (the demo's and the benchmarks' progress display) when its stream is not a
terminal: plain lines at the start, every PLAIN_INTERVAL_SECONDS and at the end; notes on their
own stream."""

from __future__ import annotations

import io

from taskforge import progress as progress_module
from taskforge.progress import Progress


def test_plain_lines_and_notes_on_their_own_stream(monkeypatch):
    stream, notes = io.StringIO(), io.StringIO()
    p = Progress(stream, notes=notes, noun="finished")
    assert not p.tty
    p.start("draining", 4)
    p.update(1)  # within the interval: no line
    monkeypatch.setattr(progress_module, "PLAIN_INTERVAL_SECONDS", 0.0)
    p.update(2, "(RUNNING 2)")
    p.note("SIGKILL worker-1")
    p.finish("4/4 finished in 1.0 s")
    p.close()
    lines = stream.getvalue().splitlines()
    assert lines[0] == "draining: started (4 tasks)"
    assert lines[1].startswith("draining: 2/4 finished after ") and lines[1].endswith(" s (RUNNING 2)")
    assert lines[2:] == ["draining: 4/4 finished in 1.0 s"]
    assert notes.getvalue() == "SIGKILL worker-1\n"


def test_force_plain_on_a_terminal_stream():
    class Terminal(io.StringIO):
        def isatty(self) -> bool:
            return True

    stream = Terminal()
    assert Progress(stream).tty
    p = Progress(stream, force_plain=True)
    p.start("e1", 2)
    p.finish("done")
    assert stream.getvalue() == "e1: started (2 tasks)\ne1: done\n"
