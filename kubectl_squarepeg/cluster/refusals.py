"""What a failed kubectl command means to the user: the interpretation of its complaint.

Owns telling a create that never reached the API server (`refused_before_sending`: safe to
repeat) from one it refused, a command that got no answer at all (`unreachable`), and the
message and hint of a refused create (`rejection`: admission, RBAC, a name taken, a missing
namespace...; an admission refusal's kind and fix are admission.py's), and a name whose
earlier owner is still terminating, for how long at most (`terminating_refusal`).
complaints.py reads kubectl's words; this module turns a failed `kubectl.Result` into
squarepeg's `ClusterError`. No process is started.
"""

from __future__ import annotations

import json
import math
import re
import time
from typing import TYPE_CHECKING

from kubectl_squarepeg.cluster import admission, complaints, podstate
from kubectl_squarepeg.cluster.commands import Commands
from kubectl_squarepeg.errors import ClusterError

if TYPE_CHECKING:
    from kubectl_squarepeg.cluster.kubectl import Result

# A create refused before anything was sent: kubectl could not connect at all (Go's dial
# error; also when fetching the OpenAPI document it validates against). Retried for a while.
_REFUSED = ("connect: connection refused", "was refused - did you specify the right host")


def unreachable(result: Result) -> bool:
    """Whether a failed kubectl command did not get an answer from the API server."""
    return complaints.unreachable(result.stderr.decode("utf-8", "replace"))


def refused_before_sending(result: Result) -> bool:
    """Whether a failed `kubectl create` never reached the API server (safe to repeat)."""
    text = result.stderr.decode("utf-8", "replace")
    if admission.classify(text) is not None:  # a webhook the API server could not reach
        return False
    return any(refused in text for refused in _REFUSED)


_NAMESPACE_MISSING = re.compile(r'namespaces? "([^"]+)" not found')


def rejection(
    result: Result,
    kind: str,
    name: str,
    commands: Commands,
    *,
    dry_run_server: bool = False,
) -> ClusterError:
    """A failed `kubectl create` as the user should see it: kubectl's reason and what to do.

    Every command a hint names carries the run's kubeconfig, context and namespace."""
    reason = result.error_text
    lowered = reason.lower()
    ref = f"{kind.lower()}/{name}"
    namespace = commands.namespace
    plural = kind.lower() + "s"
    missing = _NAMESPACE_MISSING.search(reason)
    if missing is not None:
        return ClusterError(
            f"namespace {missing.group(1)} does not exist (creating {ref})",
            f"create it with `{_create_namespace(commands, missing.group(1))}`, "
            "or choose another with -n",
        )
    refused = admission.classify(reason, describe=lambda kind: commands.kubectl("describe", kind))
    if refused is not None:
        hint = refused.fix
        if refused.fixable and not dry_run_server:
            hint += " (`--dry-run-server` checks a change without creating anything)"
    elif "forbidden" in lowered:
        hint = (
            f"you lack permission: `{commands.kubectl('auth', 'can-i', 'create', plural)}` "
            "checks, and a cluster admin can grant it"
        )
    elif "alreadyexists" in lowered or "already exists" in lowered:
        hint = f"choose another --name, or delete the old one: `{commands.delete(kind, name)}`"
    elif "invalid" in lowered or "unknown field" in lowered:
        hint = "fix the field named above in the flags or config; `--dry-run` shows the manifest"
    elif "unauthorized" in lowered or "must be logged in" in lowered:
        whoami = commands.kubectl("auth", "whoami", namespaced=False)
        hint = f"log in to the cluster again; `{whoami}` shows who you are"
    elif complaints.credential_plugin_failed(reason):
        whoami = commands.kubectl("auth", "whoami", namespaced=False)
        hint = f"the kubeconfig's credential plugin failed, as said above; `{whoami}` runs it again"
    elif complaints.unreachable(reason):
        hint = commands.reachability_hint()
    else:
        hint = "`kubectl squarepeg run --dry-run ...` prints the manifest that was sent"
    return ClusterError(f"cannot create {ref} in namespace {namespace}: {reason}", hint)


# The API server's word for a create whose name belongs to an object being deleted
# (`AlreadyExists: object is being deleted: pods "x" already exists`).
BEING_DELETED = "object is being deleted"
# How long after its deletionTimestamp a pod may still be listed: the kubelet confirms the
# deletion once the container is stopped (0.17 s measured on the real node for a finished
# pod; a second or two more at the end of a grace period).
CONFIRM_SLACK_SECONDS = 5


def terminating_refusal(
    kind: str, name: str, commands: Commands, found: Result, now: float | None = None
) -> ClusterError:
    """A create refused because the name's earlier owner is still terminating: not a name
    to delete (it is being deleted), but one to wait for, and for how long at most: its
    `deletionTimestamp` is when its grace period ends and the kubelet kills what is left."""
    ref = f"{kind.lower()}/{name}"
    where = f"in namespace {commands.namespace}"
    deadline = None
    if found.ok:
        try:
            deadline = podstate.deletion_deadline(json.loads(found.stdout))
        except ValueError:
            deadline = None
    if deadline is None:
        return ClusterError(
            f"cannot create {ref} {where}: an earlier {ref} was still terminating",
            "it is gone now, or within its grace period (--stop-timeout, 30 s by default): "
            "run again, or choose another --name",
        )
    left = max(0, math.ceil(deadline.timestamp() - (time.time() if now is None else now)))
    timeout = f"--timeout={left + CONFIRM_SLACK_SECONDS}s"
    wait = commands.kubectl("wait", "--for=delete", ref, timeout)
    return ClusterError(
        f"cannot create {ref} {where}: an earlier {ref} is still terminating; its grace "
        f"period ends in {left}s at most ({deadline:%H:%M:%S} UTC), when it is killed if "
        "it has not exited",
        f"wait for it with `{wait}` and run again, or choose another --name",
    )


def _create_namespace(commands: Commands, namespace: str) -> str:
    return commands.kubectl("create", "namespace", namespace, namespaced=False)
