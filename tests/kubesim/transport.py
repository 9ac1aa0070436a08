"""The HTTPS transport: a threaded HTTP/1.1 server, requests in, replies out, streams.

Owns sockets and bytes on the wire, nothing about Kubernetes: TLS (the handshake runs on the
connection's own thread, so a slow client never blocks `accept`), keep-alive,
`Content-Length` on every plain reply, chunked streams flushed chunk by chunk, noticing a
client that went away during a stream, handing an upgraded connection (101) to its
protocol's code, ending a stream abruptly (no terminating chunk, as a
dropped connection looks to kubectl), and the restart fault: stop listening, cut every open
connection, listen again on the same port.
"""

from __future__ import annotations

import contextlib
import json
import queue
import select
import socket
import ssl
import threading
import time
import urllib.parse
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from email.message import Message
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

IDLE_SECONDS = 120.0
HANDSHAKE_SECONDS = 10.0


class StreamDropped(Exception):
    """Raised by a stream's iterator to end the response abruptly (the connection is cut
    without the terminating chunk)."""


@dataclass
class Request:
    method: str
    path: str
    query: dict[str, list[str]]
    headers: Message
    body: bytes
    user: Any = None  # set by authentication

    def param(self, name: str, default: str | None = None) -> str | None:
        values = self.query.get(name)
        return values[-1] if values else default

    def header(self, name: str) -> str:
        return self.headers.get(name, "") or ""


@dataclass
class Reply:
    """A complete response: status, body and headers (Content-Length is added)."""

    code: int
    body: bytes
    content_type: str = "application/json"
    headers: dict[str, str] = field(default_factory=dict)
    after: Callable[[], None] | None = None  # run once the reply is on the wire

    @staticmethod
    def json(code: int, obj: Any, content_type: str = "application/json",
             headers: dict[str, str] | None = None) -> Reply:
        return Reply(code, json.dumps(obj, separators=(",", ":")).encode(), content_type,
                     headers or {})


@dataclass
class Stream:
    """A chunked response. `chunks` yields bytes; an empty chunk is a heartbeat (nothing is
    written, but a client that went away is noticed); StreamDropped cuts the connection."""

    code: int
    chunks: Iterator[bytes]
    content_type: str
    headers: dict[str, str] = field(default_factory=dict)
    on_close: Callable[[], None] | None = None


@dataclass
class Upgrade:
    """A `101 Switching Protocols` answer: its headers go out, then `serve` owns the
    connection (the TLS socket) until it returns; the connection is closed after."""

    headers: dict[str, str]
    serve: Callable[[socket.socket], None]


Handler = Callable[[Request], "Reply | Stream | Upgrade"]


