"""Small helpers shared by the tests: deadline polling instead of sleeps."""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable
from typing import Any, TypeVar

T = TypeVar("T")

POLL_SECONDS = 0.05


def wait_until(condition: Callable[[], T], seconds: float, what: str,
               interval: float = POLL_SECONDS) -> T:
    """Poll `condition` until it returns something true and return that; fail with
    `timed out after Ns waiting for WHAT` once `seconds` have passed."""
    deadline = time.monotonic() + seconds
    pause = threading.Event()
    while True:
        value = condition()
        if value:
            return value
        if time.monotonic() >= deadline:
            raise AssertionError(f"timed out after {seconds}s waiting for {what}")
        pause.wait(interval)


def json_stream(text: str) -> list[Any]:
    """Concatenated JSON documents, as `kubectl get -w -o json` prints them."""
    decoder, i = json.JSONDecoder(), 0
    out: list[Any] = []
    while True:
        while i < len(text) and text[i].isspace():
            i += 1
        if i >= len(text):
            return out
        value, i = decoder.raw_decode(text, i)
        out.append(value)
