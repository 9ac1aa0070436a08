"""transport.Transport's `latency`: answers, handshakes and stream chunks held as a remote
server's round trip would hold them. Asserted as lower bounds (the hold is a behaviour of
the simulator, not a speed of squarepeg), and a stream still arrives whole and in order."""

from __future__ import annotations

import http.client
import ssl
import time
from collections.abc import Iterator

import pytest

from tests.kubesim import tls
from tests.kubesim.transport import Reply, Request, Stream, StreamDropped, Transport

LATENCY = 0.2


def _handler(req: Request) -> Reply | Stream:
    if req.path == "/stream":
        return Stream(200, iter([b"one\n", b"", b"two\n", b"three\n"]), "text/plain")
    if req.path == "/dropped":
        def dropping() -> Iterator[bytes]:
            yield b"partial\n"
            raise StreamDropped()
        return Stream(200, dropping(), "text/plain")
    return Reply(200, b"pong", "text/plain")


@pytest.fixture
def served() -> Iterator[tuple[Transport, ssl.SSLContext]]:
    material = tls.generate()
    transport = Transport(_handler, material.server_context(), latency=LATENCY)
    transport.start()
    try:
        yield transport, ssl.create_default_context(cadata=material.ca_pem.decode())
    finally:
        transport.stop()


def _connect(served: tuple[Transport, ssl.SSLContext]) -> http.client.HTTPSConnection:
    transport, context = served
    return http.client.HTTPSConnection("127.0.0.1", transport.port, context=context, timeout=10)


def test_a_new_connection_and_each_answer_are_held_the_latency(
        served: tuple[Transport, ssl.SSLContext]) -> None:
    connection = _connect(served)
    try:
        began = time.monotonic()
        connection.request("GET", "/ping")
        assert connection.getresponse().read() == b"pong"
        first = time.monotonic() - began
        began = time.monotonic()
        connection.request("GET", "/ping")  # the same connection: no new handshake
        assert connection.getresponse().read() == b"pong"
        second = time.monotonic() - began
    finally:
        connection.close()
    assert first >= 2 * LATENCY  # the handshake, then the answer
    assert second >= LATENCY


def test_a_stream_arrives_whole_in_order_after_the_latency(
        served: tuple[Transport, ssl.SSLContext]) -> None:
    connection = _connect(served)
    try:
        connection.request("GET", "/stream")
        response = connection.getresponse()
        assert response.status == 200
        assert response.read() == b"one\ntwo\nthree\n"
    finally:
        connection.close()


def test_a_dropped_stream_is_still_cut_after_what_came_before(
        served: tuple[Transport, ssl.SSLContext]) -> None:
    connection = _connect(served)
    try:
        connection.request("GET", "/dropped")
        response = connection.getresponse()
        with pytest.raises(http.client.IncompleteRead) as cut:
            response.read()
        assert cut.value.partial == b"partial\n"
    finally:
        connection.close()


def test_no_latency_is_the_default() -> None:
    material = tls.generate()
    assert Transport(_handler, material.server_context()).latency == 0.0