class _Connections:
    """The open client connections, so the restart fault can cut them all."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._open: set[socket.socket] = set()

    def add(self, sock: socket.socket) -> None:
        with self._lock:
            self._open.add(sock)

    def discard(self, sock: socket.socket) -> None:
        with self._lock:
            self._open.discard(sock)

    def cut_all(self) -> int:
        with self._lock:
            socks = list(self._open)
        for sock in socks:
            _cut(sock)
        return len(socks)


def _cut(sock: socket.socket) -> None:
    """End a connection at once, without a TLS close_notify: the peer reads an EOF."""
    with contextlib.suppress(OSError):
        sock.shutdown(socket.SHUT_RDWR)


def _client_gone(sock: socket.socket) -> bool:
    """True when the peer closed its side (the socket is readable but yields nothing)."""
    try:
        readable, _, _ = select.select([sock], [], [], 0)
    except (OSError, ValueError):
        return True
    if not readable:
        return False
    timeout = sock.gettimeout()
    try:
        sock.settimeout(0.0)
        return sock.recv(1) == b""
    except (ssl.SSLWantReadError, ssl.SSLWantWriteError, BlockingIOError):
        return False
    except OSError:
        return True
    finally:
        with contextlib.suppress(OSError):
            sock.settimeout(timeout)


class _HttpServer(ThreadingHTTPServer):
    daemon_threads = True
    allow_reuse_address = True
    request_queue_size = 128

    def __init__(self, address: tuple[str, int], transport: Transport):
        self.transport = transport
        super().__init__(address, _RequestHandler)

    def finish_request(self, request: Any, client_address: Any) -> None:
        raw: socket.socket = request
        raw.settimeout(HANDSHAKE_SECONDS)
        # A reply goes out as two writes (headers, then body). With Nagle on, the second
        # waits for the client's delayed ACK of the first: 40 ms per request, which turned
        # a `kubectl delete` of 300 pods into a minute. Real apiservers (Go) set NODELAY.
        with contextlib.suppress(OSError):
            raw.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        if self.transport.latency:
            time.sleep(self.transport.latency)  # the TCP and TLS round trips
        try:
            tls = self.transport.tls_context.wrap_socket(raw, server_side=True)
        except (OSError, ssl.SSLError):
            with contextlib.suppress(OSError):
                raw.close()
            return
        tls.settimeout(IDLE_SECONDS)
        self.transport.connections.add(tls)
        try:
            _RequestHandler(tls, client_address, self)
        except OSError:
            pass
        finally:
            self.transport.connections.discard(tls)
            with contextlib.suppress(OSError):
                tls.close()

    def shutdown_request(self, request: Any) -> None:
        # finish_request closed the TLS socket; the raw one is closed with it.
        with contextlib.suppress(OSError):
            request.close()

    def handle_error(self, request: Any, client_address: Any) -> None:
        pass  # a client that hung up mid-request is not news


class _RequestHandler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server_version = "kubesim"
    sys_version = ""
    server: _HttpServer

    def log_message(self, format: str, *args: Any) -> None:
        if self.server.transport.verbose:
            super().log_message(format, *args)

    def _dispatch(self) -> None:
        url = urllib.parse.urlsplit(self.path)
        length = int(self.headers.get("Content-Length") or 0)
        body = self.rfile.read(length) if length else b""
        if self.headers.get("Transfer-Encoding", "").lower() == "chunked":
            body = self._read_chunked()
        request = Request(
            self.command, urllib.parse.unquote(url.path),
            urllib.parse.parse_qs(url.query, keep_blank_values=True), self.headers, body,
        )
        one_way = self.server.transport.latency / 2
        if one_way:
            time.sleep(one_way)  # the request on its way to the server
        reply = self.server.transport.handler(request)
        if isinstance(reply, Stream):
            if one_way:
                reply = _delayed(reply, one_way)
            self._stream(reply)
        elif isinstance(reply, Upgrade):
            self._upgrade(reply)
        else:
            if one_way:
                time.sleep(one_way)  # the answer on its way back
            self._reply(reply)

    def _read_chunked(self) -> bytes:
        out = bytearray()
        while True:
            size = int(self.rfile.readline().split(b";", 1)[0].strip() or b"0", 16)
            if size == 0:
                while self.rfile.readline() not in (b"\r\n", b"\n", b""):
                    pass
                return bytes(out)
            out += self.rfile.read(size)
            self.rfile.readline()

    do_GET = do_POST = do_PUT = do_PATCH = do_DELETE = _dispatch

    def do_HEAD(self) -> None:
        self._reply(Reply(405, b""))

    def _reply(self, reply: Reply) -> None:
        self.send_response(reply.code)
        self.send_header("Content-Type", reply.content_type)
        for name, value in reply.headers.items():
            self.send_header(name, value)
        self.send_header("Content-Length", str(len(reply.body)))
        self.end_headers()
        self.wfile.write(reply.body)
        if reply.after is not None:
            reply.after()

    def _upgrade(self, upgrade: Upgrade) -> None:
        self.send_response(101)
        for name, value in upgrade.headers.items():
            self.send_header(name, value)
        self.end_headers()
        self.close_connection = True
        with contextlib.suppress(OSError):
            upgrade.serve(self.connection)

    def _stream(self, stream: Stream) -> None:
        self.send_response(stream.code)
        self.send_header("Content-Type", stream.content_type)
        for name, value in stream.headers.items():
            self.send_header(name, value)
        self.send_header("Transfer-Encoding", "chunked")
        self.end_headers()
        sock: socket.socket = self.connection
        try:
            for chunk in stream.chunks:
                if not chunk:
                    if _client_gone(sock):
                        self.close_connection = True
                        return
                    continue
                self.wfile.write(b"%x\r\n%s\r\n" % (len(chunk), chunk))
            self.wfile.write(b"0\r\n\r\n")
        except StreamDropped:
            self.close_connection = True
            _cut(sock)
        except OSError:
            self.close_connection = True
        finally:
            close = getattr(stream.chunks, "close", None)
            if close is not None:
                with contextlib.suppress(Exception):
                    close()
            if stream.on_close is not None:
                stream.on_close()


_END_OF_STREAM = object()


def _delayed(stream: Stream, delay: float) -> Stream:
    """`stream` with every chunk (the headers' first) leaving `delay` seconds after it was
    produced. A thread pulls the original chunks as fast as they come and stamps them; the
    connection's thread writes each at its time. A StreamDropped travels the same line."""
    line: queue.Queue[tuple[float, object]] = queue.Queue()
    stopped = threading.Event()

    def pull() -> None:
        try:
            for chunk in stream.chunks:
                line.put((time.monotonic() + delay, chunk))
                if stopped.is_set():
                    break
            line.put((time.monotonic() + delay, _END_OF_STREAM))
        except BaseException as exc:  # StreamDropped, or a bug: delivered in order
            line.put((time.monotonic() + delay, exc))
        finally:
            close = getattr(stream.chunks, "close", None)
            if close is not None:
                with contextlib.suppress(Exception):
                    close()

    def chunks() -> Iterator[bytes]:
        try:
            while True:
                try:
                    due, item = line.get(timeout=1.0)
                except queue.Empty:
                    yield b""  # a heartbeat: the client may have gone meanwhile
                    continue
                pause = due - time.monotonic()
                if pause > 0:
                    time.sleep(pause)
                if item is _END_OF_STREAM:
                    return
                if isinstance(item, BaseException):
                    raise item
                assert isinstance(item, bytes)
                yield item
        finally:
            stopped.set()

    threading.Thread(target=pull, name="kubesim-delay-line", daemon=True).start()
    time.sleep(delay)  # the headers, too, are an answer on its way back
    return Stream(stream.code, chunks(), stream.content_type, stream.headers, stream.on_close)


class Transport:
    """Listens on 127.0.0.1:port with TLS and hands each request to `handler`; `latency`
    (seconds) is the round trip of a remote server (the module's docstring)."""

    def __init__(self, handler: Handler, tls_context: ssl.SSLContext, port: int = 0,
                 host: str = "127.0.0.1", verbose: bool = False, latency: float = 0.0):
        self.latency = latency
        self.handler = handler
        self.tls_context = tls_context
        self.host = host
        self.port = port
        self.verbose = verbose
        self.connections = _Connections()
        self._server: _HttpServer | None = None
        self._thread: threading.Thread | None = None
        self._lock = threading.Lock()

    @property
    def url(self) -> str:
        return f"https://{self.host}:{self.port}"

    @property
    def listening(self) -> bool:
        return self._server is not None

    def start(self) -> None:
        """Listen (on the same port as before, after a stop) and serve on a thread."""
        with self._lock:
            if self._server is not None:
                return
            server = _HttpServer((self.host, self.port), self)
            self.port = server.server_address[1]
            self._server = server
            self._thread = threading.Thread(target=server.serve_forever, kwargs={
                "poll_interval": 0.05}, name="kubesim-http", daemon=True)
            self._thread.start()

    def stop(self) -> int:
        """Stop listening (new connections are refused) and cut every open connection;
        returns how many were cut. Idempotent."""
        with self._lock:
            server, thread = self._server, self._thread
            self._server = self._thread = None
        if server is not None:
            server.shutdown()
            server.server_close()
        if thread is not None:
            thread.join(5)
        return self.connections.cut_all()
