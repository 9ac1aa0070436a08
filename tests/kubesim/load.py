"""Load on a running kubesim, for its load test and scripts/bench-kubesim: many open watches
held by one lightweight client (threads and raw HTTPS, not one kubectl process each), and
timed requests.

A watch here is what kubectl's is on the wire: `GET .../pods?watch=true&labelSelector=...`
over TLS with the kubeconfig's token, read chunk by chunk until closed.
"""

from __future__ import annotations

import base64
import contextlib
import http.client
import ssl
import tempfile
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import urlsplit

import yaml


@dataclass(frozen=True)
class Endpoint:
    """Where a kubesim answers, and how to authenticate, read from its kubeconfig."""

    host: str
    port: int
    token: str
    context: ssl.SSLContext

    @classmethod
    def from_kubeconfig(cls, path: Path) -> Endpoint:
        config = yaml.safe_load(path.read_text())
        cluster = config["clusters"][0]["cluster"]
        url = urlsplit(cluster["server"])
        context = ssl.create_default_context()
        with tempfile.NamedTemporaryFile("wb", suffix=".crt") as ca:
            ca.write(base64.b64decode(cluster["certificate-authority-data"]))
            ca.flush()
            context.load_verify_locations(ca.name)
        return cls(url.hostname or "127.0.0.1", url.port or 443,
                   config["users"][0]["user"]["token"], context)

    def connect(self, timeout: float = 30.0) -> http.client.HTTPSConnection:
        return http.client.HTTPSConnection(self.host, self.port, context=self.context,
                                           timeout=timeout)

    def get(self, path: str, timeout: float = 30.0) -> tuple[int, bytes]:
        connection = self.connect(timeout)
        try:
            connection.request("GET", path, headers={"Authorization": f"Bearer {self.token}"})
            response = connection.getresponse()
            return response.status, response.read()
        finally:
            connection.close()


@dataclass
class Watches:
    """`count` watches held open on threads; `errors` says what went wrong with any."""

    endpoint: Endpoint
    count: int
    path: str
    opened: int = 0
    errors: list[str] = field(default_factory=list)
    events: int = 0
    _stop: threading.Event = field(default_factory=threading.Event)
    _lock: threading.Lock = field(default_factory=threading.Lock)
    _connections: list[http.client.HTTPSConnection] = field(default_factory=list)
    _threads: list[threading.Thread] = field(default_factory=list)

    def start(self) -> None:
        for index in range(self.count):
            thread = threading.Thread(target=self._hold, args=(index,), daemon=True,
                                      name=f"load-watch-{index}")
            thread.start()
            self._threads.append(thread)

    def _hold(self, index: int) -> None:
        try:
            connection = self.endpoint.connect(timeout=None)  # type: ignore[arg-type]
            with self._lock:
                self._connections.append(connection)
            connection.request("GET", self.path,
                               headers={"Authorization": f"Bearer {self.endpoint.token}"})
            response = connection.getresponse()
            if response.status != 200:
                raise RuntimeError(f"watch {index}: HTTP {response.status}")
            with self._lock:
                self.opened += 1
            while not self._stop.is_set():
                chunk = response.read1(65536)
                if not chunk:
                    break
                with self._lock:
                    self.events += chunk.count(b"\n")
            if not self._stop.is_set():
                raise RuntimeError(f"watch {index} ended while still wanted")
        except Exception as exc:
            if not self._stop.is_set():
                with self._lock:
                    self.errors.append(f"{type(exc).__name__}: {exc}")

    def stop(self) -> None:
        self._stop.set()
        with self._lock:
            connections = list(self._connections)
        for connection in connections:
            with contextlib.suppress(OSError):
                if connection.sock is not None:
                    connection.sock.shutdown(2)
            connection.close()
        for thread in self._threads:
            thread.join(10)


@contextlib.contextmanager
def open_watches(endpoint: Endpoint, count: int, path: str,
                 ready_seconds: float = 60.0) -> Iterator[Watches]:
    """`count` open watches on `path` while the block runs (all open before it starts)."""
    watches = Watches(endpoint, count, path)
    watches.start()
    try:
        deadline = time.monotonic() + ready_seconds
        while watches.opened + len(watches.errors) < count:
            if time.monotonic() > deadline:
                raise RuntimeError(f"only {watches.opened} of {count} watches opened")
            time.sleep(0.05)
        yield watches
    finally:
        watches.stop()


def percentiles(samples: list[float], shares: tuple[float, ...] = (0.5, 0.95, 0.99)
                ) -> dict[float, float]:
    ordered = sorted(samples)
    return {share: ordered[min(len(ordered) - 1, int(share * len(ordered)))]
            for share in shares}
