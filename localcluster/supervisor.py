"""Process supervision for the local cluster: start a component with its log file, wait
until it answers, tell whether it still runs, restart and stop it -- by PID, and only the
processes this state directory started (a reused PID is never signalled).

It knows no component by name: the control plane, the real node and Thanos are argument
lists (``control_plane``, ``node``, ``thanos.plan``) handed to ``start_process``."""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import subprocess
import time
import urllib.error
import urllib.request
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from .tools import ClusterError, log


@dataclass(frozen=True)
class Component:
    """One process of a plan: its name (its log file and PID key), its argv, and the URL
    answering 200 once it serves."""

    name: str
    argv: list[str]
    ready: str


@dataclass
class Supervisor:
    """The processes started under ``dir``: their PIDs, command lines and ports."""

    dir: Path
    ports: dict[str, int] = field(default_factory=dict)
    pids: dict[str, int] = field(default_factory=dict)
    _cmdlines: dict[str, str] = field(default_factory=dict)
    # handles of the children this process started (a loaded cluster has none): kept so they
    # are reaped on stop instead of lingering as zombies or warning when collected
    _procs: dict[str, subprocess.Popen[bytes]] = field(default_factory=dict)

    def _save(self) -> None:
        """Persist what a later ``load`` needs; the cluster writes its state file."""

    def alive(self, name: str) -> bool:
        """Is the process we started under this name still running?

        For our own children the Popen handle is authoritative. For a cluster loaded from
        state.json (``make cluster-down`` in another shell) the PID must still run the same
        executable with the same arguments, so a reused PID is never signalled.
        """
        proc = self._procs.get(name)
        if proc is not None:
            return proc.poll() is None
        pid = self.pids.get(name)
        if not pid:
            return False
        try:
            stat = Path(f"/proc/{pid}/stat").read_text()
            exe = os.readlink(f"/proc/{pid}/exe")
            cmdline = Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
        except OSError:
            return False
        if stat.rsplit(")", 1)[-1].split()[0] == "Z":
            return False
        expected = self._cmdlines.get(name, "")
        program = expected.split(" ", 1)[0]
        same_binary = exe == program or exe.removesuffix(" (deleted)") == program
        # cmdline can read empty for an instant around exec; the executable cannot lie
        return same_binary and (cmdline.strip() in ("", expected.strip()))

    def running(self) -> bool:
        return bool(self.pids) and all(self.alive(n) for n in self.pids)

    def start_process(self, name: str, argv: list[str], env: dict[str, str] | None = None) -> None:
        logs = self.dir / "logs"
        logs.mkdir(parents=True, exist_ok=True)
        out = open(logs / f"{name}.log", "ab")  # noqa: SIM115 - owned by the child process
        proc = subprocess.Popen(
            argv,
            stdout=out,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
            cwd=self.dir,
            start_new_session=True,
            env={**os.environ, **env} if env else None,
        )
        out.close()
        self._procs[name] = proc
        self.pids[name] = proc.pid
        self._cmdlines[name] = " ".join(argv)
        self._save()

    def wait_ready(self, name: str, check: Callable[[], bool], timeout: float = 90) -> None:
        """Poll ``check`` until it holds; fail with the log's tail if the process exits first."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if not self.alive(name):
                raise ClusterError(
                    f"{name} exited during start-up; see {self._log(name)}:\n" + self.tail(name)
                )
            try:
                if check():
                    return
            except (OSError, urllib.error.URLError, subprocess.SubprocessError):
                pass
            time.sleep(0.5)
        raise ClusterError(
            f"{name} was not ready after {timeout:.0f}s; see {self._log(name)}:\n" + self.tail(name)
        )

    def start_component(self, c: Component) -> None:
        self.start_process(c.name, c.argv)
        self.wait_ready(c.name, lambda: http_ok(c.ready))

    def _log(self, name: str) -> Path:
        return self.dir / "logs" / f"{name}.log"

    def tail(self, name: str, lines: int = 15) -> str:
        try:
            return "\n".join(self._log(name).read_text(errors="replace").splitlines()[-lines:])
        except OSError:
            return "(no log)"

    def restart_process(self, name: str) -> None:
        """Stop one process and start it again with the same arguments (failure tests)."""
        argv = self._cmdlines[name].split(" ")
        proc = self._procs.pop(name, None)
        if proc is not None:
            proc.terminate()
            try:
                proc.wait(timeout=10)
            except subprocess.TimeoutExpired:  # the apiserver's graceful shutdown can take a minute
                proc.kill()
                proc.wait()
        self.start_process(name, argv)

    def stop_process(self, name: str, quiet: bool = False) -> None:
        """SIGTERM to the process group we started as ``name``, SIGKILL after 15 s."""
        if not self.alive(name):
            return
        pid = self.pids[name]
        if not quiet:
            log(f"stopping {name} (pid {pid})")
        try:
            os.killpg(pid, signal.SIGTERM)
        except ProcessLookupError:
            return
        deadline = time.monotonic() + 15
        while time.monotonic() < deadline and self.alive(name):
            time.sleep(0.1)
            _reap(pid)
        if self.alive(name):
            os.killpg(pid, signal.SIGKILL)
            _reap(pid)

    def stop_all(self, quiet: bool = False) -> None:
        """Every process we started, newest first; then reap our own children."""
        for name in reversed(list(self.pids)):
            self.stop_process(name, quiet)
        for proc in self._procs.values():
            try:
                proc.wait(timeout=5)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
        self._procs.clear()
        self.pids.clear()

    def http_ok(self, url: str) -> bool:
        return http_ok(url)


def http_ok(url: str) -> bool:
    with urllib.request.urlopen(url, timeout=3) as r:
        return bool(r.status == 200)


def remove_tree(path: Path) -> None:
    shutil.rmtree(path, ignore_errors=True)


def _reap(pid: int) -> None:
    with contextlib.suppress(ChildProcessError):
        os.waitpid(pid, os.WNOHANG)
