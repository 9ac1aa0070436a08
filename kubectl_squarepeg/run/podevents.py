"""A blocked pod's events: fetched (`warning_events`), printed once each while the run waits
(`EventReporter`: the Warning events, the scheduler's FailedScheduling and the cluster
autoscaler's scale-up words once per reason), and quoted in a failure's message
(`describe_events`, `events_clause`), which says what `kubectl describe` would list. Also
which image the kubelet is pulling, read from the same events, for the status line.

A clean start fetches no events: they are looked at only once the pod is blocked (an
unschedulable pod at once, one the kubelet is still creating after `CREATING_GRACE_SECONDS`).
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from kubectl_squarepeg.cluster import kubectl, podstate, verbs
from kubectl_squarepeg.terminal.console import Console

# How often a blocked Pending pod's events are fetched again (new ones may have appeared).
EVENTS_INTERVAL_SECONDS = 2.0
# A pod the kubelet is still creating is normally running a moment later: its events are
# looked at only once it has been creating this long (an unschedulable pod's at once), so a
# healthy start pays for no `kubectl get events`.
CREATING_GRACE_SECONDS = 2.0


# The cluster autoscaler's Normal events about a pod that waits for a node (issue 34).
_AUTOSCALER_REASONS = frozenset({"TriggeredScaleUp", "NotTriggerScaleUp"})
_ONCE_PER_REASON = frozenset({"FailedScheduling", *_AUTOSCALER_REASONS})


class EventReporter:
    """Prints a blocked pod's Warning events on stderr, each (reason, message) once; the
    scheduler's FailedScheduling and the autoscaler's scale-up words once per reason."""

    def __init__(
        self,
        console: Console,
        fetch: Callable[[str], list[Mapping[str, Any]]],
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self._console = console
        self.fetch = fetch  # also quoted by a failure's message
        self._clock = clock
        self._seen: set[tuple[str, str]] = set()
        self._next_fetch = 0.0
        self._creating_since: float | None = None
        # 'Pulling image "…"' while the events last fetched say an image is being pulled.
        self.pulling: str | None = None
        self.on_pulling: Callable[[str], None] | None = None  # --events (run/eventlog.py)

    def poll(self, pod: Mapping[str, Any]) -> None:
        """Fetch and print new Warning events if the pod is blocked and it is time to look."""
        reason = podstate.blocked_reason(pod)
        now = self._clock()
        if reason is None:
            self._creating_since = None
            self.pulling = None
            return
        if reason in podstate.PROGRESS_REASONS:
            if self._creating_since is None:
                self._creating_since = now
            if now - self._creating_since < CREATING_GRACE_SECONDS:
                return
        if now < self._next_fetch:
            return
        self._next_fetch = now + EVENTS_INTERVAL_SECONDS
        items = self.fetch(podstate.name(pod))
        self.pulling = image_being_pulled(items)
        if self.pulling is not None and self.on_pulling is not None:
            self.on_pulling(self.pulling)
        for item in items:
            reason = str(item.get("reason") or "")
            if item.get("type") != "Warning" and reason not in _AUTOSCALER_REASONS:
                continue
            message = " ".join(str(item.get("message") or "").split())
            # The scheduler's and the autoscaler's words change as nodes come and go
            # (`were unschedulable`, then `had untolerated taint(s)` for the instant between
            # an uncordon and its taint's removal): the first says why it waits.
            key = (reason, "" if reason in _ONCE_PER_REASON else message)
            if key not in self._seen:
                self._seen.add(key)
                self._console.events.emit(
                    "pod_event", pod=podstate.name(pod), reason=reason, message=message
                )
                self._console.warn(f"pod {podstate.name(pod)}: {reason}: {message}")

    def fail_fast(self, stuck: podstate.Waiting, pod_name: str) -> None:
        """The start is given up on: said as an event before the error that follows."""
        self._console.events.emit(
            "fail_fast", pod=pod_name, container=stuck.container, reason=stuck.reason,
            message=" ".join((stuck.message or "").split()) or None,
        )


def image_being_pulled(events: Sequence[Mapping[str, Any]]) -> str | None:
    """The kubelet's 'Pulling image "…"' message of an image whose pull has not ended: no
    `Pulled` event (pulled or already present) and no failed pull names it yet."""
    pulling = [
        str(item.get("message") or "") for item in events if item.get("reason") == "Pulling"
    ]
    ended = [
        str(item.get("message") or "")
        for item in events
        if item.get("reason") == "Pulled"
        or (item.get("reason") == "Failed" and "pull" in str(item.get("message") or ""))
    ]
    for message in pulling:
        image = message.partition("Pulling image ")[2]
        if image and not any(image in later for later in ended):
            return message
    return None


def warning_events(target: kubectl.Target) -> Callable[[str], list[Mapping[str, Any]]]:
    """The event fetcher for `EventReporter`: best effort, an error is no events."""

    def fetch(pod_name: str) -> list[Mapping[str, Any]]:
        result = verbs.events_for(target, pod_name)
        if not result.ok:
            return []
        try:
            items = json.loads(result.stdout).get("items") or []
        except (ValueError, AttributeError):
            return []
        return [item for item in items if isinstance(item, Mapping)]

    return fetch


# How many events a failure message quotes (the latest ones, each once).
EVENTS_QUOTED = 5


def describe_events(
    items: Sequence[Mapping[str, Any]], limit: int = EVENTS_QUOTED, *, said: str = ""
) -> str:
    """Events as `kubectl describe` lists them, on one line: `Warning Failed: MESSAGE; ...`.

    The Warnings when there are any (they say what went wrong), else the last Normal ones;
    each (type, reason, message) once, in the order they happened, the latest `limit`; an
    event whose message repeats what `said` already says is left out.
    """
    seen: dict[tuple[str, str, str], None] = {}
    for item in items:
        key = (
            str(item.get("type") or "Normal"),
            str(item.get("reason") or ""),
            " ".join(str(item.get("message") or "").split()),
        )
        seen.pop(key, None)
        seen[key] = None
    keys = list(seen)
    warnings = [key for key in keys if key[0] == "Warning"]
    new = [key for key in (warnings or keys) if not _repeats(key[2], said)]
    chosen = new[-limit:]
    return "; ".join(f"{type_} {reason}: {message}" for type_, reason, message in chosen)


def _repeats(message: str, said: str) -> bool:
    return bool(said and message) and (message in said or _core(message) in said)


def _core(message: str) -> str:
    """An event message without the runtime's wrapping (`Error: ...: exec: X: unknown`)."""
    start = message.find("exec: ")
    return message[start:].removesuffix(": unknown") if start >= 0 else message


def events_clause(
    fetch: Callable[[str], list[Mapping[str, Any]]], name: str, *, said: str = ""
) -> str:
    """` (events: ...)` about `name` for a failure message that says `said`, or "" when
    there are none to add."""
    described = describe_events(fetch(name), said=" ".join(said.split()))
    return f" (events: {described})" if described else ""
