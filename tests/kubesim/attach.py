"""The `pods/attach` subresource: what `kubectl attach` and the Python client's `stream()`
reach, over WebSocket with the Kubernetes channel protocols.

Recorded from this machine's kubectl (1.32, the one the dispatcher picks for kubesim):
`GET .../pods/P/attach?container=C&stderr=true&stdin=true&stdout=true` (`tty=true` and no
stderr with `-t`) as a WebSocket upgrade offering `v5.channel.k8s.io` (then v4); on any
answer but 101 it falls back to SPDY/3.1: `POST` with `X-Stream-Protocol-Version` v5 ... v1
and prints the error of that second try. The Python client (37) offers v5 then v4.

What is served, in the apiserver's and kubelet's order:
- Authorization, by the HTTP method as a 1.32 apiserver does: a WebSocket `GET` needs `get`
  on `pods/attach`, the SPDY `POST` needs `create` (the 403 kubectl prints is the POST's).
- The apiserver's checks, answered before any upgrade as Status objects: the pod (404),
  the container (`container X is not valid for pod Y`, or a name is required when the pod
  has several), the node (`pod P does not have a host assigned`). The option
  `refuse_upgrades` (scenario options) plays a proxy that strips the `Upgrade` header: every
  attach gets the apiserver's 400 `Upgrade request required`.
- The kubelet's: a container that is not running gets a plain-text 500 `container not found
  ("C")`, which kubectl prints as `unable to upgrade connection: ...`.
- SPDY/3.1 is not spoken (kubectl only tries it after a WebSocket refusal, which the checks
  above make the same refusal): an otherwise acceptable POST gets 400 saying so.
- The session (v5 and v4): binary messages whose first byte is the channel. Client to
  server: 0 stdin (written to the container's stdin), 4 resize (`{"Width":W,"Height":H}`,
  applied to the container's terminal), and in v5 `255 N` closing stream N (stdin: with
  `stdinOnce` the container's stdin is closed). Server to client: 1 stdout, 2 stderr (a
  terminal's output is all stdout), then at the container's end 3 with the Status
  `{"metadata":{},"status":"Success"}` and a close frame. Pings are answered.
- As on a node, an attach sees only what the container writes after it connected, and when
  the first session that carried stdin ends, a `stdinOnce` container's stdin is closed.
"""

from __future__ import annotations

import contextlib
import json
import os
import queue
import select
import socket
import ssl
import threading
import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from tests.kubesim import apierrors, websocket
from tests.kubesim.admission import authorize
from tests.kubesim.process import STDERR, ContainerProcess
from tests.kubesim.transport import Reply, Request, Upgrade

if TYPE_CHECKING:
    from tests.kubesim.api import Route
    from tests.kubesim.server import KubeSim

PROTOCOLS = ("v5.channel.k8s.io", "v4.channel.k8s.io")
V5 = "v5.channel.k8s.io"

STDIN, STDOUT_CHANNEL, STDERR_CHANNEL, ERROR_CHANNEL, RESIZE, CLOSE = 0, 1, 2, 3, 4, 255
SUCCESS = json.dumps({"metadata": {}, "status": "Success"}).encode()
FRAME_BYTES = 32 * 1024  # what the apiserver's wsstream writes per message at most
STDIN_QUEUE_CHUNKS = 128  # stdin held for a container that does not read yet, in messages
RECV_BYTES = 64 * 1024
CLOSE_WAIT_SECONDS = 5.0  # how long the server's close waits for the client's


def _flag(req: Request, name: str) -> bool:
    return (req.param(name) or "").lower() in ("true", "1")


