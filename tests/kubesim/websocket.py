"""WebSocket (RFC 6455), the server's side: the opening handshake and the framing.

Owns the bytes of a WebSocket connection and nothing about Kubernetes: the
`Sec-WebSocket-Accept` of a key, picking a subprotocol from the client's offer, decoding
the client's frames (masked, possibly fragmented, with ping and close control frames
interleaved) and encoding the server's (unmasked). `FrameReader` is fed raw bytes and
yields whole messages, so the connection loop (attach.py) decides when to read the socket;
`encode` makes one frame. Extensions (permessage-deflate) are never negotiated.
"""

from __future__ import annotations

import base64
import hashlib
import struct
from collections.abc import Iterable
from typing import NamedTuple

GUID = "258EAFA5-E914-47DA-95CA-C5AB0DC85B11"

CONTINUATION = 0x0
TEXT = 0x1
BINARY = 0x2
CLOSE = 0x8
PING = 0x9
PONG = 0xA

NORMAL_CLOSURE = 1000
PROTOCOL_ERROR = 1002
MESSAGE_TOO_BIG = 1009

# A message larger than this is refused (close 1009): kubectl sends at most 32 KiB a frame.
MAX_MESSAGE = 16 << 20


class ProtocolError(Exception):
    """The client broke RFC 6455; `code` is the close code to answer with."""

    def __init__(self, message: str, code: int = PROTOCOL_ERROR):
        super().__init__(message)
        self.code = code


class Message(NamedTuple):
    opcode: int  # TEXT, BINARY, CLOSE, PING or PONG
    payload: bytes


def accept_key(key: str) -> str:
    """The `Sec-WebSocket-Accept` answer to a client's `Sec-WebSocket-Key`."""
    digest = hashlib.sha1((key.strip() + GUID).encode("ascii")).digest()
    return base64.b64encode(digest).decode("ascii")


def offered_protocols(header_values: Iterable[str]) -> list[str]:
    """The subprotocols of every `Sec-WebSocket-Protocol` header, in the client's order."""
    return [p.strip() for value in header_values for p in value.split(",") if p.strip()]


def choose_protocol(offered: list[str], supported: tuple[str, ...]) -> str | None:
    """The first protocol of the client's offer that the server speaks (the client's
    preference wins, as in the apiserver's wsstream)."""
    return next((p for p in offered if p in supported), None)


def is_upgrade(connection: str, upgrade: str) -> bool:
    """Whether a request's `Connection` and `Upgrade` headers ask for a WebSocket."""
    tokens = {t.strip().lower() for t in connection.split(",")}
    return "upgrade" in tokens and upgrade.strip().lower() == "websocket"


def encode(opcode: int, payload: bytes = b"") -> bytes:
    """One final, unmasked frame (servers never mask)."""
    length = len(payload)
    head = bytes([0x80 | opcode])
    if length < 126:
        head += bytes([length])
    elif length < 1 << 16:
        head += bytes([126]) + struct.pack("!H", length)
    else:
        head += bytes([127]) + struct.pack("!Q", length)
    return head + payload


def close_payload(code: int, reason: str = "") -> bytes:
    return struct.pack("!H", code) + reason.encode("utf-8")[:120]


def _unmask(data: bytes, mask: bytes) -> bytes:
    if not data:
        return b""
    # XOR as one big integer: much faster in CPython than a byte-by-byte loop.
    repeated = (mask * (len(data) // 4 + 1))[: len(data)]
    value = int.from_bytes(data, "big") ^ int.from_bytes(repeated, "big")
    return value.to_bytes(len(data), "big")


class FrameReader:
    """Turns the client's bytes into messages (see the module docstring)."""

    def __init__(self) -> None:
        self._buffer = bytearray()
        self._fragments: list[bytes] = []
        self._fragment_opcode: int | None = None
        self._fragment_size = 0

    def feed(self, data: bytes) -> list[Message]:
        self._buffer += data
        messages: list[Message] = []
        while True:
            frame = self._next_frame()
            if frame is None:
                return messages
            message = self._assemble(*frame)
            if message is not None:
                messages.append(message)

    def _next_frame(self) -> tuple[bool, int, bytes] | None:
        buf = self._buffer
        if len(buf) < 2:
            return None
        first, second = buf[0], buf[1]
        if first & 0x70:
            raise ProtocolError("reserved bits set without a negotiated extension")
        if not second & 0x80:
            raise ProtocolError("client frames must be masked")
        length = second & 0x7F
        offset = 2
        if length == 126:
            if len(buf) < 4:
                return None
            length = struct.unpack_from("!H", buf, 2)[0]
            offset = 4
        elif length == 127:
            if len(buf) < 10:
                return None
            length = struct.unpack_from("!Q", buf, 2)[0]
            offset = 10
        if length > MAX_MESSAGE:
            raise ProtocolError("message too big", MESSAGE_TOO_BIG)
        if len(buf) < offset + 4 + length:
            return None
        mask = bytes(buf[offset : offset + 4])
        payload = _unmask(bytes(buf[offset + 4 : offset + 4 + length]), mask)
        del buf[: offset + 4 + length]
        return bool(first & 0x80), first & 0x0F, payload

    def _assemble(self, fin: bool, opcode: int, payload: bytes) -> Message | None:
        if opcode in (CLOSE, PING, PONG):
            if not fin or len(payload) > 125:
                raise ProtocolError("control frames are final and at most 125 bytes")
            return Message(opcode, payload)
        if opcode == CONTINUATION:
            if self._fragment_opcode is None:
                raise ProtocolError("continuation frame without a message to continue")
        elif opcode in (TEXT, BINARY):
            if self._fragment_opcode is not None:
                raise ProtocolError("new message before the previous one ended")
            if fin:
                return Message(opcode, payload)
            self._fragment_opcode = opcode
        else:
            raise ProtocolError(f"unknown opcode {opcode}")
        self._fragments.append(payload)
        self._fragment_size += len(payload)
        if self._fragment_size > MAX_MESSAGE:
            raise ProtocolError("message too big", MESSAGE_TOO_BIG)
        if not fin:
            return None
        whole = Message(self._fragment_opcode, b"".join(self._fragments))
        self._fragments, self._fragment_opcode, self._fragment_size = [], None, 0
        return whole
