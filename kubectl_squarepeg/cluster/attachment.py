"""What a failed `kubectl attach` means to the user of an interactive run (-i, -it): pure.

Owns reading kubectl's complaint and naming the cause and the fix, one line: no permission
(`pods/attach`), a proxy or load balancer that refused the connection upgrade attach needs,
the container already gone; anything else is kubectl's own words. The texts are what
kubectl 1.32 prints for each (recorded against kubesim and its refusals, tests/kubesim/
attach.py): after a WebSocket refusal it falls back to SPDY and prints that second refusal.
The commands a fix names come from commands.py, so they carry the run's cluster and still
work after the cleanup has deleted the pod (its events, never a `describe` of it).
"""

from __future__ import annotations

from kubectl_squarepeg.cluster.commands import Commands
from kubectl_squarepeg.errors import ClusterError

_GONE = (
    "container not found",
    "cannot attach a container in a completed pod",
    "is in container_exited state",
    "not running",
    "notfound",
    "not found",
)
_UPGRADE = (
    "upgrade request required",
    "unable to upgrade connection",
    "bad handshake",
    "proxy",
    "upgrade",
)


def refusal(kubectl_says: str, pod: str, commands: Commands, *, tty: bool) -> ClusterError:
    """The error of an attach that failed while the container still waited for it."""
    namespace = commands.namespace
    can_i = commands.kubectl("auth", "can-i", "create", "pods/attach")
    events = f"`{commands.events(pod)}` lists the pod's events, also after the cleanup"
    lowered = kubectl_says.lower()
    flag = "-it" if tty else "-i"
    if "forbidden" in lowered:
        cause = "you may not attach to pods (no `create` on `pods/attach`)"
        fix = (
            f"ask a cluster admin for `create` on `pods/attach` in namespace {namespace} "
            f"(`{can_i}` checks), or run without {flag}"
        )
    elif any(word in lowered for word in _GONE):
        cause = "the container was gone before its input could be attached"
        fix = f"check that the command waits for its input; {events}"
    elif any(word in lowered for word in _UPGRADE):
        cause = "the connection upgrade attach needs was refused on the way to the cluster"
        fix = (
            "a proxy or load balancer between you and the API server must pass `Upgrade` "
            f"(WebSocket) requests; or run without {flag}"
        )
    else:
        cause = "kubectl attach failed"
        fix = f"run without {flag}; {events}"
    detail = kubectl_says.strip() or "no message"
    return ClusterError(f"cannot attach to pod {pod}: {cause} ({detail})", fix)
