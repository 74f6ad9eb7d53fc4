"""Start and stop real ``taskforge worker`` / ``taskforge scheduler`` processes (and other commands).

One harness for every caller that needs real processes (the benchmarks; the demo and the
integration tests can use it too). Each child:

* runs in a new session (its own process group), so a Ctrl-C in the terminal reaches only the
  parent, which then stops the children itself;
* gets ``TASKFORGE_DSN`` set to the harness's database (``DATABASE_URL`` removed so it cannot win),
  ``PYTHONUNBUFFERED=1``, and ``PYTHONPATH`` extended with the folder this package was imported
  from, so a child imports the same ``taskforge`` as its parent (checkout or installed wheel);
* writes stdout and stderr to one log file;
* with ``die_with_parent`` (Linux), receives SIGTERM when the parent dies, even by SIGKILL
  (``prctl(PR_SET_PDEATHSIG)``), so a killed demo leaves no workers behind. The signal comes
  when the *thread* that started the child ends: start such children from a thread that lives
  as long as they should (the demo starts every child from its main thread).

Timeouts are seconds on the parent's monotonic clock.
"""

from __future__ import annotations

import contextlib
import ctypes
import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

__all__ = ["ManagedProcess", "ProcessHarness", "package_root", "taskforge_command"]

#: How long a graceful stop waits after SIGTERM before it sends SIGKILL (seconds).
DEFAULT_STOP_TIMEOUT_SECONDS = 30.0


def package_root() -> Path:
    """The folder that contains the ``taskforge`` package (goes on the children's PYTHONPATH)."""
    return Path(__file__).resolve().parent.parent


def taskforge_command(kind: str, args: Sequence[str], python: str | None = None) -> list[str]:
    """Command line of ``python -m taskforge.cli KIND ARGS...`` (``kind``: ``worker``, ``scheduler``, ...)."""
    return [python or sys.executable, "-m", "taskforge.cli", kind, *args]


@dataclass
class ManagedProcess:
    """One child process with its log file. ``name`` is the caller's label (unique per harness)."""

    kind: str
    name: str
    argv: list[str]
    log_path: Path
    popen: subprocess.Popen[bytes]
    killed: bool = False

    @property
    def pid(self) -> int:
        """Process id (also the id of its process group: each child leads a new session)."""
        return self.popen.pid

    @property
    def returncode(self) -> int | None:
        """Exit code, negative signal number if a signal ended it, None while it runs."""
        return self.popen.poll()

    def alive(self) -> bool:
        """True while the process has not exited."""
        return self.popen.poll() is None

    def signal(self, sig: int) -> None:
        """Send ``sig`` to the process (not to its group); nothing if it has already exited."""
        if self.alive():
            with contextlib.suppress(ProcessLookupError):
                self.popen.send_signal(sig)

    def kill(self, wait_seconds: float = DEFAULT_STOP_TIMEOUT_SECONDS) -> int:
        """SIGKILL the whole process group at once (no cleanup runs) and wait; return the exit code."""
        if self.alive():
            self.killed = True
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(self.pid, signal.SIGKILL)
        return self.popen.wait(timeout=wait_seconds)

    def wait(self, timeout: float) -> int:
        """Wait up to ``timeout`` seconds for exit; return the exit code (raises TimeoutExpired)."""
        return self.popen.wait(timeout=timeout)

    def stop(self, timeout: float = DEFAULT_STOP_TIMEOUT_SECONDS) -> int:
        """Graceful stop: SIGTERM, wait up to ``timeout`` seconds, then SIGKILL. Returns the exit code."""
        self.signal(signal.SIGTERM)
        try:
            return self.popen.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            return self.kill()

    def log(self) -> str:
        """The whole log (stdout and stderr), undecodable bytes replaced."""
        try:
            return self.log_path.read_text(errors="replace")
        except OSError:
            return ""

    def tail(self, lines: int = 20) -> str:
        """The last ``lines`` lines of the log."""
        return "\n".join(self.log().splitlines()[-lines:])


#: prctl(2) option: the signal a child receives when its parent (thread) dies.
PR_SET_PDEATHSIG = 1


def _die_with_parent() -> Callable[[], None] | None:
    """A ``preexec_fn`` that asks the kernel for SIGTERM when this process dies (Linux only;
    None elsewhere). libc is loaded here, in the parent: the function only calls it."""
    if not sys.platform.startswith("linux"):
        return None
    prctl = ctypes.CDLL(None, use_errno=True).prctl
    parent = os.getpid()

    def preexec() -> None:
        prctl(PR_SET_PDEATHSIG, int(signal.SIGTERM), 0, 0, 0)
        if os.getppid() != parent:  # the parent died before the request took effect: never start
            os._exit(1)

    return preexec


