"""`toolhost serve --http 127.0.0.1:0` in the background, its URL read from its stderr: the one way the
Python harnesses start a daemon (conftest.py for the `mcp` 2.x suite, clients/old_python.py for `mcp`
1.x in its own venv). Standard library only, so that every venv can import it."""

from __future__ import annotations

import re
import signal
import subprocess
import threading
from collections.abc import Mapping, Sequence
from pathlib import Path

# The daemon names its address on stderr: "toolhost: serving N tools over MCP at http://ADDR/mcp".
URL = re.compile(r"at (http://\S+/mcp)")
# ... and, once the first load of its plugins has ended, "toolhost: plugins loaded: ...".
LOADED = "toolhost: plugins loaded:"


class HttpDaemon:
    """A started daemon; `args` is the whole command line (binary first), which must serve HTTP."""

    def __init__(
        self,
        args: Sequence[str],
        *,
        cwd: str | Path | None = None,
        env: Mapping[str, str] | None = None,
        timeout: float = 120,
    ):
        self.process = subprocess.Popen(
            list(args),
            cwd=cwd,
            env=env,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        self.stderr_lines: list[str] = []
        self.stdout = ""
        self._url: str | None = None
        self._ready = threading.Event()
        self._loaded = threading.Event()
        # Drained for the daemon's whole life, so that it never blocks on a full pipe.
        threading.Thread(target=self._read_stderr, daemon=True).start()
        if not self._ready.wait(timeout=timeout):
            self.stop()
            raise AssertionError("toolhost did not start:\n" + self.log())
        if self._url is None:
            raise AssertionError("toolhost exited:\n" + self.log())
        # The daemon answers before its plugins are loaded; these tests begin once they are.
        if not self._loaded.wait(timeout=timeout):
            self.stop()
            raise AssertionError("toolhost did not load its plugins:\n" + self.log())

    def _read_stderr(self) -> None:
        assert self.process.stderr is not None
        for line in self.process.stderr:
            self.stderr_lines.append(line)
            match = URL.search(line)
            if match and self._url is None:
                self._url = match.group(1)
                self._ready.set()
            if LOADED in line:
                self._loaded.set()
        self._ready.set()
        self._loaded.set()

    @property
    def url(self) -> str:
        """The MCP endpoint, `http://ADDR/mcp`."""
        assert self._url is not None
        return self._url

    @property
    def base(self) -> str:
        """`http://ADDR`, for the other routes."""
        return self.url.removesuffix("/mcp")

    def signal(self, sig: int = signal.SIGTERM) -> None:
        if self.process.poll() is None:
            self.process.send_signal(sig)

    def wait(self, timeout: float = 30) -> int:
        code = self.process.wait(timeout=timeout)
        assert self.process.stdout is not None
        self.stdout = self.process.stdout.read()
        return code

    def stop(self) -> int:
        """SIGTERM, then wait (30 s at most, then SIGKILL and raise)."""
        self.signal()
        try:
            return self.wait()
        except subprocess.TimeoutExpired:
            self.process.kill()
            raise

    def log(self) -> str:
        return "".join(self.stderr_lines)
