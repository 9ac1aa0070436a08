"""Admission refusals: which kind of policy refused the run's pod, and the fix in docker's words.

Owns telling an admission refusal (the cluster's policy judged the manifest) apart from an
RBAC denial (the user may not create the object at all), so that only the latter is called a
permission problem, and the one-line fix for each kind: the flags that would satisfy it where
squarepeg has them, the cluster's own object to read where it has not. The same text reaches
squarepeg two ways, as `kubectl create`'s complaint in pod mode and as the message of a Job's
`FailedCreate` event in job mode (`Error creating: ` in front); both are read here.

The kinds, with the API server's own words (kube-apiserver 1.34; docs/decisions/0300):
- PodSecurity: `violates PodSecurity "restricted:latest": allowPrivilegeEscalation != false
  (...), unrestricted capabilities (...), runAsNonRoot != true (...), seccompProfile (...)`;
- ResourceQuota: `failed quota: Q: must specify limits.cpu for: main` (limits needed) and
  `exceeded quota: Q, requested: ..., used: ..., limited: ...` (exhausted);
- LimitRange: `[maximum cpu usage per Container is 500m, but limit is 1]`;
- a ValidatingAdmissionPolicy: `ValidatingAdmissionPolicy 'P' with binding 'B' denied request`;
- a webhook's deny: `admission webhook "W" denied the request: ...`;
- a webhook that cannot be reached: `failed calling webhook "W": ... connection refused`,
  which also says "connection refused" and must not be taken for an unreachable API server.
Pure: text in, a verdict out.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass

# The job controller's wording of a pod it could not create (FailedCreate events).
JOB_PREFIX = "Error creating: "

# PodSecurity's check names (k8s.io/pod-security-admission/policy) and what satisfies each:
# docker's flag where squarepeg has one, else the pod field to set through a config file.
_POD_SECURITY_FIXES = (
    ("allowPrivilegeEscalation", "--security-opt no-new-privileges"),
    ("unrestricted capabilities", "--cap-drop ALL"),
    ("non-default capabilities", "no --cap-add beyond NET_BIND_SERVICE"),
    ("runAsNonRoot", "--user UID with a UID other than 0"),
    ("runAsUser=0", "--user UID with a UID other than 0"),
    ("seccompProfile", "no --security-opt seccomp=unconfined (and no --privileged)"),
    ("privileged", "no --privileged"),
    ("host namespaces", "no --network host, --pid host or --ipc host"),
    ("hostPath volumes", "no -v with a host path"),
)
_POD_SECURITY = re.compile(r'violates PodSecurity "([^"]+)"')
_WEBHOOK_UNREACHABLE = re.compile(r'failed calling webhook "([^"]+)"')
_WEBHOOK_DENIED = re.compile(r'admission webhook "([^"]+)" denied the request')
_POLICY = re.compile(r"ValidatingAdmissionPolicy '([^']+)'")
_LIMIT_RANGE = re.compile(r"(maximum|minimum) (cpu|memory|ephemeral-storage) usage per ")


@dataclass(frozen=True)
class Refusal:
    """An admission refusal: its kind, the policy's own reason, and what to do."""

    kind: str  # pod-security, quota-needs-limits, quota-exceeded, limit-range, policy,
    #            webhook-denied, webhook-unreachable
    reason: str
    fix: str

    @property
    def fixable(self) -> bool:
        """Whether a change to the run can satisfy it (not so an unreachable webhook)."""
        return self.kind != "webhook-unreachable"


def reason_of(text: str) -> str:
    """The refusal's reason without the job controller's `Error creating: ` and the
    API's `pods "x" is forbidden: ` in front (the message names the pod elsewhere)."""
    text = " ".join(text.split()).removeprefix(JOB_PREFIX)
    subject = re.match(r'^[a-z.]+ "[^"]*" is forbidden: ', text)
    return text[subject.end():] if subject else text


def _plain_describe(kind: str) -> str:
    return f"kubectl describe {kind}"


def classify(text: str, *, describe: Callable[[str], str] = _plain_describe) -> Refusal | None:
    """The admission refusal `text` (kubectl's complaint or a FailedCreate message) is, or
    None when it is no admission refusal (an RBAC denial, a missing namespace, ...).

    `describe(KIND)` is the `kubectl describe KIND` command a hint names, with the run's
    kubeconfig, context and namespace."""
    reason = reason_of(text)
    if found := _WEBHOOK_UNREACHABLE.search(reason):
        return Refusal(
            "webhook-unreachable",
            reason,
            f"the cluster's admission webhook {found.group(1)} did not answer, so every pod "
            "is refused until it does: tell the cluster's admins (nothing in the run can fix it)",
        )
    if found := _POD_SECURITY.search(reason):
        return Refusal("pod-security", reason, _pod_security_fix(found.group(1), reason))
    if "failed quota:" in reason and "must specify" in reason:
        return Refusal(
            "quota-needs-limits",
            reason,
            "the namespace's quota needs every container to declare what it names: "
            "give --cpus and -m/--memory",
        )
    if "exceeded quota:" in reason:
        return Refusal(
            "quota-exceeded",
            reason,
            "the namespace's quota is used up: ask for less (--cpus, -m) or wait for other "
            f"pods to finish; `{describe('resourcequota')}` shows what is used",
        )
    if _LIMIT_RANGE.search(reason):
        return Refusal(
            "limit-range",
            reason,
            "give --cpus and -m/--memory within the namespace's limits; "
            f"`{describe('limitrange')}` shows them",
        )
    if found := _POLICY.search(reason):
        return Refusal(
            "policy",
            reason,
            f"the cluster's admission policy {found.group(1)} refused the pod: change what "
            "its message names",
        )
    if found := _WEBHOOK_DENIED.search(reason):
        return Refusal(
            "webhook-denied",
            reason,
            f"the cluster's admission webhook {found.group(1)} refused the pod: change what "
            "its message names",
        )
    return None


def _pod_security_fix(level: str, reason: str) -> str:
    fixes = list(dict.fromkeys(fix for check, fix in _POD_SECURITY_FIXES if check in reason))
    wanted = "; ".join(fixes) if fixes else "change what the message names"
    return f'the namespace enforces Pod Security "{level}": {wanted}'
