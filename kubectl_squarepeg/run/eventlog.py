"""What the run's pod says, as `--events` lines (docs/events.md): each phase once.

Owns `PodPhases`, which the pod watch hands every pod it reports (run/watch.py `PodWatch`'s
`observe`): `scheduled` when the pod has a node, `running` when `main` has started (after
the image's `pulling`/`pulled`, read from the pod's events at that moment: the one request
--events adds to a run, and only with --events), each once, whichever wait sees it; and the
pure readings behind them: the pull's seconds from the kubelet's `Pulled` message
(`pull_facts`), the reason of an end (`exit_reason`: Completed, Error, OOMKilled,
DeadlineExceeded, Evicted, Deleted, StartError).

With the null sink (no --events) `observe` returns at once: a run without the flag pays
for nothing here.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from kubectl_squarepeg.cluster import podstate
from kubectl_squarepeg.errors import DEADLINE_EXCEEDED
from kubectl_squarepeg.terminal.eventstream import EventSink

# The kubelet's `Successfully pulled image "x" in 1.234s (1.234s including waiting)`; Go
# durations as time.Duration prints them (`1m2.5s`, `850ms`, `2s`).
_PULLED_IN = re.compile(r"pulled image \S+ in ([\d.hmsuµn]+)")
_GO_PART = re.compile(r"([\d.]+)(h|ms|m|µs|us|ns|s)")
_UNIT_SECONDS = {"h": 3600.0, "m": 60.0, "s": 1.0, "ms": 1e-3, "us": 1e-6, "µs": 1e-6,
                 "ns": 1e-9}
_QUOTED_IMAGE = re.compile(r'image "([^"]+)"')


def go_duration_seconds(text: str) -> float | None:
    """`1m2.5s` -> 62.5; None when `text` is not a Go duration."""
    parts = _GO_PART.findall(text)
    if not parts or "".join(number + unit for number, unit in parts) != text:
        return None
    return round(sum(float(number) * _UNIT_SECONDS[unit] for number, unit in parts), 3)


def pull_facts(events: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """The pulls a pod's events tell of, in order: `pulling` (image) for each pull begun,
    `pulled` (image, seconds, cached) for each that ended well; an image already on the
    node is `pulled` with `cached` and 0 seconds, never `pulling`."""
    facts: list[dict[str, Any]] = []
    for item in events:
        reason = item.get("reason")
        message = " ".join(str(item.get("message") or "").split())
        quoted = _QUOTED_IMAGE.search(message)
        image = quoted.group(1) if quoted else None
        if reason == "Pulling":
            facts.append({"event": "pulling", "image": image})
        elif reason == "Pulled":
            if "already present" in message:
                facts.append({"event": "pulled", "image": image, "seconds": 0.0,
                              "cached": True})
                continue
            took = _PULLED_IN.search(message)
            seconds = go_duration_seconds(took.group(1)) if took else None
            facts.append({"event": "pulled", "image": image, "seconds": seconds,
                          "cached": False})
    return facts


def exit_reason(pod: Mapping[str, Any] | None, outcome: podstate.Outcome) -> str:
    """Why the run's container ended, in the cluster's words where it has them."""
    status = (pod or {}).get("status") or {}
    if outcome.pod_deleted:
        return "Deleted"
    if status.get("reason") == "Evicted":
        return "Evicted"
    if status.get("reason") == podstate.DEADLINE_REASON or (
        not outcome.from_container and outcome.exit_code == DEADLINE_EXCEEDED
    ):
        return "DeadlineExceeded"
    if outcome.start_failure:
        return "StartError"
    terminated = ((podstate.container_status(pod or {}) or {}).get("state") or {}).get(
        "terminated") or {}
    if terminated.get("reason") == "OOMKilled" or (
        outcome.message and "OOMKilled" in outcome.message
    ):
        return "OOMKilled"
    return "Completed" if outcome.exit_code == 0 else "Error"


def exit_code_of_container(pod: Mapping[str, Any] | None) -> int | None:
    """The code `main` itself ended with, as the pod reports it (it may differ from the
    code squarepeg exits with: a deadline's 124, a gap's 125)."""
    status = podstate.container_status(pod or {}) or {}
    code = ((status.get("state") or {}).get("terminated") or {}).get("exitCode")
    return code if isinstance(code, int) else None


class PodPhases:
    """Says `scheduled` and `running` once each, as the watch reports the pod."""

    def __init__(
        self, sink: EventSink, fetch_events: Callable[[str], list[Mapping[str, Any]]]
    ) -> None:
        self._sink = sink
        self._fetch = fetch_events
        self._said: set[str] = set()
        self.latest: Mapping[str, Any] | None = None  # the last pod the watch reported

    def observe(self, pod: Mapping[str, Any]) -> None:
        self.latest = pod
        if not self._sink.active:
            return
        name = podstate.name(pod)
        node = ((pod.get("spec") or {}).get("nodeName")) or None
        if node and "scheduled" not in self._said:
            self._said.add("scheduled")
            self._sink.emit("scheduled", pod=name, node=node)
        if podstate.has_started(pod) and "running" not in self._said:
            self._said.add("running")
            self._pulls(name)
            self._sink.emit("running", pod=name)

    def pulling(self, message: str) -> None:
        """The wait's status line names a pull in progress (the kubelet's 'Pulling image
        "…"'): said as it happens."""
        quoted = _QUOTED_IMAGE.search(message)
        image = quoted.group(1) if quoted else None
        if self._sink.active and image and f"pulling {image}" not in self._said:
            self._said.add(f"pulling {image}")
            self._sink.emit("pulling", image=image)

    def _pulls(self, pod: str) -> None:
        for fact in pull_facts(self._fetch(pod)):
            kind, image = fact.pop("event"), fact["image"]
            if kind == "pulling" and f"pulling {image}" in self._said:
                continue
            self._said.add(f"{kind} {image}")
            self._sink.emit(kind, **fact)