def handle(sim: KubeSim, req: Request, route: Route) -> Reply | Upgrade:
    """Check an attach request; upgrade it to a session, or refuse it."""
    is_websocket = req.method == "GET" and websocket.is_upgrade(
        req.header("Connection"), req.header("Upgrade"))
    if req.method not in ("GET", "POST"):
        raise apierrors.method_not_allowed(req.method, "pods")
    authorize(req.user, "get" if req.method == "GET" else "create", "pods", "attach", "",
              route.namespace, route.name)
    pod = sim.store.get_raw("pods", route.namespace, route.name or "")
    if pod is None:
        raise apierrors.not_found("pods", "", route.name or "")
    container = _container(req, pod)
    if sim.scenario.options.get("refuse_upgrades") or (
            req.method == "GET" and not is_websocket):
        raise apierrors.bad_request("Upgrade request required")
    if not (pod.get("spec") or {}).get("nodeName"):
        raise apierrors.bad_request(f"pod {route.name} does not have a host assigned")
    if not any((_flag(req, "stdin"), _flag(req, "stdout"), _flag(req, "stderr"))):
        raise apierrors.bad_request("you must specify at least 1 of stdin, stdout, stderr")
    kubelet = getattr(sim.cluster, "kubelet", None)
    process = kubelet.running_process(route.namespace or "", route.name or "",
                                      pod["metadata"].get("uid"), container) if kubelet else None
    if process is None:
        return Reply(500, f'container not found ("{container}")'.encode(),
                     "text/plain; charset=utf-8")
    if not is_websocket:
        raise apierrors.bad_request("kubesim speaks WebSocket (v5.channel.k8s.io, "
                                    "v4.channel.k8s.io) for attach, not SPDY/3.1")
    offered = websocket.offered_protocols(req.headers.get_all("Sec-WebSocket-Protocol") or [])
    protocol = websocket.choose_protocol(offered, PROTOCOLS)
    key = req.header("Sec-WebSocket-Key")
    if protocol is None or not key or req.header("Sec-WebSocket-Version") != "13":
        raise apierrors.bad_request(
            f"unable to upgrade: a WebSocket version 13 with one of the subprotocols "
            f"{', '.join(PROTOCOLS)} is required")
    session = Session(process, protocol, stdin=_flag(req, "stdin"),
                      stdout=_flag(req, "stdout"), stderr=_flag(req, "stderr"))
    return Upgrade({"Upgrade": "websocket", "Connection": "Upgrade",
                    "Sec-WebSocket-Accept": websocket.accept_key(key),
                    "Sec-WebSocket-Protocol": protocol}, session.serve)


def _container(req: Request, pod: dict[str, Any]) -> str:
    names = [str(c.get("name")) for c in (pod.get("spec") or {}).get("containers") or []]
    name = req.param("container")
    if not name:
        if len(names) != 1:
            raise apierrors.bad_request(
                f"a container name must be specified for pod {pod['metadata']['name']}, "
                f"choose one of: [{' '.join(names)}]")
        return names[0]
    if name not in names:
        raise apierrors.bad_request(
            f"container {name} is not valid for pod {pod['metadata']['name']}")
    return name