@dataclass
class ProcessHarness:
    """Starts children against one database and stops them all (also as a context manager).

    ``dsn`` goes to the children as ``TASKFORGE_DSN``; ``log_dir`` receives one log per child
    (``<name>.log``); ``env`` adds or overrides environment variables of every child;
    ``die_with_parent``: the children get SIGTERM when this process dies (module docstring).
    """

    dsn: str
    log_dir: Path
    env: Mapping[str, str] = field(default_factory=dict)
    cwd: Path | None = None
    die_with_parent: bool = False
    processes: list[ManagedProcess] = field(default_factory=list)

    def __post_init__(self) -> None:
        self.log_dir = Path(self.log_dir)
        self.log_dir.mkdir(parents=True, exist_ok=True)

    def child_env(self) -> dict[str, str]:
        """The environment every child gets (see the module docstring)."""
        env = dict(os.environ)
        env.pop("DATABASE_URL", None)
        env["TASKFORGE_DSN"] = self.dsn
        env["PYTHONUNBUFFERED"] = "1"
        env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(package_root()), env.get("PYTHONPATH")]))
        env.update(self.env)
        return env

    def start(
        self, argv: Sequence[str], *, kind: str, name: str | None = None, env: Mapping[str, str] | None = None
    ) -> ManagedProcess:
        """Start any command as a managed child (``kind`` is a label: ``worker``, ``peer``, ...)."""
        name = name or f"{kind}-{len(self.processes) + 1}"
        log_path = self.log_dir / f"{name}.log"
        child_env = self.child_env()
        child_env.update(env or {})
        with open(log_path, "ab") as log:
            popen = subprocess.Popen(
                list(argv),
                stdin=subprocess.DEVNULL,
                stdout=log,
                stderr=subprocess.STDOUT,
                env=child_env,
                cwd=str(self.cwd) if self.cwd else None,
                start_new_session=True,
                preexec_fn=_die_with_parent() if self.die_with_parent else None,
            )
        proc = ManagedProcess(kind=kind, name=name, argv=list(argv), log_path=log_path, popen=popen)
        self.processes.append(proc)
        return proc

    def worker(self, *args: str, name: str | None = None, log_level: str = "WARNING") -> ManagedProcess:
        """Start ``taskforge worker --name NAME --log-level LEVEL ARGS...``."""
        name = name or f"worker-{self.count('worker') + 1}"
        return self.start(
            taskforge_command("worker", ["--name", name, "--log-level", log_level, *args]), kind="worker", name=name
        )

    def scheduler(self, *args: str, name: str | None = None, log_level: str = "WARNING") -> ManagedProcess:
        """Start ``taskforge scheduler --log-level LEVEL ARGS...``."""
        name = name or f"scheduler-{self.count('scheduler') + 1}"
        return self.start(
            taskforge_command("scheduler", ["--log-level", log_level, *args]), kind="scheduler", name=name
        )

    def console(self, *args: str, name: str = "console") -> ManagedProcess:
        """Start ``taskforge console ARGS...`` (its first log line names its URL)."""
        return self.start(taskforge_command("console", list(args)), kind="console", name=name)

    def count(self, kind: str) -> int:
        """How many children of this kind were started (alive or not)."""
        return sum(1 for p in self.processes if p.kind == kind)

    def alive(self, kind: str | None = None) -> list[ManagedProcess]:
        """Children still running (of one kind, or all)."""
        return [p for p in self.processes if p.alive() and (kind is None or p.kind == kind)]

    def exited_unexpectedly(self) -> list[ManagedProcess]:
        """Children that exited although nobody killed or stopped them."""
        return [p for p in self.processes if not p.alive() and not p.killed]

    def by_pid(self) -> dict[int, ManagedProcess]:
        """Children by process id."""
        return {p.pid: p for p in self.processes}

    def stop_all(self, timeout: float = DEFAULT_STOP_TIMEOUT_SECONDS) -> dict[str, int | None]:
        """SIGTERM every live child at once, wait up to ``timeout`` seconds in total, SIGKILL the
        rest. Returns every child's exit code by name (None: could not be reaped)."""
        live = self.alive()
        for proc in live:
            proc.signal(signal.SIGTERM)
        deadline = time.monotonic() + timeout
        for proc in live:
            try:
                proc.wait(max(0.05, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                with contextlib.suppress(subprocess.TimeoutExpired):
                    proc.kill()
        return {p.name: p.returncode for p in self.processes}

    def kill_all(self) -> None:
        """SIGKILL every live child (for emergencies: nothing gets to clean up)."""
        for proc in self.alive():
            with contextlib.suppress(subprocess.TimeoutExpired):
                proc.kill()

    def __enter__(self) -> ProcessHarness:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.stop_all()
