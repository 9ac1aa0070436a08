"""What `kubectl squarepeg ps` shows: the user's runs, from the listed Pods and Jobs, in
docker's words. Pure: dicts in, rows and text out; no I/O.

Owns how a listing becomes runs (a Job and the pod it made are one run, shown by the Job's
name with its pod's state; a bare Pod is one run), what a run's STATUS says (docker's
`Up 3 minutes`, `Exited (3) 2 minutes ago`, plus `Pending: ErrImagePull` and `Terminating`,
which docker has no word for), docker's human durations, the table and `--format json`,
`--filter` applied (plan/psfilter.py), and with `--all-namespaces` a NAMESPACE column
first, as kubectl's `-A`; a PORTS column, docker's, when a listed run recorded `-d -p`
ports (plan/ports.py `recorded`).

The exit code shown is podstate's reading, the one `run` and `wait` report, so the three
never disagree.
"""

from __future__ import annotations

import json
import shlex
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import asdict, dataclass, field
from datetime import datetime
from typing import Any, Literal

from kubectl_squarepeg.cluster import listed, podstate
from kubectl_squarepeg.cluster.listed import kind_of, meta
from kubectl_squarepeg.plan.labels import CREATED_BY_LABEL, DETACHED_LABEL, PORTS_ANNOTATION
from kubectl_squarepeg.plan.ports import parse_recorded
from kubectl_squarepeg.plan.psfilter import Filters

State = Literal["running", "pending", "exited", "terminating"]
# docker truncates COMMAND to 20 characters with an ellipsis (`docker ps --no-trunc` shows it all).
COMMAND_WIDTH = 20
HEADERS = ("NAME", "IMAGE", "COMMAND", "CREATED", "STATUS", "MODE")


@dataclass(frozen=True)
class RunRow:
    """One run as `ps` shows it."""

    name: str
    image: str
    command: str  # the container's command and args, shell-quoted
    created: datetime | None
    state: State
    status: str  # docker's STATUS words, relative to the listing's `now`
    mode: Literal["pod", "job"]
    exit_code: int | None
    detached: bool
    pod: str | None  # the pod that runs it (a Job's, once it has one)
    namespace: str = ""
    ports: str = ""  # docker's PORTS words for what `run -d -p` recorded
    labels: Mapping[str, str] = field(default_factory=dict, compare=False)

    @property
    def active(self) -> bool:
        """What `ps` without -a shows: running, pending, or on its way out."""
        return self.state != "exited"


def human_duration(seconds: float) -> str:
    """docker's HumanDuration (go-units): `Less than a second`, `45 seconds`, `About a minute`,
    `3 minutes`, `About an hour`, `5 hours`, `2 days`, `3 weeks`, `4 months`, `2 years`."""
    s = int(seconds)
    if s < 1:
        return "Less than a second"
    if s == 1:
        return "1 second"
    if s < 60:
        return f"{s} seconds"
    minutes = s // 60
    if minutes == 1:
        return "About a minute"
    if minutes < 60:
        return f"{minutes} minutes"
    hours = round(s / 3600)
    if hours == 1:
        return "About an hour"
    if hours < 48:
        return f"{hours} hours"
    if hours < 24 * 7 * 2:
        return f"{hours // 24} days"
    if hours < 24 * 30 * 2:
        return f"{hours // 24 // 7} weeks"
    if hours < 24 * 365 * 2:
        return f"{hours // 24 // 30} months"
    return f"{hours // 24 // 365} years"


def _labels(obj: Mapping[str, Any]) -> Mapping[str, Any]:
    labels = meta(obj).get("labels")
    return labels if isinstance(labels, Mapping) else {}


def _main_container(pod_spec: Mapping[str, Any]) -> Mapping[str, Any]:
    for container in pod_spec.get("containers") or ():
        if isinstance(container, Mapping) and container.get("name") == podstate.MAIN:
            return container
    return {}