class Session:
    """One attach connection, served on the connection's own thread (see the module
    docstring). One loop reads the client and writes the container's output, woken by a
    pipe when output arrives, so the TLS socket is only ever used by one thread; stdin is
    written by a thread of its own, so a container that does not read cannot stall the
    output or the answers to pings."""

    def __init__(self, process: ContainerProcess, protocol: str, *, stdin: bool,
                 stdout: bool, stderr: bool,
                 final_status: Callable[[], bytes] | None = None):
        self.process = process
        # exec.py's: the command's exit as a Status; an attach always ends in Success.
        self.final_status = final_status or (lambda: SUCCESS)
        self.protocol = protocol
        self.stdin = stdin and process.stdin_enabled
        self.stdout = stdout
        self.stderr = stderr
        self._outbox: queue.SimpleQueue[tuple[int, bytes] | None] = queue.SimpleQueue()
        self._wake_read, self._wake_write = os.pipe()
        os.set_blocking(self._wake_write, False)
        self._stdin_queue: queue.Queue[bytes | None] = queue.Queue(STDIN_QUEUE_CHUNKS)
        self._stdin_closed = False
        self._close_sent_at: float | None = None  # the server's close, awaiting the client's

    # -- the container's side (pump thread) -----------------------------------------------

    def output(self, stream: int, data: bytes) -> None:
        if self.process.tty or stream != STDERR:
            if self.stdout:
                self._post((STDOUT_CHANNEL, data))
        elif self.stderr:
            self._post((STDERR_CHANNEL, data))

    def ended(self) -> None:
        self._post(None)

    def _post(self, item: tuple[int, bytes] | None) -> None:
        self._outbox.put(item)
        with contextlib.suppress(BlockingIOError, OSError):
            os.write(self._wake_write, b"x")

    # -- the connection -------------------------------------------------------------------

    def serve(self, sock: socket.socket) -> None:
        writer = threading.Thread(target=self._write_stdin, name="kubesim-attach-stdin",
                                  daemon=True)
        if self.stdin:
            writer.start()
        if not self.process.attach(self):
            self.ended()
        sock.setblocking(False)
        try:
            self._loop(sock)
        except (OSError, websocket.ProtocolError):
            pass  # the client went away, or broke the protocol: the session is over
        finally:
            self.process.detach(self)
            if self.stdin:
                self._end_stdin()
                writer.join(5.0)
            os.close(self._wake_read)
            os.close(self._wake_write)

    def _loop(self, sock: socket.socket) -> None:
        reader = websocket.FrameReader()
        while True:
            if self._close_sent_at is not None and \
                    time.monotonic() - self._close_sent_at > CLOSE_WAIT_SECONDS:
                return
            pending = isinstance(sock, ssl.SSLSocket) and sock.pending() > 0
            ready: list[int] = [sock.fileno()] if pending else select.select(
                [sock.fileno(), self._wake_read], [], [], 1.0)[0]
            if self._wake_read in ready:
                os.read(self._wake_read, 4096)
            if not self._flush_output(sock):
                return
            if sock.fileno() not in ready:
                continue
            try:
                data = sock.recv(RECV_BYTES)
            except (ssl.SSLWantReadError, ssl.SSLWantWriteError, BlockingIOError):
                continue
            if not data:
                return  # the client hung up
            try:
                messages = reader.feed(data)
            except websocket.ProtocolError as exc:
                self._send(sock, websocket.CLOSE, websocket.close_payload(exc.code, str(exc)))
                return
            for message in messages:
                if not self._on_message(sock, message):
                    return

    def _flush_output(self, sock: socket.socket) -> bool:
        """Send what the container wrote; at its end, the Status and a close (then the
        client's close is awaited, as RFC 6455 asks, before the connection ends)."""
        while self._close_sent_at is None:
            try:
                item = self._outbox.get_nowait()
            except queue.Empty:
                return True
            if item is None:
                self._send(sock, websocket.BINARY, bytes([ERROR_CHANNEL]) + self.final_status())
                self._send(sock, websocket.CLOSE, websocket.close_payload(
                    websocket.NORMAL_CLOSURE))
                self._close_sent_at = time.monotonic()
                return True
            channel, data = item
            for start in range(0, len(data), FRAME_BYTES):
                self._send(sock, websocket.BINARY,
                           bytes([channel]) + data[start:start + FRAME_BYTES])
        return True

    def _on_message(self, sock: socket.socket, message: websocket.Message) -> bool:
        if message.opcode == websocket.PING:
            self._send(sock, websocket.PONG, message.payload)
        elif message.opcode == websocket.CLOSE:
            if self._close_sent_at is None:  # the client's close comes first: answer it
                with contextlib.suppress(OSError):
                    self._send(sock, websocket.CLOSE, message.payload[:2])
            return False
        elif message.opcode in (websocket.BINARY, websocket.TEXT) and message.payload:
            self._on_channel(message.payload[0], message.payload[1:])
        return True

    def _on_channel(self, channel: int, data: bytes) -> None:
        if channel == STDIN and self.stdin and not self._stdin_closed and data:
            self._stdin_queue.put(data)
        elif channel == RESIZE:
            try:
                size = json.loads(data)
                self.process.resize(int(size["Height"]), int(size["Width"]))
            except (ValueError, KeyError, TypeError):
                pass
        elif (channel == CLOSE and self.protocol == V5 and data[:1] == bytes([STDIN])
              and self.stdin and not self._stdin_closed):
            self._stdin_closed = True
            self._stdin_queue.put(None)

    def _end_stdin(self) -> None:
        """The session is over: the writer ends after what is queued, or at once if the
        container does not read it."""
        try:
            self._stdin_queue.put(None, timeout=5.0)
        except queue.Full:
            with contextlib.suppress(queue.Empty):
                while True:
                    self._stdin_queue.get_nowait()
            self._stdin_queue.put(None)

    def _write_stdin(self) -> None:
        """Copy the client's stdin into the container; at its end (the client closed it,
        or the session ended), a `stdinOnce` container's stdin is closed."""
        while True:
            data = self._stdin_queue.get()
            if data is None:
                break
            self.process.write_stdin(data)
        if self.process.stdin_once:
            self.process.close_stdin()

    @staticmethod
    def _send(sock: socket.socket, opcode: int, payload: bytes) -> None:
        view = memoryview(websocket.encode(opcode, payload))
        while view:
            try:
                view = view[sock.send(view):]
            except (ssl.SSLWantWriteError, BlockingIOError):
                select.select([], [sock], [], 1.0)
            except ssl.SSLWantReadError:
                select.select([sock], [], [], 1.0)
