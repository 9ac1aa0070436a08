"""A small JSON client of the real API server, for the node agent and the launcher.

Owns HTTPS requests with the admin bearer token (one keep-alive connection per thread),
Status errors as `ApiError(code, reason, message)`, and watches as an iterator of
`(type, object)` that ends when the server ends the stream. A connection that fails is
dropped and the error raised as `ApiUnavailable`, so callers retry (the API server may be
restarting); nothing here sleeps or retries on its own.
"""

from __future__ import annotations

import http.client
import json
import socket
import ssl
import threading
import urllib.parse
from collections.abc import Iterator
from typing import Any

Obj = dict[str, Any]
TIMEOUT_SECONDS = 30.0


class ApiError(Exception):
    """The API server answered with an error Status."""

    def __init__(self, code: int, reason: str, message: str):
        super().__init__(f"{code} {reason}: {message}")
        self.code = code
        self.reason = reason
        self.message = message


class ApiUnavailable(Exception):
    """The API server could not be reached or the connection broke."""


class ApiClient:
    def __init__(self, host: str, port: int, token: str, ca_file: str):
        self.host = host
        self.port = port
        self._token = token
        self._context = ssl.create_default_context(cafile=ca_file)
        self._local = threading.local()

    def _connect(self, timeout: float | None) -> http.client.HTTPSConnection:
        return http.client.HTTPSConnection(self.host, self.port, context=self._context,
                                           timeout=timeout)

    def _connection(self) -> http.client.HTTPSConnection:
        conn: http.client.HTTPSConnection | None = getattr(self._local, "conn", None)
        if conn is None:
            conn = self._connect(TIMEOUT_SECONDS)
            self._local.conn = conn
        return conn

    def _drop(self) -> None:
        conn = getattr(self._local, "conn", None)
        self._local.conn = None
        if conn is not None:
            conn.close()

    def _headers(self, body: bytes | None, content_type: str) -> dict[str, str]:
        headers = {"Authorization": f"Bearer {self._token}", "Accept": "application/json",
                   "User-Agent": "localkube-node-agent"}
        if body is not None:
            headers["Content-Type"] = content_type
        return headers

    def request(self, method: str, path: str, body: Any = None, *,
                params: dict[str, str] | None = None,
                content_type: str = "application/json") -> Obj:
        """One request; the decoded JSON answer, or ApiError / ApiUnavailable."""
        url = path + ("?" + urllib.parse.urlencode(params) if params else "")
        data = None if body is None else json.dumps(body).encode()
        for attempt in (1, 2):  # a kept-alive connection the server closed: once more
            conn = self._connection()
            try:
                conn.request(method, url, body=data, headers=self._headers(data, content_type))
                response = conn.getresponse()
                payload = response.read()
                break
            except (OSError, http.client.HTTPException) as exc:
                self._drop()
                if attempt == 2 or isinstance(exc, (ConnectionRefusedError, socket.timeout)):
                    raise ApiUnavailable(f"{method} {path}: {exc}") from None
        try:
            answer: Obj = json.loads(payload) if payload else {}
        except ValueError:  # /readyz and friends answer text
            answer = {"text": payload.decode(errors="replace")}
        if response.status >= 400:
            raise ApiError(response.status, str(answer.get("reason", "")),
                           str(answer.get("message", payload[:200])))
        return answer

    def watch(self, path: str, params: dict[str, str]) -> Iterator[tuple[str, Obj]]:
        """`GET path?watch=true&...` on a connection of its own; yields events until the
        server ends the stream (then returns) or the connection breaks (ApiUnavailable)."""
        query = urllib.parse.urlencode({**params, "watch": "true"})
        conn = self._connect(None)
        try:
            try:
                conn.request("GET", f"{path}?{query}", headers=self._headers(None, ""))
                response = conn.getresponse()
            except (OSError, http.client.HTTPException) as exc:
                raise ApiUnavailable(f"watch {path}: {exc}") from None
            if response.status >= 400:
                payload = response.read()
                answer = json.loads(payload) if payload else {}
                raise ApiError(response.status, str(answer.get("reason", "")),
                               str(answer.get("message", "")))
            while True:
                try:
                    line = response.readline()
                except (OSError, http.client.HTTPException) as exc:
                    raise ApiUnavailable(f"watch {path}: {exc}") from None
                if not line:
                    return
                if line.strip():
                    event = json.loads(line)
                    yield str(event.get("type", "")), event.get("object") or {}
        finally:
            conn.close()