def _pod_spec(item: Mapping[str, Any]) -> Mapping[str, Any]:
    spec = item.get("spec") or {}
    if kind_of(item) == "Job":
        spec = (spec.get("template") or {}).get("spec") or {}
    return spec if isinstance(spec, Mapping) else {}


def command_of(item: Mapping[str, Any]) -> str:
    """The main container's command and args as one shell-quoted line ("" when the image's)."""
    main = _main_container(_pod_spec(item))
    words = [str(w) for w in (*(main.get("command") or ()), *(main.get("args") or ()))]
    return shlex.join(words)


def truncated(text: str, width: int = COMMAND_WIDTH) -> str:
    return text if len(text) <= width else text[: width - 1] + "…"


def pod_status(pod: Mapping[str, Any] | None, now: datetime) -> tuple[State, str, int | None]:
    """(state, STATUS words, exit code) of a run's pod; None: a Job's pod not made yet."""
    if pod is None:
        return "pending", "Pending", None
    if podstate.is_deleting(pod):
        return "terminating", "Terminating", None
    if podstate.has_finished(pod):
        result = podstate.outcome(pod)
        ended = podstate.finished_at(pod)
        ago = f" {human_duration((now - ended).total_seconds())} ago" if ended else ""
        if not result.from_container and not result.start_failure:
            why = str((pod.get("status") or {}).get("reason") or "Lost")
            return "exited", f"Failed ({why}){ago}", result.exit_code
        return "exited", f"Exited ({result.exit_code}){ago}", result.exit_code
    state = (podstate.container_status(pod) or {}).get("state") or {}
    running = state.get("running")
    if isinstance(running, Mapping):
        since = podstate.parse_time(running.get("startedAt"))
        up = human_duration((now - since).total_seconds()) if since else "Less than a second"
        return "running", f"Up {up}", None
    waiting = state.get("waiting") or {}
    reason: str | None = None
    if isinstance(waiting, Mapping) and waiting.get("reason"):
        reason = str(waiting["reason"])
    else:
        reason = podstate.blocked_reason(pod)
    return "pending", f"Pending: {reason}" if reason else "Pending", None


def _newest(pods: Sequence[Mapping[str, Any]]) -> Mapping[str, Any] | None:
    if not pods:
        return None
    return max(pods, key=lambda p: str(meta(p).get("creationTimestamp") or ""))


@dataclass(frozen=True)
class Found:
    """A run found in a listing: its top object (the Pod or the Job) and its pod."""

    kind: Literal["Pod", "Job"]
    obj: Mapping[str, Any]
    pod: Mapping[str, Any] | None

    @property
    def name(self) -> str:
        return str(meta(self.obj).get("name", ""))

    @property
    def created_by(self) -> str | None:
        value = _labels(self.obj).get(CREATED_BY_LABEL)
        return str(value) if value is not None else None


def runs_in(items: Iterable[Mapping[str, Any]]) -> list[Found]:
    """The runs among listed Pods and Jobs: every Job with its newest pod, every bare Pod
    (a pod with an owner is its Job's), in listing order, Jobs first."""
    runs = listed.grouped(items)
    found = [Found("Job", job, _newest(runs.pods_of(job))) for job in runs.jobs]
    found += [Found("Pod", pod, pod) for pod in runs.bare_pods]
    return found


def row(run: Found, now: datetime) -> RunRow:
    """One run as `ps` shows it, at `now`."""
    state, status, code = pod_status(run.pod, now)
    if run.pod is None and run.kind == "Job":
        condition = podstate.job_finished_condition(run.obj)
        if podstate.is_deleting(run.obj):
            state, status = "terminating", "Terminating"
        elif condition is not None:  # its pod is gone (a TTL, a deleted pod)
            ended = condition[1]
            ago = f" {human_duration((now - ended).total_seconds())} ago" if ended else ""
            state, status = "exited", f"{condition[0]}{ago}"
    main = _main_container(_pod_spec(run.obj))
    return RunRow(
        name=run.name,
        image=str(main.get("image") or ""),
        command=command_of(run.obj),
        created=podstate.created_at(run.obj),
        state=state,
        status=status,
        mode="job" if run.kind == "Job" else "pod",
        exit_code=code,
        detached=DETACHED_LABEL in _labels(run.obj),
        pod=podstate.name(run.pod) if run.pod is not None else None,
        namespace=str(meta(run.obj).get("namespace") or ""),
        ports=ports_words(run.obj),
        labels={str(k): str(v) for k, v in _labels(run.obj).items()},
    )


