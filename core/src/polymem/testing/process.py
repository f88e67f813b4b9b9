"""A real `polymem serve` in a subprocess, for tests that need the service over loopback (needs the
`server` extra): `with serving("sqlite:///m.db", "--no-auth") as server: ... server.url ...`."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator, Mapping
from contextlib import contextmanager

import httpx

__all__ = ["ServedProcess", "free_port", "serving", "start_server"]


def free_port() -> int:
    """A TCP port on 127.0.0.1 that nothing listens on right now."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


# Times `wait_ready` starts a server again on another port when another process took its port
# between `free_port` and the server's bind (tests run in parallel start many servers).
PORT_RETRIES = 5


class ServedProcess:
    """A `polymem serve` process and its base URL. Its stderr goes to a file (a pipe nobody reads
    would block a chatty server), read back by `stderr()` for failure messages."""

    def __init__(self, store_url: str, *args: str, env: Mapping[str, str] | None = None) -> None:
        self._command = [sys.executable, "-m", "polymem.server", "serve", "--url", store_url, *args]
        self._env = {**os.environ, "OMP_NUM_THREADS": "1", **(env or {})}
        self._stderr_text = ""
        self._start()

    def _start(self) -> None:
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self._stderr = tempfile.TemporaryFile()
        self.process = subprocess.Popen([*self._command, "--port", str(self.port)],
                                        stdout=subprocess.DEVNULL, stderr=self._stderr, env=self._env)

    def stderr(self) -> str:
        """What the server has written to stderr so far."""
        if self._stderr.closed:
            return self._stderr_text
        self._stderr.seek(0)
        return self._stderr.read().decode(errors="replace")

    def wait_ready(self, timeout: float = 90.0) -> ServedProcess:
        """Block until `/healthz` answers 200; raise `RuntimeError` (with the server's stderr) if the
        process exits first or `timeout` seconds pass."""
        deadline = time.monotonic() + timeout
        retries = PORT_RETRIES
        while True:
            try:
                if httpx.get(f"{self.url}/healthz", timeout=2).status_code == 200:
                    return self
            except httpx.HTTPError:
                pass
            if self.process.poll() is not None:
                if retries and "address already in use" in self.stderr().lower():
                    retries -= 1
                    self._stderr.close()
                    self._start()
                    continue
                raise RuntimeError(f"polymem serve exited with {self.process.returncode}:\n{self.stderr()}")
            if time.monotonic() > deadline:
                self.process.kill()
                raise RuntimeError(f"polymem serve did not answer /healthz in {timeout:.0f} s:\n{self.stderr()}")
            time.sleep(0.05)

    def signal(self, signum: signal.Signals) -> None:
        """Send `signum` to the server."""
        self.process.send_signal(signum)

    def stop(self, timeout: float = 30.0) -> int:
        """Terminate the server (SIGTERM, then SIGKILL after `timeout` s) and return its exit code."""
        if self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(timeout)
            except subprocess.TimeoutExpired:
                self.process.kill()
        code = self.process.wait()
        self._stderr_text = self.stderr()
        self._stderr.close()
        return code


def start_server(store_url: str, *args: str, env: Mapping[str, str] | None = None,
                 timeout: float = 90.0) -> ServedProcess:
    """Start `polymem serve --url store_url *args` on a free port and wait until it answers."""
    return ServedProcess(store_url, *args, env=env).wait_ready(timeout)


@contextmanager
def serving(store_url: str, *args: str, env: Mapping[str, str] | None = None,
            timeout: float = 90.0) -> Iterator[ServedProcess]:
    """`start_server` as a context manager that stops the server on exit."""
    server = start_server(store_url, *args, env=env, timeout=timeout)
    try:
        yield server
    finally:
        server.stop()
