"""RFC 6455 framing of websocket.py, byte for byte (pure: no sockets)."""

from __future__ import annotations

import os
import struct

import pytest

from tests.kubesim import websocket


def masked(opcode: int, payload: bytes, *, fin: bool = True) -> bytes:
    """A frame as a client sends it."""
    mask = os.urandom(4)
    length = len(payload)
    if length < 126:
        head = bytes([(0x80 if fin else 0) | opcode, 0x80 | length])
    elif length < 1 << 16:
        head = bytes([(0x80 if fin else 0) | opcode, 0x80 | 126]) + struct.pack("!H", length)
    else:
        head = bytes([(0x80 if fin else 0) | opcode, 0x80 | 127]) + struct.pack("!Q", length)
    body = bytes(b ^ mask[i % 4] for i, b in enumerate(payload))
    return head + mask + body


def test_accept_key_of_the_rfc_example() -> None:
    assert websocket.accept_key("dGhlIHNhbXBsZSBub25jZQ==") == "s3pPLMBiTxaQ9kYGzzhZRbK+xOo="


def test_the_clients_preference_wins() -> None:
    offered = websocket.offered_protocols(["v5.channel.k8s.io, v4.channel.k8s.io",
                                           "base64.channel.k8s.io"])
    assert offered == ["v5.channel.k8s.io", "v4.channel.k8s.io", "base64.channel.k8s.io"]
    assert websocket.choose_protocol(offered, ("v4.channel.k8s.io", "v5.channel.k8s.io")) == \
        "v5.channel.k8s.io"
    assert websocket.choose_protocol(["chat"], ("v5.channel.k8s.io",)) is None
    assert websocket.is_upgrade("keep-alive, Upgrade", "WebSocket")
    assert not websocket.is_upgrade("keep-alive", "websocket")


@pytest.mark.parametrize("size", [0, 125, 126, 65535, 65536, 200_000])
def test_lengths_round_trip_in_pieces(size: int) -> None:
    payload = os.urandom(size)
    data = masked(websocket.BINARY, payload)
    reader = websocket.FrameReader()
    got = []
    for start in range(0, len(data), 7001):  # the socket hands over arbitrary pieces
        got += reader.feed(data[start:start + 7001])
    assert got == [websocket.Message(websocket.BINARY, payload)]
    encoded = websocket.encode(websocket.BINARY, payload)
    assert encoded.endswith(payload) and encoded[0] == 0x82


def test_fragments_with_a_ping_between_them() -> None:
    reader = websocket.FrameReader()
    data = (masked(websocket.BINARY, b"\x00hel", fin=False) + masked(websocket.PING, b"p")
            + masked(websocket.CONTINUATION, b"lo"))
    assert reader.feed(data) == [websocket.Message(websocket.PING, b"p"),
                                 websocket.Message(websocket.BINARY, b"\x00hello")]


def test_protocol_errors() -> None:
    with pytest.raises(websocket.ProtocolError):
        websocket.FrameReader().feed(bytes([0x82, 0x01]) + b"x")  # unmasked
    with pytest.raises(websocket.ProtocolError):
        websocket.FrameReader().feed(masked(websocket.CONTINUATION, b"x"))
    with pytest.raises(websocket.ProtocolError):
        websocket.FrameReader().feed(masked(websocket.PING, b"x", fin=False))
    with pytest.raises(websocket.ProtocolError) as big:
        websocket.FrameReader().feed(bytes([0x82, 0xFF]) + struct.pack("!Q", 1 << 40))
    assert big.value.code == websocket.MESSAGE_TOO_BIG