def ports_words(obj: Mapping[str, Any]) -> str:
    """docker ps's PORTS (`127.0.0.1:8080->80/tcp`) for the ports `run -d -p` recorded;
    a free HOST_PORT, chosen by each `port`, shows as `127.0.0.1:0`."""
    annotations = meta(obj).get("annotations") or {}
    text = annotations.get(PORTS_ANNOTATION) if isinstance(annotations, Mapping) else None
    if not isinstance(text, str):
        return ""
    return ", ".join(p.shown().replace(" -> ", "->") for p in parse_recorded(text))


def rows(
    items: Iterable[Mapping[str, Any]],
    now: datetime,
    *,
    all_runs: bool,
    filters: Filters | None = None,
) -> list[RunRow]:
    """The rows `ps` prints, newest first as docker lists them; only active ones unless
    `all_runs` (-a) or a status filter; only those `filters` match."""
    listed = [row(run, now) for run in runs_in(items)]
    listed.sort(key=lambda r: r.created.timestamp() if r.created else 0.0, reverse=True)
    every = all_runs or (filters is not None and filters.by_status)
    return [
        r
        for r in listed
        if (every or r.active) and (filters is None or filters.matches(r.name, r.state, r.labels))
    ]


def _created_words(r: RunRow, now: datetime) -> str:
    if r.created is None:
        return ""
    return f"{human_duration((now - r.created).total_seconds())} ago"


def table(listed: Sequence[RunRow], now: datetime, *, all_namespaces: bool = False) -> str:
    """docker's table: the headers, then one line per run, columns padded to fit (three
    spaces between them, as docker's tabwriter leaves). NAMESPACE first with -A; PORTS
    after STATUS when a run has recorded ports."""
    with_ports = any(r.ports for r in listed)
    headers = (("NAMESPACE",) if all_namespaces else ()) + HEADERS[:5] + (
        ("PORTS",) if with_ports else ()) + HEADERS[5:]
    cells = [headers] + [
        (
            *((r.namespace,) if all_namespaces else ()),
            r.name, r.image, f'"{truncated(r.command)}"', _created_words(r, now), r.status,
            *((r.ports,) if with_ports else ()),
            r.mode,
        )
        for r in listed
    ]
    widths = [max(len(line[i]) for line in cells) for i in range(len(headers))]
    lines = [
        "   ".join(cell.ljust(width) for cell, width in zip(line, widths, strict=True)).rstrip()
        for line in cells
    ]
    return "\n".join(lines) + "\n"


def names(listed: Sequence[RunRow]) -> str:
    """`ps -q`: one name a line (docker prints IDs; a run's name is its ID here)."""
    return "".join(f"{r.name}\n" for r in listed)


def json_lines(listed: Sequence[RunRow], now: datetime) -> str:
    """`ps --format json`: one JSON object a line, as docker prints it, with docker's keys
    where one applies."""
    out = []
    for r in listed:
        fields = asdict(r)
        out.append(
            json.dumps(
                {
                    "Names": r.name,
                    "Image": r.image,
                    "Command": r.command,
                    "CreatedAt": r.created.isoformat() if r.created else None,
                    "RunningFor": _created_words(r, now),
                    "State": r.state,
                    "Status": r.status,
                    "Mode": r.mode,
                    "ExitCode": fields["exit_code"],
                    "Detached": r.detached,
                    "Pod": r.pod,
                    "Namespace": r.namespace,
                    "Ports": r.ports,
                    "Labels": ",".join(f"{k}={v}" for k, v in sorted(r.labels.items())),
                },
                ensure_ascii=False,
            )
        )
    return "".join(line + "\n" for line in out)
