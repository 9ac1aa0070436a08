"""`ps --filter KEY=VALUE`: the filters parsed, and whether a run matches them. Pure.

Owns docker's three filters squarepeg has (docs/decisions/0390):

- `name=TEXT`: a regular expression searched in the run's name (docker's `name` filter is
  an unanchored match: `name=web` finds `my-web-1`; `name=^web$` only `web`);
- `status=STATE`: docker's states; a run's own (run/listing.py) map onto them as
  running -> running, pending -> created, exited -> exited, terminating -> removing.
  docker's `restarting`, `paused` and `dead` are accepted and match nothing: a run has no
  such state;
- `label=KEY` or `label=KEY=VALUE`: on the run's Pod or Job labels.

How they combine is docker's (moby's `filters.Args`): several `name` are ORed, several
`status` ORed, several `label` ANDed (moby's `MatchKVList`: every label given must be
there), and different keys ANDed. As docker's, a `status` filter lists finished runs
without `-a` (docker ps --filter status=exited needs no -a).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field

from kubectl_squarepeg.errors import UsageError

KEYS = ("name", "status", "label")
DOCKER_STATES = ("created", "restarting", "running", "removing", "paused", "exited", "dead")
# A run's state (run/listing.py's State) in docker's word.
STATE_AS_DOCKER = {
    "running": "running",
    "pending": "created",
    "exited": "exited",
    "terminating": "removing",
}


@dataclass(frozen=True)
class Filters:
    """The filters given, by key; empty: everything matches."""

    names: tuple[re.Pattern[str], ...] = ()
    states: frozenset[str] = field(default_factory=frozenset)
    labels: tuple[tuple[str, str | None], ...] = ()

    @property
    def by_status(self) -> bool:
        """A status filter lists finished runs too, as docker's does without -a."""
        return bool(self.states)

    def matches(self, name: str, state: str, labels: Mapping[str, str]) -> bool:
        if self.names and not any(pattern.search(name) for pattern in self.names):
            return False
        if self.states and STATE_AS_DOCKER.get(state, state) not in self.states:
            return False
        for key, value in self.labels:
            if key not in labels or (value is not None and labels[key] != value):
                return False
        return True


def _problem(given: str, why: str, fix: str) -> UsageError:
    return UsageError(f"invalid value {given!r} for --filter: {why}", fix)


def parse_filters(given: Sequence[str] | Iterable[str]) -> Filters:
    """Each `--filter KEY=VALUE`, checked; a UsageError names the first bad one."""
    names: list[re.Pattern[str]] = []
    states: set[str] = set()
    labels: list[tuple[str, str | None]] = []
    for text in given:
        key, sep, value = text.partition("=")
        key = key.strip().lower()
        if not sep or key not in KEYS:
            raise _problem(
                text,
                "not KEY=VALUE with a key squarepeg filters on",
                "use name=TEXT, status=STATE or label=KEY[=VALUE]",
            )
        if key == "name":
            try:
                names.append(re.compile(value))
            except re.error as exc:
                raise _problem(text, f"not a regular expression ({exc})",
                               "give a name, or a part of one") from None
        elif key == "status":
            state = value.strip().lower()
            if state not in DOCKER_STATES:
                raise _problem(text, f"{value!r} is not a state",
                               "use one of " + ", ".join(DOCKER_STATES))
            states.add(state)
        else:
            label_key, has_value, label_value = value.partition("=")
            if not label_key:
                raise _problem(text, "no label key", "use label=KEY or label=KEY=VALUE")
            labels.append((label_key, label_value if has_value else None))
    return Filters(tuple(names), frozenset(states), tuple(labels))
